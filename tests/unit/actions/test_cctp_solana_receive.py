"""The CCTP mint on Solana as a prepared action: `receive_message` with Circle's PDAs (golden bytes), bounded and
hashed like every bundle, accepted by its caller-side rule; every tampering and every message that is not this
step's burn to your Solana USDC account is refused."""

from __future__ import annotations

import base64
import copy
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from solders.pubkey import Pubkey
from tests.unit.actions.support import EVM_WALLETS, SOLANA_WALLET, rehash

from routequote.core.actions import cctp_solana_receive as rx
from routequote.core.actions.cctp_message import encode_cctp_burn_message
from routequote.core.actions.cctp_solana_receive_check import check_solana_receive_bundle, is_solana_receive
from routequote.core.actions.common import ActionUnavailable, associated_token_address
from routequote.core.actions.evm import DEFAULT_DEPLOYMENTS
from routequote.core.assets import ASSETS, Chain
from routequote.core.routes import ROUTES

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "actions_cctp_solana_receive.json"
REGEN = os.environ.get("REGEN_GOLDEN_ACTIONS") == "1"
ROUTE = ROUTES["base:USDC->solana:USDC"]
STEP = ROUTE.steps[0]
WALLETS = {"base": EVM_WALLETS["base"], "solana": SOLANA_WALLET}
T0 = datetime(2026, 11, 22, 5, 0, 0, tzinfo=UTC)
NOW = int(T0.timestamp())
AMOUNT, MAX_FEE, FEE_EXECUTED = 250_000_000, 40_000, 32_500
NONCE = bytes(range(32))
ATTESTATION = bytes([7]) * 130  # two 65-byte signatures (checked on chain by the transmitter, not here)
FEE_ACCOUNT = (
    "3Zc8RzEPxTgoBRWFYQ1XVQYuURRZA2dvwQSpxgqXzv9m"  # a stand-in for the TokenMessenger fee recipient's
)
USDC = ASSETS["solana:USDC"]


def b32_evm(addr: str) -> bytes:
    return b"\x00" * 12 + bytes.fromhex(addr[2:])


def message(**changes: Any) -> bytes:
    base_dep = DEFAULT_DEPLOYMENTS[Chain.BASE]
    fields: dict[str, Any] = {
        "source_domain": 6,
        "destination_domain": 5,
        "nonce": NONCE,
        "sender": b32_evm(base_dep.token_messenger_v2 or ""),
        "recipient": bytes(rx.TMM),
        "destination_caller": b"\x00" * 32,
        "min_finality_threshold": 1000,
        "finality_threshold_executed": 1000,
        "burn_token": b32_evm(base_dep.token(ASSETS["base:USDC"])),
        "mint_recipient": bytes(associated_token_address(SOLANA_WALLET, USDC)),
        "amount": AMOUNT,
        "message_sender": b32_evm(EVM_WALLETS["base"]),
        "max_fee": MAX_FEE,
        "fee_executed": FEE_EXECUTED,
        "expiration_block": 0,
    }
    fields.update(changes)
    return encode_cctp_burn_message(**fields)


def bundle_for(msg: bytes, attestation: bytes = ATTESTATION) -> dict[str, Any]:
    return rx.assemble_solana_receive_bundle(
        ROUTE,
        STEP,
        WALLETS,
        msg,
        attestation,
        FEE_ACCOUNT,
        workflow_id="wf-1",
        action_id="act-1",
        prepared_at=T0,
        quote_binding={"version": "legacy_advisory", "server_signing": False, "server_submission": False},
        summary_steps=[
            {"index": 0, "expected_input_base": str(AMOUNT), "minimum_output_base": str(AMOUNT - MAX_FEE)}
        ],
    )


def errors(bundle: dict[str, Any], **kw: Any) -> set[str]:
    args: dict[str, Any] = {"route": ROUTE, "step": STEP, "wallets": WALLETS, "now_unix": NOW + 10, **kw}
    return {code for code, _ in check_solana_receive_bundle(bundle, **args)}


def test_receive_message_accounts_follow_circles_seeds() -> None:
    ix = rx.receive_message_ix(SOLANA_WALLET, SOLANA_WALLET, message(), ATTESTATION, FEE_ACCOUNT)
    keys = [str(a.pubkey) for a in ix.accounts]
    pda = Pubkey.find_program_address
    assert keys[4] == str(pda([b"used_nonce", NONCE], rx.MT)[0])
    assert keys[10] == str(pda([b"remote_token_messenger", b"6"], rx.TMM)[0])
    burn_token = b32_evm(DEFAULT_DEPLOYMENTS[Chain.BASE].token(ASSETS["base:USDC"]))
    assert keys[13] == str(pda([b"token_pair", b"6", burn_token], rx.TMM)[0])
    assert keys[15] == str(associated_token_address(SOLANA_WALLET, USDC))
    assert keys[16] == str(pda([b"custody", bytes(Pubkey.from_string(USDC.address or ""))], rx.TMM)[0])
    assert [a.is_writable for a in ix.accounts] == [i in (0, 4, 11, 12, 14, 15, 16) for i in range(20)]
    assert [a.is_signer for a in ix.accounts] == [i in (0, 1) for i in range(20)]
    assert rx.decode_receive_message_data(bytes(ix.data)) == (message(), ATTESTATION)
    assert bytes(ix.data)[:8] == rx.RECEIVE_MESSAGE_DISCRIMINATOR


