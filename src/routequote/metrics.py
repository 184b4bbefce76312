"""Prometheus metrics: every HTTP answer by route template and status, its latency, market source health,
quote latency by route class, sessions by status and their transitions, rate-limit rejections, the issued-quote
store's size (or, on Redis, its writes' round trips), and database / Redis health. Served at GET /metrics (text
exposition format); one registry per app, so tests stay apart. Values that cost a query (sessions by status,
dependency pings) are refreshed when scraped, at most every few seconds."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    generate_latest,
)
from starlette.requests import Request
from starlette.responses import Response

from routequote.core.routes import Mode
from routequote.core.sessions.machine import Status as SessionStatus
from routequote.metric_kinds import LoopCounter, LoopHistogram
from routequote.ports import IdempotencyStore, IssuedQuote, MarketData, QuoteStore, SessionStore

if TYPE_CHECKING:
    from routequote.observability import Tracing
    from routequote.surfaces.health import Probes

ROUTE_CLASS = {
    Mode.SAME_CHAIN_DIRECT: "same_chain",
    Mode.SAME_CHAIN_COMPOSITION: "same_chain",
    Mode.CCTP_COMPOSITION: "cctp",
    Mode.ROBINHOOD_INGRESS: "robinhood_ingress",
    Mode.ROBINHOOD_EGRESS: "robinhood_egress",
}
SESSION_COUNT_CACHE_SECONDS = 5.0


class Metrics:
    def __init__(
        self,
        market: MarketData,
        *,
        quotes: QuoteStore | None = None,
        idempotency: IdempotencyStore | None = None,
        sessions: SessionStore | None = None,
        probes: Probes | None = None,
        tracing: Tracing | None = None,
    ) -> None:
        self.market = market
        self.tracing = tracing
        self.quotes = quotes
        self.idempotency = idempotency
        self.sessions = sessions
        self.probes = probes
        self._sessions_counted_at = -1e9
        self.registry = CollectorRegistry()
        # counted on every answer: the loop's own kinds (routequote.metric_kinds), not prometheus_client's
        self.requests = LoopCounter(
            "routequote_http_requests",
            "HTTP answers by route template and status",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.latency = LoopHistogram(
            "routequote_http_request_seconds",
            "Time from request to the end of the answer",
            ["method", "route"],
            registry=self.registry,
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5),
        )
        self.source_up = Gauge(
            "routequote_market_source_up",
            "1 when a market source is healthy",
            ["source"],
            registry=self.registry,
        )

        self.quote_latency = LoopHistogram(
            "routequote_quote_seconds",
            "Time to price and issue one quote, by route class",
            ["route_class"],
            registry=self.registry,
            buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5),
        )
        self.sessions_by_status = Gauge(
            "routequote_sessions",
            "Sessions in the session database by status",
            ["status"],
            registry=self.registry,
        )
        self.session_transitions = Counter(
            "routequote_session_transitions",
            "Committed session transitions by event and resulting status",
            ["event", "to_status"],
            registry=self.registry,
        )
        self.rate_limited = Counter(
            "routequote_rate_limit_rejections",
            "Requests refused by the per-client rate limit, by operation group",
            ["group"],
            registry=self.registry,
        )
        self.quote_store_records = Gauge(
            "routequote_issued_quote_store_records",
            "Issued quotes held by this process (in-memory store only)",
            registry=self.registry,
        )
        self.idempotency_store_records = Gauge(
            "routequote_prepare_idempotency_records",
            "Prepare idempotency records held (in-memory store only)",
            registry=self.registry,
        )
        self.store_rows = Gauge(
            "routequote_session_store_rows",
            "Rows per table of the session database (what retention bounds)",
            ["table"],
            registry=self.registry,
        )
        self.redis_writes = LoopHistogram(
            "routequote_redis_write_seconds",
            "Time from a write to Redis to its last reply (a quote waits this long), by shared store",
            ["store"],
            registry=self.registry,
            buckets=(0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 0.25, 1.0),
        )
        self.redis_commands = LoopCounter(
            "routequote_redis_commands",
            "Commands written to Redis, by shared store (over the writes' count: commands per write)",
            ["store"],
            registry=self.registry,
        )
        for label, store in (("quotes", quotes), ("idempotency", idempotency)):
            observe_writes = getattr(store, "observe_writes", None)  # the Redis stores only
            if observe_writes is not None:
                observe_writes(functools.partial(self.observe_redis_write, label))
        self.dependency_up = Gauge(
            "routequote_dependency_up",
            "1 when a dependency answers its health check (database, redis)",
            ["component"],
            registry=self.registry,
        )

    # ---- hooks the composition root wires ------------------------------------------------------------

    def gauge_of(self, name: str, documentation: str, read: Callable[[], float]) -> None:
        """A gauge read from `read` at each scrape (e.g. the open event streams)."""
        Gauge(name, documentation, registry=self.registry).set_function(read)

    def on_transition(self, event: str, from_status: str | None, to_status: str) -> None:
        """SessionService's `on_transition` callback: one committed transition."""
        self.session_transitions.labels(event, to_status).inc()

    def on_rate_limited(self, group: str) -> None:
        """RateLimiter's `on_limited` callback: one request refused as over the limit, by operation group."""
        self.rate_limited.labels(group).inc()

    def observe_quote(self, issued: IssuedQuote, seconds: float) -> None:
        """RouteQuoteService's quote hook: every issued quote's latency by route class (REST, MCP, A2A, v1 and
        session re-quotes all issue through `service.quote`), and a span when tracing is on."""
        route_class = ROUTE_CLASS.get(issued.route.mode, "other")
        self.quote_latency.observe(seconds, route_class)
        if self.tracing is not None:
            self.tracing.record_span(
                "routequote.quote",
                seconds,
                {"routequote.route_class": route_class, "routequote.route": issued.route.key},
            )

    def observe_redis_write(self, store: str, seconds: float, commands: int) -> None:
        """A Redis store's hook: one write answered whole."""
        self.redis_writes.observe(seconds, store)
        self.redis_commands.inc(store, by=commands)

    def observe_request(self, method: str, template: str, status: int, seconds: float) -> None:
        """The request stack's hook: one HTTP answer, by route template and status."""
        self.requests.inc(method, template, str(status))
        self.latency.observe(seconds, method, template)

    # ---- scrape --------------------------------------------------------------------------------------

    async def refresh(self) -> None:
        """What costs a query, at most every SESSION_COUNT_CACHE_SECONDS (probes cache themselves)."""
        for store, gauge in (
            (self.quotes, self.quote_store_records),
            (self.idempotency, self.idempotency_store_records),
        ):
            retained = getattr(store, "retained", None)
            count = retained() if retained is not None else None
            if count is not None:
                gauge.set(count)
        if self.probes is not None:
            report = await self.probes.check()
            for name in ("database", "redis"):
                component = report.components.get(name)
                if component is not None:
                    self.dependency_up.labels(name).set(1 if component.ok else 0)
        now = time.monotonic()
        if self.sessions is not None and now - self._sessions_counted_at >= SESSION_COUNT_CACHE_SECONDS:
            self._sessions_counted_at = now
            with contextlib.suppress(
                Exception
            ):  # the database gauge says why; the counts keep their last value
                async with asyncio.timeout(2.0):
                    counts = await self.sessions.count_by_status()
                for status in {*counts, *(s.value for s in SessionStatus)}:  # every status, 0 when none
                    self.sessions_by_status.labels(status).set(counts.get(status, 0))
                sizes = getattr(self.sessions, "table_sizes", None)
                if sizes is not None:
                    async with asyncio.timeout(2.0):
                        for table, rows in (await sizes()).items():
                            self.store_rows.labels(table).set(rows)

    def exposition(self) -> bytes:
        for h in self.market.health():
            self.source_up.labels(h.name).set(1 if h.ok else 0)
        return generate_latest(self.registry)

    async def endpoint(self, _: Request) -> Response:
        await self.refresh()
        return Response(self.exposition(), media_type=CONTENT_TYPE_LATEST)
