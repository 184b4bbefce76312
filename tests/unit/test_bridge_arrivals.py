"""Solana arrivals count only as the bridge's own delivery of this session's message.

Each case is a `getTransaction` answer in the RPC's JSON wire format (`encoding: "json"`), compiled with
solders from the instructions named below and stored in `tests/recordings/observe/solana_arrivals.json`
(regenerate with `REGEN_ARRIVALS=1`); it is parsed by the real observer (`observe.solana.parse_get_transaction`)
and judged by `core.bridge_arrivals`. Signatures are placeholders; the OFT program key is a stand-in (the USDG
OFT program on Solana is not pinned in this repository's notes), so the OFT cases prove the binding rules, not
that key.

Hostile cases, each refused: a plain SPL TransferChecked of the right amount from another wallet; another
session's mint; a mint to another recipient; an OFT delivery of another GUID; an OFT delivery paying another
recipient; a plain USDG transfer; a failed transaction (CCTP and OFT).
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
from pathlib import Path
from typing import Any

import pytest
from solders.hash import Hash
from solders.instruction import AccountMeta, Instruction
from solders.message import Message
from solders.pubkey import Pubkey

from routequote.core.actions import cctp_solana_receive as rx
from routequote.core.actions.cctp_message import encode_cctp_burn_message
from routequote.core.actions.common import associated_token_address
from routequote.core.assets import ASSETS
from routequote.core.bridge_arrivals import (
    LzReceive,
    encode_lz_receive,
    oft_message,
    verify_cctp_solana_mint,
    verify_oft_solana_delivery,
)
from routequote.core.sessions.evidence import ObservationRejected
from routequote.observe.solana import parse_get_transaction

FIXTURES = Path(__file__).resolve().parents[1] / "recordings" / "observe" / "solana_arrivals.json"
ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
RECIPIENT = "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM"
STRANGER = "HN7cABqLq46Es1jh92dQQisAq662SmxELLLsHHe4YWrH"
RELAYER = "4Nd1mBQtrMJVYVfKf2PJy9NZUZdTAsp7D4xWLs4gDB4T"
OFT_PROGRAM = str(Pubkey(hashlib.sha256(b"usdg oft program stand-in").digest()))  # not the real program
ROBINHOOD_EID, ROBINHOOD_OFT = 30416, b"\x00" * 12 + bytes.fromhex("0d54755f5106BfdB43f7a35f5D49a23F940628d1")
GUID = "0x" + hashlib.sha256(b"session guid").hexdigest()
OTHER_GUID = "0x" + hashlib.sha256(b"another guid").hexdigest()
USDC, USDG = ASSETS["solana:USDC"], ASSETS["solana:USDG"]
AMOUNT, FEE_EXECUTED, MAX_FEE = 1_000_000_000, 130_000, 160_000
MINTED = AMOUNT - FEE_EXECUTED


def b58encode(raw: bytes) -> str:
    n = int.from_bytes(raw, "big")
    out = ""
    while n:
        n, r = divmod(n, 58)
        out = ALPHABET[r] + out
    return "1" * (len(raw) - len(raw.lstrip(b"\x00"))) + out


def cctp_message(nonce_label: str, recipient_owner: str = RECIPIENT) -> bytes:
    return encode_cctp_burn_message(
        source_domain=6,
        destination_domain=5,
        nonce=hashlib.sha256(nonce_label.encode()).digest(),
        sender=b"\x00" * 12 + b"\x28" * 20,
        recipient=bytes(rx.TMM),
        destination_caller=b"\x00" * 32,
        min_finality_threshold=1000,
        finality_threshold_executed=1000,
        burn_token=b"\x00" * 12 + bytes.fromhex("833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"),
        mint_recipient=bytes(associated_token_address(recipient_owner, USDC)),
        amount=AMOUNT,
        message_sender=b"\x00" * 12 + b"\x11" * 20,
        max_fee=MAX_FEE,
        fee_executed=FEE_EXECUTED,
        expiration_block=0,
    )


SESSION_MESSAGE = cctp_message("session")
FEE_ACCOUNT = str(associated_token_address(str(Pubkey.from_string(STRANGER)), USDC))


def _compile(
    label: str, payer: str, ixs: list[Instruction], credits: dict[str, tuple[str, str, int]], err: Any = None
) -> dict[str, Any]:
    """A getTransaction answer: `credits` maps a token account to (mint, owner, delta)."""
    msg = Message(ixs, Pubkey.from_string(payer))
    keys = [str(k) for k in msg.account_keys]
    n_sig = msg.header.num_required_signatures
    signature = b58encode(hashlib.sha512(label.encode()).digest())
    pre, post = [], []
    for account, (mint, owner, delta) in credits.items():
        index = keys.index(account)
        before = 5_000_000

        def row(amount: int, mint: str = mint, owner: str = owner, index: int = index) -> dict[str, Any]:
            return {
                "accountIndex": index,
                "mint": mint,
                "owner": owner,
                "programId": ASSETS["solana:USDG"].token_program
                if mint == USDG.address
                else rx.SPL_TOKEN.__str__(),
                "uiTokenAmount": {
                    "amount": str(amount),
                    "decimals": 6,
                    "uiAmount": amount / 10**6,
                    "uiAmountString": str(amount / 10**6),
                },
            }

        pre.append(row(before))
        post.append(row(before if err is not None else before + delta))
    result = {
        "blockTime": 1_795_400_000,
        "slot": 381_500_000,
        "meta": {
            "err": err,
            "fee": 5_000 * n_sig,
            "innerInstructions": [],
            "loadedAddresses": {"readonly": [], "writable": []},
            "logMessages": [],
            "preBalances": [10**9] * len(keys),
            "postBalances": [10**9] * len(keys),
            "preTokenBalances": pre,
            "postTokenBalances": post,
            "status": {"Ok": None} if err is None else {"Err": err},
        },
        "transaction": {
            "signatures": [b58encode(hashlib.sha512(f"{label}:{i}".encode()).digest()) for i in range(n_sig)]
            if n_sig > 1
            else [signature],
            "message": {
                "accountKeys": keys,
                "header": {
                    "numRequiredSignatures": n_sig,
                    "numReadonlySignedAccounts": msg.header.num_readonly_signed_accounts,
                    "numReadonlyUnsignedAccounts": msg.header.num_readonly_unsigned_accounts,
                },
                "instructions": [
                    {
                        "programIdIndex": ci.program_id_index,
                        "accounts": list(ci.accounts),
                        "data": b58encode(bytes(ci.data)),
                    }
                    for ci in msg.instructions
                ],
                "recentBlockhash": str(Hash.default()),
            },
        },
    }
    return {
        "signature": result["transaction"]["signatures"][0],
        "response": {"jsonrpc": "2.0", "id": 1, "result": result},
    }


def _transfer(owner: str, to_owner: str, asset: Any, amount: int) -> Instruction:
    program = Pubkey.from_string(asset.token_program)
    return Instruction(
        program,
        bytes([12]) + struct.pack("<QB", amount, 6),
        [
            AccountMeta(associated_token_address(owner, asset), False, True),
            AccountMeta(Pubkey.from_string(asset.address), False, False),
            AccountMeta(associated_token_address(to_owner, asset), False, True),
            AccountMeta(Pubkey.from_string(owner), True, False),
        ],
    )


def _receive(message: bytes, recipient_owner: str = RECIPIENT) -> Instruction:
    return rx.receive_message_ix(RELAYER, recipient_owner, message, bytes([1]) * 65, FEE_ACCOUNT)


def _lz(guid: str, to_owner: str = RECIPIENT, amount: int = 250_000_000) -> Instruction:
    params = LzReceive(
        ROBINHOOD_EID,
        ROBINHOOD_OFT,
        7,
        bytes.fromhex(guid[2:]),
        oft_message(bytes(Pubkey.from_string(to_owner)), amount),
        b"",
    )
    metas = [AccountMeta(Pubkey.from_string(RELAYER), True, True)] + [
        AccountMeta(associated_token_address(to_owner, USDG), False, True)
    ]
    return Instruction(Pubkey.from_string(OFT_PROGRAM), encode_lz_receive(params), metas)


def _ata(owner: str, asset: Any) -> str:
    return str(associated_token_address(owner, asset))


def build_fixtures() -> dict[str, Any]:
    rec_usdc, rec_usdg = _ata(RECIPIENT, USDC), _ata(RECIPIENT, USDG)
    return {
        "cctp_mint": _compile(
            "cctp_mint", RELAYER, [_receive(SESSION_MESSAGE)], {rec_usdc: (USDC.address, RECIPIENT, MINTED)}
        ),
        "cctp_plain_transfer_from_another_wallet": _compile(
            "plain",
            STRANGER,
            [_transfer(STRANGER, RECIPIENT, USDC, MINTED)],
            {rec_usdc: (USDC.address, RECIPIENT, MINTED)},
        ),
        "cctp_another_sessions_mint": _compile(
            "other_session",
            RELAYER,
            [_receive(cctp_message("another session"))],
            {rec_usdc: (USDC.address, RECIPIENT, MINTED)},
        ),
        "cctp_mint_to_another_recipient": _compile(
            "other_recipient",
            RELAYER,
            [_receive(cctp_message("session", STRANGER), STRANGER)],
            {_ata(STRANGER, USDC): (USDC.address, STRANGER, MINTED)},
        ),
        "cctp_mint_failed": _compile(
            "failed",
            RELAYER,
            [_receive(SESSION_MESSAGE)],
            {rec_usdc: (USDC.address, RECIPIENT, MINTED)},
            err={"InstructionError": [0, {"Custom": 6}]},
        ),
        "oft_delivery": _compile(
            "oft", RELAYER, [_lz(GUID)], {rec_usdg: (USDG.address, RECIPIENT, 250_000_000)}
        ),
        "oft_delivery_of_another_guid": _compile(
            "oft_other", RELAYER, [_lz(OTHER_GUID)], {rec_usdg: (USDG.address, RECIPIENT, 250_000_000)}
        ),
        "oft_delivery_to_another_recipient": _compile(
            "oft_stranger",
            RELAYER,
            [_lz(GUID, STRANGER)],
            {_ata(STRANGER, USDG): (USDG.address, STRANGER, 250_000_000)},
        ),
        "oft_plain_usdg_transfer": _compile(
            "oft_plain",
            STRANGER,
            [_transfer(STRANGER, RECIPIENT, USDG, 250_000_000)],
            {rec_usdg: (USDG.address, RECIPIENT, 250_000_000)},
        ),
        "oft_delivery_failed": _compile(
            "oft_failed",
            RELAYER,
            [_lz(GUID)],
            {rec_usdg: (USDG.address, RECIPIENT, 250_000_000)},
            err={"InstructionError": [0, {"Custom": 1}]},
        ),
    }


def fixtures() -> dict[str, Any]:
    built = build_fixtures()
    if os.environ.get("REGEN_ARRIVALS") == "1":
        FIXTURES.write_text(json.dumps(built, indent=1, sort_keys=True) + "\n")
    stored: dict[str, Any] = json.loads(FIXTURES.read_text())
    assert stored == json.loads(json.dumps(built))  # the stored answers are the ones these instructions make
    return stored


FX = fixtures()


def tx(name: str) -> Any:
    case = FX[name]
    parsed = parse_get_transaction(case["signature"], case["response"]["result"])
    assert parsed is not None
    return parsed


def cctp(name: str) -> Any:
    return verify_cctp_solana_mint(tx(name), message=SESSION_MESSAGE, recipient_owner=RECIPIENT)


def oft(name: str) -> Any:
    return verify_oft_solana_delivery(
        tx(name),
        oft_program=OFT_PROGRAM,
        guid=GUID,
        src_eid=ROBINHOOD_EID,
        source_oapp=ROBINHOOD_OFT,
        recipient_owner=RECIPIENT,
    )


def test_the_sessions_cctp_mint_counts_what_it_delivered() -> None:
    got = cctp("cctp_mint")
    assert got.amount_base == MINTED and got.tx_id == FX["cctp_mint"]["signature"]
    assert got.bridge["nonce"] == "0x" + hashlib.sha256(b"session").hexdigest()
    assert got.bridge["recipient_token_account"] == _ata(RECIPIENT, USDC)


def test_the_sessions_oft_delivery_counts_what_it_delivered() -> None:
    got = oft("oft_delivery")
    assert got.amount_base == 250_000_000 and got.bridge["guid"] == GUID


@pytest.mark.parametrize(
    ("case", "reason"),
    [
        ("cctp_plain_transfer_from_another_wallet", "observation_bridge_mismatch"),
        ("cctp_another_sessions_mint", "observation_bridge_mismatch"),
        ("cctp_mint_to_another_recipient", "observation_bridge_mismatch"),
        ("cctp_mint_failed", "observation_reverted"),
    ],
)
def test_hostile_cctp_arrivals_are_refused(case: str, reason: str) -> None:
    with pytest.raises(ObservationRejected) as exc:
        cctp(case)
    assert exc.value.reason_class == reason


@pytest.mark.parametrize(
    ("case", "reason"),
    [
        ("oft_delivery_of_another_guid", "observation_bridge_mismatch"),
        ("oft_delivery_to_another_recipient", "observation_wrong_recipient"),
        ("oft_plain_usdg_transfer", "observation_bridge_mismatch"),
        ("oft_delivery_failed", "observation_reverted"),
    ],
)
def test_hostile_oft_arrivals_are_refused(case: str, reason: str) -> None:
    with pytest.raises(ObservationRejected) as exc:
        oft(case)
    assert exc.value.reason_class == reason


def test_a_delivery_from_another_endpoint_or_oapp_is_refused() -> None:
    t = tx("oft_delivery")
    for kw in ({"src_eid": 30101}, {"source_oapp": b"\x00" * 32}):
        args: dict[str, Any] = {
            "oft_program": OFT_PROGRAM,
            "guid": GUID,
            "src_eid": ROBINHOOD_EID,
            "source_oapp": ROBINHOOD_OFT,
            "recipient_owner": RECIPIENT,
            **kw,
        }
        with pytest.raises(ObservationRejected) as exc:
            verify_oft_solana_delivery(t, **args)
        assert exc.value.reason_class == "observation_bridge_mismatch"
    # the right instruction data on another program is not the OFT's delivery
    with pytest.raises(ObservationRejected):
        verify_oft_solana_delivery(
            t,
            oft_program=STRANGER,
            guid=GUID,
            src_eid=ROBINHOOD_EID,
            source_oapp=ROBINHOOD_OFT,
            recipient_owner=RECIPIENT,
        )


def test_the_sessions_mint_named_for_another_recipient_is_refused() -> None:
    """The right mint, judged for a session whose recipient is someone else."""
    with pytest.raises(ObservationRejected) as exc:
        verify_cctp_solana_mint(tx("cctp_mint"), message=SESSION_MESSAGE, recipient_owner=STRANGER)
    assert exc.value.reason_class == "observation_wrong_recipient"
