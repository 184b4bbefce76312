"""Solana evidence: the prepared action (exactly its instructions, in order) and a token delivery. Pure."""

from __future__ import annotations

import base64
import struct
from collections.abc import Sequence
from typing import Any

from solders.pubkey import Pubkey

from routequote.core.assets import ASSETS, CHAINS, Asset, Chain, Token
from routequote.core.chain import SolanaTransaction
from routequote.core.sessions.evidence_common import (
    COMPUTE_BUDGET_PROGRAM,
    SYSTEM_PROGRAM,
    ObservationRejected,
    StepEvidence,
    base_amount,
    bytes32_to_address,
    lower_address,
)


def _token_delta(
    tx: SolanaTransaction, *, mint: str, owner: str | None = None, account: str | None = None
) -> int:
    def pick(balances: Sequence[Any]) -> int:
        total = 0
        for b in balances:
            if b.mint != mint:
                continue
            if owner is not None and b.owner != owner:
                continue
            if account is not None and tx.account_keys[b.account_index] != account:
                continue
            total += int(b.amount)
        return total

    return pick(tx.post_token_balances) - pick(tx.pre_token_balances)


def _token_balance(balances: Sequence[Any], keys: Sequence[str], account: str, mint: str) -> int:
    return sum(int(b.amount) for b in balances if b.mint == mint and keys[b.account_index] == account)


def _mint_of(a: Asset) -> str:
    addr = a.address or a.wrapped_address
    if addr is None:
        raise ValueError(f"{a.key} has no mint")
    return addr


def _ata(owner: str, a: Asset) -> str:
    from solders.token.associated import get_associated_token_address

    program = (
        Pubkey.from_string(a.token_program)
        if a.token_program
        else Pubkey.from_string("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA")
    )
    return str(
        get_associated_token_address(Pubkey.from_string(owner), Pubkey.from_string(_mint_of(a)), program)
    )


def verify_solana_action(action: dict[str, Any], tx: SolanaTransaction) -> StepEvidence:
    """Evidence for one prepared Solana action from its finalized transaction (see module doc)."""
    if tx.err is not None:
        raise ObservationRejected("observation_reverted", f"{tx.signature} failed on chain", tx=tx.signature)
    prepared = [
        (
            str(ix["programId"]),
            tuple(str(k["pubkey"]) for k in ix["keys"]),
            base64.b64decode(ix["data"], validate=True),
        )
        for ix in action.get("instructions") or []
    ]
    observed = [
        (ix.program_id, ix.accounts, ix.data)
        for ix in tx.instructions
        if ix.program_id != COMPUTE_BUDGET_PROGRAM
    ]
    if not prepared or observed != prepared:
        raise ObservationRejected(
            "observation_not_prepared_action",
            f"{tx.signature} does not carry exactly the prepared instructions in order (only ComputeBudget may be added)",
            tx=tx.signature,
        )
    fee_payer = str(action.get("feePayer"))
    required = {fee_payer, *(str(s) for s in action.get("requiredSigners") or [])}
    if not required <= set(tx.signers):
        raise ObservationRejected("observation_not_prepared_action", "the prepared signers did not sign it")
    kinds: list[str] = list(action.get("kinds") or [])
    src, dst = ASSETS[str(action.get("source"))], ASSETS[str(action.get("destination"))]
    src_mint = _mint_of(src)
    caller = str(action.get("sender") or fee_payer)
    fee_paid = 0
    if "service_fee_transfer_checked" in kinds:
        fee_account = str(action.get("feeRecipientTokenAccount"))
        fee_paid = _token_delta(tx, mint=src_mint, account=fee_account)
        want = base_amount(action.get("routeFee"), "routeFee")
        if fee_paid != want:
            raise ObservationRejected(
                "observation_not_prepared_action",
                f"the service fee paid was {fee_paid}, the action prepared {want}",
            )
    if src.token is Token.SOL:
        wsol = _ata(caller, src)
        wrapped = sum(
            struct.unpack_from("<Q", data, 4)[0]
            for program, accounts, data in observed
            if program == SYSTEM_PROGRAM
            and len(data) == 12
            and data[:4] == b"\x02\x00\x00\x00"
            and len(accounts) == 2
            and accounts[1] == wsol
        )
        pre = _token_balance(tx.pre_token_balances, tx.account_keys, wsol, src_mint)
        post = _token_balance(tx.post_token_balances, tx.account_keys, wsol, src_mint)
        actual_input = pre + wrapped - post
    else:
        actual_input = -_token_delta(tx, mint=src_mint, owner=caller)
    minimum = base_amount(action.get("minimumOutput"), "minimumOutput")
    recipient = str(action.get("recipient"))
    output: int | None = None
    bridge: dict[str, Any] | None = None
    if kinds and kinds[-1] == "cctp_deposit_for_burn":
        bridge = _solana_cctp_burn(prepared[-1], tx, actual_input - fee_paid, recipient)
    elif dst.chain is Chain.SOLANA and dst.token is Token.SOL:
        output = _lamports_received(tx, recipient)
    elif dst.chain is Chain.SOLANA:
        output = _token_delta(tx, mint=_mint_of(dst), owner=recipient)
    else:
        raise ValueError(f"no evidence rule for a Solana step to {dst.key}")
    if output is not None and output < minimum:
        raise ObservationRejected(
            "observation_below_step_minimum",
            f"the step delivered {output}, below its minimum {minimum}",
            actual_output_base=str(output),
            minimum_output_base=str(minimum),
        )
    return StepEvidence(
        status="final",
        tx_ids=(tx.signature,),
        actual_input_base=actual_input,
        actual_output_base=output,
        service_fee_paid_base=fee_paid,
        network_fee={"lamports": tx.fee},
        block_times=() if tx.block_time is None else (tx.block_time,),
        bridge=bridge,
    )


