"""The quote store the workers of one machine share: two store objects on one file stand for two workers."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from routequote.clock import SystemClock, UuidFactory
from routequote.config import Settings
from routequote.core.intent import parse_quote_request
from routequote.market.snapshot import EmbeddedSnapshot
from routequote.service import RouteQuoteService, ServiceConfig
from routequote.storage import sqlite_quotes
from routequote.storage.sqlite_quotes import SqliteIdempotencyStore, SqliteQuoteStore

INTENT = {
    "from_chain": "base",
    "from_token": "ETH",
    "to_chain": "solana",
    "to_token": "USDC",
    "amount_usd": 100,
}


def worker(store: SqliteQuoteStore, ttl: int = 60) -> RouteQuoteService:
    return RouteQuoteService(
        EmbeddedSnapshot(), store, SystemClock(), UuidFactory(), ServiceConfig(quote_ttl_seconds=ttl)
    )


async def test_a_quote_issued_by_one_worker_is_found_by_the_other(tmp_path: Path) -> None:
    a, b = (
        SqliteQuoteStore(str(tmp_path / "q.sqlite3"), "a"),
        SqliteQuoteStore(str(tmp_path / "q.sqlite3"), "b"),
    )
    try:
        issuer, other = worker(a), worker(b)
        issued = await asyncio.gather(*(issuer.quote(parse_quote_request(INTENT)) for _ in range(50)))
        for q in issued:  # every put returned after its group was committed: the other worker sees it at once
            found = await other.issued_quote(q.payload["quote_id"])
            assert found is not None and found.payload == q.payload
            assert found.body.pricing == q.body.pricing and found.intent == q.intent
        assert await other.issued_quote("00000000-0000-4000-8000-000000000000") is None
        assert a.retained() == 50 and b.retained() == 0  # each worker's own quotes in its memory
    finally:
        await a.aclose()
        await b.aclose()


async def test_an_expired_quote_is_absent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the shared file's expiry is wall-clock time: the store's own, set here (a busy machine's pause between
    # the issue and the first lookup never counts against the TTL)
    wall = [time.time()]
    monkeypatch.setattr(sqlite_quotes, "time", SimpleNamespace(time=lambda: wall[0]))
    a, b = (
        SqliteQuoteStore(str(tmp_path / "q.sqlite3"), "a"),
        SqliteQuoteStore(str(tmp_path / "q.sqlite3"), "b"),
    )
    try:
        issued = await worker(a, ttl=1).quote(parse_quote_request(INTENT))
        assert await worker(b).issued_quote(issued.payload["quote_id"]) is not None
        wall[0] += 0.99
        assert await worker(b).issued_quote(issued.payload["quote_id"]) is not None
        wall[0] += 0.01
        assert await worker(b).issued_quote(issued.payload["quote_id"]) is None
    finally:
        await a.aclose()
        await b.aclose()


async def test_the_first_idempotent_answer_stays_on_every_worker(tmp_path: Path) -> None:
    a, b = (
        SqliteQuoteStore(str(tmp_path / "q.sqlite3"), "a"),
        SqliteQuoteStore(str(tmp_path / "q.sqlite3"), "b"),
    )
    ia, ib = SqliteIdempotencyStore(a), SqliteIdempotencyStore(b)
    try:
        await ia.put("key-00000001", "sha-a", {"answer": "a"}, 60, 0.0)
        await ib.put("key-00000001", "sha-b", {"answer": "b"}, 60, 0.0)  # a racing worker: ignored
        assert await ib.get("key-00000001", 0.0) == ("sha-a", {"answer": "a"})
        assert await ia.get("key-00000001", 0.0) == ("sha-a", {"answer": "a"})
        assert await ia.get("key-unknown-1", 0.0) is None
    finally:
        await a.aclose()
        await b.aclose()


def test_auto_is_memory_with_one_worker_and_peers_with_more() -> None:
    assert Settings(workers=1).resolved_quote_store() == "memory"
    assert Settings(workers=2).resolved_quote_store() == "peers"
    assert Settings(workers=1, quote_store="peers").resolved_quote_store() == "memory"
    assert Settings(workers=2, quote_store="sqlite").resolved_quote_store() == "sqlite"
    assert Settings(workers=2, quote_store="redis").resolved_quote_store() == "redis"
    assert (
        Settings(database_url="sqlite+aiosqlite:///var/x/s.sqlite3").resolved_quote_store_path()
        == "var/x/s.sqlite3-quotes"
    )
    assert (
        Settings(database_url="postgresql://h/db").resolved_quote_store_path()
        == "var/routequote-quotes.sqlite3"
    )


async def test_each_worker_writes_its_own_file_and_removes_it_at_shutdown(tmp_path: Path) -> None:
    path = str(tmp_path / "q.sqlite3")
    a, b = SqliteQuoteStore(path, "a"), SqliteQuoteStore(path, "b")
    issued = await worker(a).quote(parse_quote_request(INTENT))
    await worker(b).quote(parse_quote_request(INTENT))
    assert (tmp_path / "q.sqlite3.a").exists() and (tmp_path / "q.sqlite3.b").exists()
    await a.aclose()
    assert not (tmp_path / "q.sqlite3.a").exists()  # its quotes ended with it: they fail closed
    assert await worker(b).issued_quote(issued.payload["quote_id"]) is None
    await b.aclose()


async def test_the_file_of_a_worker_that_is_gone_is_removed_at_start(tmp_path: Path) -> None:
    dead = tmp_path / "q.sqlite3.999999999"  # beyond any pid this kernel hands out
    dead.write_bytes(b"")
    store = SqliteQuoteStore(str(tmp_path / "q.sqlite3"))
    try:
        await worker(store).quote(parse_quote_request(INTENT))
        assert not dead.exists()
    finally:
        await store.aclose()
