"""A session create writes its rows without SQLAlchemy's Core statements (`sessions_sql_create`: the driver's
own connection on SQLite, one statement on PostgreSQL). Its rows must be the rows the Core statements write for
the same values: read back through SQLAlchemy alike, and on SQLite byte for byte and storage class for storage
class, so every reader (the store, migrations, an operator's sqlite3 shell) sees no difference."""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import insert, select
from sqlalchemy.engine import Connection
from tests.support.postgres import require_postgres, temporary_database

from routequote.ports import SessionEvent, SessionRecord
from routequote.storage.retention import session_clients
from routequote.storage.sessions_common import create_scope, event_detail, json_dumps
from routequote.storage.sessions_schema import session_events, session_idempotency, sessions
from routequote.storage.sessions_sql import SqlSessionStore
from routequote.storage.sessions_sql_connections import Encoded
from routequote.storage.sessions_sql_create import OpenSessionCapReached

STATE = {
    "wallet": "0x" + "ab" * 20,
    "note": "zürich ✓",
    "amounts": [10**30, 0, -1],
    "nested": {"b": 1, "a": None},
}
RESPONSE = {"session_id": "placeholder", "status": "action_ready", "ok": True}
INSTANTS = [
    datetime(2026, 11, 25, 1, 2, 3, 456789, tzinfo=UTC),
    datetime(2026, 11, 25, 3, 2, 3, tzinfo=timezone(timedelta(hours=2))),  # another zone, no microseconds
]
STORED = {INSTANTS[0]: "2026-11-25 01:02:03.456789", INSTANTS[1]: "2026-11-25 01:02:03.000000"}  # on SQLite


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    require_postgres()
    with temporary_database("routequote_test_create_rows") as url:
        yield url


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SqlSessionStore]:
    url = (
        f"sqlite:///{tmp_path}/sessions.sqlite3"
        if request.param == "sqlite"
        else request.getfixturevalue("pg_url")
    )
    s = SqlSessionStore(url)
    await s.start()
    try:
        yield s
    finally:
        await s.aclose()


def _session(n: int, at: datetime) -> tuple[SessionRecord, SessionEvent]:
    sid = f"ses_{n:020d}_{at.microsecond}_{at.utcoffset()}"
    record = SessionRecord(
        sid, hashlib.sha256(sid.encode()).hexdigest(), 1, "action_ready", "base:ETH->base:USDC", at, at, STATE
    )
    funds = {
        "chain": "base",
        "token": "ETH",
        "amount_base": "1",
        "owner": "0x1",
        "wallet": "0x1",
        "state": "in_wallet",
    }
    return record, SessionEvent(
        sid, 1, None, "create", "action_ready", at, 0, "submit_current_action", (), funds
    )


def _core_create(record: SessionRecord, event: SessionEvent) -> Any:
    """The same create through SQLAlchemy's Core statements: the reference."""

    def operation(conn: Connection) -> None:
        conn.execute(
            insert(session_idempotency),
            {
                "scope": create_scope(record.token_sha256),
                "key": "k",
                "request_sha256": "a" * 64,
                "response": Encoded(json_dumps(RESPONSE)),
                "created_at": event.at,
            },
        )
        conn.execute(
            insert(sessions),
            {
                "session_id": record.session_id,
                "token_sha256": record.token_sha256,
                "version": record.version,
                "status": record.status,
                "route": record.route,
                "created_at": record.created_at,
                "updated_at": record.updated_at,
                "state": Encoded(json_dumps(record.state)),
            },
        )
        detail = event_detail(event)
        assert detail is not None
        conn.execute(insert(session_events), SqlSessionStore.event_row(event, Encoded(json_dumps(detail))))
        conn.commit()

    return operation


