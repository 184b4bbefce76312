"""Redis adapters for the quote and idempotency stores: shared by every worker and instance.

With them, a prepare may land on another worker than its quote, and an idempotency key is honoured
across workers. Records are JSON with Redis' own expiry (PX), so an expired quote is simply absent
and binding fails closed, as in memory. An issued quote is stored as its exact payload plus the
integer per-step amounts it was priced with; loading rebuilds the same domain objects.
"""

from __future__ import annotations

from typing import Any

import orjson
import redis.asyncio as aioredis
from redis.exceptions import RedisError

from routequote.core.assets import ASSETS
from routequote.core.intent import QuoteIntent
from routequote.core.pricing import PricedStep, RoutePricing
from routequote.core.quote import QuoteBody
from routequote.core.routes import ROUTES
from routequote.errors import DependencyUnavailable
from routequote.ports import IssuedQuote

_STEP_INTS = (
    "expected_input_base",
    "minimum_input_base",
    "expected_output_base",
    "minimum_output_base",
    "service_fee_base",
    "service_fee_minimum_path_base",
    "provider_fee_base",
    "provider_fee_max_base",
    "native_fee_wei",
    "native_fee_max_wei",
    "ticks_crossed",
    "tolerance_bps",
)
_DYNAMIC_ROUTE_KEYS = ("quote_latency_ms", "server_signing", "server_submission")


def issued_to_record(issued: IssuedQuote) -> dict[str, Any]:
    pricing = issued.body.pricing
    return {
        "payload": issued.payload,
        "market_version": pricing.market_version,
        # base amounts can exceed 2^53: decimal strings, as on the wire
        "steps": [{k: str(getattr(ps, k)) for k in _STEP_INTS} for ps in pricing.steps],
    }


def issued_from_record(record: dict[str, Any], expires_at_monotonic: float) -> IssuedQuote:
    payload = record["payload"]
    route = ROUTES[payload["route"]["route"]]
    intent = QuoteIntent(
        ASSETS[payload["intent"]["from"]], ASSETS[payload["intent"]["to"]], payload["intent"]["amount_usd"]
    )
    steps = tuple(
        PricedStep(step=step, **{k: int(v) for k, v in raw.items()})
        for step, raw in zip(route.steps, record["steps"], strict=True)
    )
    body = QuoteBody(
        intent=payload["intent"],
        offer=payload["offer"],
        route_fields={k: v for k, v in payload["route"].items() if k not in _DYNAMIC_ROUTE_KEYS},
        risk=payload["risk"],
        cost_summary=payload["cost_summary"],
        eta=payload["eta"],
        market=payload["market"],
        summary=payload["direct_route_summary"],
        summary_sha256=payload["continuation_v3"]["direct_route_summary_sha256"],
        price_recommended=payload["price_recommended_for_amount"],
        route=route,
        pricing=RoutePricing(route, record["market_version"], steps),
    )
    return IssuedQuote(payload, intent, route, body, expires_at_monotonic)


class _RedisClient:
    def __init__(self, url: str, prefix: str) -> None:
        self.url = url
        self.prefix = prefix
        self._client: aioredis.Redis | None = None

    @property
    def client(self) -> aioredis.Redis:
        # created on first use, inside the event loop that serves this app
        if self._client is None:
            self._client = aioredis.Redis.from_url(self.url, socket_timeout=1.0, socket_connect_timeout=1.0)
        return self._client

    def unavailable(self, exc: Exception) -> DependencyUnavailable:
        """Redis is away: 503 quote_store_unavailable (fails closed, never a 500; the reason names no URL)."""
        return DependencyUnavailable(
            "quote_store_unavailable", "the shared quote store is unreachable", retry_after_seconds=5
        )

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None


class RedisQuoteStore(_RedisClient):
    scope = "shared_redis_ttl_expired_fails_closed"

    def __init__(self, url: str, prefix: str = "routequote:quote:") -> None:
        super().__init__(url, prefix)

    async def put(self, issued: IssuedQuote) -> None:
        ttl_ms = int(issued.payload["ttl_seconds"]) * 1000
        try:
            await self.client.set(
                self.prefix + issued.payload["quote_id"], orjson.dumps(issued_to_record(issued)), px=ttl_ms
            )
        except (RedisError, OSError) as exc:
            raise self.unavailable(exc) from exc

    async def get(self, quote_id: str, now_monotonic: float) -> IssuedQuote | None:
        key = self.prefix + quote_id
        try:
            async with self.client.pipeline(transaction=False) as pipe:
                pipe.get(key)
                pipe.pttl(key)
                raw, pttl = await pipe.execute()
        except (RedisError, OSError) as exc:
            raise self.unavailable(exc) from exc
        if raw is None or pttl is None or pttl <= 0:
            return None
        return issued_from_record(orjson.loads(raw), now_monotonic + pttl / 1000)

    def retained(self) -> int | None:
        return None  # counting keys would scan the shared keyspace


class RedisIdempotencyStore(_RedisClient):
    def __init__(self, url: str, prefix: str = "routequote:idempotency:") -> None:
        super().__init__(url, prefix)

    async def get(self, key: str, now_monotonic: float) -> tuple[str, dict[str, Any]] | None:
        try:
            raw = await self.client.get(self.prefix + key)
        except (RedisError, OSError) as exc:
            raise self.unavailable(exc) from exc
        if raw is None:
            return None
        record = orjson.loads(raw)
        return record["request_sha256"], record["response"]

    async def put(
        self,
        key: str,
        request_sha256: str,
        response: dict[str, Any],
        ttl_seconds: float,
        now_monotonic: float,
    ) -> None:
        # NX: when two workers race on one key, the first answer stays the answer
        body = orjson.dumps({"request_sha256": request_sha256, "response": response})
        try:
            await self.client.set(self.prefix + key, body, px=max(1, int(ttl_seconds * 1000)), nx=True)
        except (RedisError, OSError) as exc:
            raise self.unavailable(exc) from exc

    def retained(self) -> int | None:
        return None
