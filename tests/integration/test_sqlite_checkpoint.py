"""The session file's WAL is checkpointed off the event loop (`storage/sqlite_checkpoint`), on a real SQLite file:
the loop's commits never checkpoint, a checkpoint runs in a worker thread, the WAL stays bounded under
continuous writes, the loop's writers wait (without blocking the loop) only during a checkpoint's last pass, and
a failed checkpoint costs nothing but a log line."""

from __future__ import annotations

import asyncio
import hashlib
import secrets
import sqlite3
import threading
import uuid
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine

from routequote.ports import SessionEvent, SessionRecord
from routequote.storage import sqlite_checkpoint
from routequote.storage.sessions_common import create_scope
from routequote.storage.sessions_sql import SqlSessionStore
from routequote.storage.sqlite_checkpoint import Checkpointed, WalCheckpointer

# about 12 KB of JSON, as a session document on a multi-step route: three overflow pages per row
STATE = {"steps": [{"calldata": secrets.token_hex(32), "index": i} for i in range(150)]}
# bounds a checkpointer that never reaches the WAL's end (about 17 WAL pages a create: 20,000 are ~1.4 GB)
CREATES_LIMIT = 20_000


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqlSessionStore]:
    s = SqlSessionStore(f"sqlite:///{tmp_path}/sessions.sqlite3")
    await s.start()
    try:
        yield s
    finally:
        await s.aclose()


async def create(store: SqlSessionStore) -> str:
    session_id = str(uuid.uuid4())
    owner = hashlib.sha256(session_id.encode()).hexdigest()
    now = datetime.now(UTC)
    record = SessionRecord(session_id, owner, 1, "action_ready", "base:ETH->base:USDC", now, now, STATE)
    event = SessionEvent(session_id, 1, None, "create", "action_ready", now)
    answer = await store.create(
        record, event, create_scope(owner), "key-" + session_id, "0" * 64, {"session_id": session_id}
    )
    assert answer is None
    return session_id


async def create_until(
    store: SqlSessionStore, enough: Callable[[], bool], concurrent: int = 16, limit: int = CREATES_LIMIT
) -> list[str]:
    """Creates, `concurrent` at a time, as requests arrive, until `enough()` (checked before each create). The
    count of checkpoints a stretch of creates sees depends on how much time the checkpoint thread got, so the
    tests create until the checkpoints they need have happened; `limit` only bounds a checkpointer that never
    finishes (then `enough()` is still false and the test fails)."""
    made: list[str] = []

    async def worker() -> None:
        while not enough() and len(made) < limit:
            await asyncio.sleep(0)  # as requests arrive: the loop turns between creates
            made.append(await create(store))

    await asyncio.gather(*(worker() for _ in range(concurrent)))
    return made


def wal_restarts(path: Path) -> int:
    """The WAL header's checkpoint sequence number: how many times a writer started the WAL from its beginning
    again (SQLite does that at the first write after a checkpoint that reached the WAL's end). A WAL that
    restarts is bounded by what is written between two checkpoints, not by everything ever written."""
    header = path.read_bytes()[:32]
    return int.from_bytes(header[12:16], "big")


def pragma(engine: Engine, name: str) -> Any:
    raw = engine.raw_connection()
    try:
        return raw.cursor().execute(f"PRAGMA {name}").fetchone()[0]
    finally:
        raw.close()


