"""Redis adapters for the quote and idempotency stores: shared by every worker and instance.

With them, a prepare may land on another worker than its quote, and an idempotency key is honoured
across workers. Each store speaks over one multiplexed connection (`redis_wire`): one round trip per issued
quote, one per lookup. An issued quote is stored as its exact JSON plus the integer per-step amounts it was
priced with (`quote_records`): whole, or compact beside one shared record per compiled issue; loading rebuilds
the same domain objects.

Quotes are kept in one hash per second of issue, not one key each: the store's quote ids carry that second in
their last byte (still a valid uuid4), and each record starts with its own expiry. A per-key write cost
redis-server its keyspace's upkeep (a second dict of expiries, rehashing, the expiry cycle) on every quote;
a field in a hash costs none of that, and the hash expires whole, 60 s (the longest quote TTL) plus a grace
after its second. An expired quote is absent or refused by its record's expiry: binding fails closed, as in
memory. A quote id this store did not make (or made more than a moment ago) is stored under its own key with
Redis' own expiry (PX), as before.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from routequote.clock import random_uuid4
from routequote.core.quote_issue import IssueTemplate
from routequote.errors import DependencyUnavailable
from routequote.ports import IssuedQuote
from routequote.storage.quote_records import (
    compact_head,
    compact_tail,
    idempotency_answer,
    issued_from_stored,
    issued_to_record,
    shared_key,
    shared_key_of,
    shared_record,
    whole_record,
)
from routequote.storage.redis_wire import RedisReplyError, RedisUnavailable, RedisWire, pack
from routequote.storage.store_faults import MalformedRecord, fault_of
from routequote.store_errors import log_malformed, store_unavailable

# how long a reply may take before the wire fails its waiters as `timed_out` (a test that must not race it on a
# loaded machine lengthens it to its own hang bound)
WIRE_TIMEOUT_SECONDS = 1.0


class _RedisClient:
    def __init__(self, url: str, prefix: str) -> None:
        self.url = url
        self.prefix = prefix
        # connects on first use, in the serving event loop
        self.wire = RedisWire(url, timeout_seconds=WIRE_TIMEOUT_SECONDS)

    def unavailable(self, exc: Exception) -> DependencyUnavailable:
        """Redis cannot serve: 503 quote_store_unavailable with its `store_fault` (fails closed, never a 500;
        the answer names no URL)."""
        return store_unavailable("quote_store_unavailable", "shared quote store", fault_of(exc))

    def malformed(self, key: str, exc: Exception) -> DependencyUnavailable:
        """A record under `key` that does not parse: a fault of the store, logged once, 503 (never a 500)."""
        log_malformed(f"redis:{self.prefix}", key, exc)
        return store_unavailable("quote_store_unavailable", "shared quote store", "malformed_record")

    def observe_writes(self, observe: Callable[[float, int], None]) -> None:
        """`observe(round trip in seconds, commands)` for each write this store's connection makes."""
        self.wire.on_write = observe

    async def aclose(self) -> None:
        await self.wire.aclose()


# One round trip per lookup: the quote's record (a field of its second's hash, else a key of its own with its
# remaining lifetime) and, for a compact record, the shared record it names. A missing quote is nil.
_LOOKUP = b"""
local record = redis.call('HGET', KEYS[1], ARGV[1])
local pttl = -1
local start = 1
if record then
  start = (string.find(record, '|', 1, true) or 0) + 1
else
  record = redis.call('GET', KEYS[2])
  if not record then return false end
  pttl = redis.call('PTTL', KEYS[2])
end
if string.sub(record, start, start) ~= 'C' then return {record, pttl} end
local newline = string.find(record, '\\n', start, true)
if not newline then return {record, pttl} end
return {record, pttl, redis.call('GET', string.sub(record, start + 1, newline - 1))}
"""
# a shared record outlives the last quote that names it by this much
SHARED_GRACE_MS = 60_000
# a second's hash outlives the longest quote TTL (60 s) issued in it by this much (hosts' clocks may differ by
# less)
BUCKET_GRACE_MS = 10_000
LONGEST_TTL_MS = 60_000
# a quote id names the second it was made in, if it was made at most this long before it is stored (else its
# quote goes under its own key)
_BUCKET_SLACK_SECONDS = 2


