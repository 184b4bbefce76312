"""A session create in as few statements as each backend allows: its answer (first, ON CONFLICT DO NOTHING),
its session row, its first event and, when the request has a client, the row that counts it against that
client's cap on open sessions (`session_clients`), all or nothing.

- SQLite: the inserts on the driver's own connection, in one BEGIN IMMEDIATE. SQLAlchemy's work per
  statement (events, parameter processing, result set-up) cost more than SQLite's inserts. The write lock,
  held from BEGIN IMMEDIATE to COMMIT across every process on the file, makes the cap's count and the insert
  one step.
- PostgreSQL: one statement (data-modifying CTEs, autocommit): one round trip instead of one per insert plus
  BEGIN and COMMIT. A taken key inserts nothing, as the answer's CTE then returns no row. Under a cap, the
  statement runs in a transaction after a per-client advisory lock (`pg_advisory_xact_lock`, every replica
  on the database waits on the same one), so its count sees every create of that client committed before it:
  in READ COMMITTED each statement reads what was committed when it started, so the lock is its own statement
  (four round trips: BEGIN, the lock, the statement, COMMIT; one client's capped creates run one at a time).

Both write exactly the rows `sessions_schema`'s Core statements write (a test compares them column by
column). Each answers False when the idempotency key is taken (the caller then reads that key's answer) and
raises `OpenSessionCapReached` when the client already holds `max_open` unfinished sessions (nothing written).
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
from routequote.storage.sessions_common import FINISHED, utc
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
    "INSERT INTO session_events (session_id, seq, from_status, event, to_status, at, detail) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)",
    "INSERT INTO session_clients (session_id, client, created_at) VALUES (?, ?, ?)",
)
_FINISHED_SQL = ", ".join(f"'{status}'" for status in FINISHED)  # constants of ours, not input
# a client's unfinished sessions, counted up to the cap (a client's finished sessions are not counted)
_SQLITE_OPEN = (
    "SELECT count(*) FROM (SELECT 1 FROM session_clients JOIN sessions "
    "ON sessions.session_id = session_clients.session_id "
    f"WHERE session_clients.client = ? AND sessions.status NOT IN ({_FINISHED_SQL}) LIMIT ?)"
)
# Explicit casts: a parameter that only appears in a SELECT list would otherwise be typed text.
_PG_ANSWER = """
    INSERT INTO session_idempotency (scope, key, request_sha256, response, created_at)
    SELECT CAST(:scope AS VARCHAR), CAST(:key AS VARCHAR), CAST(:request_sha256 AS VARCHAR),
        CAST(:response AS JSONB), CAST(:answered_at AS TIMESTAMPTZ)
    {where}
    ON CONFLICT DO NOTHING
    RETURNING 1
"""
_PG_REST = """
), made AS (
    INSERT INTO sessions (session_id, token_sha256, version, status, route, created_at, updated_at, state)
    SELECT CAST(:session_id AS VARCHAR), CAST(:token_sha256 AS VARCHAR), CAST(:version AS INTEGER),
        CAST(:status AS VARCHAR), CAST(:route AS VARCHAR), CAST(:created_at AS TIMESTAMPTZ),
        CAST(:updated_at AS TIMESTAMPTZ), CAST(:state AS JSONB)
    FROM answer
    RETURNING session_id
), counted AS (
    INSERT INTO session_clients (session_id, client, created_at)
    SELECT session_id, CAST(:client AS VARCHAR), CAST(:at AS TIMESTAMPTZ)
    FROM made
    WHERE CAST(:client AS VARCHAR) IS NOT NULL
)
INSERT INTO session_events (session_id, seq, from_status, event, to_status, at, detail)
SELECT session_id, CAST(:seq AS INTEGER), CAST(:from_status AS VARCHAR), CAST(:event AS VARCHAR),
    CAST(:to_status AS VARCHAR), CAST(:at AS TIMESTAMPTZ), CAST(:detail AS JSONB)
FROM made
RETURNING seq
"""
_POSTGRESQL = text("WITH answer AS (" + _PG_ANSWER.format(where="") + _PG_REST)
# under a cap: the answer (and so everything after it) only while the client holds fewer than :max_open
_PG_OPEN = (
    "(SELECT count(*) FROM (SELECT 1 FROM session_clients JOIN sessions "
    "ON sessions.session_id = session_clients.session_id "
    "WHERE session_clients.client = CAST(:client AS VARCHAR) "
    f"AND sessions.status NOT IN ({_FINISHED_SQL}) LIMIT CAST(:max_open AS BIGINT)) AS open_sessions)"
)
_POSTGRESQL_CAPPED = text(
    "WITH answer AS (" + _PG_ANSWER.format(where=f"WHERE {_PG_OPEN} < CAST(:max_open AS BIGINT)") + _PG_REST
)
# pg_advisory_xact_lock(int4, int4): the two-key space, apart from the migration's one-key lock
_CLIENT_LOCK_CLASS = int.from_bytes(b"rqcl", "big", signed=True)
_PG_CLIENT_LOCK = text(
    "SELECT pg_advisory_xact_lock(CAST(:lock_class AS INTEGER), hashtext(CAST(:client AS TEXT)))"
)


class OpenSessionCapReached(Exception):
    """The client already holds its cap of unfinished sessions: nothing was written."""


class NewSession(NamedTuple):
    """What one create writes; the documents are JSON text already (`json_dumps`)."""

    record: SessionRecord
    state_json: str
    event: SessionEvent
    scope: str
    key: str
    request_sha256: str
    response_json: str
    client: str | None = None  # counted against this client's open sessions (`session_clients`)
    max_open: int = 0  # the client's cap on unfinished sessions (0: none)
    detail_json: str | None = None  # the first event's `detail` (JSON text), or NULL


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
        if new.client is not None and new.max_open > 0:
            (held,) = driver.execute(_SQLITE_OPEN, (new.client, new.max_open)).fetchone()
            if held >= new.max_open:
                raise OpenSessionCapReached
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
            _SQLITE[2],
            (
                event.session_id,
                event.seq,
                event.from_status,
                event.event,
                event.to_status,
                at,
                new.detail_json,
            ),
        )
        if new.client is not None:
            driver.execute(_SQLITE[3], (record.session_id, new.client, at))
        driver.execute("COMMIT")
    except BaseException:
        if driver.in_transaction:  # release the write lock now, not when the pool resets the connection
            driver.execute("ROLLBACK")
        raise
    return True


def create_on_postgresql(conn: Connection, new: NewSession) -> bool:
    """Raises ValueError when the session id exists (the statement then wrote nothing). Under a cap the create
    is a transaction the caller ends: it commits here when made, and is left open otherwise (the caller reads
    the taken key's answer in it, then rolls back)."""
    record, event = new.record, new.event
    capped = new.client is not None and new.max_open > 0
    params = {
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
        "detail": new.detail_json,
        "client": new.client,
    }
    try:
        if not capped:
            conn.execution_options(isolation_level="AUTOCOMMIT")  # one statement: its own transaction
            return conn.execute(_POSTGRESQL, params).first() is not None
        conn.execute(_PG_CLIENT_LOCK, {"lock_class": _CLIENT_LOCK_CLASS, "client": new.client})
        made = conn.execute(_POSTGRESQL_CAPPED, {**params, "max_open": new.max_open}).first() is not None
    except IntegrityError:
        raise ValueError("session_id already exists") from None
    if made:
        conn.commit()
    return made
