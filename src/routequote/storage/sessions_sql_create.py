"""A session create in as few statements as each backend allows: its answer (first, ON CONFLICT DO NOTHING),
its session row and its first event, all or nothing.

- SQLite: the three inserts on the driver's own connection, in one BEGIN IMMEDIATE. SQLAlchemy's work per
  statement (events, parameter processing, result set-up) cost more than SQLite's three inserts.
- PostgreSQL: one statement (data-modifying CTEs, autocommit): one round trip instead of five (BEGIN, three
  inserts, COMMIT). A taken key inserts nothing, as the answer's CTE then returns no row.

Both write exactly the rows `sessions_schema`'s Core statements write (a test compares them column by
column). Each answers False when the idempotency key is taken; the caller then reads that key's answer.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import datetime
from typing import NamedTuple, cast

from sqlalchemy import text
from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from routequote.ports import SessionEvent, SessionRecord
from routequote.storage.sessions_common import utc
from routequote.storage.sessions_schema import UtcDateTime

_SQLITE_DIALECT = sqlite_dialect.dialect()
# an instant as SQLAlchemy itself writes a `UtcDateTime` on SQLite (its own bind processor: UTC, no zone)
_sqlite_instant = cast(
    Callable[[datetime], str], UtcDateTime().dialect_impl(_SQLITE_DIALECT).bind_processor(_SQLITE_DIALECT)
)

_SQLITE = (
    "INSERT INTO session_idempotency (scope, key, request_sha256, response, created_at) VALUES (?, ?, ?, ?, ?) "
    "ON CONFLICT DO NOTHING",
    "INSERT INTO sessions (session_id, token_sha256, version, status, route, created_at, updated_at, state) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    "INSERT INTO session_events (session_id, seq, from_status, event, to_status, at) VALUES (?, ?, ?, ?, ?, ?)",
)
# Explicit casts: a parameter that only appears in a SELECT list would otherwise be typed text.
_POSTGRESQL = text(
    """
WITH answer AS (
    INSERT INTO session_idempotency (scope, key, request_sha256, response, created_at)
    VALUES (:scope, :key, :request_sha256, CAST(:response AS JSONB), CAST(:answered_at AS TIMESTAMPTZ))
    ON CONFLICT DO NOTHING
    RETURNING 1
), made AS (
    INSERT INTO sessions (session_id, token_sha256, version, status, route, created_at, updated_at, state)
    SELECT CAST(:session_id AS VARCHAR), CAST(:token_sha256 AS VARCHAR), CAST(:version AS INTEGER),
        CAST(:status AS VARCHAR), CAST(:route AS VARCHAR), CAST(:created_at AS TIMESTAMPTZ),
        CAST(:updated_at AS TIMESTAMPTZ), CAST(:state AS JSONB)
    FROM answer
    RETURNING session_id
)
INSERT INTO session_events (session_id, seq, from_status, event, to_status, at)
SELECT session_id, CAST(:seq AS INTEGER), CAST(:from_status AS VARCHAR), CAST(:event AS VARCHAR),
    CAST(:to_status AS VARCHAR), CAST(:at AS TIMESTAMPTZ)
FROM made
RETURNING seq
"""
)


class NewSession(NamedTuple):
    """What one create writes; the documents are JSON text already (`json_dumps`)."""

    record: SessionRecord
    state_json: str
    event: SessionEvent
    scope: str
    key: str
    request_sha256: str
    response_json: str


def create_on_sqlite(conn: Connection, new: NewSession) -> bool:
    """Raises ValueError when the session id exists (nothing is written then)."""
    driver: sqlite3.Connection = conn.connection.driver_connection  # type: ignore[assignment]
    record, event = new.record, new.event
    at = _sqlite_instant(event.at)
    driver.execute("BEGIN IMMEDIATE")
    try:
        answered = driver.execute(_SQLITE[0], (new.scope, new.key, new.request_sha256, new.response_json, at))
        if answered.rowcount == 0:
            driver.execute("ROLLBACK")
            return False
        try:
            driver.execute(
                _SQLITE[1],
                (
                    record.session_id,
                    record.token_sha256,
                    record.version,
                    record.status,
                    record.route,
                    _sqlite_instant(record.created_at),
                    _sqlite_instant(record.updated_at),
                    new.state_json,
                ),
            )
        except sqlite3.IntegrityError:
            raise ValueError("session_id already exists") from None
        driver.execute(
            _SQLITE[2], (event.session_id, event.seq, event.from_status, event.event, event.to_status, at)
        )
        driver.execute("COMMIT")
    except BaseException:
        if driver.in_transaction:  # release the write lock now, not when the pool resets the connection
            driver.execute("ROLLBACK")
        raise
    return True


def create_on_postgresql(conn: Connection, new: NewSession) -> bool:
    """Raises ValueError when the session id exists (the statement then wrote nothing)."""
    record, event = new.record, new.event
    conn.execution_options(isolation_level="AUTOCOMMIT")  # one statement: its own transaction
    try:
        made = conn.execute(
            _POSTGRESQL,
            {
                "scope": new.scope,
                "key": new.key,
                "request_sha256": new.request_sha256,
                "response": new.response_json,
                "answered_at": utc(event.at),
                "session_id": record.session_id,
                "token_sha256": record.token_sha256,
                "version": record.version,
                "status": record.status,
                "route": record.route,
                "created_at": utc(record.created_at),
                "updated_at": utc(record.updated_at),
                "state": new.state_json,
                "seq": event.seq,
                "from_status": event.from_status,
                "event": event.event,
                "to_status": event.to_status,
                "at": utc(event.at),
            },
        ).first()
    except IntegrityError:
        raise ValueError("session_id already exists") from None
    return made is not None
