"""Solana unsigned instructions built with solders: associated-token-account creation, SPL
`TransferChecked` (SPL Token or Token-2022, per mint), wSOL wrap / unwrap, Circle CCTP v2 `deposit_for_burn`
and the Orca Whirlpool / Raydium CLMM `swap_v2` instructions of `solana_swaps`.

No blockhash and no fee payer signature: the caller's wallet compiles a transaction with a fresh
blockhash. Swaps are built only for pinned pools, from one read of the pool (`StepPlan.pool_tick_current`;
Raydium's observation account, bitmap extension and tick arrays in `StepPlan.raydium_live`), live or from the
embedded snapshot (`StepPlan.pool_state_source` says which).
"""

from __future__ import annotations

import base64
import hashlib
import struct
from dataclasses import dataclass
from typing import Any

from solders.instruction import AccountMeta, Instruction
from solders.pubkey import Pubkey

from routequote.core.actions import solana_swaps as sw
from routequote.core.actions.common import (
    ActionUnavailable,
    address_to_bytes32,
    associated_token_address,
    mint,
    pubkey,
    token_program,
)
from routequote.core.actions.plan import CCTP_FAST_FINALITY, StepPlan
from routequote.core.assets import CHAINS, Asset, Chain, ChainFamily, Token
from routequote.core.providers import PROVIDERS
from routequote.core.routes import Action, Provider

ATA_PROGRAM = Pubkey.from_string("ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL")
SYSTEM_PROGRAM = Pubkey.from_string("11111111111111111111111111111111")
CCTP_MESSAGE_TRANSMITTER_V2 = Pubkey.from_string("CCTPV2Sm4AdWt5296sk4P66VBZ7bEhcARwFaaS9YPbeC")
CCTP_TOKEN_MESSENGER_MINTER_V2 = Pubkey.from_string("CCTPV2vPZJS2u2BBsUoscuikbYjnpFmbFsvVuJdgUMQe")
ATA_CREATE_IDEMPOTENT = 1
SPL_TRANSFER_CHECKED = 12
DEPOSIT_FOR_BURN_DISCRIMINATOR = hashlib.sha256(b"global:deposit_for_burn").digest()[:8]
SPL_SYNC_NATIVE = 17
SPL_CLOSE_ACCOUNT = 9
SOLANA_UNPINNED: dict[Provider, str] = {}  # every Solana swap venue's pool is pinned (see solana_swaps)


def create_ata_idempotent(payer: str | Pubkey, owner: str | Pubkey, a: Asset) -> Instruction:
    """ATA program `CreateIdempotent`: creates owner's token account for the mint unless it exists."""
    ata = associated_token_address(owner, a)
    return Instruction(
        ATA_PROGRAM,
        bytes([ATA_CREATE_IDEMPOTENT]),
        [
            AccountMeta(pubkey(payer), True, True),
            AccountMeta(ata, False, True),
            AccountMeta(pubkey(owner), False, False),
            AccountMeta(mint(a), False, False),
            AccountMeta(SYSTEM_PROGRAM, False, False),
            AccountMeta(token_program(a), False, False),
        ],
    )


def transfer_checked(
    owner: str | Pubkey, recipient_owner: str | Pubkey, a: Asset, amount: int
) -> Instruction:
    """SPL / Token-2022 `TransferChecked` from owner's ATA to the recipient's ATA (tag 12, u64 LE, u8)."""
    return Instruction(
        token_program(a),
        bytes([SPL_TRANSFER_CHECKED]) + struct.pack("<QB", amount, a.decimals),
        [
            AccountMeta(associated_token_address(owner, a), False, True),
            AccountMeta(mint(a), False, False),
            AccountMeta(associated_token_address(recipient_owner, a), False, True),
            AccountMeta(pubkey(owner), True, False),
        ],
    )


