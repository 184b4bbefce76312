"""LiveMarket end to end over the real httpx client: every source, faults, breakers, recovery, fallback.

Upstreams are `tests/recordings/fake_upstreams.py` behind `httpx.MockTransport`: the recorded Iris,
Across, Pyth and Solana responses, and a JSON-RPC node answering Chainlink / OFT calls from recordings and
Uniswap v3 pool calls from the embedded snapshot's pool states.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from tests.recordings.fake_upstreams import FakeUpstreams, live_config, load

from routequote.app import create_app
from routequote.clock import FixedClock, SequentialIds
from routequote.config import Settings
from routequote.core.assets import Chain, Token
from routequote.core.clmm import ClmmPool
from routequote.core.intent import parse_quote_request
from routequote.core.pricing import price_route, route_components
from routequote.core.routes import ROUTES
from routequote.errors import CapacityBusy, UpstreamError, UpstreamUnavailable
from routequote.market.live import LiveMarket
from routequote.market.live_source import LiveSource
from routequote.market.snapshot import EmbeddedSnapshot
from routequote.service import RouteQuoteService, ServiceConfig
from routequote.storage.quotes import MemoryQuoteStore

T0 = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


@dataclass
class Rig:
    clock: FixedClock
    fake: FakeUpstreams
    market: LiveMarket
    service: RouteQuoteService
    http: httpx.AsyncClient

    async def quote(self, route_key: str, usd: float = 100) -> dict[str, Any]:
        src, dst = route_key.split("->")
        (fc, ft), (tc, tt) = src.split(":"), dst.split(":")
        body = {"from_chain": fc, "from_token": ft, "to_chain": tc, "to_token": tt, "amount_usd": usd}
        return (await self.service.quote(parse_quote_request(body))).payload

    def later(self, seconds: float) -> None:
        self.clock.advance(seconds)


async def make_rig(**config: Any) -> Rig:
    clock = FixedClock(T0)
    fake = FakeUpstreams(clock)
    http = httpx.AsyncClient(transport=fake.transport())
    market = LiveMarket(live_config(**config), clock, http=http, source_deadline=fake.deadline)
    service = RouteQuoteService(market, MemoryQuoteStore(), clock, SequentialIds(), ServiceConfig())
    return Rig(clock, fake, market, service, http)


@pytest.fixture
async def rig() -> AsyncIterator[Rig]:
    r = await make_rig()
    yield r
    await r.http.aclose()


def routes_needing(components: set[str]) -> set[str]:
    return {k for k, r in ROUTES.items() if components & set(route_components(r))}


def market_unavailable(service: RouteQuoteService) -> dict[str, list[str]]:
    return {
        u["route"]: u["details"]
        for u in service.unavailable_routes()
        if u["reason"] == "market_source_unavailable"
    }


async def test_every_route_quotes_live_from_every_source(rig: Rig) -> None:
    ok = 0
    for key in ROUTES:
        q = await rig.quote(key, 100)
        assert q["market"]["source"] == "live" and q["market"]["live"] is True
        assert q["market"]["label"] == "live market data" and "fallback_components" not in q["market"]
        ok += 1
    assert ok == 72
    view = await rig.market.view()
    assert view.unavailable == {}
    assert view.as_of == "2026-11-20T11:59:59Z"  # the blocks' time (the test node's blocks are 1 s old)
    assert view.prices_usd_e8 == {
        Token.ETH: 312055000000,
        Token.USDC: 99991234,
        Token.USDG: 100002100,
        Token.SOL: 15243217000,
    }
    assert view.cctp.fast_fee_bps_milli == {5: 1000, 6: 1300, 3: 1300}
    assert (
        view.across.lp_fee_ppm,
        view.across.relayer_capital_fee_ppm,
        view.across.relayer_gas_fee_base,
        view.across.fill_seconds,
    ) == (100, 400, 15210, 4)
    assert view.oft.native_fee_wei == 41873000000000
    # EVM pools: the live reader sees exactly the pools the node holds (the snapshot's states)
    snap = EmbeddedSnapshot().current()
    for pid in ("base:uniswap_v3:ETH-USDC", "arbitrum:uniswap_v3:ETH-USDC", "robinhood:uniswap_v3:ETH-USDG"):
        assert view.pools[pid].clmm == snap.pools[pid].clmm
    # Solana pools: decoded from the recorded accounts, equal to the state the recording was built from
    for exp in load("solana_getMultipleAccounts.json")["expected_pools"]:
        got = view.pools[exp["pool_id"]].clmm
        assert (got.fee_pips, got.tick_spacing, got.sqrt_price, got.tick_current, got.liquidity) == (
            exp["fee_pips"],
            exp["tick_spacing"],
            int(exp["sqrt_price"]),
            exp["tick_current"],
            int(exp["liquidity"]),
        )
        assert got.ticks == tuple((t, int(n)) for t, n in exp["ticks"])
    # a live quote's pricing equals pricing the same numbers directly
    body = {
        "from_chain": "solana",
        "from_token": "SOL",
        "to_chain": "base",
        "to_token": "ETH",
        "amount_usd": 1000,
    }
    issued = await rig.service.quote(parse_quote_request(body))
    direct = price_route(
        ROUTES["solana:SOL->base:ETH"], issued.payload["intent"]["estimated_input_base"], view
    )
    assert issued.body.pricing == direct


async def test_cold_view_fetches_sources_concurrently_and_steady_state_is_one_round_trip(rig: Rig) -> None:
    await rig.market.view()
    assert rig.fake.max_inflight >= 8  # 3 EVM chains, Solana, Iris x6, Across x2, Hermes at once
    evm_before = {
        h: rig.fake.requests[h] for h in ("rpc-base.test", "rpc-arbitrum.test", "rpc-robinhood.test")
    }
    sol_before = rig.fake.requests["rpc-solana.test"]
    rig.later(5)  # past the cache TTL
    await rig.market.view()
    for h, n in evm_before.items():
        # one pinned batch for the pools, one for the Chainlink / OFT reads on that chain
        extra = 1 + (h in ("rpc-base.test", "rpc-robinhood.test")) + (h == "rpc-robinhood.test")
        assert rig.fake.requests[h] - n == extra, h
    assert rig.fake.requests["rpc-solana.test"] - sol_before == 1
    # within the TTL nothing is fetched again, and the view (and its version) is reused
    total = sum(rig.fake.requests.values())
    v1 = await rig.market.view()
    v2 = await rig.market.view()
    assert sum(rig.fake.requests.values()) == total and v1 is v2


async def test_version_changes_when_a_number_changes(rig: Rig) -> None:
    v1 = await rig.market.view()
    rig.later(5)
    v2 = await rig.market.view()
    assert v2.version == v1.version  # new blocks, same numbers
    pools = rig.fake.evm_pools[next(iter(rig.fake.evm_pools))]
    addr, (pool, token0) = next(iter(pools.items()))
    moved = ClmmPool(
        pool.venue,
        pool.fee_pips,
        pool.tick_spacing,
        pool.sqrt_price + 1,
        pool.tick_current,
        pool.liquidity,
        pool.ticks,
    )
    pools[addr] = (moved, token0)
    rig.later(5)
    v3 = await rig.market.view()
    assert v3.version != v2.version


FAULTS = [
    # host, fault, components that must go unavailable, kind named in the reason
    ("iris.test", "timeout", {"circle_cctp"}, "timeout"),
    ("across.test", "garbage", {"across_intent_bridge"}, "invalid_data"),
    ("across.test", "http500", {"across_intent_bridge"}, "transport_error"),
    ("rpc-arbitrum.test", "stale", {"arbitrum:uniswap_v3:ETH-USDC"}, "stale_data"),
    (
        "rpc-robinhood.test",
        "garbage",
        {"robinhood:uniswap_v3:ETH-USDG", "paxos_usdg_layerzero_oft", "price:USDG"},
        "invalid_response",
    ),
    (
        "rpc-solana.test",
        "stale",
        {"solana:raydium_clmm:SOL-USDC", "solana:orca_whirlpool:USDC-USDG"},
        "stale_data",
    ),
    ("hermes.test", "stale", {"price:SOL"}, "stale_data"),
    ("hermes.test", "429", {"price:SOL"}, "rate_limited"),
]


@pytest.mark.parametrize(
    ("host", "fault", "components", "kind"), FAULTS, ids=[f"{f[0]}-{f[1]}" for f in FAULTS]
)
async def test_fault_takes_down_exactly_the_right_routes_and_recovers(
    rig: Rig, host: str, fault: str, components: set[str], kind: str
) -> None:
    await rig.market.view()  # healthy first (Solana staleness is relative to the slot already seen)
    rig.fake.faults[host] = fault
    rig.later(5)
    view = await rig.market.view()
    assert set(view.unavailable) == components
    affected = routes_needing(components)
    assert affected and len(affected) < 72
    down = market_unavailable(rig.service)
    assert set(down) == affected  # nothing else is reported
    for details in down.values():
        assert all(kind in d for d in details)
    err_type = CapacityBusy if kind == "rate_limited" else UpstreamUnavailable
    for key in sorted(affected)[:6]:
        with pytest.raises(err_type) as exc:
            await rig.quote(key)
        assert kind in exc.value.message and exc.value.details["unavailable_component"] in components
    for key in sorted(set(ROUTES) - affected)[:10]:
        assert (await rig.quote(key))["market"]["live"] is True  # nothing else is affected
    status = rig.service.status()
    assert status["market"]["healthy"] is False
    assert any(not s["ok"] and kind in (s["reason"] or "") for s in status["market"]["sources"])
    caps = rig.service.capabilities()
    assert {
        u["route"]
        for u in caps["temporarily_unavailable_routes"]
        if u["reason"] == "market_source_unavailable"
    } == affected
    assert caps["execution_availability"]["recent_fee_snapshot_usable"] is False
    # recovery: the upstream heals; after the breaker's cooldown the routes quote again
    del rig.fake.faults[host]
    if fault == "stale" and host == "rpc-solana.test":
        rig.fake.slot += 100
    rig.later(rig.market.config.cooldown_seconds + 1)
    for key in sorted(affected)[:6]:
        assert (await rig.quote(key))["market"]["live"] is True
    assert market_unavailable(rig.service) == {}
    assert rig.service.status()["market"]["healthy"] is True


async def test_hanging_upstream_is_cut_at_the_source_timeout(rig: Rig) -> None:
    # the rig's source deadline is the fakes' (`FakeUpstreams.deadline`): the hanging request ends it, and the
    # healthy sources' answers never race a wall clock (at 0.05 s of wall time they did, on a busy machine)
    rig.fake.faults["iris.test"] = "hang"
    view = await rig.market.view()
    assert view.unavailable["circle_cctp"].startswith("timeout: circle_iris")
    assert set(view.unavailable) == {"circle_cctp"}
    assert "base:ETH->base:USDC" not in routes_needing(set(view.unavailable))
    await rig.quote("base:ETH->base:USDC")


async def test_the_default_source_deadline_is_the_configured_timeout_of_wall_time() -> None:
    """Without a test's deadline a source that never answers is cut by the wall clock, at the configured
    timeout. It is the only source, so no answer races that clock."""

    async def never() -> None:
        await asyncio.Event().wait()

    source = LiveSource("circle_iris", ("circle_cctp",), never, 600.0)
    market = LiveMarket(live_config(timeout_seconds=0.05), FixedClock(T0), sources=[source])
    async with asyncio.timeout(60):  # bounds a hang only
        view = await market.view()
    assert view.unavailable["circle_cctp"] == "timeout: circle_iris: no answer within 0.05 s", (
        view.unavailable
    )
    assert source.failures == 1 and source.error_kind == "timeout"


async def test_breaker_opens_after_threshold_and_probes_after_cooldown(rig: Rig) -> None:
    cfg = rig.market.config
    rig.fake.faults["across.test"] = "timeout"
    for _ in range(cfg.failure_threshold):
        await rig.market.view()
        rig.later(cfg.cache_ttl_seconds + 0.1)
    stats = {s["name"]: s for s in rig.market.source_stats()}
    assert stats["across"]["breaker"] == "open"
    assert stats["across"]["consecutive_failures"] == cfg.failure_threshold
    calls = rig.fake.requests["across.test"]
    rig.later(cfg.cooldown_seconds / 2)
    await rig.market.view()
    assert rig.fake.requests["across.test"] == calls  # open: no upstream call
    assert "circuit open" in (await rig.market.view()).unavailable["across_intent_bridge"]
    rig.later(cfg.cooldown_seconds)
    await rig.market.view()
    assert rig.fake.requests["across.test"] > calls  # half-open probe (still failing)
    del rig.fake.faults["across.test"]
    rig.later(cfg.cooldown_seconds + 1)
    assert "across_intent_bridge" not in (await rig.market.view()).unavailable
    assert {s["name"]: s for s in rig.market.source_stats()}["across"]["breaker"] == "closed"


async def test_embedded_fallback_only_when_configured_and_the_quote_says_so() -> None:
    r = await make_rig(fallback="embedded")
    try:
        r.fake.faults["iris.test"] = "timeout"
        q = await r.quote("solana:USDC->base:USDC", 50)
        m = q["market"]
        assert m["source"] == "live+embedded_fallback" and m["live"] is False
        assert "not live" in m["label"]
        assert any(n.startswith("FALLBACK: circle_cctp") and "timeout" in n for n in m["notes"])
        # listed for the prepared actions' bounds block (core/bounds.py): only the component that fell back
        assert m["fallback_components"] == ["circle_cctp"]
        # a route that needs no fallback component is priced from live numbers in the same view
        view = await r.market.view()
        assert (
            view.unavailable == {}
            and view.cctp.fast_fee_bps_milli == EmbeddedSnapshot().current().cctp.fast_fee_bps_milli
        )
    finally:
        await r.http.aclose()


async def test_rest_surface_502_503_status_and_capabilities(rig: Rig) -> None:
    app = create_app(Settings(rate_limit="off"), market=rig.market, clock=rig.clock, ids=SequentialIds())
    rig.fake.faults["iris.test"] = "garbage"
    rig.fake.faults["hermes.test"] = "429"
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
        ok = await c.post(
            "/v2/quote",
            json={
                "from_chain": "base",
                "from_token": "ETH",
                "to_chain": "arbitrum",
                "to_token": "ETH",
                "amount_usd": 100,
            },
        )
        # base -> arbitrum goes through CCTP: its source answers garbage
        assert ok.status_code == 502, ok.text
        body = ok.json()
        assert body["reason_class"] == "market_source_unavailable" and "circle_iris" in body["message"]
        assert body["unavailable_component"] == "circle_cctp" and body["retry_after_seconds"] >= 1
        busy = await c.post(
            "/v2/quote",
            json={
                "from_chain": "solana",
                "from_token": "SOL",
                "to_chain": "solana",
                "to_token": "USDC",
                "amount_usd": 100,
            },
        )
        assert busy.status_code == 503 and busy.json()["reason_class"] == "market_source_rate_limited"
        fine = await c.post(
            "/v2/quote",
            json={
                "from_chain": "base",
                "from_token": "ETH",
                "to_chain": "base",
                "to_token": "USDC",
                "amount_usd": 100,
            },
        )
        assert fine.status_code == 200 and fine.json()["market"]["source"] == "live"
        status = (await c.get("/v2/status")).json()
        assert status["market"]["source"] == "live" and status["market"]["healthy"] is False
        breakers = {b["name"]: b for b in status["market"]["breakers"]}
        assert (
            breakers["circle_iris"]["consecutive_failures"] == 1
            and breakers["circle_iris"]["breaker"] == "closed"
        )
        assert breakers["evm_pools:base"]["block_or_slot"] == rig.fake.blocks[Chain.BASE]
        assert status["server_signing"] is False and status["server_submission"] is False
        caps = (await c.get("/v2/capabilities")).json()
        down = {
            u["route"]
            for u in caps["temporarily_unavailable_routes"]
            if u["reason"] == "market_source_unavailable"
        }
        assert down == routes_needing({"circle_cctp", "price:SOL"})


async def test_no_rpc_configured_means_unavailable_not_snapshot() -> None:
    r = await make_rig(rpc_urls={})
    try:
        view = await r.market.view()
        assert view.unavailable["base:uniswap_v3:ETH-USDC"].startswith("not_configured")
        with pytest.raises(UpstreamError):
            await r.quote("base:ETH->base:USDC")
        assert view.live is True and "base:uniswap_v3:ETH-USDC" not in view.pools
    finally:
        await r.http.aclose()


def test_settings_select_the_live_market_and_register_its_lifespan() -> None:
    settings = Settings(
        market="live",
        rpc_url_base="http://rpc-base.test",
        market_fallback="embedded",
        live_solana_pools="solana:raydium_clmm:SOL-USDC=3ucNos4NbumPLZNWztqGHNFFgkHeRMBQAVemeeomsUxv",
        rate_limit="off",
    )
    app = create_app(settings)
    market = app.state.service.market
    assert isinstance(market, LiveMarket)
    assert market.config.fallback == "embedded" and market.config.rpc_urls == {
        Chain.BASE: "http://rpc-base.test"
    }
    assert market.config.solana_pools == {
        "solana:raydium_clmm:SOL-USDC": "3ucNos4NbumPLZNWztqGHNFFgkHeRMBQAVemeeomsUxv"
    }
    assert market.lifespan in app.state.lifespan_hooks
    with pytest.raises(ValueError):
        create_app(Settings(market="live", market_fallback="sometimes"))
    with pytest.raises(ValueError):
        create_app(Settings(market="live", live_solana_pools="no-equals-sign"))