@dataclass
class _Shared:
    """The shared record of one compiled issue, and the second of issue in which its expiry was last pushed
    past its quotes' (checked by that PEXPIRE's reply, and written again when missing)."""

    key: str
    record: bytes
    ttl_seconds: int
    head: bytes  # each compact record's start (`compact_head`)
    kept_in_second: int = -1


class SecondIds:
    """Quote ids for the Redis store: a random uuid4 whose last byte is the second of issue, modulo 256."""

    def __init__(self, wall: Callable[[], float] = time.time) -> None:
        self.wall = wall

    def new_id(self) -> str:
        return random_uuid4(last_byte=int(self.wall()) % 256)


_BYTE_OF_HEX = {f"{byte:02x}": byte for byte in range(256)}


def last_byte(quote_id: str) -> int | None:
    """The last byte of a 36-character id (two lowercase hex digits), else None."""
    return _BYTE_OF_HEX.get(quote_id[34:]) if len(quote_id) == 36 else None


def second_of(quote_id: str, now_second: int) -> int | None:
    """The second a quote id made by `SecondIds` names: the latest one up to `now_second` with its last byte;
    None when that is not within a moment of now, or the id is not one of ours."""
    byte = last_byte(quote_id)
    if byte is None:
        return None
    second = now_second - (now_second - byte) % 256
    return second if now_second - second <= _BUCKET_SLACK_SECONDS else None


