"""The Solana service fee is checked by the caller-side verifier on its own, never with the service's builder
(issue 45): real prepared Raydium SOL/USDC, Orca USDC/USDG and CCTP bundles in which a hostile server pays the
1 bp fee to a stranger's token account, and re-hashes everything, are refused with `fee_recipient_mismatch`
whether or not the caller pinned the fee recipient; so is a bundle the service's own fee builder got wrong."""

from __future__ import annotations

import asyncio
import base64
import copy
import struct
from collections.abc import Callable
from typing import Any

import pytest
from solders.instruction import Instruction
from solders.pubkey import Pubkey
from solders.token.associated import get_associated_token_address
from tests.unit.actions.support import FEE_RECIPIENTS, SETTINGS, Prepared, make_env, prepare_route, rehash

from routequote.core.actions import solana as sol
from routequote.core.actions.plan import StepPlan
from routequote.core.assets import ASSETS, Asset
from routequote.core.verify.solana_fee import token_account_of
from routequote.verify import verify_bundle

STRANGER = str(Pubkey(bytes([42] * 32)))  # nobody the caller knows
FEE_ROUTES = [
    "solana:SOL->solana:USDC",  # Raydium CLMM, fee paid in wSOL after the wrap
    "solana:USDC->solana:SOL",  # Raydium CLMM, output unwrapped
    "solana:USDC->solana:USDG",  # Orca Whirlpool
    "solana:USDC->base:USDC",  # CCTP burn (caught before only by the whole-list comparison)
]
# the fee recipient's token accounts as the service states them in the prepared bundles (golden)
GOLDEN_FEE_ACCOUNTS = {
    "solana:SOL": "CuTzvSMPFw8tRkr6TfF2GW7uV8DyEREoY3LQ3kmdF6CG",
    "solana:USDC": "Bp2nhYfyuMaWptkzgydsWrrRi9gy7rC41NqZ6w3fNvF4",
}


def _errors(p: Prepared, bundle: dict[str, Any], pinned: bool) -> set[str]:
    kwargs = p.verify_kwargs()
    if not pinned:
        kwargs.pop("fee_recipients")
    return {f.code for f in verify_bundle(bundle, **kwargs) if f.severity == "error"}


@pytest.fixture(scope="module", params=FEE_ROUTES)
def prepared(request: pytest.FixtureRequest) -> Prepared:
    return asyncio.run(prepare_route(make_env(), request.param, 100))


