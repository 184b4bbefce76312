"""The Solana service fee, checked without the service's builders: the verifier derives the fee recipient's
associated token account itself, writes its own expected fee instructions and decodes every SPL transfer in
the payload (program, accounts, amount), so a builder that pays a stranger cannot vouch for itself."""

from __future__ import annotations

import base64
import struct
from dataclasses import dataclass
from typing import Any

from solders.pubkey import Pubkey

from routequote.core.assets import SPL_TOKEN_PROGRAM, TOKEN_2022_PROGRAM, Asset
from routequote.core.verify.common import StepContext, service_fee_base

# the programs' own ids and instruction tags, written here rather than taken from the builder
ATA_PROGRAM_ID = "ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL"
SYSTEM_PROGRAM_ID = "11111111111111111111111111111111"
TOKEN_PROGRAM_IDS = (SPL_TOKEN_PROGRAM, TOKEN_2022_PROGRAM)
ATA_CREATE_IDEMPOTENT_TAG = 1
SPL_TRANSFER_TAG = 3  # Transfer: u64 amount; accounts source, destination, authority
SPL_TRANSFER_CHECKED_TAG = 12  # TransferChecked: u64 amount, u8 decimals; source, mint, destination, owner


def _program_and_mint(a: Asset) -> tuple[str, str]:
    mint = a.address or a.wrapped_address
    assert mint is not None, f"{a.key} has no mint"
    return a.token_program or SPL_TOKEN_PROGRAM, mint


def token_account_of(owner: Any, a: Asset) -> str | None:
    """`owner`'s associated token account for the asset's mint: the ATA program's address derived from
    [owner, token program, mint]. None when `owner` is not a Solana address."""
    try:
        owner_key = Pubkey.from_string(owner)
    except (ValueError, TypeError):
        return None
    program, mint = _program_and_mint(a)
    seeds = [bytes(owner_key), bytes(Pubkey.from_string(program)), bytes(Pubkey.from_string(mint))]
    return str(Pubkey.find_program_address(seeds, Pubkey.from_string(ATA_PROGRAM_ID))[0])


def _key(pubkey: str, signer: bool, writable: bool) -> dict[str, Any]:
    return {"pubkey": pubkey, "isSigner": signer, "isWritable": writable}


def _ix(program: str, data: bytes, keys: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "programId": program,
        "keys": keys,
        "data": base64.b64encode(data).decode(),
        "dataEncoding": "base64",
    }


def expected_fee_instructions(caller: str, recipient: str, a: Asset, amount: int) -> list[dict[str, Any]]:
    """The fee part as the verifier expects it: the recipient's token account created idempotently (the
    caller pays its rent), then `TransferChecked` of `amount` from the caller's own token account to it."""
    program, mint = _program_and_mint(a)
    source, destination = token_account_of(caller, a), token_account_of(recipient, a)
    if source is None or destination is None:  # refused by `check_fee_transfers`; nothing can match
        return []
    create = _ix(
        ATA_PROGRAM_ID,
        bytes([ATA_CREATE_IDEMPOTENT_TAG]),
        [
            _key(caller, True, True),
            _key(destination, False, True),
            _key(recipient, False, False),
            _key(mint, False, False),
            _key(SYSTEM_PROGRAM_ID, False, False),
            _key(program, False, False),
        ],
    )
    transfer = _ix(
        program,
        bytes([SPL_TRANSFER_CHECKED_TAG]) + struct.pack("<QB", amount, a.decimals),
        [
            _key(source, False, True),
            _key(mint, False, False),
            _key(destination, False, True),
            _key(caller, True, False),
        ],
    )
    return [create, transfer]


@dataclass(frozen=True, slots=True)
class TokenTransfer:
    program: str
    source: str
    mint: str | None  # TransferChecked only
    destination: str
    authority: str
    amount: int
    decimals: int | None  # TransferChecked only


def decode_token_transfer(ix: dict[str, Any]) -> TokenTransfer | None:
    """An SPL Token / Token-2022 `Transfer` or `TransferChecked`, decoded from the instruction itself; None for
    any other instruction. A malformed transfer (short data or accounts) decodes with amount -1."""
    program = ix.get("programId")
    if program not in TOKEN_PROGRAM_IDS:
        return None
    try:
        data = base64.b64decode(ix.get("data", ""), validate=True)
    except Exception:  # noqa: BLE001 - undecodable data is no transfer; the instruction check refuses it
        return None
    if not data or data[0] not in (SPL_TRANSFER_TAG, SPL_TRANSFER_CHECKED_TAG):
        return None
    raw = [k.get("pubkey") if isinstance(k, dict) else None for k in ix.get("keys") or []]
    keys = [k for k in raw if isinstance(k, str)]
    checked = data[0] == SPL_TRANSFER_CHECKED_TAG
    n_keys, n_data = (4, 10) if checked else (3, 9)
    if len(raw) < n_keys or keys != raw or len(data) != n_data:
        return TokenTransfer(str(program), "", None, "", "", -1, None)
    amount = struct.unpack_from("<Q", data, 1)[0]
    if checked:
        return TokenTransfer(str(program), keys[0], keys[1], keys[2], keys[3], amount, data[9])
    return TokenTransfer(str(program), keys[0], None, keys[1], keys[2], amount, None)


def check_fee_transfers(x: StepContext, action: dict[str, Any], ixs: list[dict[str, Any]], a: Asset) -> None:
    """Every SPL transfer in the payload is the fee: from your own token account of the spent asset, to the
    fee recipient's token account (the one you pinned, else the one the safety receipt names), and together
    they pay exactly floor(input / 10000) on the fee step and nothing elsewhere."""
    c = x.c
    want = service_fee_base(x.input_base, x.step.fee_step)
    program, mint = _program_and_mint(a)
    own = token_account_of(x.caller, a)
    fee_account = token_account_of(x.fee_recipient, a) if x.fee_recipient else None
    if want and fee_account is None:
        c.fail("fee_recipient_mismatch", f"the fee recipient {x.fee_recipient!r} is not a Solana address")
    stated = action.get("feeRecipientTokenAccount")
    c.expect(
        stated == (fee_account if want else None),
        "fee_recipient_mismatch",
        f"feeRecipientTokenAccount {stated} is not the fee recipient's token account {fee_account}",
    )
    paid = 0
    for i, ix in enumerate(ixs):
        t = decode_token_transfer(ix)
        if t is None:
            continue
        where = f"instruction {i}"
        if not c.expect(t.amount >= 0, "instruction_not_allowed", f"{where}: a malformed SPL transfer"):
            continue
        c.expect(
            t.program == program and t.mint in (None, mint) and t.decimals in (None, a.decimals),
            "token_mismatch",
            f"{where}: the transfer moves another token than {a.key}",
        )
        c.expect(
            t.source == own and t.authority == x.caller,
            "token_owner_mismatch",
            f"{where}: the transfer must spend from your own {a.key} token account",
        )
        c.expect(
            want > 0 and t.destination == fee_account,
            "fee_recipient_mismatch",
            f"{where}: the transfer pays {t.destination}, not the fee recipient's token account {fee_account}",
        )
        paid += t.amount
    c.expect(paid == want, "service_fee_mismatch", f"fee paid {paid}, expected {want}")
