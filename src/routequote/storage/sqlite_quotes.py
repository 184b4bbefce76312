"""Issued quotes and prepare idempotency records in one SQLite file that every worker on this machine shares.

With `ROUTEQUOTE_WORKERS` > 1 and no Redis, a prepare may land on another worker than its quote: this store
makes the quote visible there. Each worker keeps its own quotes in memory as well (a prepare on the same worker
reads no file). Writes go through one thread per worker and are committed in groups: every quote issued while
the previous group was being written goes into the next one, and `put` returns only once its group is committed,
so a quote is in the file before its answer leaves the worker. Expiry is wall-clock time in the record (the
workers' monotonic clocks are not compared); an expired or unknown quote is simply absent, and binding fails
closed, as in memory. Durability is not wanted here (`synchronous=OFF`): a crash loses the quotes of the last
seconds, and those fail closed too.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson

from routequote.errors import DependencyUnavailable
from routequote.ports import IssuedQuote
from routequote.storage.quote_records import issued_from_record, issued_to_record
from routequote.storage.quotes import MemoryQuoteStore

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS issued_quotes (quote_id TEXT PRIMARY KEY, expires_unix REAL NOT NULL, "
    "record BLOB NOT NULL)",
    "CREATE TABLE IF NOT EXISTS prepare_idempotency (key TEXT PRIMARY KEY, expires_unix REAL NOT NULL, "
    "request_sha256 TEXT NOT NULL, response BLOB NOT NULL)",
)
PURGE_EVERY_SECONDS = 10.0


class _File:
    """One SQLite connection, used only by its one thread."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="routequote-quote-store")
        self._db: sqlite3.Connection | None = None
        self._purged_at = 0.0

    def db(self) -> sqlite3.Connection:  # in the store's thread only
        if self._db is None:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, timeout=10.0, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=OFF")
            for statement in _SCHEMA:
                db.execute(statement)
            self._db = db
        return self._db

    async def run(self, work: Any, *args: Any) -> Any:
        try:
            return await asyncio.get_running_loop().run_in_executor(self.thread, work, *args)
        except sqlite3.Error as exc:
            raise DependencyUnavailable(
                "quote_store_unavailable",
                "the machine's shared quote store is unavailable",
                retry_after_seconds=5,
            ) from exc

    def write_quotes(self, rows: list[tuple[str, float, bytes]]) -> None:
        db = self.db()
        now = time.time()
        with db:  # one transaction for the whole group
            db.execute("BEGIN IMMEDIATE")
            db.executemany("INSERT OR REPLACE INTO issued_quotes VALUES (?, ?, ?)", rows)
            if now - self._purged_at >= PURGE_EVERY_SECONDS:
                self._purged_at = now
                db.execute("DELETE FROM issued_quotes WHERE expires_unix <= ?", (now,))
                db.execute("DELETE FROM prepare_idempotency WHERE expires_unix <= ?", (now,))

    def read_quote(self, quote_id: str) -> tuple[float, bytes] | None:
        row = (
            self.db()
            .execute(
                "SELECT expires_unix, record FROM issued_quotes WHERE quote_id = ? AND expires_unix > ?",
                (quote_id, time.time()),
            )
            .fetchone()
        )
        return None if row is None else (row[0], row[1])

    def write_idempotency(self, key: str, expires: float, request_sha256: str, response: bytes) -> None:
        # the first answer stays the answer while it lives (two workers racing on one key)
        self.db().execute(
            "INSERT INTO prepare_idempotency VALUES (?, ?, ?, ?) ON CONFLICT(key) DO UPDATE SET "
            "expires_unix = excluded.expires_unix, request_sha256 = excluded.request_sha256, "
            "response = excluded.response WHERE prepare_idempotency.expires_unix <= ?",
            (key, expires, request_sha256, response, time.time()),
        )

    def read_idempotency(self, key: str) -> tuple[float, str, bytes] | None:
        row = (
            self.db()
            .execute(
                "SELECT expires_unix, request_sha256, response FROM prepare_idempotency "
                "WHERE key = ? AND expires_unix > ?",
                (key, time.time()),
            )
            .fetchone()
        )
        return None if row is None else (row[0], row[1], row[2])

    def close(self) -> None:
        def close_db() -> None:
            if self._db is not None:
                self._db.close()
                self._db = None

        self.thread.submit(close_db).result()
        self.thread.shutdown(wait=True)


class SqliteQuoteStore:
    scope = "shared_by_this_machines_workers_ttl_expired_fails_closed"

    def __init__(self, path: str) -> None:
        self.file = _File(path)
        self.local = MemoryQuoteStore()
        self._pending: list[tuple[str, float, bytes]] = []
        self._group: asyncio.Future[None] | None = None  # the group `put`s wait for, while it fills
        self._writing = False

    async def put(self, issued: IssuedQuote) -> None:
        payload = issued.payload
        expires = time.time() + int(payload["ttl_seconds"])
        self._pending.append((payload["quote_id"], expires, orjson.dumps(issued_to_record(issued))))
        if self._group is None:
            self._group = asyncio.get_running_loop().create_future()
            if not self._writing:
                asyncio.get_running_loop().create_task(self._write_groups())
        group = self._group
        await asyncio.shield(group)
        await self.local.put(issued)

    async def _write_groups(self) -> None:
        """Write the filling group; the quotes that arrived meanwhile form the next one."""
        self._writing = True
        try:
            while self._group is not None:
                group, rows = self._group, self._pending
                self._group, self._pending = None, []
                try:
                    await self.file.run(self.file.write_quotes, rows)
                except Exception as exc:  # every quote of the group fails closed (503), none is half-issued
                    group.set_exception(exc)
                    group.exception()  # retrieved: the waiters each raise it
                else:
                    group.set_result(None)
        finally:
            self._writing = False

    async def get(self, quote_id: str, now_monotonic: float) -> IssuedQuote | None:
        found = await self.local.get(quote_id, now_monotonic)
        if found is not None:
            return found
        row = await self.file.run(self.file.read_quote, quote_id)
        if row is None:
            return None
        expires, record = row
        return issued_from_record(orjson.loads(record), now_monotonic + (expires - time.time()))

    def retained(self) -> int | None:
        return self.local.retained()  # this worker's own quotes (counting the file would cost a query)

    async def aclose(self) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.file.close)


class SqliteIdempotencyStore:
    """Read from the file every time (prepare is not a hot path): the first answer stored under a key is the answer
    on every worker."""

    def __init__(self, quotes: SqliteQuoteStore) -> None:
        self.file = quotes.file

    async def get(self, key: str, now_monotonic: float) -> tuple[str, dict[str, Any]] | None:
        row = await self.file.run(self.file.read_idempotency, key)
        if row is None:
            return None
        _, request_sha256, response = row
        return request_sha256, orjson.loads(response)

    async def put(
        self,
        key: str,
        request_sha256: str,
        response: dict[str, Any],
        ttl_seconds: float,
        now_monotonic: float,
    ) -> None:
        expires = time.time() + ttl_seconds
        await self.file.run(self.file.write_idempotency, key, expires, request_sha256, orjson.dumps(response))

    def retained(self) -> int | None:
        return None  # counting the file would cost a query
