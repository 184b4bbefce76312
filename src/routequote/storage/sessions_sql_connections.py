"""Connections to the session database: the URL each backend is reached by, the SQLite engine (WAL, busy
timeout, BEGIN IMMEDIATE for writers), the JSON encoding of the document columns, and the short,
secret-free reason a database failure is reported with."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import asyncpg  # type: ignore[import-untyped]
from sqlalchemy import event
from sqlalchemy.engine import URL, Connection, Engine, create_engine, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, OperationalError, SQLAlchemyError

from routequote.storage.sessions_common import json_dumps, stored_json_loads

WRITE = "routequote_write"  # execution option: this connection's transactions write (SQLite: BEGIN IMMEDIATE)


class Encoded(str):
    """A document already encoded (and so validated) by `json_dumps`: the JSON columns store it as is."""


def serialize(value: Any) -> str:
    return value if isinstance(value, Encoded) else json_dumps(value)


def sqlite_engine(url: URL, pool_size: int, busy_timeout: float, *, autocheckpoint: bool = True) -> Engine:
    """A pysqlite engine on the file: WAL, busy timeout, and BEGIN IMMEDIATE for the writers. Without
    `autocheckpoint` its commits never checkpoint the WAL (`sqlite_checkpoint` does, off the loop)."""
    busy_ms = int(busy_timeout * 1000)
    engine = create_engine(
        url.set(drivername="sqlite+pysqlite"),
        pool_pre_ping=False,  # a local file has no connection to lose
        pool_size=pool_size,
        max_overflow=pool_size,
        pool_timeout=max(busy_timeout, 1.0),
        json_serializer=serialize,
        json_deserializer=stored_json_loads,
        connect_args={"timeout": busy_timeout, "check_same_thread": False},
    )

    @event.listens_for(engine, "connect")
    def _sqlite_connect(dbapi_connection: Any, _record: Any) -> None:
        # SQLAlchemy, not the sqlite3 module, emits BEGIN (see _sqlite_begin)
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout={busy_ms}")
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")  # WAL: durable across a process kill
        cursor.execute("PRAGMA foreign_keys=ON")
        if not autocheckpoint:
            cursor.execute("PRAGMA wal_autocheckpoint=0")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _sqlite_begin(conn: Connection) -> None:
        # a writer takes the write lock up front: two processes serialise here, not at COMMIT
        immediate = conn.get_execution_options().get(WRITE, False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine


def sqlite_busy(exc: OperationalError | sqlite3.OperationalError) -> bool:
    """SQLite refused at once because another connection holds the lock (`database is locked`/`busy`)."""
    text = str(getattr(exc, "orig", exc)).lower()
    return "locked" in text or "busy" in text


def normalise_url(url: str) -> URL:
    """`postgresql://` / `postgres://` / `postgresql+<any>://` -> asyncpg; `sqlite://` -> aiosqlite.

    A URL that does not parse is refused without repeating it (it may hold a password)."""
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):
        raise ValueError(
            "the database URL does not parse (expected sqlite:///path or postgresql://...)"
        ) from None
    backend = parsed.get_backend_name()
    if backend in ("postgresql", "postgres"):
        query = dict(parsed.query)
        if "sslmode" in query:  # libpq spelling; asyncpg takes the same values as `ssl`
            query["ssl"] = query.pop("sslmode")
        return parsed.set(drivername="postgresql+asyncpg", query=query)
    if backend == "sqlite":
        if not parsed.database or parsed.database == ":memory:" or parsed.database.startswith("file:"):
            raise ValueError("the SQLite session store needs a file path (use MemorySessionStore for memory)")
        return parsed.set(drivername="sqlite+aiosqlite")
    raise ValueError(f"unsupported database backend {backend!r} (expected sqlite or postgresql)")


def db_reason(exc: BaseException) -> str:
    """A short, secret-free account of a database failure: the driver's error class (and SQLSTATE), never
    its message (which may carry host names or statements)."""
    chain: list[BaseException] = []
    probe: BaseException | None = exc
    while probe is not None and len(chain) < 8 and probe not in chain:
        chain.append(probe)
        orig = getattr(probe, "orig", None) if isinstance(probe, DBAPIError) else None
        probe = orig if isinstance(orig, BaseException) else (probe.__cause__ or probe.__context__)
    deepest = next(c for c in reversed(chain) if not isinstance(c, asyncio.CancelledError))
    sqlstate = next((c.sqlstate for c in chain if isinstance(getattr(c, "sqlstate", None), str)), None)  # type: ignore[attr-defined]
    detail = type(deepest).__name__ + (f" {sqlstate}" if sqlstate else "")
    kind = "timed out" if any(isinstance(c, TimeoutError) for c in chain) else "unavailable"
    return f"session database {kind} ({detail})"


DB_ERRORS: tuple[type[BaseException], ...] = (
    SQLAlchemyError,
    OSError,  # includes ConnectionError and TimeoutError
    asyncpg.PostgresError,
    asyncpg.InterfaceError,
    sqlite3.Error,
)


@asynccontextmanager
async def nothing() -> AsyncIterator[None]:
    yield
