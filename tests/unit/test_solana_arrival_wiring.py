"""The session engine's Solana arrivals: the TokenMessenger state the prepared mint needs, and the engine's wiring
to the bound arrival rules (never the balance-only check)."""

from __future__ import annotations

import asyncio
import base64
import hashlib
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from solders.pubkey import Pubkey
from tests.unit.actions.support import START

from routequote.clock import FixedClock
from routequote.config import Settings
from routequote.config_check import problems
from routequote.core.actions.cctp_solana_state import (
    FEE_RECIPIENT_OFFSET,
    TOKEN_MESSENGER_DISCRIMINATOR,
    fee_recipient,
    fee_recipient_token_account,
    token_messenger_address,
)
from routequote.core.actions.common import ActionUnavailable, associated_token_address
from routequote.core.assets import ASSETS
from routequote.core.sessions.kinds import KindKey
from routequote.observe.evm_state import WireError
from routequote.observe.solana import parse_account_data
from routequote.ports import ObservationUnavailable
from routequote.sessions.gather import ChainFacts, SessionConfig

SRC = Path(__file__).resolve().parents[2] / "src" / "routequote"
FEE_OWNER = Pubkey(hashlib.sha256(b"fee recipient").digest())
OTHER = bytes(Pubkey(hashlib.sha256(b"other").digest()))


def token_messenger(fee: bytes = bytes(FEE_OWNER), disc: bytes = TOKEN_MESSENGER_DISCRIMINATOR) -> bytes:
    """Circle's `TokenMessenger` (programs/v2 token_messenger_v2/state.rs): denylister, owner, pending_owner,
    message_body_version u32, authority_bump u8, fee_recipient, min_fee_controller, min_fee u32."""
    return (
        disc + OTHER * 3 + (1).to_bytes(4, "little") + bytes([254]) + fee + OTHER + (0).to_bytes(4, "little")
    )


def test_the_layout_and_discriminator_are_circles() -> None:
    # Anchor's `sha256("account:TokenMessenger")[:8]`; the same bytes sevenlabs-hq/carbon's
    # circle-token-messenger-v2 decoder pins (0xa204f23493f3dd60)
    assert TOKEN_MESSENGER_DISCRIMINATOR.hex() == "a204f23493f3dd60"
    assert FEE_RECIPIENT_OFFSET == 109
    assert len(token_messenger()) == 8 + 32 * 3 + 4 + 1 + 32 + 32 + 4
    expected = Pubkey.find_program_address(
        [b"token_messenger"], Pubkey.from_string("CCTPV2vPZJS2u2BBsUoscuikbYjnpFmbFsvVuJdgUMQe")
    )[0]
    assert token_messenger_address() == str(expected)


def test_the_fee_recipient_token_account_is_its_usdc_ata() -> None:
    data = token_messenger()
    assert fee_recipient(data) == str(FEE_OWNER)
    assert fee_recipient_token_account(data) == str(
        associated_token_address(FEE_OWNER, ASSETS["solana:USDC"])
    )


@pytest.mark.parametrize(
    "data",
    [
        b"",
        token_messenger()[:-1],
        token_messenger(disc=hashlib.sha256(b"account:RemoteTokenMessenger").digest()[:8]),
        token_messenger(fee=bytes(32)),
    ],
    ids=["empty", "short", "another_account", "no_fee_recipient"],
)
def test_anything_else_is_unreadable(data: bytes) -> None:
    with pytest.raises(ActionUnavailable) as e:
        fee_recipient_token_account(data)
    assert e.value.reason == "cctp_token_messenger_state_unreadable"


def test_get_account_info_wire_format() -> None:
    data = token_messenger()
    answer = {"context": {"slot": 1}, "value": {"data": [base64.b64encode(data).decode(), "base64"]}}
    assert parse_account_data(answer) == data
    assert parse_account_data({"context": {"slot": 1}, "value": None}) is None
    for bad in (
        {},
        {"value": {"data": "x"}},
        {"value": {"data": ["!!", "base64"]}},
        {"value": {"data": ["", "jsonParsed"]}},
    ):
        with pytest.raises(WireError):
            parse_account_data(bad)


