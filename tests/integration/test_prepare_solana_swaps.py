"""POST /v2/prepare for Solana swap routes over HTTP (the real composition root).

With a live market whose Orca USDG/USDC pool is the pinned account (recorded Solana RPC responses, the
rig of test_live_market.py), the Orca routes are prepare-ready in /v2/capabilities and /v2/prepare returns
a bundle the caller-side verifier accepts; the quote says `first_unsigned_action_supported: true`. With the
embedded snapshot the same routes are built from the snapshot's pool state, labelled `pool_state_source: snapshot`.
Raydium routes are prepare-ready only when the live market reads the pinned Raydium pool account (its
observation and initialized tick arrays come from that read): then each of the 9 prepares over HTTP and
verifies; a live market reading another account, or the embedded snapshot, refuses them."""

from __future__ import annotations

import base64
import struct
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from tests.unit.actions.support import EVENT_SIGNER, FEE_RECIPIENTS, approval_for, intent_for, wallets_for
from tests.unit.actions.test_solana_swaps import (
    pinned_live_market,
    pinned_orca_upstreams,
    pinned_raydium_upstreams,
)

from routequote.app import create_app
from routequote.clock import FixedClock, SequentialIds
from routequote.config import Settings
from routequote.core.actions import solana_swaps as sw
from routequote.core.routes import ROUTES, Provider
from routequote.verify import verify_bundle

T0 = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)  # the recordings' time
ROUTE = "solana:USDG->solana:USDC"
REVERSE = "solana:USDC->solana:USDG"
RAYDIUM = "solana:SOL->solana:USDC"
RAYDIUM_ROUTES = sorted(k for k, r in ROUTES.items() if r.steps[0].provider is Provider.RAYDIUM_CLMM)


class Api:
    def __init__(self, live: bool, raydium: bool = False) -> None:
        self.clock = FixedClock(T0)
        self.ids = SequentialIds()
        self.fake = pinned_raydium_upstreams(self.clock) if raydium else pinned_orca_upstreams(self.clock)
        market = pinned_live_market(self.clock, self.fake, raydium=raydium) if live else None
        self.market = market
        self.app = create_app(Settings(rate_limit="off"), market=market, clock=self.clock, ids=self.ids)
        self.client = httpx.AsyncClient(transport=httpx.ASGITransport(app=self.app), base_url="http://test")

    async def quote(self, route_key: str, usd: int = 100) -> dict[str, Any]:
        r = await self.client.post("/v2/quote", json=intent_for(route_key, usd))
        assert r.status_code == 200, r.text
        q: dict[str, Any] = r.json()
        return q

    async def capabilities(self) -> dict[str, Any]:
        r = await self.client.get("/v2/capabilities")
        assert r.status_code == 200, r.text
        c: dict[str, Any] = r.json()
        return c

    async def aclose(self) -> None:
        await self.client.aclose()
        if self.market is not None:
            await self.market.aclose()


@pytest.fixture
async def live() -> AsyncIterator[Api]:
    a = Api(live=True)
    yield a
    await a.aclose()


@pytest.fixture
async def live_raydium() -> AsyncIterator[Api]:
    a = Api(live=True, raydium=True)
    yield a
    await a.aclose()


@pytest.fixture
async def embedded() -> AsyncIterator[Api]:
    a = Api(live=False)
    yield a
    await a.aclose()


def _unavailable(caps: dict[str, Any]) -> dict[str, str]:
    def find(x: Any) -> list[dict[str, Any]] | None:
        if isinstance(x, dict):
            if "temporarily_unavailable_routes" in x:
                rows: list[dict[str, Any]] = x["temporarily_unavailable_routes"]
                return rows
            for v in x.values():
                got = find(v)
                if got is not None:
                    return got
        return None

    rows = find(caps)
    assert rows is not None
    return {r["route"]: r["reason"] for r in rows}