def _lamports_received(tx: SolanaTransaction, recipient: str) -> int:
    """SOL delivered to the recipient: its lamport change, plus the transaction fee and the rent of accounts
    this transaction created (both paid by the wallet when it is the fee payer, so not a smaller output)."""
    keys = tx.account_keys
    if recipient not in keys:
        return 0
    i = keys.index(recipient)
    delta = tx.post_balances[i] - tx.pre_balances[i]
    if keys[0] == recipient:
        delta += tx.fee
        delta += sum(
            post
            for k, (pre, post) in enumerate(zip(tx.pre_balances, tx.post_balances, strict=True))
            if k != i and pre == 0 and post > 0
        )
    return delta


def _solana_cctp_burn(
    prepared: tuple[str, tuple[str, ...], bytes], tx: SolanaTransaction, burned: int, recipient: str
) -> dict[str, Any]:
    _program, accounts, data = prepared
    if len(data) != 96:
        raise ValueError("a deposit_for_burn instruction carries 96 bytes")
    amount, domain = struct.unpack_from("<QI", data, 8)
    mint_recipient = data[20:52]
    max_fee, finality = struct.unpack_from("<QI", data, 84)
    if lower_address(bytes32_to_address(mint_recipient)) != lower_address(recipient):
        raise ObservationRejected("observation_wrong_recipient", "the burn mints to another recipient")
    if burned != amount:
        raise ObservationRejected(
            "observation_bridge_mismatch", f"the burn token account moved {burned}, the burn names {amount}"
        )
    return {
        "kind": "cctp",
        "source_domain": CHAINS[Chain.SOLANA].cctp_domain,
        "destination_domain": domain,
        "source_tx": tx.signature,
        "source_slot": tx.slot,
        "burn_amount": amount,
        "max_fee": max_fee,
        "min_finality_threshold": finality,
        "mint_recipient": "0x" + mint_recipient.hex(),
        "message_sent_event_account": accounts[11],
    }


def verify_solana_delivery(tx: SolanaTransaction, *, owner: str, mint: str) -> int:
    """Tokens of `mint` the transaction delivered to `owner` (any of its token accounts); > 0 or rejected."""
    if tx.err is not None:
        raise ObservationRejected("observation_reverted", f"{tx.signature} failed on chain", tx=tx.signature)
    got = _token_delta(tx, mint=mint, owner=owner)
    if got <= 0:
        raise ObservationRejected(
            "observation_wrong_recipient", f"{tx.signature} delivered nothing to {owner}"
        )
    return got
