"""Where an action's bounds came from (`safety_receipt.bounds`, core/bounds.py) and the verifier's rule about it:
a bundle priced from the embedded snapshot, a fallback component or snapshot-built Solana tick arrays says
`basis: modelled` and is refused (`bounds_modelled_not_live`) unless the caller accepts modelled bounds; a
bundle priced from the live market (recorded upstreams) is not marked and verifies without it."""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.recordings.fake_upstreams import FakeUpstreams, live_config
from tests.unit.actions.support import (
    EVENT_SIGNER,
    FEE_RECIPIENTS,
    SETTINGS,
    Prepared,
    approval_for,
    intent_for,
    make_env,
    prepare_route,
    wallets_for,
)
from tests.unit.actions.test_solana_swaps import pinned_live_market, pinned_orca_upstreams
from typer.testing import CliRunner

from routequote.cli import app
from routequote.clock import FixedClock, SequentialIds
from routequote.core.actions.bundle import payload_sha256
from routequote.core.bounds import bounds_block, execution_mode, market_label
from routequote.core.routes import ROUTES
from routequote.core.verify.handoff import caller_wallet_handoff, verify_handoff
from routequote.market.live import LiveMarket
from routequote.market.mode import market_execution_mode
from routequote.market.snapshot import EmbeddedSnapshot
from routequote.prepare import PrepareService
from routequote.service import RouteQuoteService, ServiceConfig
from routequote.storage.quotes import MemoryIdempotencyStore, MemoryQuoteStore
from routequote.verify import BundleRejected, assert_bundle_ok, verify_bundle

SNAPSHOT_AS_OF = EmbeddedSnapshot().current().as_of
T0 = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)  # the recordings' time (tests/integration/test_live_market.py)
runner = CliRunner()


def _codes(bundle: dict[str, Any], kwargs: dict[str, Any], severity: str = "error") -> list[str]:
    return [f.code for f in verify_bundle(bundle, **kwargs) if f.severity == severity]


def _strict(p: Prepared) -> dict[str, Any]:
    """The verifier's arguments without the accept option: its default."""
    return {k: v for k, v in p.verify_kwargs().items() if k != "accept_modelled_bounds"}


def _bounds(bundle: dict[str, Any]) -> dict[str, Any]:
    b: dict[str, Any] = bundle["unsigned_action"]["safety_receipt"]["bounds"]
    return b


def _resealed(bundle: dict[str, Any], edit: Any) -> dict[str, Any]:
    """`bundle` with its receipt edited and its payload hash recomputed (the receipt is outside action_sha256)."""
    out = copy.deepcopy(bundle)
    edit(out["unsigned_action"]["safety_receipt"])
    out["payload_sha256"] = payload_sha256(out)
    return out


# ---- the embedded market: modelled, refused by default ---------------------------------------------------


async def test_an_embedded_bundle_says_modelled_and_is_refused_unless_accepted() -> None:
    p = await prepare_route(make_env(), "base:ETH->base:USDC", 100)
    pool = ROUTES["base:ETH->base:USDC"].steps[0].pool_id
    assert _bounds(p.bundle) == {
        "basis": "modelled",
        "market_source": "embedded_snapshot",
        "live": False,
        "data_as_of": SNAPSHOT_AS_OF,
        "modelled_parts": [f"market:{pool}"],
        "snapshot_as_of": SNAPSHOT_AS_OF,
        "statement": f"bounds are modelled from the embedded snapshot of {SNAPSHOT_AS_OF}, not live market data "
        f"(market:{pool})",
    }
    findings = verify_bundle(p.bundle, **_strict(p))
    errors = [f for f in findings if f.severity == "error"]
    assert [f.code for f in errors] == ["bounds_modelled_not_live"]
    assert (
        f"modelled from the embedded snapshot of {SNAPSHOT_AS_OF}, not live market data" in errors[0].message
    )
    assert "--accept-modelled-bounds" in errors[0].message
    with pytest.raises(BundleRejected):
        assert_bundle_ok(p.bundle, **_strict(p))
    accepted = verify_bundle(p.bundle, **_strict(p), accept_modelled_bounds=True)
    assert [f.code for f in accepted if f.severity == "error"] == []
    assert [f.code for f in accepted if f.severity == "warning"] == ["bounds_modelled_accepted"]