def _fee_ixs(bundle: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    action = bundle["unsigned_action"]
    kinds, ixs = action["kinds"], action["instructions"]
    create = ixs[kinds.index("create_fee_recipient_token_account")]
    transfer = ixs[kinds.index("service_fee_transfer_checked")]
    return create, transfer


def _source_asset(bundle: dict[str, Any]) -> Asset:
    return ASSETS[bundle["unsigned_action"]["source"]]


def test_the_verifier_derives_the_same_token_accounts_as_the_spl_library() -> None:
    recipient = Pubkey.from_string(SETTINGS.fee_recipient_solana)
    for key in ("solana:SOL", "solana:USDC", "solana:USDG"):  # SPL Token and Token-2022 mints
        a = ASSETS[key]
        mint = Pubkey.from_string(a.address or a.wrapped_address or "")
        program = Pubkey.from_string(a.token_program or "")
        assert token_account_of(str(recipient), a) == str(
            get_associated_token_address(recipient, mint, program)
        )
    for key, golden in GOLDEN_FEE_ACCOUNTS.items():
        assert token_account_of(SETTINGS.fee_recipient_solana, ASSETS[key]) == golden
    assert token_account_of("not a key", ASSETS["solana:USDC"]) is None


@pytest.mark.parametrize("pinned", [True, False])
async def test_an_untampered_bundle_passes(prepared: Prepared, pinned: bool) -> None:
    action = prepared.bundle["unsigned_action"]
    want = GOLDEN_FEE_ACCOUNTS[action["source"]]
    assert (
        action["feeRecipientTokenAccount"] == want
        and _fee_ixs(prepared.bundle)[1]["keys"][2]["pubkey"] == want
    )
    assert _errors(prepared, prepared.bundle, pinned) == set()


def _pay_the_stranger(bundle: dict[str, Any]) -> None:
    """What a hostile server does: the fee account created and paid is the stranger's; the action's stated
    fee account follows, the receipt still names the real recipient."""
    stranger_account = token_account_of(STRANGER, _source_asset(bundle))
    create, transfer = _fee_ixs(bundle)
    create["keys"][1]["pubkey"], create["keys"][2]["pubkey"] = stranger_account, STRANGER
    transfer["keys"][2]["pubkey"] = stranger_account
    bundle["unsigned_action"]["feeRecipientTokenAccount"] = stranger_account


def _pay_the_stranger_only_in_the_instruction(bundle: dict[str, Any]) -> None:
    _fee_ixs(bundle)[1]["keys"][2]["pubkey"] = token_account_of(STRANGER, _source_asset(bundle))


def _pay_the_stranger_by_plain_transfer(bundle: dict[str, Any]) -> None:
    """TransferChecked replaced by SPL `Transfer` (tag 3, no mint) to the stranger's account."""
    _, transfer = _fee_ixs(bundle)
    data = base64.b64decode(transfer["data"])
    source, _mint, _dest, owner = transfer["keys"]
    stranger = {
        "pubkey": token_account_of(STRANGER, _source_asset(bundle)),
        "isSigner": False,
        "isWritable": True,
    }
    transfer["keys"] = [source, stranger, owner]
    transfer["data"] = base64.b64encode(bytes([3]) + data[1:9]).decode()


TAMPERS: dict[str, Callable[[dict[str, Any]], None]] = {
    "stranger_everywhere_but_the_receipt": _pay_the_stranger,
    "stranger_in_the_transfer_only": _pay_the_stranger_only_in_the_instruction,
    "stranger_by_plain_transfer": _pay_the_stranger_by_plain_transfer,
}


@pytest.mark.parametrize("pinned", [True, False])
@pytest.mark.parametrize("name", sorted(TAMPERS))
async def test_a_fee_to_a_stranger_is_refused(prepared: Prepared, name: str, pinned: bool) -> None:
    bundle = copy.deepcopy(prepared.bundle)
    TAMPERS[name](bundle)
    assert "payload_sha256_mismatch" in _errors(prepared, bundle, pinned)
    errors = _errors(prepared, rehash(bundle), pinned)
    assert "fee_recipient_mismatch" in errors, errors
    assert not errors & {"payload_sha256_mismatch", "action_sha256_mismatch", "raw_payload_hash_mismatch"}


async def test_a_receipt_and_action_naming_the_stranger_are_refused_when_pinned(prepared: Prepared) -> None:
    """Consistent throughout, the stranger can only be told apart by the caller's pin: unpinned, the verifier
    checks the payload against the receipt and warns that nothing was pinned."""
    bundle = copy.deepcopy(prepared.bundle)
    _pay_the_stranger(bundle)
    action = bundle["unsigned_action"]
    action["feeRecipient"] = action["safety_receipt"]["service_fee"]["recipient"] = STRANGER
    rehash(bundle)
    assert "fee_recipient_mismatch" in _errors(prepared, bundle, pinned=True)
    kwargs = {k: v for k, v in prepared.verify_kwargs().items() if k != "fee_recipients"}
    findings = {(f.code, f.severity) for f in verify_bundle(bundle, **kwargs)}
    assert ("fee_recipient_not_pinned", "warning") in findings
    assert not any(severity == "error" for _, severity in findings)


@pytest.mark.parametrize("delta", [1, -1])
async def test_a_fee_amount_off_the_rule_is_refused(prepared: Prepared, delta: int) -> None:
    bundle = copy.deepcopy(prepared.bundle)
    _, transfer = _fee_ixs(bundle)
    data = bytearray(base64.b64decode(transfer["data"]))
    struct.pack_into("<Q", data, 1, struct.unpack_from("<Q", data, 1)[0] + delta)
    transfer["data"] = base64.b64encode(bytes(data)).decode()
    action = bundle["unsigned_action"]
    want = int(action["inputAmount"]) // 10_000
    assert want > 1 and struct.unpack_from("<Q", data, 1)[0] == want + delta
    assert "service_fee_mismatch" in _errors(prepared, rehash(bundle), pinned=True)


def _planted_fee_transfer(plan: StepPlan, src: Asset, ixs: list[Instruction], kinds: list[str]) -> str | None:
    """issue 45's planted bug: the builder pays the 1 bp fee to a stranger's token account."""
    if not plan.fee_base:
        return None
    ixs.append(sol.create_ata_idempotent(plan.caller, STRANGER, src))
    kinds.append("create_fee_recipient_token_account")
    ixs.append(sol.transfer_checked(plan.caller, STRANGER, src, plan.fee_base))
    kinds.append("service_fee_transfer_checked")
    return str(sol.associated_token_address(STRANGER, src))


@pytest.mark.parametrize("route_key", FEE_ROUTES)
async def test_a_builder_that_pays_a_stranger_is_refused(
    monkeypatch: pytest.MonkeyPatch, route_key: str
) -> None:
    """The service's own bundle, hashes and receipt consistent, built by a fee builder that pays a stranger:
    the verifier's expectation does not come from that builder, so the wallet check refuses it."""
    monkeypatch.setattr(sol, "_append_fee_transfer", _planted_fee_transfer)
    p = await prepare_route(make_env(), route_key, 100)
    assert _fee_ixs(p.bundle)[1]["keys"][2]["pubkey"] == token_account_of(STRANGER, _source_asset(p.bundle))
    for pinned in (True, False):
        assert "fee_recipient_mismatch" in _errors(p, p.bundle, pinned)


async def test_a_fee_recipient_pin_that_is_no_solana_address_is_refused(prepared: Prepared) -> None:
    kwargs = {**prepared.verify_kwargs(), "fee_recipients": {**FEE_RECIPIENTS, "solana": "0x" + "99" * 20}}
    assert "fee_recipient_mismatch" in {f.code for f in verify_bundle(prepared.bundle, **kwargs)}
