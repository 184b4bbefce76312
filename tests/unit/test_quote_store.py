from __future__ import annotations

from routequote.storage.quotes import MemoryQuoteStore


def test_records_expire_with_their_ttl() -> None:
    store = MemoryQuoteStore()
    store.put("a", {"v": 1}, expires_at_monotonic=100.0)
    assert store.get("a", 99.9) == {"v": 1}
    assert store.get("a", 100.0) is None
    assert len(store) == 0


def test_store_is_bounded_and_drops_oldest_first() -> None:
    store = MemoryQuoteStore(max_records=2048)
    for i in range(2100):
        store.put(f"q{i}", {"i": i}, expires_at_monotonic=1e9)
    assert len(store) == 2048
    assert store.get("q0", 0.0) is None and store.get("q51", 0.0) is None
    assert store.get("q52", 0.0) == {"i": 52} and store.get("q2099", 0.0) == {"i": 2099}


def test_unknown_id() -> None:
    assert MemoryQuoteStore().get("nope", 0.0) is None
