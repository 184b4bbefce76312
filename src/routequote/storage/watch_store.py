"""The watcher's side of the session database: its leases, and the sessions waiting on the chain.

`watch_leases` (migration 0005) holds one row per lease: `watcher` when one process follows every waiting session
(`leader`), `session:<id>` when replicas share the watch (`shared`). Taking or renewing a lease is one
`INSERT ... ON CONFLICT (name) DO UPDATE ... WHERE the row expired or is ours ... RETURNING name` statement, the
same SQLAlchemy Core on SQLite and PostgreSQL: of two processes racing for a row, the database lets exactly one
write it (the row lock on PostgreSQL, the write lock on SQLite), and the other gets no row back. A holder renews
its rows every tick; a process killed with `kill -9` stops renewing, and its rows are free at `expires_at`.

Times are the hosts' wall clocks (UTC): replicas sharing a database are assumed to keep their clocks in step
(NTP) to well under a lease's length.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Column, MetaData, Select, String, Table, delete, literal, select
from sqlalchemy.dialects import postgresql as pg
from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.engine import Connection

from routequote.ports import WATCH_SESSION_PREFIX as SESSION_PREFIX
from routequote.ports import SessionRecord
from routequote.storage.sessions_common import record_from_row
from routequote.storage.sessions_schema import UtcDateTime, sessions
from routequote.storage.sessions_sql import SqlSessionStore

_CHUNK = 500  # rows per multi-row upsert (3 bound values each: far under either database's limit)

_meta = MetaData()
watch_leases = Table(
    "watch_leases",
    _meta,
    Column("name", String(80), primary_key=True),
    Column("holder", String(120), nullable=False),
    Column("expires_at", UtcDateTime, nullable=False),
)


def _claim_rows(conn: Connection, names: Sequence[str], holder: str, now: datetime, ttl: float) -> set[str]:
    """Take or renew each named lease that is free, expired or already ours; the names now held by `holder`."""
    if not names:
        return set()
    dialect = sqlite_dialect if conn.dialect.name == "sqlite" else pg
    until = now + timedelta(seconds=ttl)
    held: set[str] = set()
    for i in range(0, len(names), _CHUNK):
        rows = [{"name": n, "holder": holder, "expires_at": until} for n in names[i : i + _CHUNK]]
        stmt = dialect.insert(watch_leases).values(rows)
        stmt = stmt.on_conflict_do_update(
            index_elements=[watch_leases.c.name],
            set_={"holder": stmt.excluded.holder, "expires_at": stmt.excluded.expires_at},
            where=(watch_leases.c.expires_at < now) | (watch_leases.c.holder == holder),
        ).returning(watch_leases.c.name)
        held |= {r[0] for r in conn.execute(stmt)}
    return held


def rotation(conn: Connection, query: Select[Any], after: str | None, limit: int) -> list[Any]:
    """`limit` rows of `query` in session id order, starting just after `after` and wrapping round to the first.

    The watcher passes the last id of its previous page, so with more waiting sessions than one tick looks at,
    every one is looked at within ceil(waiting / limit) ticks. (Least recently changed first would starve: a
    look that changes nothing writes nothing, so the same oldest `limit` sessions would come first every tick.)"""
    ordered = query.order_by(sessions.c.session_id)
    if after is None:
        return list(conn.execute(ordered.limit(limit)))
    rows = list(conn.execute(ordered.where(sessions.c.session_id > after).limit(limit)))
    if len(rows) < limit:
        rows += conn.execute(ordered.where(sessions.c.session_id <= after).limit(limit - len(rows)))
    return rows


class SqlWatchStore:
    """Leases and waiting sessions on a `SqlSessionStore` (or the `CappedSessionStore` wrapping one)."""

    def __init__(self, store: Any) -> None:
        self.store = getattr(store, "inner", store)
        self.scope = self.store.scope

    async def claim(self, names: Sequence[str], holder: str, now: datetime, ttl: float) -> set[str]:
        def operation(conn: Connection) -> set[str]:
            with conn.begin():
                return _claim_rows(conn, list(names), holder, now, ttl)

        held: set[str] = await self.store.execute(operation, write=True)
        return held

    async def release(self, holder: str) -> None:
        """Give up every lease `holder` holds (a clean shutdown: another process takes over at its next tick)."""

        def operation(conn: Connection) -> None:
            with conn.begin():
                conn.execute(delete(watch_leases).where(watch_leases.c.holder == holder))

        await self.store.execute(operation, write=True)

    async def leases(self) -> dict[str, tuple[str, datetime]]:
        def operation(conn: Connection) -> list[Any]:
            rows = list(conn.execute(select(watch_leases)))
            conn.rollback()
            return rows

        return {r.name: (r.holder, r.expires_at) for r in await self.store.execute(operation, write=False)}

    async def waiting(
        self, statuses: Iterable[str], limit: int, after: str | None = None
    ) -> list[SessionRecord]:
        """At most `limit` sessions in `statuses`, in session id order from just after `after`, wrapping round
        to the first id (see `rotation`)."""
        wanted = list(statuses)

        def operation(conn: Connection) -> list[Any]:
            rows = rotation(conn, select(sessions).where(sessions.c.status.in_(wanted)), after, limit)
            conn.rollback()
            return rows

        return [record_from_row(r) for r in await self.store.execute(operation, write=False)]

    async def claim_waiting(
        self,
        statuses: Iterable[str],
        holder: str,
        now: datetime,
        ttl: float,
        limit: int,
        after: str | None = None,
    ) -> list[SessionRecord]:
        """`shared`: lease up to `limit` waiting sessions no other live holder has (in `rotation` order from
        `after`), renew ours among them, and return them. Leases of sessions that stopped waiting are dropped once
        expired; a lease of ours the page no longer reaches runs out at its expiry."""
        wanted = list(statuses)
        name = literal(SESSION_PREFIX) + sessions.c.session_id

        def operation(conn: Connection) -> list[Any]:
            with conn.begin():
                conn.execute(
                    delete(watch_leases).where(watch_leases.c.expires_at < now - timedelta(seconds=ttl))
                )
                free = (
                    select(sessions)
                    .select_from(sessions.outerjoin(watch_leases, watch_leases.c.name == name))
                    .where(
                        sessions.c.status.in_(wanted),
                        watch_leases.c.name.is_(None)
                        | (watch_leases.c.expires_at < now)
                        | (watch_leases.c.holder == holder),
                    )
                )
                rows = rotation(conn, free, after, limit)
                held = _claim_rows(conn, [SESSION_PREFIX + r.session_id for r in rows], holder, now, ttl)
            return [r for r in rows if SESSION_PREFIX + r.session_id in held]

        return [record_from_row(r) for r in await self.store.execute(operation, write=True)]


class MemoryWatchStore:
    """The same over the in-process `MemorySessionStore` (unit tests; one process, so leases are local)."""

    scope = "memory"

    def __init__(self, store: Any) -> None:
        self.store = store
        self._leases: dict[str, tuple[str, datetime]] = {}
        self._lock = asyncio.Lock()

    async def claim(self, names: Sequence[str], holder: str, now: datetime, ttl: float) -> set[str]:
        async with self._lock:
            held: set[str] = set()
            for n in names:
                current = self._leases.get(n)
                if current is None or current[1] < now or current[0] == holder:
                    self._leases[n] = (holder, now + timedelta(seconds=ttl))
                    held.add(n)
            return held

    async def release(self, holder: str) -> None:
        async with self._lock:
            self._leases = {n: v for n, v in self._leases.items() if v[0] != holder}

    async def leases(self) -> dict[str, tuple[str, datetime]]:
        return dict(self._leases)

    async def waiting(
        self, statuses: Iterable[str], limit: int, after: str | None = None
    ) -> list[SessionRecord]:
        ids = sorted(await self.store.ids_with_status(set(statuses)))
        if after is not None:
            ids = [i for i in ids if i > after] + [i for i in ids if i <= after]
        out = [r for r in [await self.store.get(sid) for sid in ids] if r is not None]
        return out[:limit]

    async def claim_waiting(
        self,
        statuses: Iterable[str],
        holder: str,
        now: datetime,
        ttl: float,
        limit: int,
        after: str | None = None,
    ) -> list[SessionRecord]:
        def free(r: SessionRecord) -> bool:
            lease = self._leases.get(SESSION_PREFIX + r.session_id)
            return lease is None or lease[1] < now or lease[0] == holder

        records = [r for r in await self.waiting(statuses, 10**9, after) if free(r)][:limit]
        held = await self.claim([SESSION_PREFIX + r.session_id for r in records], holder, now, ttl)
        return [r for r in records if SESSION_PREFIX + r.session_id in held]


def watch_store(store: Any) -> SqlWatchStore | MemoryWatchStore:
    inner = getattr(store, "inner", store)
    return SqlWatchStore(inner) if isinstance(inner, SqlSessionStore) else MemoryWatchStore(inner)
