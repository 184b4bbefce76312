"""The retention purge against an observe that commits while it runs (issue 38 item 1).

The purge reads the sessions it may delete, then deletes them. On PostgreSQL (READ COMMITTED) nothing stops
another connection from committing between the two: here an observe (the store's transition, committed by a
second store on its own connections, as another replica would) moves an old `action_ready` session to
`awaiting_source_receipt`, naming its transaction, exactly when the purge is about to delete. The seam is the
purge's own DELETE of `sessions`, caught with SQLAlchemy's `before_cursor_execute` event: no sleeps. The session
must survive with its evidence (state, events, transaction claim), and only what was deleted is archived.

On SQLite the purge holds the database's write lock from its read to its commit: an observe meeting it cannot
commit in between; it fails as unavailable (nothing written), and the purge archives the state it deleted.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, select
from sqlalchemy.engine import Connection
from tests.support.postgres import require_postgres, run_coroutine, temporary_database

from routequote.ports import SessionEvent, SessionRecord, StoreUnavailable
from routequote.storage.retention import Purger, RetentionPolicy, session_receipts
from routequote.storage.sessions_common import create_scope
from routequote.storage.sessions_schema import session_events, session_transactions
from routequote.storage.sessions_sql import SqlSessionStore

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
LATER = T0 + timedelta(days=30)  # every session below is past a 7-day retention
TX = "0x" + "7a" * 32
DELETE_SESSIONS = re.compile(r"^\s*DELETE FROM sessions\b", re.IGNORECASE)


def _state(step_status: str, tx_ids: list[str]) -> dict[str, Any]:
    return {
        "current_step": 0,
        "phase": "source",
        "wallets": {"base": "0x" + "11" * 20},
        "funds": {
            "endpoint": "base:ETH",
            "amount_base": "1000",
            "wallet": "0x" + "11" * 20,
            "state": "in_wallet",
        },
        "steps": [{"index": 0, "status": step_status, "evidence": {"tx_ids": tx_ids}}],
    }


async def _create(store: SqlSessionStore, status: str = "action_ready") -> SessionRecord:
    sid = "ses_" + secrets.token_hex(10)
    record = SessionRecord(
        sid, secrets.token_hex(32), 1, status, "base:ETH->base:USDC", T0, T0, _state("action_ready", [])
    )
    answer = await store.create(
        record,
        SessionEvent(sid, 1, None, "create", status, T0),
        create_scope(record.token_sha256),
        secrets.token_hex(8),
        "a" * 64,
        {"session_id": sid},
    )
    assert answer is None
    return record


async def _observe(store: SqlSessionStore, sid: str, at: datetime) -> bool:
    """What a committed `pending` observe writes: version + 1, status, the named transaction, its claim."""
    return await store.transition(
        sid,
        1,
        "awaiting_source_receipt",
        _state("submitted", [TX]),
        SessionEvent(sid, 2, "action_ready", "submitted_pending", "awaiting_source_receipt", at),
        idempotency=(f"session:{sid}", "observe-1", "b" * 64, {"status": "awaiting_source_receipt"}),
        claims=((TX, 0),),
    )


def _observe_elsewhere(url: str, sid: str, at: datetime) -> bool:
    """The observe through a second store (its own connections and event loop, as another replica)."""

    async def go() -> bool:
        other = SqlSessionStore(url)
        await other.start()
        try:
            return await _observe(other, sid, at)
        finally:
            await other.aclose()

    return run_coroutine(go())


def _before_deleting_sessions(store: SqlSessionStore, action: Callable[[], None]) -> Callable[[], None]:
    """Run `action` once, when the purge is about to send its DELETE of `sessions`; returns the remover."""
    engine = store._engine.sync_engine if store.scope == "postgresql" else store._sync
    fired: list[bool] = []

    def hook(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if not fired and DELETE_SESSIONS.match(statement):
            fired.append(True)
            action()

    event.listen(engine, "before_cursor_execute", hook)
    return lambda: event.remove(engine, "before_cursor_execute", hook)


async def _rows(store: SqlSessionStore, sid: str) -> dict[str, Any]:
    def operation(conn: Connection) -> dict[str, Any]:
        out = {
            "events": [
                tuple(r)
                for r in conn.execute(
                    select(session_events.c.seq, session_events.c.event, session_events.c.to_status)
                    .where(session_events.c.session_id == sid)
                    .order_by(session_events.c.seq)
                )
            ],
            "claims": [
                tuple(r)
                for r in conn.execute(
                    select(session_transactions.c.tx_id, session_transactions.c.session_id).where(
                        session_transactions.c.session_id == sid
                    )
                )
            ],
            "receipt": conn.execute(
                select(session_receipts.c.status, session_receipts.c.receipt).where(
                    session_receipts.c.session_id == sid
                )
            ).first(),
        }
        conn.rollback()
        return out

    return await store._run(operation, write=False)


@pytest.fixture
def pg_url() -> Iterator[str]:
    require_postgres()
    with temporary_database("routequote_test_purge_race") as url:
        yield url


@pytest.fixture
async def pg_store(pg_url: str) -> AsyncIterator[SqlSessionStore]:
    store = SqlSessionStore(pg_url)
    await store.start()
    try:
        yield store
    finally:
        await store.aclose()


@pytest.mark.postgres
async def test_an_observe_committed_between_the_purges_read_and_delete_keeps_its_session(
    pg_url: str, pg_store: SqlSessionStore
) -> None:
    racing = await _create(pg_store)
    idle = await _create(pg_store)  # old, never submitted, untouched: the purge takes it
    observed: list[bool] = []
    remove = _before_deleting_sessions(
        pg_store, lambda: observed.append(_observe_elsewhere(pg_url, racing.session_id, LATER))
    )
    try:
        purged = await Purger(pg_store, RetentionPolicy(session_days=7), lambda: LATER).run_once()
    finally:
        remove()
    assert observed == [True]  # the observe committed while the purge was between its read and its delete

    survivor = await pg_store.get(racing.session_id)
    assert survivor is not None, "the purge deleted a session with funds in flight"
    assert (survivor.version, survivor.status) == (2, "awaiting_source_receipt")
    assert survivor.state["steps"][0]["evidence"]["tx_ids"] == [TX]
    rows = await _rows(pg_store, racing.session_id)
    assert rows["events"] == [
        (1, "create", "action_ready"),
        (2, "submitted_pending", "awaiting_source_receipt"),
    ]
    assert rows["claims"] == [(TX, racing.session_id)]
    assert rows["receipt"] is None  # nothing archived from the stale state
    replay = await pg_store.idempotent(f"session:{racing.session_id}", "observe-1")
    assert replay is not None and replay.response == {"status": "awaiting_source_receipt"}

    # what the purge did delete, it archived: exactly that session, in the state it deleted
    assert purged["sessions"] == 1
    assert await pg_store.get(idle.session_id) is None
    gone = await _rows(pg_store, idle.session_id)
    assert gone["receipt"] is not None and gone["receipt"].status == "action_ready"
    assert [e["event"] for e in gone["receipt"].receipt["events"]] == ["create"]

    # a later pass leaves the in-flight session alone too (it is never purgeable by age)
    assert (
        await Purger(pg_store, RetentionPolicy(session_days=7), lambda: LATER + timedelta(days=30)).run_once()
        == {}
    )
    assert await pg_store.get(racing.session_id) is not None


async def test_on_sqlite_an_observe_cannot_commit_inside_the_purge(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/sessions.sqlite3"
    store = SqlSessionStore(url)
    other = SqlSessionStore(url, sqlite_busy_timeout=0.2)  # another process's store on the same file
    await store.start()
    await other.start()
    try:
        racing = await _create(store)
        outcome: list[str] = []

        def observe() -> None:  # on a thread of its own, as the purge's thread holds its transaction open
            try:
                outcome.append(str(run_coroutine(_observe(other, racing.session_id, LATER))))
            except StoreUnavailable:
                outcome.append("unavailable")

        remove = _before_deleting_sessions(store, observe)
        try:
            purged = await Purger(store, RetentionPolicy(session_days=7), lambda: LATER).run_once()
        finally:
            remove()
        assert outcome == ["unavailable"]  # the purge held the write lock from its read to its commit
        assert purged["sessions"] == 1
        assert await store.get(racing.session_id) is None
        rows = await _rows(store, racing.session_id)
        assert rows["events"] == [] and rows["claims"] == []  # the observe wrote nothing
        assert rows["receipt"] is not None and rows["receipt"].status == "action_ready"
    finally:
        await other.aclose()
        await store.aclose()
