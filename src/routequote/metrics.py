"""Prometheus metrics: every HTTP answer by route template and status, its latency, and market source
health. Served at GET /metrics (text exposition format); one registry per app, so tests stay apart."""

from __future__ import annotations

import time
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from routequote.ports import MarketData


class Metrics:
    def __init__(self, market: MarketData) -> None:
        self.market = market
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "routequote_http_requests", "HTTP answers by route template and status",
            ["method", "route", "status"], registry=self.registry,
        )  # fmt: skip
        self.latency = Histogram(
            "routequote_http_request_seconds", "Time from request to the end of the answer",
            ["method", "route"], registry=self.registry,
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5),
        )  # fmt: skip
        self.source_up = Gauge(
            "routequote_market_source_up", "1 when a market source is healthy", ["source"], registry=self.registry
        )

    def exposition(self) -> bytes:
        for h in self.market.health():
            self.source_up.labels(h.name).set(1 if h.ok else 0)
        return generate_latest(self.registry)

    async def endpoint(self, _: Request) -> Response:
        return Response(self.exposition(), media_type=CONTENT_TYPE_LATEST)


class MetricsMiddleware:
    """Pure ASGI (no per-request task): counts after routing, so the label is the route template
    (`/v2/quote`), never a raw path a caller chose."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = [500]

        async def capture(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, capture)
        finally:
            route: Any = scope.get("route")
            # FastAPI routes name their template; plain Starlette routes (MCP, A2A) have fixed paths
            template = getattr(route, "path", None) or (scope["path"] if scope.get("endpoint") else "unmatched")
            method = scope.get("method", "GET")
            self.metrics.requests.labels(method, template, str(status[0])).inc()
            self.metrics.latency.labels(method, template).observe(time.perf_counter() - started)
