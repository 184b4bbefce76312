from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from routequote.storage.quotes import MemoryIdempotencyStore, MemoryQuoteStore


def issued(quote_id: str, expires: float) -> Any:
    return SimpleNamespace(quote_id=quote_id, payload={"quote_id": quote_id}, expires_at_monotonic=expires)


async def test_records_expire_with_their_ttl() -> None:
    store = MemoryQuoteStore()
    record = issued("a", 100.0)
    await store.put(record)
    assert await store.get("a", 99.9) is record
    assert await store.get("a", 100.0) is None
    assert store.retained() == 0


async def test_store_is_bounded_and_drops_oldest_first() -> None:
    store = MemoryQuoteStore(max_records=2048)
    for i in range(2100):
        await store.put(issued(f"q{i}", 1e9))
    assert store.retained() == 2048
    assert await store.get("q0", 0.0) is None and await store.get("q51", 0.0) is None
    assert (await store.get("q52", 0.0)).payload == {"quote_id": "q52"}
    assert (await store.get("q2099", 0.0)).payload == {"quote_id": "q2099"}


async def test_unknown_id() -> None:
    assert await MemoryQuoteStore().get("nope", 0.0) is None


async def test_idempotency_records_expire() -> None:
    store = MemoryIdempotencyStore()
    await store.put("k", "sha", {"a": 1}, ttl_seconds=10, now_monotonic=5.0)
    assert await store.get("k", 14.9) == ("sha", {"a": 1})
    assert await store.get("k", 15.0) is None
