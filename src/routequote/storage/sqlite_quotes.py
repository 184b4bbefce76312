"""Issued quotes and prepare idempotency records in SQLite files that every worker on this machine shares.

With `ROUTEQUOTE_QUOTE_STORE=sqlite` and several workers, a prepare may land on another worker than its quote: this
store makes the quote visible there (the default with several workers, `peer_quotes`, asks the issuing worker
instead and uses only `IdempotencyFile` from here).

- Quotes: each worker writes its own file (`<path>.<pid>`), so no worker ever waits for another's write lock,
  and keeps its own quotes in memory too (a prepare on the same worker reads no file). Writes are grouped: the
  quotes issued in one turn of the event loop are inserted in one transaction right after it, and `put` returns
  once its group is committed, so a quote is in its file before its answer leaves the worker. A lookup that
  misses in memory reads the other workers' files (WAL: a reader never blocks a writer). Files of workers that
  are gone are removed at start.
- Idempotency records (prepare, not a hot path): one file all workers write (`<path>`), through one thread per
  worker, so the first answer stored under a key is the answer on every worker.

Expiry is wall-clock time in the record (the workers' monotonic clocks are not compared); an expired or unknown
quote is simply absent, and binding fails closed, as in memory. Durability is not wanted (`synchronous=OFF`): a
crash loses the quotes of the last moments, and those fail closed too.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson

from routequote.errors import DependencyUnavailable
from routequote.ports import IssuedQuote
from routequote.storage.quote_records import issued_from_stored, issued_to_record, stored_response
from routequote.storage.quotes import MAX_RECORDS, MemoryQuoteStore
from routequote.storage.store_faults import MalformedRecord
from routequote.store_errors import log_malformed, store_unavailable

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS issued_quotes (quote_id TEXT PRIMARY KEY, expires_unix REAL NOT NULL, "
    "record BLOB NOT NULL)",
    "CREATE TABLE IF NOT EXISTS prepare_idempotency (key TEXT PRIMARY KEY, expires_unix REAL NOT NULL, "
    "request_sha256 TEXT NOT NULL, response BLOB NOT NULL)",
)
PURGE_EVERY_SECONDS = 10.0


def _open(path: str) -> sqlite3.Connection:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, timeout=10.0, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=OFF")
    for statement in _SCHEMA:
        db.execute(statement)
    return db


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class IdempotencyFile:
    """The shared idempotency file: one SQLite connection, used only by its one thread."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="routequote-quote-store")
        self._db: sqlite3.Connection | None = None
        self._purged_at = 0.0

    def db(self) -> sqlite3.Connection:  # in the store's thread only
        if self._db is None:
            self._db = _open(self.path)
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

    def write_idempotency(self, key: str, expires: float, request_sha256: str, response: bytes) -> None:
        # the first answer stays the answer while it lives (two workers racing on one key)
        db = self.db()
        now = time.time()
        if now - self._purged_at >= PURGE_EVERY_SECONDS:
            self._purged_at = now
            db.execute("DELETE FROM prepare_idempotency WHERE expires_unix <= ?", (now,))
        db.execute(
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


def malformed(path: str, key: str, exc: Exception) -> DependencyUnavailable:
    """A row that does not parse: a fault of the store, logged once, 503 (never a 500)."""
    log_malformed(f"sqlite:{os.path.basename(path)}", key, exc)
    return store_unavailable("quote_store_unavailable", "machine's shared quote store", "malformed_record")


class SqliteQuoteStore:
    scope = "shared_by_this_machines_workers_ttl_expired_fails_closed"

    def __init__(self, path: str, worker: str | None = None) -> None:
        """`worker` names this worker's file (default: the process id; tests give two stores two names)."""
        self.path = path
        self.worker = worker
        self.file = IdempotencyFile(path)  # the shared idempotency file
        self.local = MemoryQuoteStore()
        self._own: sqlite3.Connection | None = None
        self._own_path = ""
        self._others: dict[str, sqlite3.Connection] = {}
        self._pending: list[tuple[str, float, bytes]] = []
        self._group: asyncio.Future[None] | None = None
        self._purged_at = 0.0

    def _own_name(self) -> str:
        return f"{self.path}.{self.worker or os.getpid()}"  # a forked child gets its own file

    def _own_db(self) -> sqlite3.Connection:
        if self._own is None or self._own_path != self._own_name():
            self._own_path = self._own_name()
            for stale in self._worker_files():
                name = stale.rsplit(".", 1)[1]
                if name.isdigit() and int(name) != os.getpid() and not _alive(int(name)):
                    for suffix in ("", "-wal", "-shm"):
                        with contextlib.suppress(OSError):
                            os.unlink(stale + suffix)
            self._own = _open(self._own_path)
        return self._own

    def _worker_files(self) -> list[str]:
        folder = Path(self.path).parent
        prefix = Path(self.path).name + "."
        with contextlib.suppress(OSError):
            return [
                str(folder / e.name)
                for e in os.scandir(folder)
                if e.name.startswith(prefix) and e.name[len(prefix) :].isalnum()
            ]
        return []

    async def put(self, issued: IssuedQuote) -> None:
        expires = time.time() + issued.ttl_seconds
        self._pending.append((issued.quote_id, expires, issued_to_record(issued)))
        group = self._group
        if group is None:
            loop = asyncio.get_running_loop()
            group = self._group = loop.create_future()
            loop.call_soon(self._write_group)  # one commit for every quote issued in this turn of the loop
        await asyncio.shield(group)
        await self.local.put(issued)

    def _write_group(self) -> None:
        group, rows = self._group, self._pending
        self._group, self._pending = None, []
        assert group is not None
        try:
            db = self._own_db()
            now = time.time()
            with db:
                db.execute("BEGIN")
                db.executemany("INSERT OR REPLACE INTO issued_quotes VALUES (?, ?, ?)", rows)
                # the newest MAX_RECORDS per worker, as in memory (and as capabilities publish)
                db.execute(
                    "DELETE FROM issued_quotes WHERE rowid <= (SELECT MAX(rowid) FROM issued_quotes) - ?",
                    (MAX_RECORDS,),
                )
                if now - self._purged_at >= PURGE_EVERY_SECONDS:
                    self._purged_at = now
                    db.execute("DELETE FROM issued_quotes WHERE expires_unix <= ?", (now,))
        except sqlite3.Error:  # every quote of the group fails closed (503); none is half-issued
            group.set_exception(
                DependencyUnavailable(
                    "quote_store_unavailable",
                    "the machine's shared quote store is unavailable",
                    retry_after_seconds=5,
                )
            )
            group.exception()  # retrieved here: each waiter raises it
            self._own = None
        else:
            group.set_result(None)

    async def get(self, quote_id: str, now_monotonic: float) -> IssuedQuote | None:
        found = await self.local.get(quote_id, now_monotonic)
        if found is not None:
            return found
        now = time.time()
        own = self._own_name()
        for name in self._worker_files():
            if name == own:
                continue
            try:
                db = self._others.get(name)
                if db is None:
                    db = self._others[name] = sqlite3.connect(name, timeout=1.0, isolation_level=None)
                row = db.execute(
                    "SELECT expires_unix, record FROM issued_quotes WHERE quote_id = ? AND expires_unix > ?",
                    (quote_id, now),
                ).fetchone()
            except sqlite3.Error:  # a worker's file that went away with it
                stale = self._others.pop(name, None)
                if stale is not None:
                    stale.close()
                continue
            if row is not None:
                expires, record = row
                try:
                    if not isinstance(record, bytes) or not isinstance(expires, float | int):
                        raise MalformedRecord("an issued-quote row of other types")
                    return issued_from_stored(record, now_monotonic + (expires - now))
                except MalformedRecord as exc:
                    raise malformed(name, quote_id, exc) from None
        return None

    def retained(self) -> int | None:
        return self.local.retained()  # this worker's own quotes (counting the files would cost queries)

    async def aclose(self) -> None:
        for db in self._others.values():
            db.close()
        self._others.clear()
        if self._own is not None:
            self._own.close()
            self._own = None
            for suffix in ("", "-wal", "-shm"):  # this worker's quotes end with it
                with contextlib.suppress(OSError):
                    os.unlink(self._own_path + suffix)
        await asyncio.get_running_loop().run_in_executor(None, self.file.close)


class SqliteIdempotencyStore:
    """Read from the file every time (prepare is not a hot path): the first answer stored under a key is the answer
    on every worker."""

    def __init__(self, source: SqliteQuoteStore | IdempotencyFile) -> None:
        self.file = source if isinstance(source, IdempotencyFile) else source.file

    async def get(self, key: str, now_monotonic: float) -> tuple[str, dict[str, Any]] | None:
        row = await self.file.run(self.file.read_idempotency, key)
        if row is None:
            return None
        _, request_sha256, response = row
        try:
            if not isinstance(request_sha256, str) or not isinstance(response, bytes | str):
                raise MalformedRecord("an idempotency row of other types")
            return request_sha256, stored_response(response)
        except MalformedRecord as exc:
            raise malformed(self.file.path, key, exc) from None

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
