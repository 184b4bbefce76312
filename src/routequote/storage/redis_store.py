"""Redis adapters for the quote and idempotency stores: shared by every worker and instance.

With them, a prepare may land on another worker than its quote, and an idempotency key is honoured
across workers. Each store speaks over one multiplexed connection (`redis_wire`): one round trip per issued
quote, one per lookup. Records are a JSON head line and the quote's exact JSON, with Redis' own expiry (PX), so an expired quote is simply absent
and binding fails closed, as in memory. An issued quote is stored as its exact payload plus the
integer per-step amounts it was priced with; loading rebuilds the same domain objects.
"""

from __future__ import annotations

from typing import Any

import orjson

from routequote.errors import DependencyUnavailable
from routequote.ports import IssuedQuote
from routequote.storage.quote_records import issued_or_none, issued_to_record
from routequote.storage.redis_wire import RedisReplyError, RedisUnavailable, RedisWire


class _RedisClient:
    def __init__(self, url: str, prefix: str) -> None:
        self.url = url
        self.prefix = prefix
        self.wire = RedisWire(url, timeout_seconds=1.0)  # connects on first use, in the serving event loop

    def unavailable(self, exc: Exception) -> DependencyUnavailable:
        """Redis is away: 503 quote_store_unavailable (fails closed, never a 500; the reason names no URL)."""
        return DependencyUnavailable(
            "quote_store_unavailable", "the shared quote store is unreachable", retry_after_seconds=5
        )

    async def aclose(self) -> None:
        await self.wire.aclose()


class RedisQuoteStore(_RedisClient):
    scope = "shared_redis_ttl_expired_fails_closed"

    def __init__(self, url: str, prefix: str = "routequote:quote:") -> None:
        super().__init__(url, prefix)

    async def put(self, issued: IssuedQuote) -> None:
        """One round trip: SET with Redis' own expiry."""
        record = issued_to_record(issued)
        try:
            await self.wire.command(
                b"SET", self.prefix + issued.quote_id, record, b"PX", issued.ttl_seconds * 1000
            )
        except (RedisUnavailable, RedisReplyError) as exc:
            raise self.unavailable(exc) from exc

    async def get(self, quote_id: str, now_monotonic: float) -> IssuedQuote | None:
        """One round trip: GET and PTTL written together."""
        key = self.prefix + quote_id
        try:
            raw, pttl = await self.wire.commands((b"GET", key), (b"PTTL", key))
        except (RedisUnavailable, RedisReplyError) as exc:
            raise self.unavailable(exc) from exc
        if not isinstance(raw, bytes) or not isinstance(pttl, int) or pttl <= 0:
            return None
        return issued_or_none(raw, now_monotonic + pttl / 1000)

    def retained(self) -> int | None:
        return None  # counting keys would scan the shared keyspace


class RedisIdempotencyStore(_RedisClient):
    def __init__(self, url: str, prefix: str = "routequote:idempotency:") -> None:
        super().__init__(url, prefix)

    async def get(self, key: str, now_monotonic: float) -> tuple[str, dict[str, Any]] | None:
        try:
            raw = await self.wire.command(b"GET", self.prefix + key)
        except (RedisUnavailable, RedisReplyError) as exc:
            raise self.unavailable(exc) from exc
        if not isinstance(raw, bytes):
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
        px = max(1, int(ttl_seconds * 1000))
        try:
            await self.wire.command(b"SET", self.prefix + key, body, b"PX", px, b"NX")
        except (RedisUnavailable, RedisReplyError) as exc:
            raise self.unavailable(exc) from exc

    def retained(self) -> int | None:
        return None