def test_no_arrival_goes_through_the_balance_only_check() -> None:
    """`verify_solana_delivery` (a balance delta) can advance no CCTP or OFT arrival: no step kind nor the
    engine's gathering calls it; the arrivals call `core.bridge_arrivals`."""
    for path in [*(SRC / "core" / "sessions" / "kinds").glob("*.py"), *(SRC / "sessions").glob("*.py")]:
        assert "verify_solana_delivery" not in path.read_text(), path
    kinds = SRC / "core" / "sessions" / "kinds"
    assert "verify_cctp_solana_mint" in (kinds / "cctp_mint_solana.py").read_text()
    assert "verify_oft_solana_delivery" in (kinds / "oft.py").read_text()


def test_the_oft_program_setting() -> None:
    assert Settings().usdg_oft_solana_program == ""
    assert Settings().layerzero_scan_url.startswith("https://")
    bad = problems(Settings(usdg_oft_solana_program="not-a-key"))
    assert any("ROUTEQUOTE_USDG_OFT_SOLANA_PROGRAM" in p for p in bad)
    assert not any("USDG_OFT" in p for p in problems(Settings(usdg_oft_solana_program=str(FEE_OWNER))))


def test_an_oft_arrival_without_the_program_pinned_is_unverifiable() -> None:
    class Never:
        async def transaction(self, signature: str) -> Any:  # pragma: no cover - must not be reached
            raise AssertionError("no transaction is read without the program pinned")

    prepare: Any = SimpleNamespace(service=SimpleNamespace(clock=FixedClock(START)), deployments={})
    facts = ChainFacts(prepare, SessionConfig(), None, Never(), None)  # type: ignore[arg-type]
    state: Any = type("S", (), {"current_step": 0, "steps": [{"bridge": {"guid": "0x" + "11" * 32}}]})()
    with pytest.raises(ObservationUnavailable) as e:
        asyncio.run(facts.observe(KindKey.OFT, state, None, ["1" * 88]))  # type: ignore[arg-type]
    assert e.value.reason == "usdg_oft_solana_program_not_pinned"


def test_an_oft_arrival_while_the_setting_and_the_chain_disagree_is_refused() -> None:
    class Never:
        async def transaction(self, signature: str) -> Any:  # pragma: no cover - must not be reached
            raise AssertionError("no transaction is read while the pin is in dispute")

    prepare: Any = SimpleNamespace(service=SimpleNamespace(clock=FixedClock(START)), deployments={})
    config = SessionConfig(usdg_oft_solana_program=str(FEE_OWNER), usdg_oft_pin_problem="setting disagrees")
    facts = ChainFacts(prepare, config, None, Never(), None)  # type: ignore[arg-type]
    state: Any = type("S", (), {"current_step": 0, "steps": [{"bridge": {"guid": "0x" + "11" * 32}}]})()
    with pytest.raises(ObservationUnavailable) as e:
        asyncio.run(facts.observe(KindKey.OFT, state, None, ["1" * 88]))  # type: ignore[arg-type]
    assert (e.value.reason, e.value.message) == ("usdg_oft_solana_program_disagreement", "setting disagrees")


def test_routequote_verify_action_accepts_the_solana_mint_and_refuses_it_tampered(tmp_path: Path) -> None:
    """The prepared Solana receive_message passes the offline `routequote verify-action` (what a caller runs
    before signing the session's next action); a tampered recipient account fails it."""
    import copy
    import json

    from tests.unit.actions.support import intent_for, rehash
    from tests.unit.actions.test_cctp_solana_receive import NOW, ROUTE, TAMPERS, WALLETS, bundle_for, message
    from typer.testing import CliRunner

    from routequote.cli import app

    good = bundle_for(message())
    bad = copy.deepcopy(good)
    TAMPERS["recipient_account"][0](bad)
    rehash(bad)
    (tmp_path / "intent.json").write_text(json.dumps(intent_for(ROUTE.key)))
    (tmp_path / "wallets.json").write_text(json.dumps(WALLETS))
    codes = []
    for name, b in (("good", good), ("bad", bad)):
        f = tmp_path / f"{name}.json"
        f.write_text(json.dumps(b))
        args = ["verify-action", str(f), "--intent", str(tmp_path / "intent.json")]
        args += ["--wallets", str(tmp_path / "wallets.json"), "--now", str(NOW + 10)]
        codes.append(CliRunner().invoke(app, args).exit_code)
    assert codes == [0, 1]