def wrap_sol(owner: str | Pubkey, sol: Asset, lamports: int) -> list[Instruction]:
    """Owner's wSOL account (created if missing), `lamports` moved into it, then SPL `SyncNative` (tag 17)."""
    from solders.system_program import TransferParams, transfer

    ata = associated_token_address(owner, sol)
    return [
        create_ata_idempotent(owner, owner, sol),
        transfer(TransferParams(from_pubkey=pubkey(owner), to_pubkey=ata, lamports=lamports)),
        Instruction(token_program(sol), bytes([SPL_SYNC_NATIVE]), [AccountMeta(ata, False, True)]),
    ]


def close_wsol(owner: str | Pubkey, sol: Asset) -> Instruction:
    """SPL `CloseAccount` (tag 9) of the owner's wSOL account: every lamport (the swap output) goes to the owner."""
    o = pubkey(owner)
    return Instruction(
        token_program(sol),
        bytes([SPL_CLOSE_ACCOUNT]),
        [
            AccountMeta(associated_token_address(o, sol), False, True),
            AccountMeta(o, False, True),
            AccountMeta(o, True, False),
        ],
    )


def cctp_pdas(owner: Pubkey, burn_mint: Pubkey, destination_domain: int) -> dict[str, Pubkey]:
    tmm, mt = CCTP_TOKEN_MESSENGER_MINTER_V2, CCTP_MESSAGE_TRANSMITTER_V2

    def pda(seeds: list[bytes], program: Pubkey) -> Pubkey:
        return Pubkey.find_program_address(seeds, program)[0]

    return {
        "sender_authority_pda": pda([b"sender_authority"], tmm),
        "denylist_account": pda([b"denylist_account", bytes(owner)], tmm),
        "message_transmitter": pda([b"message_transmitter"], mt),
        "token_messenger": pda([b"token_messenger"], tmm),
        "remote_token_messenger": pda([b"remote_token_messenger", str(destination_domain).encode()], tmm),
        "token_minter": pda([b"token_minter"], tmm),
        "local_token": pda([b"local_token", bytes(burn_mint)], tmm),
        "event_authority": pda([b"__event_authority"], tmm),
    }


CCTP_ACCOUNT_NAMES = (
    "owner",
    "event_rent_payer",
    "sender_authority_pda",
    "burn_token_account",
    "denylist_account",
    "message_transmitter",
    "token_messenger",
    "remote_token_messenger",
    "token_minter",
    "local_token",
    "burn_token_mint",
    "message_sent_event_data",
    "message_transmitter_program",
    "token_messenger_minter_program",
    "token_program",
    "system_program",
    "event_authority",
    "program",
)


def cctp_deposit_for_burn_data(
    amount: int, destination_domain: int, mint_recipient: bytes, max_fee: int, min_finality: int
) -> bytes:
    return (
        DEPOSIT_FOR_BURN_DISCRIMINATOR
        + struct.pack("<QI", amount, destination_domain)
        + mint_recipient
        + bytes(32)  # destination_caller: Pubkey::default() = anyone may relay the mint
        + struct.pack("<QI", max_fee, min_finality)
    )