async def test_every_route_prepared_from_the_embedded_market_is_modelled() -> None:
    env = make_env()
    for key, route in sorted(ROUTES.items()):
        p = await prepare_route(env, key, 250)
        bounds = _bounds(p.bundle)
        step = route.steps[0]
        assert (
            bounds["basis"] == "modelled"
            and f"market:{step.pool_id or step.provider.value}" in (bounds["modelled_parts"])
        ), key
        if step.provider.value in ("orca_whirlpool", "raydium_clmm"):  # tick arrays from the snapshot's state
            assert f"solana_tick_arrays:{step.pool_id}" in bounds["modelled_parts"], key
        assert _codes(p.bundle, _strict(p)) == ["bounds_modelled_not_live"], key


async def test_the_bounds_block_cannot_be_relabelled_live() -> None:
    p = await prepare_route(make_env(), "solana:USDC->solana:USDG", 100)  # an Orca swap from the snapshot

    def live_claim(r: dict[str, Any]) -> None:
        r["bounds"].update(basis="live", modelled_parts=[])

    def live_source(r: dict[str, Any]) -> None:  # also claims a live market: the action shows snapshot state
        r["bounds"].update(basis="live", modelled_parts=[], market_source="live", live=True)

    def mismatch(r: dict[str, Any]) -> None:
        r["bounds"].update(basis="live")

    for edit in (live_claim, live_source, mismatch):
        tampered = _resealed(p.bundle, edit)
        for accept in (False, True):  # an inconsistent block is refused whatever the caller accepts
            assert "bounds_provenance_inconsistent" in _codes(
                tampered, {**_strict(p), "accept_modelled_bounds": accept}
            ), edit.__name__

    missing = _resealed(p.bundle, lambda r: r.pop("bounds"))
    assert _codes(missing, _strict(p)) == ["bounds_modelled_not_live"]  # unlabelled is taken as modelled
    malformed = _resealed(p.bundle, lambda r: r.update(bounds="live"))
    assert "bounds_provenance_malformed" in _codes(malformed, {**_strict(p), "accept_modelled_bounds": True})
    unhashed = copy.deepcopy(p.bundle)
    live_claim(unhashed["unsigned_action"]["safety_receipt"])
    assert "payload_sha256_mismatch" in _codes(unhashed, _strict(p))


async def test_the_handoff_of_modelled_bounds_says_so() -> None:
    p = await prepare_route(make_env(), "base:ETH->base:USDC", 100)
    handoff = caller_wallet_handoff(p.bundle)
    assert handoff["bounds"]["basis"] == "modelled" and handoff["bounds"]["modelled_not_live"] is True
    assert handoff["bounds"]["sign_only_on_a_test_or_local_chain"] is True
    assert SNAPSHOT_AS_OF in handoff["bounds"]["statement"]
    assert verify_handoff(handoff, p.bundle) == []
    relabelled = copy.deepcopy(handoff)
    relabelled["bounds"] = {"basis": "live", "statement": "bounds are from live market data"}
    assert "handoff_differs_from_bundle_actions" in verify_handoff(relabelled, p.bundle)


# ---- session steps and fallbacks (the pure rule) --------------------------------------------------------


def test_a_session_step_held_to_a_modelled_quote_is_modelled_even_on_a_live_requote() -> None:
    route = ROUTES["base:ETH->arbitrum:USDC"]
    live = market_label("live", True, "2026-11-27T12:00:00Z")
    quoted = market_label("embedded_snapshot", False, SNAPSHOT_AS_OF)
    components = [route.steps[0].pool_id or "", route.steps[1].provider.value]
    block = bounds_block(
        live, route.steps[1], approved_quote_market=quoted, approved_quote_components=components
    )
    assert block["basis"] == "modelled" and block["snapshot_as_of"] == SNAPSHOT_AS_OF
    assert block["modelled_parts"] == sorted(f"approved_quote:{c}" for c in components)
    held_live = bounds_block(
        live, route.steps[1], approved_quote_market=live, approved_quote_components=components
    )
    assert held_live["basis"] == "live" and held_live["modelled_parts"] == []


