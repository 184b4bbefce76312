"""In-process stores: bounded, TTL-expiring, gone on restart (binding then fails closed, by design)."""

from __future__ import annotations

from collections import OrderedDict, deque
from typing import Any

from routequote.ports import IssuedQuote

MAX_RECORDS = 2048


class _TtlDict:
    """Insertion-ordered records with an expiry each; the oldest go first when full."""

    def __init__(self, max_records: int) -> None:
        self.max_records = max_records
        self._items: OrderedDict[str, tuple[float, Any]] = OrderedDict()

    def put(self, key: str, value: Any, expires_at: float) -> None:
        self._items[key] = (expires_at, value)
        self._items.move_to_end(key)
        while len(self._items) > self.max_records:
            self._items.popitem(last=False)

    def get(self, key: str, now: float) -> Any | None:
        # records are inserted in issue order with one TTL, so expired ones sit at the front
        while self._items:
            first, (expires, _) = next(iter(self._items.items()))
            if expires > now:
                break
            del self._items[first]
        entry = self._items.get(key)
        return None if entry is None or entry[0] <= now else entry[1]

    def __len__(self) -> int:
        return len(self._items)


class MemoryQuoteStore:
    """Issued quotes by id, with their ids in issue order beside them. A quote id is new every time, so a put
    appends (and drops the oldest when full), and expired quotes are dropped from the front on lookup. (A dict
    alone would not do as the queue: taking its first key walks over every slot deleted before it.)"""

    scope = "bounded_process_local_ttl_restart_fails_closed"

    def __init__(self, max_records: int = MAX_RECORDS) -> None:
        self.max_records = max_records
        self._records: dict[str, IssuedQuote] = {}
        self._order: deque[str] = deque()

    async def put(self, issued: IssuedQuote) -> None:
        records = self._records
        if issued.quote_id not in records:
            self._order.append(issued.quote_id)
        records[issued.quote_id] = issued
        if len(records) > self.max_records:
            del records[self._order.popleft()]

    async def get(self, quote_id: str, now_monotonic: float) -> IssuedQuote | None:
        records, order = self._records, self._order
        # one TTL for every quote, issued in order: the expired ones sit at the front
        while order and records[order[0]].expires_at_monotonic <= now_monotonic:
            del records[order.popleft()]
        found = records.get(quote_id)
        return None if found is None or found.expires_at_monotonic <= now_monotonic else found

    def retained(self) -> int | None:
        return len(self._records)


class MemoryIdempotencyStore:
    def __init__(self, max_records: int = MAX_RECORDS) -> None:
        self._records = _TtlDict(max_records)

    async def get(self, key: str, now_monotonic: float) -> tuple[str, dict[str, Any]] | None:
        found: tuple[str, dict[str, Any]] | None = self._records.get(key, now_monotonic)
        return found

    async def put(
        self,
        key: str,
        request_sha256: str,
        response: dict[str, Any],
        ttl_seconds: float,
        now_monotonic: float,
    ) -> None:
        self._records.put(key, (request_sha256, response), now_monotonic + ttl_seconds)

    def retained(self) -> int | None:
        return len(self._records)