@pytest.mark.parametrize("route_key", [ROUTE, REVERSE])
async def test_live_pinned_pool_prepares_a_verified_swap(live: Api, route_key: str) -> None:
    unavailable = _unavailable(await live.capabilities())
    assert route_key not in unavailable
    assert RAYDIUM not in unavailable  # readiness does not depend on the market; prepare-time reads decide
    quote = await live.quote(route_key, 500)
    assert quote["market"]["live"] is True and quote["market"]["source"] == "live"
    assert quote["execution"]["first_unsigned_action_supported"] is True
    approval = approval_for(quote)
    wallets = wallets_for(route_key)
    body = {
        "caller_approved": True,
        **intent_for(route_key, 500),
        "wallets": wallets,
        "approval_v3": approval,
    }
    r = await live.client.post("/v2/prepare", json=body)
    assert r.status_code == 200, r.text
    bundle = r.json()
    findings = verify_bundle(
        bundle,
        intent=intent_for(route_key, 500),
        wallets=wallets,
        now_unix=int(T0.timestamp()),
        approval_v3=approval,
        direct_route_summary=quote["direct_route_summary"],
        fee_recipients=FEE_RECIPIENTS,
    )
    assert not [f for f in findings if f.severity == "error"], findings
    action = bundle["unsigned_action"]
    swap = action["instructions"][-1]
    assert swap["programId"] == str(sw.ORCA_WHIRLPOOL_PROGRAM)
    keys = [k["pubkey"] for k in swap["keys"]]
    assert keys[4] == sw.ORCA_USDG_USDC.whirlpool and keys[14] == sw.ORCA_USDG_USDC.oracle
    assert action["safety_receipt"]["bounds"] == {
        "basis": "live",
        "market_source": "live",
        "live": True,
        "data_as_of": quote["market"]["data_as_of"],
        "modelled_parts": [],
        "snapshot_as_of": None,
        "statement": f"bounds are from live market data as of {quote['market']['data_as_of']}",
    }
    amount, minimum = struct.unpack_from("<QQ", base64.b64decode(swap["data"]), 8)
    assert (amount, minimum) == (int(action["netInputAmount"]), int(action["minimumOutput"]))
    assert minimum >= int(approval["minimum_output_base"])
    assert bundle["server_signing"] is False and bundle["server_submission"] is False


def _prepare_approval(quote: dict[str, Any]) -> dict[str, Any] | None:
    """The approval /v2/prepare takes: one_shot where the quote allows it; a multi-step route's step 0 is
    prepared as a legacy advisory action (no approval), since its session approval belongs to /v2/session."""
    return approval_for(quote) if "one_shot" in quote["continuation_v3"]["allowed_modes"] else None


def _prepare_body(route_key: str, usd: float, approval: dict[str, Any] | None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "caller_approved": True,
        **intent_for(route_key, usd),
        "wallets": wallets_for(route_key),
    }
    if approval is not None:
        body["approval_v3"] = approval
    return body


async def _prepare_verified(api: Api, route_key: str, usd: float = 100) -> dict[str, Any]:
    quote = await api.quote(route_key, usd)
    assert quote["execution"]["first_unsigned_action_supported"] is True
    approval = _prepare_approval(quote)
    wallets = wallets_for(route_key)
    body = _prepare_body(route_key, usd, approval)
    signer = EVENT_SIGNER if ROUTES[route_key].event_signer_required else None
    if signer:
        body["event_signer_public"] = signer
    r = await api.client.post("/v2/prepare", json=body)
    assert r.status_code == 200, r.text
    bundle: dict[str, Any] = r.json()
    findings = verify_bundle(
        bundle,
        intent=intent_for(route_key, usd),
        wallets=wallets,
        now_unix=int(api.clock.now().timestamp()),
        accept_modelled_bounds=True,  # the embedded market
        approval_v3=approval,
        direct_route_summary=quote["direct_route_summary"],
        fee_recipients=FEE_RECIPIENTS,
        event_signer_public=signer,
    )
    assert not [f for f in findings if f.severity == "error"], findings
    return bundle


async def test_embedded_snapshot_prepares_the_swap_route_and_labels_it(embedded: Api) -> None:
    assert ROUTE not in _unavailable(await embedded.capabilities())
    bundle = await _prepare_verified(embedded, ROUTE)
    action = bundle["unsigned_action"]
    assert action["pool_state_source"] == "snapshot" and "modelled" in action["pool_state_note"]
    assert action["instructions"][-1]["programId"] == str(sw.ORCA_WHIRLPOOL_PROGRAM)


