"""The issued-quote store: bounded, TTL-expiring, process-local.

A quote is kept until its TTL ends so that prepare and sessions can bind to exactly what was issued.
After a restart the store is empty and binding fails closed (409 reapproval_required), by design.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

MAX_RECORDS = 2048


class MemoryQuoteStore:
    def __init__(self, max_records: int = MAX_RECORDS) -> None:
        self.max_records = max_records
        self._items: OrderedDict[str, tuple[float, dict[str, Any]]] = OrderedDict()

    def _drop_expired(self, now: float) -> None:
        # records are inserted in issue order with one TTL, so expired ones sit at the front
        items = self._items
        while items:
            key, (expires, _) = next(iter(items.items()))
            if expires > now:
                break
            del items[key]

    def put(self, quote_id: str, record: dict[str, Any], expires_at_monotonic: float) -> None:
        self._items[quote_id] = (expires_at_monotonic, record)
        while len(self._items) > self.max_records:
            self._items.popitem(last=False)

    def get(self, quote_id: str, now_monotonic: float) -> dict[str, Any] | None:
        self._drop_expired(now_monotonic)
        entry = self._items.get(quote_id)
        if entry is None or entry[0] <= now_monotonic:
            return None
        return entry[1]

    def __len__(self) -> int:
        return len(self._items)
