"""Checkpoints of the session file's write-ahead log, off the event loop.

SQLite's automatic checkpoint runs inside the COMMIT that takes the WAL past 1000 pages, on the connection
that committed: here, the event loop. With `synchronous=NORMAL` that checkpoint fsyncs the WAL and the database
file, and the loop waits for the disk. On a 2-vCPU VM a session create's COMMIT took 290 µs of wall time for
150 µs of CPU, averaged over the creates, and every request on the worker waited behind each checkpoint.

So the loop's connections turn the automatic checkpoint off (`wal_autocheckpoint=0`), and this runs it
instead, every `every_writes` writes the loop commits:
- A worker thread backfills the WAL with PASSIVE checkpoints. These never block a writer, so the loop keeps
  writing, and the fsyncs run off the loop with the GIL released. Each pass backfills what the loop wrote
  during the one before, until one had little to do.
- A last pass, also in the thread, is a FULL checkpoint: it holds every writer back, of this process and of
  the others on the file, while it backfills what is left. This process's writers wait for it on the loop
  (`writable`: awaiting, so the loop still serves everything else); another process's wait in SQLite's busy
  handler, as for any write lock. Only a checkpoint that reaches the WAL's end lets the next writer start the
  WAL from its beginning again, and none does while writers append: with PASSIVE passes alone, the WAL grew
  without bound under load, and with one process's writers held back but another's not, too.

Writers in the worker thread (the path that waits for another process's lock) keep SQLite's own automatic
checkpoint, since it blocks nobody there. Every checkpoint is best effort: a failure is logged and the next one
tries again. SQLite needs no checkpoint to be correct, only to keep the WAL short.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from typing import Literal, NamedTuple

import structlog
from sqlalchemy.engine import Engine

log = structlog.get_logger(__name__)


class Checkpointed(NamedTuple):
    """What `PRAGMA wal_checkpoint` answers: another connection kept it from finishing (1) or not (0), the
    WAL's pages, and how many of them are in the database file now."""

    busy: int
    wal_pages: int
    backfilled_pages: int


def checkpoint(engine: Engine, mode: Literal["PASSIVE", "FULL"] = "PASSIVE") -> Checkpointed:
    """One checkpoint on a pooled connection outside any transaction (SQLite refuses to checkpoint from a
    connection inside one). PASSIVE waits for nobody; FULL holds new writers back, waiting in the engine's busy
    handler for one under way, and so backfills the whole WAL."""
    raw = engine.raw_connection()
    try:
        cursor = raw.cursor()
        try:
            row = cursor.execute(f"PRAGMA wal_checkpoint({mode})").fetchone()
        finally:
            cursor.close()
    finally:
        raw.close()
    if row is None:  # pragma: no cover - the pragma always answers one row in WAL mode
        raise sqlite3.OperationalError("wal_checkpoint answered no row")
    busy, wal_pages, backfilled = row
    return Checkpointed(int(busy), int(wal_pages), int(backfilled))


class WalCheckpointer:
    """Checkpoints for the loop's writers; see the module docstring. `every_writes`: a session create writes
    about 17 WAL pages (measured), so 100 writes are a WAL of the order of SQLite's own 1000-page threshold."""

    def __init__(
        self, engine: Engine, *, every_writes: int = 100, finish_pages: int = 64, passes: int = 4
    ) -> None:
        self._engine = engine
        self._every = every_writes
        self._finish_pages = finish_pages
        self._passes = passes
        self._writes = 0
        self._running: asyncio.Task[None] | None = None
        self._closed: asyncio.Future[None] | None = None  # set while the last pass runs
        self.completed = 0  # checkpoints that reached the WAL's end
        self.last: Checkpointed | None = None

    @property
    def writes_wait(self) -> bool:
        return self._closed is not None

    async def writable(self) -> None:
        """Until the last pass of a checkpoint is over: the loop's writers wait here, not blocking the loop."""
        while self._closed is not None:
            await asyncio.shield(self._closed)

    def after_write(self) -> None:
        """On the loop, after a write committed there: start a checkpoint every `every_writes` writes."""
        self._writes += 1
        if self._writes < self._every or self._running is not None:
            return
        self._writes = 0
        self._running = asyncio.get_running_loop().create_task(self._checkpoint())

    async def _checkpoint(self) -> None:
        try:
            await asyncio.to_thread(self._backfill)
            # the few pages written meanwhile, FULL: no writer of any process appends during it, so it reaches
            # the WAL's end. This process's writers wait on the loop instead of in SQLite's busy handler.
            self._closed = asyncio.get_running_loop().create_future()
            try:
                self.last = done = await asyncio.to_thread(checkpoint, self._engine, "FULL")
            finally:
                closed, self._closed = self._closed, None
                closed.set_result(None)
            if not done.busy and done.backfilled_pages == done.wal_pages:
                self.completed += 1
        except Exception as exc:  # noqa: BLE001 - best effort; the next checkpoint tries again
            log.warning("sqlite_checkpoint_failed", error=type(exc).__name__)
        finally:
            self._running = None

    def _backfill(self) -> None:
        """Passes until one had little to do: each pass backfills what the loop wrote during the one before
        (the pragma answers the WAL's length as the pass found it, not as it is when the pass ends)."""
        backfilled = 0
        for _ in range(self._passes):
            done = checkpoint(self._engine)
            if done.busy or done.wal_pages < backfilled or done.wal_pages - backfilled <= self._finish_pages:
                return  # another checkpointer, a WAL that restarted meanwhile, or little left
            backfilled = done.backfilled_pages

    async def aclose(self) -> None:
        """Wait for a checkpoint under way (its thread cannot be cancelled) before the engines are disposed."""
        running = self._running
        if running is not None:
            with contextlib.suppress(Exception):
                await running