async def test_raydium_route_refused_when_the_live_market_reads_another_pool_account(live: Api) -> None:
    before = live.ids._n
    body = {"caller_approved": True, **intent_for(RAYDIUM), "wallets": wallets_for(RAYDIUM)}
    r = await live.client.post("/v2/prepare", json=body)
    assert r.status_code == 400, r.text
    assert r.json()["reason_class"] == "route_not_prepare_ready"
    assert "solana_pool_state_unavailable" in r.text
    assert live.ids._n == before


@pytest.mark.parametrize("route_key", RAYDIUM_ROUTES)
async def test_embedded_snapshot_prepares_every_raydium_route(embedded: Api, route_key: str) -> None:
    assert not set(RAYDIUM_ROUTES) & set(_unavailable(await embedded.capabilities()))
    bundle = await _prepare_verified(embedded, route_key, 300)
    action = bundle["unsigned_action"]
    stated = action["poolAccountsFromSnapshotState"]
    assert action["pool_state_source"] == "snapshot" and "poolAccountsFromLiveChainState" not in action
    assert stated["observationState"] == sw.RAYDIUM_SNAPSHOT_OBSERVATION
    assert stated["tickArrayBitmapExtension"] == sw.RAYDIUM_SOL_USDC.bitmap_extension
    swap = next(i for i in action["instructions"] if i["programId"] == str(sw.RAYDIUM_CLMM_PROGRAM))
    assert [k["pubkey"] for k in swap["keys"]][14:] == stated["tickArrays"]


@pytest.mark.parametrize("route_key", RAYDIUM_ROUTES)
async def test_live_pinned_raydium_pool_prepares_every_raydium_route(
    live_raydium: Api, route_key: str
) -> None:
    api = live_raydium
    unavailable = _unavailable(await api.capabilities())
    assert not set(RAYDIUM_ROUTES) & set(unavailable)
    quote = await api.quote(route_key, 300)
    assert quote["market"]["live"] is True
    assert quote["execution"]["first_unsigned_action_supported"] is True
    approval = _prepare_approval(quote)
    wallets = wallets_for(route_key)
    body = _prepare_body(route_key, 300, approval)
    signer = EVENT_SIGNER if ROUTES[route_key].event_signer_required else None
    if signer:
        body["event_signer_public"] = signer
    r = await api.client.post("/v2/prepare", json=body)
    assert r.status_code == 200, r.text
    bundle = r.json()
    findings = verify_bundle(
        bundle,
        intent=intent_for(route_key, 300),
        wallets=wallets,
        now_unix=int(T0.timestamp()),  # a live market: no modelled bounds to accept
        approval_v3=approval,
        direct_route_summary=quote["direct_route_summary"],
        fee_recipients=FEE_RECIPIENTS,
        event_signer_public=signer,
    )
    assert not [f for f in findings if f.severity == "error"], findings
    action = bundle["unsigned_action"]
    swap = next(i for i in action["instructions"] if i["programId"] == str(sw.RAYDIUM_CLMM_PROGRAM))
    keys = [k["pubkey"] for k in swap["keys"]]
    stated = action["poolAccountsFromLiveChainState"]
    assert action["safety_receipt"]["bounds"]["basis"] == "live"
    assert keys[2] == sw.RAYDIUM_SOL_USDC.pool and keys[7] == stated["observationState"]
    assert keys[14:] == stated["tickArrays"]
    amount, minimum = struct.unpack_from("<QQ", base64.b64decode(swap["data"]), 8)
    assert (amount, minimum) == (int(action["netInputAmount"]), int(action["minimumOutput"]))
    if approval is not None:
        assert minimum >= int(approval["minimum_output_base"])
    assert bundle["server_signing"] is False and bundle["server_submission"] is False


async def test_live_market_whose_solana_read_fails_refuses_at_prepare_and_creates_nothing(live: Api) -> None:
    live.fake.faults["rpc-solana.test"] = "timeout"  # the pool cannot be read live now
    before = live.ids._n
    body = {
        "caller_approved": True,
        **intent_for(ROUTE),
        "wallets": wallets_for(ROUTE),
    }  # legacy: no approval
    r = await live.client.post("/v2/prepare", json=body)
    assert r.status_code == 400, r.text
    assert r.json()["reason_class"] == "route_not_prepare_ready"
    assert "solana_pool_state_unavailable" in r.text
    assert live.ids._n == before  # refused before a fresh quote is issued