async def _read(store: SqlSessionStore, record: SessionRecord) -> list[dict[str, Any]]:
    """The three rows as SQLAlchemy reads them, without the columns that name the session."""

    def operation(conn: Connection) -> list[dict[str, Any]]:
        rows = [
            conn.execute(select(sessions).where(sessions.c.session_id == record.session_id)).mappings().one(),
            conn.execute(select(session_events).where(session_events.c.session_id == record.session_id))
            .mappings()
            .one(),
            conn.execute(
                select(session_idempotency).where(
                    session_idempotency.c.scope == create_scope(record.token_sha256)
                )
            )
            .mappings()
            .one(),
        ]
        conn.rollback()
        return [
            {k: v for k, v in row.items() if k not in ("session_id", "token_sha256", "scope")} for row in rows
        ]

    return await store._run(operation, write=False)


def _sqlite_cells(path: str, record: SessionRecord) -> list[Any]:
    """Every cell of the three rows as SQLite holds it, with its storage class."""
    with sqlite3.connect(path) as db:
        out: list[Any] = []
        for table, where, value in (
            ("sessions", "session_id", record.session_id),
            ("session_events", "session_id", record.session_id),
            ("session_idempotency", "scope", create_scope(record.token_sha256)),
        ):
            names = [
                r[1] for r in db.execute(f"PRAGMA table_info({table})") if r[1] not in (where, "token_sha256")
            ]
            probes = ", ".join(f"{n}, typeof({n})" for n in names)
            out.append(db.execute(f"SELECT {probes} FROM {table} WHERE {where} = ?", (value,)).fetchone())
    return out


@pytest.mark.parametrize("at", INSTANTS)
async def test_a_create_writes_the_rows_the_core_statements_write(
    store: SqlSessionStore, at: datetime
) -> None:
    mine, event = _session(1, at)
    assert await store.create(mine, event, create_scope(mine.token_sha256), "k", "a" * 64, RESPONSE) is None
    reference, reference_event = _session(2, at)
    await store._run(_core_create(reference, reference_event), write=True)

    assert await _read(store, mine) == await _read(store, reference)
    if store.scope == "sqlite":
        path = str(store._url.database)
        assert _sqlite_cells(path, mine) == _sqlite_cells(path, reference)
        assert _sqlite_cells(path, mine)[0][6] == STORED[at]  # created_at, as the dialect stores it
    assert await store.get(mine.session_id) == mine
    assert await store.events(mine.session_id) == [event]


async def test_a_refused_create_leaves_nothing_behind(store: SqlSessionStore) -> None:
    """The answer row is inserted first: when the session row is refused, it goes too."""
    at = INSTANTS[0]
    first, event = _session(7, at)
    await store.create(first, event, create_scope(first.token_sha256), "k1", "a" * 64, RESPONSE)
    clash = SessionRecord(first.session_id, "f" * 64, 1, "action_ready", "r", at, at, {})
    with pytest.raises(ValueError, match="session_id already exists"):
        await store.create(clash, event, create_scope(clash.token_sha256), "k2", "b" * 64, {})
    assert await store.idempotent(create_scope(clash.token_sha256), "k2") is None
    assert await store.get(first.session_id) == first
    assert await store.events(first.session_id) == [event]
    # the connection went back to the pool outside any transaction: the next create is not blocked
    second, event2 = _session(8, at)
    assert await store.create(second, event2, create_scope(second.token_sha256), "k3", "c" * 64, {}) is None
    assert await store.get(second.session_id) == second


async def test_a_create_waits_off_the_loop_while_another_connection_holds_the_write_lock(
    tmp_path: Path,
) -> None:
    """SQLite's refusal on the event loop (busy, timeout 0) sends the create to a worker thread that waits."""
    path = tmp_path / "sessions.sqlite3"
    store = SqlSessionStore(f"sqlite:///{path}")
    await store.start()
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        record, event = _session(9, INSTANTS[0])
        creating = asyncio.create_task(
            store.create(record, event, create_scope(record.token_sha256), "k", "a" * 64, RESPONSE)
        )
        await asyncio.sleep(0.3)
        assert not creating.done()  # waiting for the lock, and the loop still runs
        holder.execute("COMMIT")
        assert await asyncio.wait_for(creating, 60) is None  # bounds a hang only
        assert await store.get(record.session_id) == record
    finally:
        holder.close()
        await store.aclose()