class RedisQuoteStore(_RedisClient):
    """Quotes of a compiled issue are stored compact: their own values (a few hundred bytes) naming one shared
    record of what every quote of that issue has in common, which is written once and kept alive by the first
    quote of each second. A quote of the reference assembly (the first of a body) is stored whole."""

    scope = "shared_redis_ttl_expired_fails_closed"

    def __init__(
        self, url: str, prefix: str = "routequote:quote:", wall: Callable[[], float] = time.time
    ) -> None:
        super().__init__(url, prefix)
        self.shared_prefix = prefix + "shared:"
        self.wall = wall
        self.ids = SecondIds(wall)
        self._bucket_prefix = (prefix + "b:").encode()
        self._expiring_second = -1  # the last second whose hash this store gave its expiry
        self._hset_second, self._hset_head = -1, b""
        # per compiled issue, its shared record and key (made once; gone with the issue)
        self._shared: weakref.WeakKeyDictionary[IssueTemplate, _Shared] = weakref.WeakKeyDictionary()

    def bucket_key(self, second: int) -> bytes:
        return b"%s%d" % (self._bucket_prefix, second % 256)

    async def put(self, issued: IssuedQuote) -> None:
        """One round trip: the quote's field in its second's hash (with, once a second, the hash's expiry and
        the shared record's expiry pushed past this quote's). The shared record is written when that says it is
        missing."""
        ttl_ms = issued.ttl_seconds * 1000
        now = self.wall()
        now_ms, second = int(now * 1000), second_of(issued.quote_id, int(now))
        try:
            if second is None:  # not an id of ours: the whole record, under its own key
                await self.wire.command(
                    b"SET", self.prefix + issued.quote_id, issued_to_record(issued), b"PX", ttl_ms
                )
                return
            shared = self._shared_of(issued)
            if shared is None:
                record_head, record_tail = b"", issued_to_record(issued)
            else:
                record_head, record_tail = shared.head, compact_tail(issued)
            field = b"%d|%s%s" % (now_ms + ttl_ms, record_head, record_tail)
            if second != self._hset_second:  # the command up to its field's name, packed once a second
                bucket = self.bucket_key(second)
                self._hset_second = second
                self._hset_head = b"*4\r\n$4\r\nHSET\r\n$%d\r\n%s\r\n" % (len(bucket), bucket)
            quote_id = issued.quote_id.encode()
            sizes_and_args = (self._hset_head, len(quote_id), quote_id, len(field), field)
            data = b"%s$%d\r\n%s\r\n$%d\r\n%s\r\n" % sizes_and_args
            extra: list[bytes] = []
            expiring = second != self._expiring_second
            if expiring:  # relative, as every expiry here: Redis' own clock may differ from this host's
                lifetime_ms = (second + 1) * 1000 + max(ttl_ms, LONGEST_TTL_MS) + BUCKET_GRACE_MS - now_ms
                extra.append(pack((b"PEXPIRE", self.bucket_key(second), lifetime_ms)))
            keeping = shared if shared is not None and shared.kept_in_second != second else None
            if keeping is not None:
                extra.append(pack((b"PEXPIRE", keeping.key, ttl_ms + SHARED_GRACE_MS)))
            replies = await self.wire.packed(data + b"".join(extra) if extra else data, 1 + len(extra))
            if expiring:
                self._expiring_second = max(self._expiring_second, second)
            if keeping is not None:
                if replies[-1] != 1:  # first quote of this issue here, or the shared record was evicted
                    keep_ms = ttl_ms + SHARED_GRACE_MS
                    await self.wire.command(b"SET", keeping.key, keeping.record, b"PX", keep_ms)
                keeping.kept_in_second = max(keeping.kept_in_second, second)
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
            key = shared_key(self.shared_prefix, record)
            found = self._shared[template] = _Shared(
                key, record, issued.ttl_seconds, compact_head(key, issued.ttl_seconds)
            )
        return found

    async def get(self, quote_id: str, now_monotonic: float) -> IssuedQuote | None:
        """One round trip: the record, its lifetime and any shared record, read by one script."""
        byte = last_byte(quote_id)
        bucket = self._bucket_prefix if byte is None else self.bucket_key(byte)  # no hash has the bare prefix
        try:
            reply = await self.wire.command(b"EVAL", _LOOKUP, 2, bucket, self.prefix + quote_id, quote_id)
        except (RedisUnavailable, RedisReplyError) as exc:
            raise self.unavailable(exc) from exc
        if reply is None:
            return None  # no such quote
        try:
            return self._loaded(reply, now_monotonic)
        except MalformedRecord as exc:
            raise self.malformed(quote_id, exc) from None

    def _loaded(self, reply: Any, now_monotonic: float) -> IssuedQuote | None:
        """The lookup's reply as a quote; None when it expired or its shared record is gone (fails closed, as an
        expired quote); MalformedRecord when what Redis holds does not parse."""
        if not isinstance(reply, list) or len(reply) < 2:
            raise MalformedRecord("a quote lookup's reply is not [record, pttl, ...]")
        raw, pttl = reply[0], reply[1]
        if not isinstance(raw, bytes) or not isinstance(pttl, int):
            raise MalformedRecord("a quote lookup's reply is not [record, pttl, ...]")
        if pttl == -1:  # a field of a second's hash: its expiry (unix ms), '|', the record
            expiry, bar, raw = raw.partition(b"|")
            if not bar or not expiry.isdigit():
                raise MalformedRecord("a quote field without its expiry")
            pttl = int(expiry) - int(self.wall() * 1000)
        if pttl <= 0:
            return None
        if shared_key_of(raw) is not None:
            common = reply[2] if len(reply) > 2 else None
            if not isinstance(common, bytes):
                return None  # the shared record is gone: fails closed, as an expired quote
            try:
                raw = whole_record(raw, common)
            except (ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
                raise MalformedRecord("a compact quote record that does not parse") from exc
        return issued_from_stored(raw, now_monotonic + pttl / 1000)

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
        if raw is None:
            return None
        try:
            if not isinstance(raw, bytes):
                raise MalformedRecord("an idempotency record that is not a string")
            return idempotency_answer(raw)
        except MalformedRecord as exc:
            raise self.malformed(key, exc) from None

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
