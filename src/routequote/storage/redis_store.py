"""Redis adapters for the quote and idempotency stores: shared by every worker and instance.

With them, a prepare may land on another worker than its quote, and an idempotency key is honoured
across workers. Each store speaks over one multiplexed connection (`redis_wire`): one round trip per issued
quote, one per lookup. Records expire by Redis' own expiry (PX), so an expired quote is simply absent and
binding fails closed, as in memory. An issued quote is stored as its exact JSON plus the integer per-step
amounts it was priced with (`quote_records`): whole, or compact beside one shared record per compiled issue;
loading rebuilds the same domain objects.
"""

from __future__ import annotations

import weakref
from typing import Any, NamedTuple

import orjson

from routequote.core.quote_issue import IssueTemplate
from routequote.errors import DependencyUnavailable
from routequote.ports import IssuedQuote
from routequote.storage.quote_records import (
    compact_record,
    issued_or_none,
    issued_to_record,
    shared_key,
    shared_key_of,
    shared_record,
    whole_record,
)
from routequote.storage.redis_wire import RedisReplyError, RedisUnavailable, RedisWire, pack, pack_arguments


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


# One round trip per lookup: the quote's record, its remaining lifetime, and (for a compact record) the shared
# record it names. A missing key is nil.
_LOOKUP = b"""
local record = redis.call('GET', KEYS[1])
if not record then return false end
local pttl = redis.call('PTTL', KEYS[1])
if string.sub(record, 1, 1) ~= 'C' then return {record, pttl} end
local newline = string.find(record, '\\n', 1, true)
if not newline then return {record, pttl} end
return {record, pttl, redis.call('GET', string.sub(record, 2, newline - 1))}
"""
# a shared record outlives the last quote that names it by this much
SHARED_GRACE_MS = 60_000


class _Shared(NamedTuple):
    """The shared record of one compiled issue, and the parts of each of its quotes' commands that never change."""

    key: str
    record: bytes
    ttl_seconds: int
    expiry: bytes  # the quote's SET's PX argument, packed
    keep_alive: bytes  # the whole PEXPIRE of the shared record, packed

    @classmethod
    def of(cls, key: str, record: bytes, ttl_seconds: int) -> _Shared:
        ttl_ms = ttl_seconds * 1000
        return cls(
            key,
            record,
            ttl_seconds,
            pack_arguments((b"PX", ttl_ms)),
            pack((b"PEXPIRE", key, ttl_ms + SHARED_GRACE_MS)),
        )


class RedisQuoteStore(_RedisClient):
    """Quotes of a compiled issue are stored compact: their own values (a few hundred bytes) naming one shared
    record of what every quote of that issue has in common, which is written once and kept alive by each
    quote. A quote of the reference assembly (the first of a body) is stored whole."""

    scope = "shared_redis_ttl_expired_fails_closed"

    def __init__(self, url: str, prefix: str = "routequote:quote:") -> None:
        super().__init__(url, prefix)
        self.shared_prefix = prefix + "shared:"
        # per compiled issue, its shared record and key (made once; gone with the issue)
        self._shared: weakref.WeakKeyDictionary[IssueTemplate, _Shared] = weakref.WeakKeyDictionary()

    async def put(self, issued: IssuedQuote) -> None:
        """One round trip: SET with Redis' own expiry (and, for a compact record, the shared record's expiry
        pushed past this quote's). The shared record is written when that says it is missing."""
        ttl_ms = issued.ttl_seconds * 1000
        key = self.prefix + issued.quote_id
        try:
            shared = self._shared_of(issued)
            if shared is None:
                await self.wire.command(b"SET", key, issued_to_record(issued), b"PX", ttl_ms)
                return
            record = compact_record(issued, shared.key)
            raw_key = key.encode()
            # the SET's key and record are this quote's own; its expiry and the whole PEXPIRE were packed once
            _, kept = await self.wire.packed(
                b"*5\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n%s%s"
                % (len(raw_key), raw_key, len(record), record, shared.expiry, shared.keep_alive),
                2,
            )
            if kept != 1:  # first quote of this issue here, or the shared record was evicted
                keep_ms = ttl_ms + SHARED_GRACE_MS
                await self.wire.command(b"SET", shared.key, shared.record, b"PX", keep_ms)
        except (RedisUnavailable, RedisReplyError) as exc:
            raise self.unavailable(exc) from exc

    def _shared_of(self, issued: IssuedQuote) -> _Shared | None:
        template = issued.template
        if template is None or not issued.values:
            return None
        found = self._shared.get(template)
        if found is None or found.ttl_seconds != issued.ttl_seconds:
            record = shared_record(issued)
            if record is None:
                return None
            found = self._shared[template] = _Shared.of(
                shared_key(self.shared_prefix, record), record, issued.ttl_seconds
            )
        return found

    async def get(self, quote_id: str, now_monotonic: float) -> IssuedQuote | None:
        """One round trip: the record, its PTTL and any shared record, read by one script."""
        try:
            reply = await self.wire.command(b"EVAL", _LOOKUP, 1, self.prefix + quote_id)
        except (RedisUnavailable, RedisReplyError) as exc:
            raise self.unavailable(exc) from exc
        if not isinstance(reply, list) or len(reply) < 2:
            return None
        raw, pttl = reply[0], reply[1]
        if not isinstance(raw, bytes) or not isinstance(pttl, int) or pttl <= 0:
            return None
        if shared_key_of(raw) is not None:
            common = reply[2] if len(reply) > 2 else None
            if not isinstance(common, bytes):
                return None  # the shared record is gone: fails closed, as an expired quote
            try:
                raw = whole_record(raw, common)
            except (ValueError, KeyError, TypeError, AttributeError):
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