async def test_the_loop_never_checkpoints_and_the_wal_stays_bounded_under_continuous_creates(
    store: SqlSessionStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    where: list[bool] = []
    real = sqlite_checkpoint.checkpoint

    def traced(engine: Engine, mode: str = "PASSIVE") -> Checkpointed:
        where.append(threading.current_thread() is threading.main_thread())
        return real(engine, mode)

    monkeypatch.setattr(sqlite_checkpoint, "checkpoint", traced)
    assert pragma(store._prompt, "wal_autocheckpoint") == 0  # the loop's connections
    assert (
        pragma(store._sync, "wal_autocheckpoint") == 1000
    )  # the waiting writers' (in a thread): SQLite's own

    # Continuous creates until three checkpoints have reached the WAL's end: without the last pass holding
    # writers back none does (the WAL grew to about 25,000 pages in 1,500 creates and went on growing), and the
    # limit ends the test. How many creates that takes is the checkpoint thread's share of a busy machine.
    made = await create_until(store, lambda: store.checkpoints.completed >= 3)
    n = len(made)
    await store.checkpoints.aclose()

    assert where and not any(where), "a checkpoint ran on the event loop"
    completed = store.checkpoints.completed
    assert completed >= 3, (completed, n, store.checkpoints.last)
    # bounded: after each checkpoint that reached its end, the next write started the WAL from its beginning
    # (the next checkpoint starts only at a write, so every completed checkpoint but the last was followed by one)
    restarts = wal_restarts(tmp_path / "sessions.sqlite3-wal")
    assert restarts >= completed - 1, (restarts, completed, n)
    # whatever was checkpointed when, the file holds every session, whole
    db = sqlite3.connect(f"{tmp_path}/sessions.sqlite3")
    try:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert db.execute("SELECT count(*) FROM sessions").fetchone()[0] == n
        assert db.execute("SELECT count(*) FROM session_events").fetchone()[0] == n
    finally:
        db.close()
    for session_id in made[:: n // 10]:
        got = await store.get(session_id)
        assert got is not None and got.state == STATE


async def test_writers_wait_during_the_last_pass_while_reads_go_on(
    store: SqlSessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = await create(store)
    release = threading.Event()
    calls: list[str] = []

    def scripted(engine: Engine, mode: str = "PASSIVE") -> Checkpointed:
        calls.append(threading.current_thread().name)
        if len(calls) == 1:
            return Checkpointed(0, 10, 10)  # the thread's pass: little left
        release.wait(60)  # the last pass, held until the test lets it go
        return Checkpointed(0, 0, 0)

    monkeypatch.setattr(sqlite_checkpoint, "checkpoint", scripted)
    store.checkpoints = WalCheckpointer(store._sync, every_writes=1)
    await create(store)  # the write that starts a checkpoint
    async with asyncio.timeout(60):  # bounds a hang only: the thread's first pass reaches the last one
        while not (store.checkpoints.writes_wait and len(calls) == 2):
            await asyncio.sleep(0.01)

    waiting = asyncio.create_task(create(store))
    got = await store.get(first)  # a read does not wait
    assert got is not None and got.session_id == first
    await asyncio.sleep(0.05)
    assert not waiting.done()  # the write waits for the last pass
    release.set()
    made = await asyncio.wait_for(waiting, 60)
    assert await store.get(made) is not None
    await store.checkpoints.aclose()
    assert not store.checkpoints.writes_wait
    assert all(name != threading.main_thread().name for name in calls)


async def test_a_failed_checkpoint_costs_a_log_line_and_the_next_one_runs(
    store: SqlSessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = sqlite_checkpoint.checkpoint
    failures = [sqlite3.OperationalError("disk I/O error")]

    def flaky(engine: Engine, mode: str = "PASSIVE") -> Checkpointed:
        if failures:
            raise failures.pop()
        return real(engine, mode)

    monkeypatch.setattr(sqlite_checkpoint, "checkpoint", flaky)
    store.checkpoints = WalCheckpointer(store._sync, every_writes=1)
    await create(store)  # its checkpoint fails
    await store.checkpoints.aclose()
    assert store.checkpoints.completed == 0 and not failures and not store.checkpoints.writes_wait
    await create(store)  # the next write's checkpoint runs and reaches the WAL's end
    await store.checkpoints.aclose()
    assert store.checkpoints.completed == 1
    assert store.checkpoints.last is not None and store.checkpoints.last.wal_pages > 0


async def test_two_stores_writing_one_file_keep_its_wal_bounded(tmp_path: Path) -> None:
    """As two workers on one file: each one's last pass holds the other's writers back too (FULL). With only its
    own writers held back, neither reached the WAL's end while the other wrote, and the WAL grew by every page
    written (about 33,000 pages after the first round here)."""
    url = f"sqlite:///{tmp_path}/sessions.sqlite3"
    one, two = SqlSessionStore(url), SqlSessionStore(url)
    await one.start()
    await two.start()
    try:

        def enough() -> bool:
            return one.checkpoints.completed + two.checkpoints.completed >= 4

        made = await asyncio.gather(create_until(one, enough, 8), create_until(two, enough, 8))
        await one.checkpoints.aclose()
        await two.checkpoints.aclose()
        completed = one.checkpoints.completed + two.checkpoints.completed
        assert completed >= 4, (one.checkpoints.completed, two.checkpoints.completed, [len(m) for m in made])
        # bounded: the WAL was started from its beginning again (not after each checkpoint: the two stores'
        # last passes can finish back to back, and a write can find the other store's reader on the old WAL)
        assert wal_restarts(tmp_path / "sessions.sqlite3-wal") >= 1
        db = sqlite3.connect(f"{tmp_path}/sessions.sqlite3")
        try:
            assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            assert db.execute("SELECT count(*) FROM sessions").fetchone()[0] == sum(len(m) for m in made)
        finally:
            db.close()
    finally:
        await one.aclose()
        await two.aclose()
