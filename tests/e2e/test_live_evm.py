"""The live EVM market path against real contracts on anvil (real JSON-RPC, real UniswapV3Pool).

A Uniswap v3 pool is deployed and minted on anvil (chain id 8453) with fresh tokens, and two
Chainlink-shaped feeds are installed with `anvil_setCode` (a tiny contract that returns a fixed
`latestRoundData` word list for any call). Then:

* the live reader's pool equals the pool read directly from the chain, and its swaps equal QuoterV2;
* a quote priced by `RouteQuoteService` on a `LiveMarket` equals the pricing of the same state offline
  (a ClmmPool built from direct reads) and its swap step equals QuoterV2 to the wei;
* the steady-state refresh costs one HTTP round trip; a swap on chain changes the view's version;
* a block older than the allowed age makes the pool's routes unavailable (502 reason `stale_data`).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from _evm import MAX_UINT256, AnvilChain

from routequote.clock import FixedClock, SequentialIds, SystemClock
from routequote.core.assets import Chain, Token
from routequote.core.clmm import ClmmPool, sqrt_price_at_tick, swap_exact_input
from routequote.core.intent import parse_quote_request
from routequote.core.market import PoolState
from routequote.core.pricing import price_route
from routequote.core.routes import ROUTES
from routequote.errors import UpstreamUnavailable
from routequote.market.jsonrpc import JsonRpcClient
from routequote.market.live import LiveMarket
from routequote.market.live_bridges import ChainlinkSource
from routequote.market.live_config import LiveConfig
from routequote.market.live_evm import EvmPoolSpec, UniswapV3PoolsSource, word_of
from routequote.market.live_source import LiveSource
from routequote.service import RouteQuoteService, ServiceConfig
from routequote.storage.quotes import MemoryQuoteStore

pytestmark = pytest.mark.chain

POOL_ID = "base:uniswap_v3:ETH-USDC"
# The RPC's timeout and the market's source deadline here: the local anvil answers late on a busy machine,
# never not at all, and no test of this module is about a timeout (the 1.5 s defaults timed out loaded runs)
HANG_SECONDS = 60.0


def hang_bound(_: float) -> asyncio.Timeout:
    return asyncio.timeout(HANG_SECONDS)


FEE, SPACING = 500, 10
MINT_SIG = "mint((address,address,uint24,int24,int24,uint256,uint256,uint256,uint256,address,uint256))"
QUOTE_SIG = "quoteExactInputSingle((address,address,uint256,uint24,uint160))"
SWAP_SIG = "exactInputSingle((address,address,uint24,address,uint256,uint256,uint160))"
TICK_TYPES = ["uint128", "int128", "uint256", "uint256", "int56", "uint160", "uint32", "bool"]
ETH_USD_E8 = 3000_12345678
USDC_USD_E8 = 99_990000


@dataclass
class LiveSetup:
    chain: AnvilChain
    pool: str
    weth: str
    usdc: str
    token0: str
    bounds: set[int]
    feeds: dict[Token, str]

    @property
    def spec(self) -> EvmPoolSpec:
        t0 = "base:ETH" if self.token0 == self.weth else "base:USDC"
        t1 = "base:USDC" if t0 == "base:ETH" else "base:ETH"
        return EvmPoolSpec(POOL_ID, self.pool, t0, t1, self.token0)


def feed_code(answer: int, updated_at: int, decimals: int = 8) -> str:
    """Runtime code returning 5 words for any call: (decimals-as-roundId, answer, startedAt, updatedAt, round).

    `decimals()` decodes the first word (= `decimals`); `latestRoundData()` decodes all five."""
    words = [decimals, answer, updated_at, updated_at, decimals]
    blob = b"".join(w.to_bytes(32, "big", signed=True) for w in words)
    # PUSH1 0xa0 PUSH1 0x0c PUSH1 0 CODECOPY PUSH1 0xa0 PUSH1 0 RETURN ; blob
    return "0x60a0600c60003960a06000f3" + blob.hex()


def install_feeds(chain: AnvilChain) -> dict[Token, str]:
    now = int(chain.rpc.call("eth_getBlockByNumber", "latest", False)["timestamp"], 16)
    feeds = {
        Token.ETH: "0x00000000000000000000000000000000000Fee01",
        Token.USDC: "0x00000000000000000000000000000000000Fee02",
    }
    chain.rpc.call("anvil_setCode", feeds[Token.ETH], feed_code(ETH_USD_E8, now))
    chain.rpc.call("anvil_setCode", feeds[Token.USDC], feed_code(USDC_USD_E8, now))
    return feeds


@pytest.fixture(scope="module")
def live(anvil_factory: Callable[[int], AnvilChain]) -> Iterator[LiveSetup]:
    chain = anvil_factory(8453)
    snap = chain.snapshot()
    me, a = chain.deployer, chain.addresses
    usdc = chain.deploy("MintableERC20", ["string", "string", "uint8"], "USD Coin (live test)", "USDC", 6)
    chain.transact(usdc, "addMinter(address)", me)
    weth = chain.deploy("ERC20PresetMinterPauser", ["string", "string"], "Wrapped Ether (live test)", "WETH")
    for tok in (usdc, weth):
        chain.transact(tok, "mint(address,uint256)", me, 10**40)
        for spender in (a["npm"], a["router02"]):
            chain.transact(tok, "approve(address,uint256)", spender, MAX_UINT256)
    t0, t1 = (usdc, weth) if int(usdc, 16) < int(weth, 16) else (weth, usdc)
    center = -196256 if t0 == weth else 196256  # ~3000 USDC per ETH in base units
    chain.transact(
        a["npm"],
        "createAndInitializePoolIfNecessary(address,address,uint24,uint160)",
        t0,
        t1,
        FEE,
        sqrt_price_at_tick("uniswap_v3", center) + 12345,
    )
    (pool,) = chain.call(a["factory"], "getPool(address,address,uint24)", ["address"], t0, t1, FEE)
    rng = random.Random(4663)
    bounds: set[int] = set()
    aligned = center // SPACING * SPACING
    positions = [(-887270, 887270)] + [
        (lo, lo + SPACING * rng.randint(1, 120))
        for lo in (aligned + SPACING * rng.randint(-120, 100) for _ in range(30))
    ]
    for lo, hi in positions:
        amt0, amt1 = (10**22, 3 * 10**13) if t0 == weth else (3 * 10**13, 10**22)
        chain.transact(a["npm"], MINT_SIG, (t0, t1, FEE, lo, hi, amt0 // 50, amt1 // 50, 0, 0, me, 2**40))
        bounds.update((lo, hi))
    feeds = install_feeds(chain)
    yield LiveSetup(chain, pool, weth, usdc, t0, bounds, feeds)
    chain.revert(snap)


class ChainTime(SystemClock):
    """The chain's time: its latest block's timestamp when a test starts, advancing with the monotonic clock. Anvil
    mines only on transactions, so on the wall clock its latest block is as old as the time since the module set
    up its pool (minutes, on a busy machine or after a slow test): data read from it here is as old as the test
    has run."""

    def __init__(self, chain: AnvilChain) -> None:
        latest = chain.rpc.call("eth_getBlockByNumber", "latest", False)
        self.start = datetime.fromtimestamp(int(latest["timestamp"], 16), UTC)
        self.started = time.monotonic()

    def now(self) -> datetime:
        return self.start + timedelta(seconds=time.monotonic() - self.started)


def read_offline(s: LiveSetup) -> ClmmPool:
    """The pool read directly with single eth_calls (every known position bound), independent of live_evm."""
    c = s.chain
    sqrt_price, tick = c.call(
        s.pool, "slot0()", ["uint160", "int24", "uint16", "uint16", "uint16", "uint8", "bool"]
    )[:2]
    (liquidity,) = c.call(s.pool, "liquidity()", ["uint128"])
    ticks = []
    for t in sorted(s.bounds):
        gross, net = c.call(s.pool, "ticks(int24)", TICK_TYPES, t)[:2]
        if gross:
            ticks.append((t, int(net)))
    return ClmmPool("uniswap_v3", FEE, SPACING, int(sqrt_price), int(tick), int(liquidity), tuple(ticks))


def quoter(s: LiveSetup, zero_for_one: bool, amount: int) -> int:
    other = s.usdc if s.token0 == s.weth else s.weth
    tin, tout = (s.token0, other) if zero_for_one else (other, s.token0)
    out = s.chain.call(
        s.chain.addresses["quoter_v2"],
        QUOTE_SIG,
        ["uint256", "uint160", "uint32", "uint256"],
        (tin, tout, amount, FEE, 0),
        gas=90_000_000,
    )[0]
    return int(out)


def market(
    s: LiveSetup, http: httpx.AsyncClient, clock: Any, ttl: float = 0.0
) -> tuple[LiveMarket, JsonRpcClient]:
    rpc = JsonRpcClient(s.chain.url, http, timeout=HANG_SECONDS)
    pools = UniswapV3PoolsSource(Chain.BASE, rpc, [s.spec])
    feeds = ChainlinkSource(JsonRpcClient(s.chain.url, http, timeout=HANG_SECONDS), s.feeds)
    sources = [
        LiveSource("evm_pools:base", (POOL_ID,), pools.fetch, 120.0),
        LiveSource("chainlink:base", ("price:ETH", "price:USDC"), feeds.fetch, 3600.0),
    ]
    lm = LiveMarket(
        LiveConfig(cache_ttl_seconds=ttl), clock, http=http, sources=sources, source_deadline=hang_bound
    )
    return lm, rpc


async def test_live_pool_equals_chain_and_quoter(live: LiveSetup) -> None:
    async with httpx.AsyncClient() as http:
        rpc = JsonRpcClient(live.chain.url, http, timeout=HANG_SECONDS)
        state = await UniswapV3PoolsSource(Chain.BASE, rpc, [live.spec]).fetch()
    got = state.pools[POOL_ID].clmm
    offline = read_offline(live)
    assert (got.sqrt_price, got.tick_current, got.liquidity, got.fee_pips, got.tick_spacing) == (
        offline.sqrt_price,
        offline.tick_current,
        offline.liquidity,
        offline.fee_pips,
        offline.tick_spacing,
    )
    w = word_of(got.tick_current, SPACING)
    lo, hi = (w - 2) * 256 * SPACING, (w + 3) * 256 * SPACING - 1
    assert got.ticks == tuple((t, n) for t, n in offline.ticks if lo <= t <= hi)
    assert len(got.ticks) >= 20  # the minted positions are inside the window; full-range bounds are not
    checked = 0
    for zfo in (True, False):
        for amount in (1, 10**6, 10**12, 10**15, 3 * 10**17, 10**19, 10**21):
            ours = swap_exact_input(got, zfo, amount)
            assert ours.amount_out == swap_exact_input(offline, zfo, amount).amount_out
            if ours.amount_in == amount:
                assert ours.amount_out == quoter(live, zfo, amount)
                checked += 1
    assert checked >= 8


async def test_cold_read_with_a_hinted_window_takes_two_round_trips_and_a_wrong_hint_three(
    live: LiveSetup,
) -> None:
    offline = read_offline(live)
    async with httpx.AsyncClient() as http:
        results = {}
        for name, hint in (
            ("right", (offline.tick_current, SPACING)),
            ("wrong", (offline.tick_current + 40_000, SPACING)),
        ):
            rpc = JsonRpcClient(live.chain.url, http, timeout=HANG_SECONDS)
            state = await UniswapV3PoolsSource(Chain.BASE, rpc, [replace(live.spec, hint=hint)]).fetch()
            results[name] = state
    assert results["right"].round_trips == 2 and results["wrong"].round_trips == 3
    assert results["right"].pools[POOL_ID].clmm == results["wrong"].pools[POOL_ID].clmm


@pytest.mark.parametrize(
    ("src", "dst", "usd"), [("ETH", "USDC", 1000), ("USDC", "ETH", 1000), ("ETH", "USDC", 5)]
)
async def test_quote_priced_live_equals_offline(live: LiveSetup, src: str, dst: str, usd: int) -> None:
    async with httpx.AsyncClient() as http:
        clock = ChainTime(live.chain)
        lm, _ = market(live, http, clock)
        service = RouteQuoteService(lm, MemoryQuoteStore(), clock, SequentialIds(), ServiceConfig())
        body = {
            "from_chain": "base",
            "from_token": src,
            "to_chain": "base",
            "to_token": dst,
            "amount_usd": usd,
        }
        issued = await service.quote(parse_quote_request(body))
        view = await lm.view()
    assert issued.payload["market"]["source"] == "live" and issued.payload["market"]["live"] is True
    assert view.prices_usd_e8 == {Token.ETH: ETH_USD_E8, Token.USDC: USDC_USD_E8}
    assert view.as_of == issued.payload["market"]["data_as_of"]
    # the same state, read offline, priced directly
    spec = live.spec
    offline_view = replace(
        view, pools={POOL_ID: PoolState(POOL_ID, live.pool, spec.token0, spec.token1, read_offline(live))}
    )
    route = ROUTES[f"base:{src}->base:{dst}"]
    input_base = parse_quote_request(body).input_base(view.prices_usd_e8[Token(src)])
    offline = price_route(route, input_base, offline_view)
    priced = issued.body.pricing
    assert [(p.expected_input_base, p.expected_output_base, p.minimum_output_base) for p in priced.steps] == [
        (p.expected_input_base, p.expected_output_base, p.minimum_output_base) for p in offline.steps
    ]
    swap = priced.steps[0]
    zfo = spec.token0 == f"base:{src}"
    assert swap.expected_output_base == quoter(live, zfo, swap.expected_input_base - swap.service_fee_base)
    assert issued.payload["offer"]["expected_receive_amount"] > 0


async def test_steady_state_one_round_trip_and_version_follows_chain(live: LiveSetup) -> None:
    c = live.chain
    snap = c.snapshot()
    try:
        async with httpx.AsyncClient() as http:
            lm, rpc = market(live, http, ChainTime(c), ttl=0.0)
            v1 = await lm.view()
            before = rpc.round_trips
            v2 = await lm.view()
            assert rpc.round_trips - before == 1  # pinned batch with the previous window and ticks
            assert v2.version == v1.version
            other = live.usdc if live.token0 == live.weth else live.weth
            c.transact(
                c.addresses["router02"],
                SWAP_SIG,
                (live.token0, other, FEE, c.deployer, 10**16 if live.token0 == live.weth else 10**10, 0, 0),
                gas=9_000_000,
            )
            v3 = await lm.view()
            assert v3.version != v2.version
            assert v3.pools[POOL_ID].clmm.sqrt_price == read_offline(live).sqrt_price
            assert v3.pools[POOL_ID].clmm.sqrt_price != v2.pools[POOL_ID].clmm.sqrt_price
    finally:
        c.revert(snap)


async def test_stale_block_makes_pool_routes_unavailable(live: LiveSetup) -> None:
    clock = FixedClock(datetime.now(UTC) + timedelta(hours=1))  # every block is an hour old
    async with httpx.AsyncClient() as http:
        lm, _ = market(live, http, clock)
        service = RouteQuoteService(lm, MemoryQuoteStore(), clock, SequentialIds(), ServiceConfig())
        body = {
            "from_chain": "base",
            "from_token": "ETH",
            "to_chain": "base",
            "to_token": "USDC",
            "amount_usd": 10,
        }
        with pytest.raises(UpstreamUnavailable) as exc:
            await service.quote(parse_quote_request(body))
    assert "stale_data" in exc.value.message and "evm_pools:base" in exc.value.message
    assert exc.value.details["unavailable_component"] == POOL_ID
    unavailable = {u["route"]: u for u in service.unavailable_routes()}
    assert unavailable["base:ETH->base:USDC"]["reason"] == "market_source_unavailable"
    assert all("stale_data" in d for d in unavailable["base:ETH->base:USDC"]["details"])