def test_bundle_golden_and_accepted() -> None:
    b = bundle_for(message())
    assert is_solana_receive(b)
    action = b["unsigned_action"]
    assert action["kinds"] == rx.SOLANA_RECEIVE_KINDS and action["inputAmount"] == "0"
    assert action["expectedOutput"] == str(AMOUNT - FEE_EXECUTED)
    assert action["minimumOutput"] == str(AMOUNT - MAX_FEE)
    assert b["server_signing"] is False and b["server_submission"] is False
    assert errors(b) == set()
    golden = {
        "message_hex": message().hex(),
        "payload_sha256": b["payload_sha256"],
        "unsigned_action": action,
    }
    if REGEN:
        GOLDEN.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")
    assert golden == json.loads(GOLDEN.read_text())


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"destination_domain": 6}, "cctp_message_destination_mismatch"),
        ({"recipient": bytes(Pubkey.new_unique())}, "cctp_message_handler_mismatch"),
        ({"mint_recipient": bytes(Pubkey.new_unique())}, "cctp_message_recipient_mismatch"),
        ({"mint_recipient": bytes(Pubkey.from_string(SOLANA_WALLET))}, "cctp_message_recipient_mismatch"),
        ({"destination_caller": bytes(Pubkey.new_unique())}, "cctp_message_destination_caller_mismatch"),
        ({"fee_executed": MAX_FEE + 1}, "cctp_message_fee_invalid"),
        ({"source_domain": 3}, "cctp_message_source_mismatch"),
        ({"message_sender": b32_evm(EVM_WALLETS["arbitrum"])}, "cctp_message_depositor_mismatch"),
        ({"burn_token": b"\x00" * 12 + b"\x11" * 20}, "cctp_message_token_mismatch"),
    ],
)
def test_a_message_that_is_not_this_steps_burn_to_you_is_refused(
    changes: dict[str, Any], reason: str
) -> None:
    with pytest.raises(ActionUnavailable) as exc:
        bundle_for(message(**changes))
    assert exc.value.reason == reason


def test_malformed_attestation_is_refused() -> None:
    with pytest.raises(ActionUnavailable) as exc:
        bundle_for(message(), ATTESTATION[:64])
    assert exc.value.reason == "cctp_attestation_malformed"


def _swap_message(b: dict[str, Any], msg: bytes) -> None:
    ix = b["unsigned_action"]["instructions"][1]
    _, att = rx.decode_receive_message_data(base64.b64decode(ix["data"])) or (b"", b"")
    ix["data"] = base64.b64encode(rx.receive_message_data(msg, att)).decode()


TAMPERS: dict[str, tuple[Any, str]] = {
    "recipient_account": (
        lambda b: b["unsigned_action"]["instructions"][1]["keys"][15].update(pubkey=str(Pubkey.new_unique())),
        "instruction_mismatch",
    ),
    "message_to_someone_else": (
        lambda b: _swap_message(b, message(mint_recipient=bytes(Pubkey.new_unique()))),
        "cctp_message_recipient_mismatch",
    ),
    "fee_account_is_yours": (
        lambda b: b["unsigned_action"]["instructions"][1]["keys"][14].update(
            pubkey=str(associated_token_address(SOLANA_WALLET, USDC))
        ),
        "fee_account_is_your_token_account",
    ),
    "extra_instruction": (
        lambda b: b["unsigned_action"]["instructions"].append(b["unsigned_action"]["instructions"][0]),
        "instructions_missing",
    ),
    "spend_stated": (lambda b: b["unsigned_action"].update(inputAmount="5"), "amount_mismatch"),
    "lower_minimum": (lambda b: b["unsigned_action"].update(minimumOutput="1"), "amount_mismatch"),
    "server_signing": (lambda b: b.update(server_signing=True), "custody_flag_not_false"),
    "another_signer": (
        lambda b: b["unsigned_action"].update(requiredSigners=[str(Pubkey.new_unique())]),
        "signers_mismatch",
    ),
    # the action's own statement of who receives (the instructions mint to you regardless): must be you
    "recipient_stated": (
        lambda b: b["unsigned_action"].update(recipient=str(Pubkey.new_unique())),
        "recipient_mismatch",
    ),
    "recipient_token_account_stated": (
        lambda b: b["unsigned_action"].update(recipientTokenAccount=str(Pubkey.new_unique())),
        "recipient_mismatch",
    ),
    "used_nonce_of_another_message": (
        lambda b: b["unsigned_action"]["instructions"][1]["keys"][4].update(pubkey=str(Pubkey.new_unique())),
        "instruction_mismatch",
    ),
}


@pytest.mark.parametrize("name", sorted(TAMPERS))
@pytest.mark.parametrize("rehashed", [False, True])
def test_tampering_is_refused(name: str, rehashed: bool) -> None:
    bad = copy.deepcopy(bundle_for(message()))
    tamper, code = TAMPERS[name]
    tamper(bad)
    if rehashed:
        rehash(bad)
    got = errors(bad)
    assert code in got, got
    assert ("payload_sha256_mismatch" in got) is not rehashed


def test_expired_bundle_and_wrong_step_are_refused() -> None:
    b = bundle_for(message())
    assert "bundle_expired" in errors(b, now_unix=NOW + 181)
    other = ROUTES["base:USDC->base:ETH"]
    assert errors(b, route=other, step=other.steps[0]) == {"step_mismatch"}


def test_the_public_verifier_applies_this_rule() -> None:
    from tests.unit.actions.support import intent_for

    from routequote.verify import verify_bundle

    kwargs: dict[str, Any] = {"intent": intent_for(ROUTE.key), "wallets": WALLETS, "now_unix": NOW + 10}
    b = bundle_for(message())
    assert [f for f in verify_bundle(b, **kwargs) if f.severity == "error"] == []
    bad = copy.deepcopy(b)
    TAMPERS["recipient_account"][0](bad)
    rehash(bad)
    assert "instruction_mismatch" in {f.code for f in verify_bundle(bad, **kwargs)}