def cctp_deposit_for_burn(
    owner: str | Pubkey,
    event_signer: str | Pubkey,
    usdc: Asset,
    amount: int,
    destination_domain: int,
    mint_recipient: bytes,
    max_fee: int,
    min_finality: int = CCTP_FAST_FINALITY,
) -> Instruction:
    """TokenMessengerMinterV2 `deposit_for_burn` (Anchor; accounts in DepositForBurnContext order)."""
    o, m = pubkey(owner), mint(usdc)
    p = cctp_pdas(o, m, destination_domain)
    metas = [
        AccountMeta(o, True, False),
        AccountMeta(o, True, True),  # event_rent_payer: the owner pays the MessageSent account rent
        AccountMeta(p["sender_authority_pda"], False, False),
        AccountMeta(associated_token_address(o, usdc), False, True),
        AccountMeta(p["denylist_account"], False, False),
        AccountMeta(p["message_transmitter"], False, True),
        AccountMeta(p["token_messenger"], False, False),
        AccountMeta(p["remote_token_messenger"], False, False),
        AccountMeta(p["token_minter"], False, False),
        AccountMeta(p["local_token"], False, True),
        AccountMeta(m, False, True),
        AccountMeta(pubkey(event_signer), True, True),
        AccountMeta(CCTP_MESSAGE_TRANSMITTER_V2, False, False),
        AccountMeta(CCTP_TOKEN_MESSENGER_MINTER_V2, False, False),
        AccountMeta(token_program(usdc), False, False),
        AccountMeta(SYSTEM_PROGRAM, False, False),
        AccountMeta(p["event_authority"], False, False),
        AccountMeta(CCTP_TOKEN_MESSENGER_MINTER_V2, False, False),
    ]
    data = cctp_deposit_for_burn_data(amount, destination_domain, mint_recipient, max_fee, min_finality)
    return Instruction(CCTP_TOKEN_MESSENGER_MINTER_V2, data, metas)


def instruction_dict(ix: Instruction) -> dict[str, Any]:
    return {
        "programId": str(ix.program_id),
        "keys": [
            {"pubkey": str(a.pubkey), "isSigner": a.is_signer, "isWritable": a.is_writable}
            for a in ix.accounts
        ],
        "data": base64.b64encode(bytes(ix.data)).decode(),
        "dataEncoding": "base64",
    }


def instruction_from_dict(d: dict[str, Any]) -> Instruction:
    return Instruction(
        Pubkey.from_string(d["programId"]),
        base64.b64decode(d["data"], validate=True),
        [
            AccountMeta(Pubkey.from_string(k["pubkey"]), bool(k["isSigner"]), bool(k["isWritable"]))
            for k in d["keys"]
        ],
    )


@dataclass(frozen=True, slots=True)
class SolanaBuild:
    instructions: list[dict[str, Any]]
    kinds: list[str]
    required_signers: list[str]
    spend_token: str
    protocol_target: str
    destination: dict[str, Any]
    fee_recipient_token_account: str | None


def solana_step_supported(provider: Provider) -> str | None:
    """None when this build can prepare the step; else the reason. Swaps are built from whichever pool state
    the market holds (live, or the embedded snapshot's modelled state, labelled so in the action)."""
    if provider in SOLANA_UNPINNED:
        return SOLANA_UNPINNED[provider]
    if ChainFamily.SOLANA in PROVIDERS[provider].source_families:
        return None
    return f"{provider.value}_not_buildable_on_solana"


def _append_fee_transfer(plan: StepPlan, src: Asset, ixs: list[Instruction], kinds: list[str]) -> str | None:
    """The 1 bp service fee as an explicit TransferChecked to the fee recipient's token account (created
    idempotently first). Returns that account, or None off the fee step."""
    if not plan.fee_base:
        return None
    ixs.append(create_ata_idempotent(plan.caller, plan.fee_recipient, src))
    kinds.append("create_fee_recipient_token_account")
    ixs.append(transfer_checked(plan.caller, plan.fee_recipient, src, plan.fee_base))
    kinds.append("service_fee_transfer_checked")
    return str(associated_token_address(plan.fee_recipient, src))


