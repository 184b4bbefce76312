"""LiveMarket: the MarketData port priced from live chain state and provider APIs.

Sources (all fetched at once, each in one upstream round trip in the steady state and on a cold start, where
the snapshot's pool ticks and the pinned Solana accounts tell the first read what to ask for):

| source                 | feeds (components)                        | read with                              |
|------------------------|-------------------------------------------|----------------------------------------|
| `evm_pools:<chain>`    | the chain's Uniswap v3 pools              | batched `eth_call`s pinned to one block |
| `solana_pools`         | Raydium SOL-USDC, Orca USDC-USDG          | one `getMultipleAccounts`              |
| `circle_iris`          | `circle_cctp` fast-transfer fees          | Iris `/v2/burn/USDC/fees`              |
| `across`               | `across_intent_bridge` fees and fill time | Across `/suggested-fees`               |
| `layerzero_oft`        | `paxos_usdg_layerzero_oft` native fee     | `quoteSend` `eth_call` on Robinhood     |
| `chainlink:<chain>`    | `price:ETH`, `price:USDC` / `price:USDG`  | `latestRoundData` `eth_call`            |
| `pyth`                 | `price:SOL`                               | Hermes `/v2/updates/price/latest`      |

Each source has a timeout (at most 1.5 s), a cache (a reading is reused for `cache_ttl_seconds`; it is
keyed by the block / slot / publish time it came from, which must never go backwards), a staleness bound
(`max_age_seconds` of the data's own time) and a circuit breaker: after `failure_threshold` consecutive
failures it opens for `cooldown_seconds` (no upstream calls), then lets one probe through.

A component whose source is failing is *unavailable*: it is left out of the view and named in
`MarketView.unavailable` with the reason, so routes that need it answer 502 (503 when the upstream is
rate-limiting) and every other route keeps quoting. Nothing is silently priced from the embedded snapshot:
only with `fallback="embedded"` does a failing component take the snapshot's value, and then the view is
labelled `live+embedded_fallback`, `live=False`, with a note naming each substituted component.
Model parameters that are policy rather than market data (gas units, tolerances, fee buffers, swap times)
come from the embedded snapshot document in every mode.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import httpx

from routequote.core.assets import ASSETS, CHAINS, Chain, Token
from routequote.core.market import AcrossModel, CctpModel, MarketView, PoolState, market_view_from_dict
from routequote.core.routes import ROUTES, Provider
from routequote.market.jsonrpc import JsonRpcClient, StaleSourceData
from routequote.market.live_bridges import (
    AcrossFees,
    AcrossFeesSource,
    AcrossRoute,
    CctpFees,
    ChainlinkSource,
    FeedPrices,
    IrisFeesSource,
    OftFee,
    OftQuoteSource,
    PythHermesSource,
)
from routequote.market.live_config import CHAINLINK_FEEDS, LZ_EID_SOLANA, USDG_OFT_ROBINHOOD, LiveConfig
from routequote.market.live_evm import EvmPoolSpec, EvmPoolsState, UniswapV3PoolsSource
from routequote.market.live_solana import SolanaClmmSource, SolanaPoolSpec, SolanaPoolsState, is_solana_venue
from routequote.market.live_source import LiveSource
from routequote.market.snapshot import load_snapshot_document
from routequote.market.synthetic import POOLS
from routequote.market.upstream import classified, failure_kind, log_failure
from routequote.ports import Clock, SourceHealth


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat().replace("+00:00", "Z")


def _parse_iso(s: str) -> float:
    return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


def pool_document(p: PoolState) -> dict[str, Any]:
    c = p.clmm
    return {
        "pool_id": p.pool_id,
        "venue": c.venue,
        "address": p.address,
        "token0": p.token0,
        "token1": p.token1,
        "fee_pips": c.fee_pips,
        "tick_spacing": c.tick_spacing,
        "sqrt_price": str(c.sqrt_price),
        "tick_current": c.tick_current,
        "liquidity": str(c.liquidity),
        "ticks": [[t, str(n)] for t, n in c.ticks],
    }


def _pinned(pool_id: str, address: str) -> dict[str, Any]:
    """The pinned accounts a live Solana pool account must name (only when it is the pinned pool account)."""
    from routequote.core.actions.solana_swaps import RAYDIUM_POOLS

    rp = RAYDIUM_POOLS.get(pool_id)
    if rp is None or rp.pool != address:
        return {}
    pinned = (("amm_config", rp.amm_config), ("vault_0", rp.vault_0), ("vault_1", rp.vault_1))
    return {"amm_config": rp.amm_config, "pinned": pinned, "pinned_tick_spacing": rp.tick_spacing}


class LiveMarket:
    """MarketData from live sources (see the module docstring)."""

    label = "live"

    def __init__(
        self,
        config: LiveConfig,
        clock: Clock,
        *,
        http: httpx.AsyncClient | None = None,
        sources: Sequence[LiveSource] | None = None,
        snapshot_document: dict[str, Any] | None = None,
        source_deadline: Callable[[float], AbstractAsyncContextManager[object]] = asyncio.timeout,
        read_timeout_seconds: float | None = None,
    ) -> None:
        self.config = config
        self.clock = clock
        # bounds one source's fetch to `config.timeout_seconds` of wall time; a test's fake upstream hands in
        # one that its hanging requests end, so no answer of its races a busy machine's clock
        self._source_deadline = source_deadline
        # each reader's own per-request timeout (the configured source timeout by default); a test whose real
        # upstream answers from its own process passes a hang bound here and in `source_deadline`, so a busy
        # machine starving that upstream is never read as the upstream timing out
        self._read_timeout = read_timeout_seconds or config.timeout_seconds
        self._http = http
        self._own_http = http is None
        self.snapshot_document = snapshot_document or load_snapshot_document()
        self._snapshot = market_view_from_dict(self.snapshot_document, source="embedded_snapshot", live=False)
        self.static_unavailable: dict[str, str] = {}
        self.sources: list[LiveSource] = list(sources) if sources is not None else []
        self._built = sources is not None
        self._view: MarketView | None = None
        self._view_stamp: tuple[Any, ...] | None = None

    # ---- construction of the default sources ---------------------------------------------------------

    def http(self) -> httpx.AsyncClient:
        if self._http is None:
            self._http = httpx.AsyncClient(
                limits=httpx.Limits(max_connections=32, max_keepalive_connections=16),
                headers={"user-agent": "routequote-live-market"},
            )
        return self._http

    def _rpc(self, chain: Chain) -> JsonRpcClient | None:
        url = self.config.rpc_urls.get(chain)
        return JsonRpcClient(url, self.http(), timeout=self._read_timeout) if url else None

    def _hint(self, pool_id: str) -> tuple[int, int] | None:
        """Where the snapshot saw the pool: the cold read fetches that window first (verified, never priced)."""
        p = self._snapshot.pools.get(pool_id)
        return (p.clmm.tick_current, p.clmm.tick_spacing) if p is not None else None

    def _hint_ticks(self, pool_id: str) -> tuple[int, ...]:
        """The initialized ticks the snapshot saw: read with the first batch (verified, never priced)."""
        p = self._snapshot.pools.get(pool_id)
        return tuple(t for t, _ in p.clmm.ticks) if p is not None else ()

    def _build_sources(self) -> None:
        cfg, out = self.config, self.sources
        rpcs = {c: self._rpc(c) for c in Chain}
        for chain in (Chain.BASE, Chain.ARBITRUM, Chain.ROBINHOOD):
            specs = [
                EvmPoolSpec(
                    p.pool_id,
                    cfg.evm_pool_addresses.get(p.pool_id, p.address or ""),
                    p.token0,
                    p.token1,
                    ASSETS[p.token0].wrapped_address or ASSETS[p.token0].address,
                    self._hint(p.pool_id),
                    self._hint_ticks(p.pool_id),
                )
                for p in POOLS
                if p.venue == "uniswap_v3" and p.pool_id.startswith(f"{chain.value}:")
            ]
            comps = tuple(s.pool_id for s in specs)
            rpc = rpcs[chain]
            if rpc is None:
                for c in comps:
                    self.static_unavailable[c] = (
                        f"not_configured: no RPC URL for {chain.value} (ROUTEQUOTE_RPC_URL_{chain.value.upper()})"
                    )
                continue
            src = UniswapV3PoolsSource(chain, rpc, specs)
            out.append(LiveSource(f"evm_pools:{chain.value}", comps, src.fetch, cfg.pool_max_age_seconds))
        sol_specs = []
        for p in POOLS:
            if not is_solana_venue(p.venue):  # the EVM pools are read above
                continue
            addr = cfg.solana_pools.get(p.pool_id) or p.address
            if not addr:
                self.static_unavailable[p.pool_id] = (
                    "not_configured: no pool account for this pool (ROUTEQUOTE_LIVE_SOLANA_POOLS)"
                )
                continue
            sol_specs.append(
                SolanaPoolSpec(
                    p.pool_id,
                    p.venue,
                    addr,
                    p.token0,
                    p.token1,
                    self._hint(p.pool_id),
                    **_pinned(p.pool_id, addr),
                )
            )
        if sol_specs and rpcs[Chain.SOLANA] is not None:
            sol_rpc = rpcs[Chain.SOLANA]
            assert sol_rpc is not None
            sol = SolanaClmmSource(sol_rpc, sol_specs)
            out.append(
                LiveSource(
                    "solana_pools", tuple(s.pool_id for s in sol_specs), sol.fetch, cfg.pool_max_age_seconds
                )
            )
        elif sol_specs:
            for s in sol_specs:
                self.static_unavailable[s.pool_id] = (
                    "not_configured: no RPC URL for solana (ROUTEQUOTE_RPC_URL_SOLANA)"
                )
        pairs = sorted(
            {
                (CHAINS[s.source.chain].cctp_domain, CHAINS[s.target.chain].cctp_domain)
                for r in ROUTES.values()
                for s in r.steps
                if s.provider is Provider.CIRCLE_CCTP
            }
        )
        iris = IrisFeesSource(
            self.http(), cfg.iris_url, [(int(a or 0), int(b or 0)) for a, b in pairs], self._read_timeout
        )
        out.append(
            LiveSource("circle_iris", (Provider.CIRCLE_CCTP.value,), iris.fetch, cfg.fee_max_age_seconds)
        )
        usdg = ASSETS["robinhood:USDG"].address or ""
        across_routes = [
            AcrossRoute(
                CHAINS[c].chain_id or 0,
                ASSETS[f"{c.value}:USDC"].address or "",
                usdg,
                CHAINS[Chain.ROBINHOOD].chain_id or 0,
            )
            for c in (Chain.BASE, Chain.ARBITRUM)
        ]
        across = AcrossFeesSource(
            self.http(), cfg.across_url, across_routes, cfg.across_amount_base, self._read_timeout
        )
        out.append(LiveSource("across", (Provider.ACROSS.value,), across.fetch, cfg.fee_max_age_seconds))
        rh = rpcs[Chain.ROBINHOOD]
        if rh is not None:
            oft = OftQuoteSource(rh, USDG_OFT_ROBINHOOD, LZ_EID_SOLANA, 1_000_000_000)
            out.append(
                LiveSource("layerzero_oft", (Provider.PAXOS_OFT.value,), oft.fetch, cfg.pool_max_age_seconds)
            )
        else:
            self.static_unavailable[Provider.PAXOS_OFT.value] = "not_configured: no RPC URL for robinhood"
        for chain, feeds in CHAINLINK_FEEDS.items():
            comps = tuple(f"price:{t.value}" for t in feeds)
            rpc = rpcs[chain]
            if rpc is None:
                for c in comps:
                    self.static_unavailable[c] = (
                        f"not_configured: no RPC URL for {chain.value} (Chainlink feed)"
                    )
                continue
            cl = ChainlinkSource(rpc, feeds)
            out.append(LiveSource(f"chainlink:{chain.value}", comps, cl.fetch, cfg.price_max_age_seconds))
        pyth = PythHermesSource(self.http(), cfg.hermes_url, [Token.SOL], self._read_timeout)
        out.append(LiveSource("pyth", ("price:SOL",), pyth.fetch, 120.0))
        self._built = True

    # ---- lifecycle -------------------------------------------------------------------------------------

    async def aclose(self) -> None:
        if self._own_http and self._http is not None:
            await self._http.aclose()
            self._http = None

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """For `app.state.lifespan_hooks`: warm the sources at start-up, close the HTTP pool at shutdown."""
        with contextlib.suppress(Exception):
            await self.view()
        try:
            yield
        finally:
            await self.aclose()

    # ---- refresh ---------------------------------------------------------------------------------------

    def _data_time(self, reading: Any, read_at_unix: float) -> tuple[int | None, float]:
        if isinstance(reading, EvmPoolsState):
            return reading.block.number, float(reading.block.timestamp)
        if isinstance(reading, SolanaPoolsState):
            return reading.slot, read_at_unix
        if isinstance(reading, OftFee):
            return reading.block_number, float(reading.as_of_unix)
        if isinstance(reading, FeedPrices):
            return reading.key, float(reading.as_of_unix)
        if isinstance(reading, AcrossFees):
            return None, float(reading.as_of_unix) if reading.as_of_unix is not None else read_at_unix
        return None, read_at_unix

    async def _refresh(self, src: LiveSource) -> None:
        now = self.clock.monotonic()
        if src.reading is not None and now - src.fetched_at < self.config.cache_ttl_seconds:
            return
        if now < src.next_attempt:
            return
        async with src.lock:
            now = self.clock.monotonic()
            if src.reading is not None and now - src.fetched_at < self.config.cache_ttl_seconds:
                return  # another quote refreshed it while this one waited
            if now < src.next_attempt:
                return
            src.attempts += 1
            started = time.perf_counter()
            try:
                try:
                    async with self._source_deadline(self.config.timeout_seconds):
                        reading = await src.fetch()
                except TimeoutError as exc:
                    raise _Failure("timeout", f"no answer within {self.config.timeout_seconds:g} s") from exc
                except Exception as exc:  # a reader bug must cost its routes, never the whole service
                    kind = failure_kind(exc)
                    log_failure(src.name, getattr(exc, "method", None), kind, exc)  # upstream text: log only
                    raise _Failure(kind, classified(kind, getattr(exc, "method", None))) from None
                wall = self.clock.now().timestamp()
                key, as_of = self._data_time(reading, wall)
                age = wall - as_of
                if age > src.max_age_seconds:
                    raise _Failure(
                        StaleSourceData.kind,
                        f"data is {age:.0f} s old (time {_iso(as_of)}), more than the {src.max_age_seconds:g} s allowed",
                    )
                if key is not None and src.key is not None and key < src.key:
                    raise _Failure(
                        StaleSourceData.kind,
                        f"answered from block/slot {key}, older than {src.key} already seen",
                    )
            except _Failure as f:
                src.failures += 1
                src.reading = None
                src.error_kind, src.error = f.kind, f.message
                src.checked_at = self.clock.now().isoformat().replace("+00:00", "Z")
                opened = src.failures >= self.config.failure_threshold
                wait = self.config.cooldown_seconds if opened else self.config.cache_ttl_seconds
                src.next_attempt = self.clock.monotonic() + wait
                return
            finally:
                src.last_latency_ms = (time.perf_counter() - started) * 1000
            src.reading, src.key, src.as_of_unix = reading, key, as_of
            src.fetched_at = self.clock.monotonic()
            src.next_attempt = -1e18
            src.failures, src.error, src.error_kind = 0, None, None
            src.checked_at = self.clock.now().isoformat().replace("+00:00", "Z")

    def ensure_sources(self) -> list[LiveSource]:
        if not self._built:
            self._build_sources()
        return self.sources

    async def refresh_source(self, src: LiveSource) -> None:
        await self._refresh(src)

    async def refresh(self) -> None:
        """Refresh every source that is due, all at once."""
        await asyncio.gather(*(self._refresh(s) for s in self.ensure_sources()))

    # ---- MarketData ------------------------------------------------------------------------------------

    async def view(self) -> MarketView:
        await self.refresh()
        stamp = tuple(
            (s.name, s.fetched_at if s.reading is not None else None, s.error) for s in self.sources
        )
        if self._view is None or stamp != self._view_stamp:
            self._view = self._compose()
            self._view_stamp = stamp
        return self._view

    def _reason(self, src: LiveSource) -> str:
        kind = src.error_kind or "unavailable"
        if src.failures >= self.config.failure_threshold:
            return f"{kind}: {src.name}: {src.error} (circuit open after {src.failures} consecutive failures)"
        return f"{kind}: {src.name}: {src.error}"

    def _compose(self) -> MarketView:
        snap = self._snapshot
        unavailable: dict[str, str] = dict(self.static_unavailable)
        pools: dict[str, PoolState] = {}
        prices: dict[Token, int] = {}
        cctp_fees: dict[int, int] | None = None
        across: AcrossFees | None = None
        oft: OftFee | None = None
        notes: list[str] = [
            "Live market data: every number below was read from its source at the time stated."
        ]
        times: list[float] = []
        for src in self.sources:
            r = src.reading
            if r is None:
                for c in src.components:
                    unavailable[c] = self._reason(src) if src.error else f"not_fetched: {src.name}"
                continue
            if src.as_of_unix is not None and isinstance(r, (EvmPoolsState, SolanaPoolsState, OftFee)):
                times.append(
                    src.as_of_unix
                )  # as_of: the oldest block / slot read (feed update times are not)
            if isinstance(r, EvmPoolsState):
                pools.update(r.pools)
                notes.append(f"{src.name}: block {r.block.number} ({_iso(r.block.timestamp)})")
            elif isinstance(r, SolanaPoolsState):
                pools.update(r.pools)
                notes.append(f"{src.name}: slot {r.slot}")
            elif isinstance(r, CctpFees):
                cctp_fees = r.fast_fee_bps_milli
                notes.append(f"{src.name}: CCTP fast fees (thousandths of a bp by source domain) {cctp_fees}")
            elif isinstance(r, AcrossFees):
                across = r
                notes.append(f"{src.name}: suggested fees at quote block {r.quote_block}")
            elif isinstance(r, OftFee):
                oft = r
                notes.append(f"{src.name}: quoteSend at block {r.block_number}")
            elif isinstance(r, FeedPrices):
                prices.update(
                    {t: v for t, v in r.prices_usd_e8.items() if f"price:{t.value}" in src.components}
                )
                notes.append(f"{src.name}: prices as of {_iso(r.as_of_unix)}")
        fallback_used: list[str] = []
        if self.config.fallback == "embedded":
            for comp in sorted(unavailable):
                if comp in snap.pools:
                    pools[comp] = snap.pools[comp]
                elif comp.startswith("price:"):
                    prices[Token(comp.removeprefix("price:"))] = snap.prices_usd_e8[
                        Token(comp.removeprefix("price:"))
                    ]
                elif comp == Provider.CIRCLE_CCTP.value:
                    cctp_fees = dict(snap.cctp.fast_fee_bps_milli)
                elif comp == Provider.ACROSS.value:
                    across = None  # the snapshot's Across model is used below
                elif comp == Provider.PAXOS_OFT.value:
                    oft = None
                else:
                    continue
                fallback_used.append(comp)
                notes.append(
                    f"FALLBACK: {comp} is priced from the embedded (modelled, not live) snapshot of {snap.as_of} "
                    f"because its live source failed ({unavailable[comp]})"
                )
            for comp in fallback_used:
                del unavailable[comp]
            if fallback_used:
                times.append(_parse_iso(snap.as_of))
        cctp = CctpModel(
            fast_fee_bps_milli=cctp_fees if cctp_fees is not None else dict(snap.cctp.fast_fee_bps_milli),
            max_fee_buffer_percent=snap.cctp.max_fee_buffer_percent,
            attestation_seconds=dict(snap.cctp.attestation_seconds),
            mint_seconds=snap.cctp.mint_seconds,
        )
        across_model = (
            AcrossModel(
                lp_fee_ppm=across.lp_fee_ppm,
                relayer_capital_fee_ppm=across.relayer_capital_fee_ppm,
                relayer_gas_fee_base=across.relayer_gas_fee_base,
                output_tolerance_bps=snap.across.output_tolerance_bps,
                fill_seconds=across.fill_seconds or snap.across.fill_seconds,
            )
            if across is not None
            else snap.across
        )
        oft_model = replace(snap.oft, native_fee_wei=oft.native_fee_wei) if oft is not None else snap.oft
        numbers = {
            "pools": [pool_document(p) for _, p in sorted(pools.items())],
            "prices": {t.value: str(v) for t, v in sorted(prices.items())},
            "cctp": {str(k): v for k, v in sorted(cctp.fast_fee_bps_milli.items())},
            "across": [
                across_model.lp_fee_ppm,
                across_model.relayer_capital_fee_ppm,
                str(across_model.relayer_gas_fee_base),
                across_model.fill_seconds,
            ],
            "oft": str(oft_model.native_fee_wei),
            "unavailable": dict(sorted(unavailable.items())),
            "fallback": fallback_used,
        }
        digest = hashlib.sha256(
            json.dumps(numbers, sort_keys=True, separators=(",", ":")).encode()
        ).hexdigest()
        as_of = _iso(min(times)) if times else self.clock.now().isoformat().replace("+00:00", "Z")
        return MarketView(
            source="live+embedded_fallback" if fallback_used else "live",
            version=f"live-{digest[:20]}",
            as_of=as_of,
            notes=tuple(notes),
            live=not fallback_used,
            prices_usd_e8=prices,
            pools=pools,
            cctp=cctp,
            across=across_model,
            oft=oft_model,
            gas_units=snap.gas_units,
            swap_tolerance_bps=snap.swap_tolerance_bps,
            swap_seconds=snap.swap_seconds,
            unavailable=unavailable,
            fallback_components=tuple(fallback_used),
        )

    def health(self) -> list[SourceHealth]:
        self.ensure_sources()
        out = [
            SourceHealth(
                name=s.name,
                ok=s.error is None,
                reason=None if s.error is None else self._reason(s),
                checked_at=s.checked_at,
                components=s.components,
            )
            for s in self.sources
        ]
        for comp, reason in sorted(self.static_unavailable.items()):
            if self.config.fallback != "embedded":
                out.append(
                    SourceHealth(name=f"unconfigured:{comp}", ok=False, reason=reason, components=(comp,))
                )
        return out

    def source_stats(self) -> list[dict[str, Any]]:
        """Per-source breaker / cache state for `/v2/status` and `routequote market refresh`."""
        return [
            {
                "name": s.name,
                "breaker": "open" if s.failures >= self.config.failure_threshold else "closed",
                "consecutive_failures": s.failures,
                "attempts": s.attempts,
                "block_or_slot": s.key,
                "data_as_of": None if s.as_of_unix is None else _iso(s.as_of_unix),
                "last_latency_ms": None if s.last_latency_ms is None else round(s.last_latency_ms, 1),
                "error": s.error,
            }
            for s in self.sources
        ]


class _Failure(Exception):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
