"""GET /livez and GET /readyz: probes for an orchestrator (not rate limited, not in the v2 OpenAPI).

- /livez: the process answers; it looks at no dependency (a database outage must not get a replica
  restarted).
- /readyz: can this replica serve? The market source (at least one healthy source, or the embedded
  fallback configured), the session database (a `SELECT 1`), and Redis when ROUTEQUOTE_REDIS_URL is set
  (PING, after the connection's AUTH and SELECT: a refused database number or password is named by its
  `fault`). 200 when all are, else 503 naming the failing components. What sessions can observe with (an RPC
  URL per chain, the bridge lookups, the USDG OFT pin) is reported beside them and never fails the probe. A
  reason says what is unavailable,
  never a driver class, SQLSTATE, URL, host name or password: those go to the log. One check serves every probe for a second (a probe flood never
  becomes a database flood).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

import structlog
from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from routequote.ports import MarketData, SessionStore, StoreUnavailable
from routequote.surfaces.direct_route import DirectRoute
from routequote.surfaces.errors import json_response

CHECK_TIMEOUT_SECONDS = 2.0
CACHE_SECONDS = 1.0
log = structlog.get_logger("routequote.health")


def _detail(exc: BaseException) -> str:
    """For the log: the store's own secret-free account, else the class only (a message may carry a DSN)."""
    if isinstance(exc, StoreUnavailable):
        return str(exc)[:200]
    return "timed out" if isinstance(exc, TimeoutError) else type(exc).__name__


@dataclass(frozen=True)
class Component:
    ok: bool
    reason: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"ok": self.ok}
        if self.reason:
            out["reason"] = self.reason
        out.update(self.detail)
        return out


@dataclass(frozen=True)
class Readiness:
    components: dict[str, Component]
    # reported, never failing readiness: an instance on the development fee placeholders still serves quotes
    fee_recipients_configured: dict[str, bool] | None = None
    # reported, never failing readiness: what sessions can observe (RPC URL per chain, lookups, the OFT pin)
    observation: dict[str, Any] | None = None

    @property
    def ready(self) -> bool:
        return all(c.ok for c in self.components.values())

    @property
    def failing(self) -> list[str]:
        return sorted(name for name, c in self.components.items() if not c.ok)

    def as_json(self) -> dict[str, Any]:
        return {
            "status": "ready" if self.ready else "not_ready",
            "failing": self.failing,
            "checks": {name: c.as_json() for name, c in sorted(self.components.items())},
            **(
                {
                    "fee_recipients_configured": self.fee_recipients_configured,
                    "warnings": [
                        f"{k} fee recipient is a development placeholder: actions say fee_recipient_configured false"
                        for k, ok in self.fee_recipients_configured.items()
                        if not ok
                    ],
                }
                if self.fee_recipients_configured is not None
                else {}
            ),
            **({"observation": self.observation} if self.observation else {}),
        }


class Probes:
    """The dependency checks behind /readyz and the health gauges of /metrics."""

    def __init__(
        self,
        market: MarketData,
        sessions: SessionStore | None,
        redis_url: str = "",
        market_fallback: str = "none",
        fee_recipients_configured: dict[str, bool] | None = None,
    ) -> None:
        self.market = market
        self.fee_recipients_configured = fee_recipients_configured
        self.sessions = sessions
        self.redis_url = redis_url
        self.market_fallback = market_fallback
        self.observation: dict[str, Any] | None = None  # set by the composition root
        self._redis: Any = None
        self._cached: tuple[float, Readiness] | None = None
        self._lock = asyncio.Lock()

    def market_component(self) -> Component:
        health = [h for h in self.market.health() if not h.name.startswith("unconfigured:")]
        down = sorted(h.name for h in health if not h.ok)
        up = len(health) - len(down)
        ok = up > 0 or self.market_fallback == "embedded"
        return Component(
            ok, None if ok else "no market source is healthy", {"sources_up": up, "sources_down": down}
        )

    async def _database(self) -> Component:
        if self.sessions is None:
            return Component(True, None, {"configured": False})
        try:
            async with asyncio.timeout(CHECK_TIMEOUT_SECONDS):
                await self.sessions.ping()
            return Component(True)
        except Exception as exc:  # the answer names no internals
            log.warning("readiness_database_unavailable", detail=_detail(exc))
            return Component(False, "session database unavailable")

    async def _redis_component(self) -> Component:
        try:
            if self._redis is None:
                import redis.asyncio as aioredis

                self._redis = aioredis.Redis.from_url(
                    self.redis_url,
                    socket_timeout=CHECK_TIMEOUT_SECONDS,
                    socket_connect_timeout=CHECK_TIMEOUT_SECONDS,
                )
            async with asyncio.timeout(CHECK_TIMEOUT_SECONDS):
                await self._redis.ping()
            return Component(True)
        except Exception as exc:  # the answer names no internals (driver class, host): only its fault
            from routequote.storage.store_faults import fault_of
            from routequote.store_errors import FAULTS

            fault = fault_of(exc)
            log.warning("readiness_redis_unavailable", detail=_detail(exc), fault=fault)
            return Component(False, f"redis unavailable: {FAULTS[fault]}", {"fault": fault})

    async def check(self, *, fresh: bool = False) -> Readiness:
        now = time.monotonic()
        if not fresh and self._cached is not None and now - self._cached[0] < CACHE_SECONDS:
            return self._cached[1]
        async with self._lock:
            if not fresh and self._cached is not None and time.monotonic() - self._cached[0] < CACHE_SECONDS:
                return self._cached[1]
            checks: list[Any] = [self._database()]
            if self.redis_url:
                checks.append(self._redis_component())
            results = await asyncio.gather(*checks)
            components = {"market": self.market_component(), "database": results[0]}
            if self.redis_url:
                components["redis"] = results[1]
            report = Readiness(components, self.fee_recipients_configured, self.observation)
            self._cached = (time.monotonic(), report)
            return report

    async def aclose(self) -> None:
        if self._redis is not None:
            await self._redis.aclose()
            self._redis = None


def router(probes: Probes) -> APIRouter:
    api = APIRouter(include_in_schema=False, route_class=DirectRoute)  # every endpoint: (request) -> Response

    @api.get("/livez")
    async def livez(_: Request) -> Response:
        return json_response({"status": "ok"}, headers={"cache-control": "no-store"})

    @api.get("/readyz")
    async def readyz(_: Request) -> Response:
        report = await probes.check()
        return json_response(
            report.as_json(), 200 if report.ready else 503, headers={"cache-control": "no-store"}
        )

    return api