async def _client_rows(store: SqlSessionStore, *session_ids: str) -> list[dict[str, Any]]:
    def operation(conn: Connection) -> list[dict[str, Any]]:
        rows = conn.execute(
            select(session_clients.c.client, session_clients.c.created_at)
            .where(session_clients.c.session_id.in_(session_ids))
            .order_by(session_clients.c.session_id)
        )
        out = [dict(r) for r in rows.mappings()]
        conn.rollback()
        return out

    return await store._run(operation, write=False)


@pytest.mark.parametrize("max_open", [0, 5])
async def test_a_create_for_a_client_writes_its_client_row_with_it(
    store: SqlSessionStore, max_open: int
) -> None:
    """The row the cap counts is written in the create's own transaction, as the Core insert would write it."""
    at = INSTANTS[1]
    mine, event = _session(20 + max_open, at)
    made = await store.create(
        mine,
        event,
        create_scope(mine.token_sha256),
        "k",
        "a" * 64,
        RESPONSE,
        client="198.51.100.7",
        max_open=max_open,
    )
    assert made is None
    reference, reference_event = _session(30 + max_open, at)
    await store._run(_core_create(reference, reference_event), write=True)

    def core_client(conn: Connection) -> None:
        conn.execute(
            insert(session_clients),
            {"session_id": reference.session_id, "client": "198.51.100.7", "created_at": reference_event.at},
        )
        conn.commit()

    await store._run(core_client, write=True)
    assert await _read(store, mine) == await _read(store, reference)
    assert await _client_rows(store, mine.session_id) == await _client_rows(store, reference.session_id)
    assert await _client_rows(store, mine.session_id) == [{"client": "198.51.100.7", "created_at": at}]


async def test_at_the_cap_a_create_writes_nothing_and_a_replay_still_replays(store: SqlSessionStore) -> None:
    at, client = INSTANTS[0], "203.0.113.9"
    first, event = _session(40, at)
    scope = create_scope(first.token_sha256)
    assert await store.create(first, event, scope, "k", "a" * 64, RESPONSE, client=client, max_open=1) is None
    over, over_event = _session(41, at)
    with pytest.raises(OpenSessionCapReached):
        await store.create(
            over,
            over_event,
            create_scope(over.token_sha256),
            "k",
            "a" * 64,
            RESPONSE,
            client=client,
            max_open=1,
        )
    assert await store.get(over.session_id) is None
    assert await store.idempotent(create_scope(over.token_sha256), "k") is None
    assert await _client_rows(store, over.session_id) == []
    replay = await store.create(first, event, scope, "k", "a" * 64, RESPONSE, client=client, max_open=1)
    assert replay is not None and replay.response == RESPONSE
    # another client is not held back by this one's cap
    other, other_event = _session(42, at)
    made = await store.create(
        other, other_event, create_scope(other.token_sha256), "k", "a" * 64, RESPONSE, client="x", max_open=1
    )
    assert made is None


async def test_a_refused_create_under_a_cap_leaves_nothing_and_releases_the_clients_lock(
    store: SqlSessionStore,
) -> None:
    at, client = INSTANTS[0], "192.0.2.1"
    first, event = _session(50, at)
    assert (
        await store.create(
            first, event, create_scope(first.token_sha256), "k1", "a" * 64, {}, client=client, max_open=9
        )
        is None
    )
    clash = SessionRecord(first.session_id, "f" * 64, 1, "action_ready", "r", at, at, {})
    with pytest.raises(ValueError, match="session_id already exists"):
        await store.create(
            clash, event, create_scope(clash.token_sha256), "k2", "b" * 64, {}, client=client, max_open=9
        )
    assert await store.idempotent(create_scope(clash.token_sha256), "k2") is None
    assert await _client_rows(store, first.session_id) == [{"client": client, "created_at": at}]
    second, event2 = _session(
        51, at
    )  # the client's lock went with the failed transaction: this does not wait
    made = store.create(
        second, event2, create_scope(second.token_sha256), "k3", "c" * 64, {}, client=client, max_open=9
    )
    assert await asyncio.wait_for(made, 30) is None
