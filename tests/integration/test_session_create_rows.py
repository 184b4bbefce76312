"""A session create on SQLite runs its inserts on the driver itself (`_SQLITE_CREATE`): the rows it writes must
be the rows SQLAlchemy's statements write for the same values, byte for byte and type for type, so every
reader (SQLAlchemy, migrations, an operator's sqlite3 shell) sees no difference."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from routequote.ports import SessionEvent, SessionRecord
from routequote.storage.sessions_common import create_scope, json_dumps
from routequote.storage.sessions_sql import (
    _INSERT_ANSWER_IGNORED,
    _INSERT_EVENT,
    _INSERT_SESSION,
    SqlSessionStore,
)
from routequote.storage.sessions_sql_connections import _Encoded, sqlite_instant

STATE = {
    "wallet": "0x" + "ab" * 20,
    "note": "zürich ✓",
    "amounts": [10**30, 0, -1],
    "nested": {"b": 1, "a": None},
}
RESPONSE = {"session_id": "placeholder", "status": "action_ready", "ok": True}


def _rows(path: Path, session_id: str, scope: str) -> list[Any]:
    """Every column of the three rows, each with its SQLite storage class."""
    with sqlite3.connect(path) as db:
        out: list[Any] = []
        for table, where, value in (
            ("sessions", "session_id", session_id),
            ("session_events", "session_id", session_id),
            ("session_idempotency", "scope", scope),
        ):
            names = [r[1] for r in db.execute(f"PRAGMA table_info({table})")]
            probes = ", ".join(f"{n}, typeof({n})" for n in names)
            row = db.execute(f"SELECT {probes} FROM {table} WHERE {where} = ?", (value,)).fetchone()
            assert row is not None, (table, value)
            out.append(dict(zip([f"{n}{s}" for n in names for s in ("", ":type")], row, strict=True)))
    return out


def _session(n: int, at: datetime) -> tuple[SessionRecord, SessionEvent]:
    sid = f"ses_{n:020d}"
    record = SessionRecord(sid, f"{n:064x}", 1, "action_ready", "base:ETH->base:USDC", at, at, STATE)
    return record, SessionEvent(sid, 1, None, "create", "action_ready", at)


@pytest.mark.parametrize(
    "at",
    [
        datetime(2026, 11, 25, 1, 2, 3, 456789, tzinfo=UTC),
        datetime(2026, 11, 25, 3, 2, 3, tzinfo=timezone(timedelta(hours=2))),  # another zone, no microseconds
    ],
)
async def test_the_driver_create_writes_the_rows_sqlalchemy_writes(tmp_path: Path, at: datetime) -> None:
    path = tmp_path / "sessions.sqlite3"
    store = SqlSessionStore(f"sqlite:///{path}")
    await store.start()
    try:
        driver, d_event = _session(1, at)
        assert (
            await store.create(driver, d_event, create_scope(driver.token_sha256), "k", "a" * 64, RESPONSE)
            is None
        )

        core, c_event = _session(2, at)
        with store._prompt_writer.connect() as conn:
            conn.execute(
                _INSERT_ANSWER_IGNORED["sqlite"],
                {
                    "scope": create_scope(core.token_sha256),
                    "key": "k",
                    "request_sha256": "a" * 64,
                    "response": _Encoded(json_dumps(RESPONSE)),
                    "created_at": at,
                },
            )
            conn.execute(
                _INSERT_SESSION,
                {
                    "session_id": core.session_id,
                    "token_sha256": core.token_sha256,
                    "version": 1,
                    "status": core.status,
                    "route": core.route,
                    "created_at": at,
                    "updated_at": at,
                    "state": _Encoded(json_dumps(STATE)),
                },
            )
            conn.execute(_INSERT_EVENT, store._event_row(c_event))
            conn.commit()

        written = _rows(path, driver.session_id, create_scope(driver.token_sha256))
        expected = _rows(path, core.session_id, create_scope(core.token_sha256))
        for table in (written, expected):
            table[0].pop("session_id"), table[0].pop("token_sha256"), table[1].pop("session_id")
            table[2].pop("scope")
        assert written == expected
        assert written[0]["created_at"] == sqlite_instant(at)
        # and it reads back as the record it was
        assert await store.get(driver.session_id) == driver
        assert await store.events(driver.session_id) == [d_event]
    finally:
        await store.aclose()


async def test_a_refused_driver_create_leaves_nothing_behind(tmp_path: Path) -> None:
    """The answer row is inserted first: when the session row is refused, it goes too."""
    path = tmp_path / "sessions.sqlite3"
    store = SqlSessionStore(f"sqlite:///{path}")
    await store.start()
    try:
        at = datetime(2026, 11, 25, tzinfo=UTC)
        first, event = _session(7, at)
        await store.create(first, event, create_scope(first.token_sha256), "k1", "a" * 64, RESPONSE)
        clash = SessionRecord(first.session_id, "f" * 64, 1, "action_ready", "r", at, at, {})
        with pytest.raises(ValueError, match="session_id already exists"):
            await store.create(clash, event, create_scope(clash.token_sha256), "k2", "b" * 64, {})
        with sqlite3.connect(path) as db:
            assert db.execute("SELECT count(*) FROM session_idempotency").fetchone() == (1,)
            assert db.execute("SELECT count(*) FROM sessions").fetchone() == (1,)
            assert db.execute("SELECT count(*) FROM session_events").fetchone() == (1,)
        # the connection went back to the pool outside any transaction: the next create is not blocked
        second, event2 = _session(8, at)
        assert (
            await store.create(second, event2, create_scope(second.token_sha256), "k3", "c" * 64, {}) is None
        )
    finally:
        await store.aclose()