def test_a_fallback_marks_only_the_steps_priced_from_it() -> None:
    fallback = market_label("live+embedded_fallback", False, SNAPSHOT_AS_OF, ["circle_cctp"])
    cctp_step = ROUTES["base:USDC->arbitrum:USDC"].steps[0]
    swap_step = ROUTES["base:ETH->base:USDC"].steps[0]
    assert bounds_block(fallback, cctp_step)["modelled_parts"] == ["market:circle_cctp"]
    swap = bounds_block(fallback, swap_step)
    assert swap["basis"] == "live" and swap["live"] is False  # the view is not live; this step's bound is
    # a non-live label that does not list its fallbacks: everything it priced counts as modelled
    unlisted = market_label("live+embedded_fallback", False, SNAPSHOT_AS_OF)
    assert bounds_block(unlisted, swap_step)["basis"] == "modelled"


def test_execution_mode_says_live_or_modelled() -> None:
    embedded = market_execution_mode(EmbeddedSnapshot())
    assert embedded["bounds"] == "modelled" and embedded["snapshot_as_of"] == SNAPSHOT_AS_OF
    assert (
        embedded["refusal_code"] == "bounds_modelled_not_live"
        and "not live market data" in embedded["statement"]
    )
    live = execution_mode("live", fallback_to_snapshot=False, snapshot_as_of=SNAPSHOT_AS_OF)
    assert live["bounds"] == "live" and live["snapshot_as_of"] is None and "no fallback" in live["statement"]
    fallback = execution_mode(
        "live", fallback_to_snapshot=True, snapshot_as_of=SNAPSHOT_AS_OF, fallback_components=["circle_cctp"]
    )
    assert fallback["bounds"] == "live" and fallback["fallback_components_now"] == ["circle_cctp"]


# ---- the live market (recorded upstreams): not marked ---------------------------------------------------


@dataclass
class LiveRig:
    clock: FixedClock
    fake: FakeUpstreams
    market: LiveMarket
    prepare: PrepareService

    async def prepared(self, route_key: str, usd: float = 100) -> tuple[dict[str, Any], dict[str, Any]]:
        intent = intent_for(route_key, usd)
        quote = await self.prepare.service.quote_request(intent)
        approval = approval_for(quote)
        body = {"caller_approved": True, **intent, "wallets": wallets_for(route_key), "approval_v3": approval}
        signer = EVENT_SIGNER if ROUTES[route_key].event_signer_required else None
        if signer:
            body["event_signer_public"] = signer
        bundle = await self.prepare.prepare(body, mode=approval["selected_mode"])
        kwargs = {
            "intent": intent,
            "wallets": wallets_for(route_key),
            "approval_v3": approval,
            "direct_route_summary": quote["direct_route_summary"],
            "now_unix": int(self.clock.now().timestamp()),
            "fee_recipients": FEE_RECIPIENTS,
            "event_signer_public": signer,
        }
        return bundle, kwargs


def _rig(market_of: Any) -> LiveRig:
    clock = FixedClock(T0)
    fake = pinned_orca_upstreams(clock)
    market = market_of(clock, fake)
    service = RouteQuoteService(market, MemoryQuoteStore(), clock, SequentialIds(), ServiceConfig())
    prepare = PrepareService(service, SETTINGS, idempotency=MemoryIdempotencyStore())
    return LiveRig(clock, fake, market, prepare)


@pytest.fixture
async def live() -> AsyncIterator[LiveRig]:
    rig = _rig(pinned_live_market)
    yield rig
    await rig.market.aclose()


@pytest.fixture
async def fallback() -> AsyncIterator[LiveRig]:
    def market(clock: Any, fake: FakeUpstreams) -> LiveMarket:
        return LiveMarket(
            live_config(fallback="embedded"), clock, http=httpx.AsyncClient(transport=fake.transport())
        )

    rig = _rig(market)
    yield rig
    await rig.market.aclose()


