"""The session-store contract's shared parts (tests/integration/test_session_store*.py): the backends, a session
record and its events as a caller writes them, and the white-box reads of an SQL store. The `store` and `pg_url`
fixtures are in tests/integration/conftest.py."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from routequote.ports import SessionEvent, SessionRecord, SessionStore
from routequote.storage.sessions_common import create_scope
from routequote.storage.sessions_sql import SqlSessionStore

BACKENDS = ["memory", "sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]
T0 = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)


async def truncate_sessions(store: SqlSessionStore) -> None:
    async with store._engine.begin() as conn:  # white box: each test starts from empty tables
        await conn.exec_driver_sql("TRUNCATE session_events, session_idempotency, sessions")


def url_of(store: SessionStore) -> str:
    assert isinstance(store, SqlSessionStore)
    return store._url.render_as_string(hide_password=False)


def new_session(
    state: dict[str, Any] | None = None,
    status: str = "action_ready",
    token_sha256: str | None = None,
    at: datetime = T0,
) -> tuple[SessionRecord, SessionEvent]:
    sid = "ses_" + secrets.token_hex(10)
    record = SessionRecord(
        session_id=sid,
        token_sha256=token_sha256 or secrets.token_hex(32),
        version=1,
        status=status,
        route="base:ETH->base:USDC",
        created_at=at,
        updated_at=at,
        state=state or {"steps": [], "current": 0},
    )
    return record, SessionEvent(sid, 1, None, "create", status, at)


async def create(
    store: SessionStore,
    state: dict[str, Any] | None = None,
    status: str = "action_ready",
    key: str | None = None,
) -> SessionRecord:
    record, event = new_session(state, status)
    answer = await store.create(
        record,
        event,
        create_scope(record.token_sha256),
        key or secrets.token_hex(8),
        "a" * 64,
        {"session_id": record.session_id},
    )
    assert answer is None
    return record


def step(
    record_or_id: SessionRecord | str,
    version: int,
    from_status: str | None,
    to_status: str,
    name: str = "observe",
    at: datetime | None = None,
) -> SessionEvent:
    sid = record_or_id if isinstance(record_or_id, str) else record_or_id.session_id
    return SessionEvent(sid, version + 1, from_status, name, to_status, at or T0 + timedelta(seconds=version))