def build_solana_swap(plan: StepPlan) -> SolanaBuild:
    """Fee (create the recipient's token account, `TransferChecked`), wSOL wrap for SOL input, the caller's
    output token account (created if missing), the pinned pool's `swap_v2`, wSOL close for SOL output."""
    step = plan.step
    src, dst = step.source, step.target
    if plan.pool_tick_current is None:
        raise ActionUnavailable("solana_pool_state_unavailable", sw.SOLANA_POOL_STATE_UNAVAILABLE)
    net = plan.net_input_base
    ixs: list[Instruction] = []
    kinds: list[str] = []
    if src.token is Token.SOL:
        ixs += wrap_sol(plan.caller, src, plan.input_base)
        kinds += ["create_wsol_token_account", "wrap_sol_transfer", "wsol_sync_native"]
    fee_ata = _append_fee_transfer(plan, src, ixs, kinds)
    ixs.append(create_ata_idempotent(plan.caller, plan.caller, dst))
    kinds.append("create_output_token_account")
    pool_id = step.pool_id or ""
    if step.provider is Provider.ORCA_WHIRLPOOL and pool_id in sw.ORCA_POOLS:
        op = sw.ORCA_POOLS[pool_id]
        a_to_b = src.key == op.token_a
        ixs.append(
            sw.orca_swap_v2(plan.caller, op, net, plan.minimum_output_base, a_to_b, plan.pool_tick_current)
        )
        kinds.append("orca_whirlpool_swap_v2")
        program = sw.ORCA_WHIRLPOOL_PROGRAM
    elif step.provider is Provider.RAYDIUM_CLMM and pool_id in sw.RAYDIUM_POOLS:
        rp = sw.RAYDIUM_POOLS[pool_id]
        if plan.raydium_live is None:
            raise ActionUnavailable("solana_pool_state_unavailable", sw.SOLANA_POOL_STATE_UNAVAILABLE)
        zero_for_one = src.key == rp.token_0
        ixs.append(
            sw.raydium_swap_v2(
                plan.caller, rp, net, plan.minimum_output_base, zero_for_one, plan.raydium_live
            )
        )
        kinds.append("raydium_clmm_swap_v2")
        program = sw.RAYDIUM_CLMM_PROGRAM
    else:
        raise ActionUnavailable("solana_pool_accounts_not_pinned", f"no pinned accounts for pool {pool_id}")
    if dst.token is Token.SOL:
        ixs.append(close_wsol(plan.caller, dst))
        kinds.append("close_wsol_token_account")
    return SolanaBuild(
        instructions=[instruction_dict(ix) for ix in ixs],
        kinds=kinds,
        required_signers=[plan.caller],
        spend_token=str(mint(src)),
        protocol_target=str(program),
        destination={"chain": dst.chain.value, "recipient": plan.caller, "domain": None},
        fee_recipient_token_account=fee_ata,
    )


def build_solana(plan: StepPlan) -> SolanaBuild:
    step = plan.step
    if step.action is Action.SWAP and ChainFamily.SOLANA in PROVIDERS[step.provider].source_families:
        return build_solana_swap(plan)
    reason = solana_step_supported(step.provider)
    if reason:
        raise ActionUnavailable(reason.split(":", 1)[0], reason)
    src, dst = step.source, step.target
    if plan.event_signer_public is None:
        raise ActionUnavailable("event_signer_public_required")
    net = plan.net_input_base
    ixs: list[Instruction] = []
    kinds: list[str] = []
    fee_ata = _append_fee_transfer(plan, src, ixs, kinds)
    domain = CHAINS[dst.chain].cctp_domain
    if domain is None or dst.chain is Chain.SOLANA:
        raise ActionUnavailable("cctp_destination_domain_unknown")
    if not 0 < plan.max_provider_fee_base < net:
        raise ActionUnavailable("cctp_max_fee_not_below_amount")
    ixs.append(
        cctp_deposit_for_burn(
            plan.caller,
            plan.event_signer_public,
            src,
            net,
            domain,
            address_to_bytes32(plan.recipient),
            plan.max_provider_fee_base,
        )
    )
    kinds.append("cctp_deposit_for_burn")
    return SolanaBuild(
        instructions=[instruction_dict(ix) for ix in ixs],
        kinds=kinds,
        required_signers=[plan.caller, plan.event_signer_public],
        spend_token=str(mint(src)),
        protocol_target=str(CCTP_TOKEN_MESSENGER_MINTER_V2),
        destination={"chain": dst.chain.value, "recipient": plan.recipient, "domain": domain},
        fee_recipient_token_account=fee_ata,
    )