@pytest.mark.parametrize(
    "route_key", ["base:ETH->base:USDC", "solana:USDC->solana:USDG", "base:USDC->arbitrum:USDC"]
)
async def test_a_live_market_bundle_is_not_marked_and_verifies_without_accepting(
    live: LiveRig, route_key: str
) -> None:
    bundle, kwargs = await live.prepared(route_key, 250)
    bounds = _bounds(bundle)
    assert bounds["basis"] == "live" and bounds["modelled_parts"] == [] and bounds["snapshot_as_of"] is None
    assert bounds["market_source"] == "live" and bounds["live"] is True
    assert bounds["statement"] == f"bounds are from live market data as of {bounds['data_as_of']}"
    assert _codes(bundle, kwargs) == [] and "bounds_modelled_accepted" not in _codes(
        bundle, kwargs, "warning"
    )
    assert caller_wallet_handoff(bundle)["bounds"]["basis"] == "live"


async def test_a_fallback_component_marks_the_bundles_that_use_it(fallback: LiveRig) -> None:
    fallback.fake.faults["iris.test"] = "timeout"  # CCTP fees fall back to the snapshot
    cctp, cctp_kwargs = await fallback.prepared("base:USDC->arbitrum:USDC", 100)
    bounds = _bounds(cctp)
    assert bounds["market_source"] == "live+embedded_fallback" and bounds["live"] is False
    assert bounds["basis"] == "modelled" and bounds["modelled_parts"] == ["market:circle_cctp"]
    assert _codes(cctp, cctp_kwargs) == ["bounds_modelled_not_live"]
    swap, swap_kwargs = await fallback.prepared("base:ETH->base:USDC", 100)
    assert _bounds(swap)["basis"] == "live" and _codes(swap, swap_kwargs) == []


async def test_verify_action_says_live_or_accepted_as_modelled(live: LiveRig, tmp_path: Path) -> None:
    def run(bundle: dict[str, Any], kwargs: dict[str, Any], *extra: str) -> Any:
        for name in ("bundle", "intent", "wallets", "approval", "summary"):
            value = {
                "bundle": bundle,
                "intent": kwargs["intent"],
                "wallets": kwargs["wallets"],
                "approval": kwargs["approval_v3"],
                "summary": {"direct_route_summary": kwargs["direct_route_summary"]},
            }[name]
            (tmp_path / f"{name}.json").write_text(json.dumps(value))
        args = ["verify-action", str(tmp_path / "bundle.json"), "--intent", str(tmp_path / "intent.json")]
        args += ["--wallets", str(tmp_path / "wallets.json"), "--approval", str(tmp_path / "approval.json")]
        args += ["--quote", str(tmp_path / "summary.json"), "--now", str(kwargs["now_unix"])]
        args += ["--fee-recipient-evm", FEE_RECIPIENTS["evm"], "--accept-unconfigured-fee-recipient", *extra]
        return runner.invoke(app, args)

    bundle, kwargs = await live.prepared("base:ETH->base:USDC", 100)
    ok = run(bundle, kwargs)
    assert ok.exit_code == 0, ok.output
    assert (
        "bounds are from live market data as of" in ok.output and "safe to hand to your wallet" in ok.output
    )

    p = await prepare_route(make_env(), "base:ETH->base:USDC", 100)
    embedded = p.verify_kwargs()
    refused = run(p.bundle, embedded)
    assert refused.exit_code == 1 and "FAIL bounds_modelled_not_live" in refused.output
    assert f"modelled from the embedded snapshot of {SNAPSHOT_AS_OF}, not live market data" in refused.output
    assert "safe to hand" not in refused.output
    accepted = run(p.bundle, embedded, "--accept-modelled-bounds")
    assert accepted.exit_code == 0, accepted.output
    assert "ACCEPTED AS MODELLED" in accepted.output and "safe to hand" not in accepted.output
