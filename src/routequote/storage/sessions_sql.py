"""SessionStore on SQLAlchemy 2 async: an embedded SQLite file by default, PostgreSQL for several replicas.

Every write is one transaction. A transition is `UPDATE ... SET version = version + 1 WHERE session_id
AND version = expected`: the row lock (PostgreSQL) or the database write lock (SQLite, taken at
`BEGIN IMMEDIATE`) makes two concurrent transitions from one version produce exactly one winner, across
processes. Idempotency records are inserted with ON CONFLICT DO NOTHING in the same transaction, so a
racing create with the same key inserts nothing and gets the winner's answer.

Failures of the database (unreachable, restarting, timing out, erroring) raise StoreUnavailable with a
short reason naming the error class, never the URL. A pooled connection found dead is retried once on a
fresh one, so after a PostgreSQL restart the next call reconnects by itself. Schema changes are Alembic
migrations (storage/migrations) run by `start()`, under an advisory lock on PostgreSQL.

Each operation is written once, as a function of a synchronous SQLAlchemy `Connection`: on PostgreSQL it
runs through asyncpg (`AsyncConnection.run_sync`), on SQLite as one call in a worker thread over the
stdlib driver. An SQLite file has no network to wait on, so the cost there was the thread hop per
statement of an async driver; one hop per operation is a third of a session create's time.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from alembic import command
from alembic.config import Config
from sqlalchemy import bindparam, func, insert, select, text, update
from sqlalchemy.dialects import postgresql as pg
from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError
from sqlalchemy.ext.asyncio import create_async_engine

from routequote.core.auth import AccessGrant, LoginChallenge
from routequote.ports import (
    IdempotencyConflict,
    IdempotentAnswer,
    SessionEvent,
    SessionRecord,
    StoreUnavailable,
    TransactionAlreadyUsed,
)
from routequote.storage.sessions_common import (
    check_create,
    check_transition,
    event_detail,
    json_dumps,
    malformed_document,
    record_from_row,
    stored_json_loads,
    utc,
    with_detail,
)
from routequote.storage.sessions_schema import (
    access_tokens,
    login_challenges,
    session_events,
    session_idempotency,
    session_transactions,
    sessions,
)
from routequote.storage.sessions_sql_connections import (
    DB_ERRORS,
    WRITE,
    Encoded,
    db_reason,
    normalise_url,
    nothing,
    serialize,
    sqlite_busy,
    sqlite_engine,
)
from routequote.storage.sessions_sql_create import (
    NewSession,
    OpenSessionCapReached,
    create_on_postgresql,
    create_on_sqlite,
)
from routequote.storage.sqlite_checkpoint import WalCheckpointer

MIGRATIONS_DIR = Path(__file__).with_name("migrations")
VERSION_TABLE = "routequote_alembic_version"
# pg_advisory_xact_lock key for the schema upgrade: int64 of b"rqsessn1" (any fixed value of our own)
_MIGRATION_LOCK_KEY = int.from_bytes(b"rqsessn1", "big", signed=True)
T = TypeVar("T")


# The hot statements, built once and executed with parameter dicts: building a Core construct per call
# (coercions, cache keys) cost more than SQLite's own work.
_INSERT_EVENT = session_events.insert()
_ADVANCE_SESSION = (
    update(sessions)
    .where(sessions.c.session_id == bindparam("b_session_id"), sessions.c.version == bindparam("b_expected"))
    .values(
        version=sessions.c.version + 1,
        status=bindparam("b_status"),
        state=bindparam("b_state"),
        updated_at=bindparam("b_at"),
    )
)
_SELECT_SESSION = select(sessions).where(sessions.c.session_id == bindparam("b_session_id"))
_SELECT_ANSWER = select(session_idempotency.c.request_sha256, session_idempotency.c.response).where(
    session_idempotency.c.scope == bindparam("b_scope"), session_idempotency.c.key == bindparam("b_key")
)
_INSERT_ANSWER_IGNORED = {
    "postgresql": pg.insert(session_idempotency).on_conflict_do_nothing(),
    "sqlite": sqlite_dialect.insert(session_idempotency).on_conflict_do_nothing(),
}


class SqlSessionStore:
    """SessionStore on SQLite (file) or PostgreSQL; see the module docstring."""

    def __init__(
        self,
        url: str,
        *,
        connect_timeout: float = 3.0,
        statement_timeout: float = 10.0,
        sqlite_busy_timeout: float = 15.0,
        pool_size: int = 20,
    ) -> None:
        self._url = normalise_url(url)
        self.scope = "postgresql" if self._url.get_backend_name() == "postgresql" else "sqlite"
        self._started = False
        self._start_lock = asyncio.Lock()
        if self.scope == "postgresql":
            self._engine = create_async_engine(
                self._url,
                # no ping per checkout (a round trip per operation): a connection found dead is retried once, below
                pool_pre_ping=False,
                pool_size=pool_size,
                max_overflow=pool_size,
                pool_timeout=connect_timeout + statement_timeout,
                pool_recycle=1800,
                json_serializer=serialize,
                json_deserializer=stored_json_loads,
                connect_args={
                    "timeout": connect_timeout,
                    "command_timeout": statement_timeout,
                    "server_settings": {
                        "application_name": "routequote",
                        "statement_timeout": str(int(statement_timeout * 1000)),
                        "idle_in_transaction_session_timeout": str(int(statement_timeout * 3000)),
                    },
                },
            )
        else:
            # two pools on one file: `_prompt` answers on the event loop and never waits for a lock (busy
            # timeout 0); `_sync` waits up to `sqlite_busy_timeout` for another process, in a worker thread
            self._sync = sqlite_engine(self._url, pool_size, sqlite_busy_timeout)
            self._prompt = sqlite_engine(self._url, pool_size, 0.0, autocheckpoint=False)
            self.checkpoints = WalCheckpointer(self._sync)
            self._prompt_writer = self._prompt.execution_options(**{WRITE: True})
            self._sync_writer = self._sync.execution_options(**{WRITE: True})
        if self.scope == "postgresql":
            self._writer = self._engine.execution_options(**{WRITE: True})
        self._sqlite_writes: asyncio.Lock | None = asyncio.Lock() if self.scope == "sqlite" else None

    # ---- lifecycle -----------------------------------------------------------------------------------

    async def start(self) -> None:
        async with self._start_lock:
            if self._started:
                return
            if self.scope == "sqlite":
                assert self._url.database is not None
                async with self._guard():  # an unusable path is the store being unavailable, not a crash
                    Path(self._url.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
            await self._run(self._upgrade, write=True)
            self._started = True

    def _upgrade(self, connection: Connection) -> None:
        with connection.begin():
            if connection.dialect.name == "postgresql":
                # held to the end of this transaction: a second process waits, then finds the schema at head
                connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_MIGRATION_LOCK_KEY})")
            config = Config()
            config.set_main_option("script_location", str(MIGRATIONS_DIR))
            config.set_main_option("version_table", VERSION_TABLE)
            config.attributes["connection"] = connection
            command.upgrade(config, "head")

    async def aclose(self) -> None:
        if self.scope == "sqlite":
            await self.checkpoints.aclose()
            self._prompt.dispose()
            await asyncio.to_thread(self._sync.dispose)
        else:
            await self._engine.dispose()
        self._started = False

    async def ping(self) -> None:
        await self._run(lambda conn: conn.execute(text("SELECT 1")).all(), write=False)

    async def read(self, operation: Callable[[Connection], T]) -> T:
        """Run a read-only `operation` on a connection (the retention job's table sizes)."""
        return await self._run(operation, write=False)

    async def execute(self, operation: Callable[[Connection], T], *, write: bool) -> T:
        """Run one short `operation` on a store connection, as the session operations run theirs: for the
        stores that keep their own tables in this database (watch leases, webhook subscriptions)."""
        return await self._run(operation, write=write)

    async def write_batch(self, operation: Callable[[Connection], int]) -> int:
        """Run one long write (a retention purge batch): on PostgreSQL as any write; on SQLite in a worker
        thread inside this process's write slot, because the store runs SQLite's tiny statements on the loop
        and a purge batch is not tiny."""
        if self.scope != "sqlite":
            return await self._run(operation, write=True)

        def work() -> int:
            with self._sync_writer.connect() as conn:
                return operation(conn)

        async with self._guard(), self._write_slot():
            return await asyncio.to_thread(work)

    async def _run(self, operation: Callable[[Connection], T], *, write: bool) -> T:
        """Run `operation` on a connection: one worker-thread call on SQLite (writers of this process queue
        on a lock first), `run_sync` over asyncpg on PostgreSQL. Database failures become StoreUnavailable."""
        async with self._guard():
            if self.scope == "sqlite":
                # A local file answers in well under a millisecond: run on the event loop, where a worker thread
                # would wait for the GIL behind the loop at every statement. Only when another process holds
                # the write lock does the operation wait for it, off the loop.
                if write and self.checkpoints.writes_wait:
                    await self.checkpoints.writable()
                try:
                    with (self._prompt_writer if write else self._prompt).connect() as conn:
                        result = operation(conn)
                    if write:
                        self.checkpoints.after_write()
                    return result
                except (OperationalError, sqlite3.OperationalError) as exc:
                    if not sqlite_busy(exc):
                        raise
                engine = self._sync_writer if write else self._sync

                def work() -> T:
                    with engine.connect() as conn:
                        return operation(conn)

                async with self._write_slot() if write else nothing():
                    return await asyncio.to_thread(work)
            for attempt in (1, 2):
                try:
                    async with (self._writer if write else self._engine).connect() as aconn:
                        return await aconn.run_sync(operation)
                except DBAPIError as exc:
                    # a pooled connection that died (PostgreSQL restarted): SQLAlchemy has invalidated the pool;
                    # run once more on a fresh connection. Safe for writes: a create that did commit is found by
                    # its idempotency key, a transition that did commit makes the retry lose its version check.
                    if attempt == 2 or not exc.connection_invalidated:
                        raise
            raise AssertionError("unreachable")  # pragma: no cover

    # ---- writes --------------------------------------------------------------------------------------

    async def create(
        self,
        record: SessionRecord,
        event: SessionEvent,
        idempotency_scope: str,
        idempotency_key: str,
        request_sha256: str,
        response: dict[str, Any],
        *,
        client: str | None = None,
        max_open: int = 0,
    ) -> IdempotentAnswer | None:
        """`client`: the session counts against that client's open sessions (written with it, atomically);
        `max_open` > 0: raises `OpenSessionCapReached` (nothing written) when the client already holds that many
        unfinished sessions, counted in the create's own transaction (a replay of the key still replays)."""
        check_create(record, event)
        # encoded once, here: a document JSON cannot hold is the caller's error (ValueError), before any I/O
        state_json, response_json = Encoded(json_dumps(record.state)), Encoded(json_dumps(response))

        new = NewSession(
            record,
            state_json,
            event,
            idempotency_scope,
            idempotency_key,
            request_sha256,
            response_json,
            None if client is None else client[:64],
            max_open,
            None if (detail := event_detail(event)) is None else json_dumps(detail),
        )

        def operation(conn: Connection) -> IdempotentAnswer | None:
            made = create_on_sqlite(conn, new) if self.scope == "sqlite" else create_on_postgresql(conn, new)
            if made:
                return None
            # the key is taken (perhaps by a concurrent create that just committed): its answer
            answer = self._idempotent(conn, idempotency_scope, idempotency_key)
            conn.rollback()
            if answer is None:
                if new.client is not None and max_open > 0:  # PostgreSQL: the count held the answer back
                    raise OpenSessionCapReached
                # only if the record vanished between two statements
                raise StoreUnavailable(
                    "session database changed during the request; retry"
                )  # pragma: no cover
            return answer

        return await self._run(operation, write=True)

    async def transition(
        self,
        session_id: str,
        expected_version: int,
        status: str,
        state: dict[str, Any],
        event: SessionEvent,
        idempotency: tuple[str, str, str, dict[str, Any]] | None = None,
        claims: tuple[tuple[str, int], ...] = (),
    ) -> bool:
        check_transition(session_id, expected_version, status, event)
        state_json = Encoded(json_dumps(state))
        response_json = Encoded(json_dumps(idempotency[3])) if idempotency is not None else None
        detail = event_detail(event)
        event_row = self.event_row(event, None if detail is None else Encoded(json_dumps(detail)))

        def operation(conn: Connection) -> bool:
            updated = conn.execute(
                _ADVANCE_SESSION,
                {
                    "b_session_id": session_id,
                    "b_expected": expected_version,
                    "b_status": status,
                    "b_state": state_json,
                    "b_at": event.at,
                },
            )
            if updated.rowcount != 1:
                conn.rollback()
                return False
            conn.execute(_INSERT_EVENT, event_row)
            if idempotency is not None:
                scope, key, request_sha256, _response = idempotency
                inserted = conn.execute(
                    _INSERT_ANSWER_IGNORED[self.scope],
                    {
                        "scope": scope,
                        "key": key,
                        "request_sha256": request_sha256,
                        "response": response_json,
                        "created_at": event.at,
                    },
                )
                if inserted.rowcount == 0:
                    conn.rollback()
                    raise IdempotencyConflict("idempotency key already used in this scope")
            if claims:
                rows = [
                    {"tx_id": tx_id, "session_id": session_id, "step_index": step, "claimed_at": event.at}
                    for tx_id, step in claims
                ]
                try:
                    conn.execute(insert(session_transactions), rows)
                except IntegrityError:
                    conn.rollback()
                    raise TransactionAlreadyUsed("a named transaction already advanced a step") from None
            conn.commit()
            return True

        return await self._run(operation, write=True)

    # ---- reads ---------------------------------------------------------------------------------------

    async def get(self, session_id: str) -> SessionRecord | None:
        def operation(conn: Connection) -> Any:
            row = conn.execute(_SELECT_SESSION, {"b_session_id": session_id}).first()
            conn.rollback()
            return row

        row = await self._run(operation, write=False)
        if row is None:
            return None
        return record_from_row(row)

    async def idempotent(self, scope: str, key: str) -> IdempotentAnswer | None:
        def operation(conn: Connection) -> IdempotentAnswer | None:
            answer = self._idempotent(conn, scope, key)
            conn.rollback()
            return answer

        return await self._run(operation, write=False)

    async def events(self, session_id: str) -> list[SessionEvent]:
        return await self._read_events(session_id, 0, None)

    async def events_after(self, session_id: str, after: int, limit: int) -> list[SessionEvent]:
        return await self._read_events(session_id, after, max(limit, 0))

    async def _read_events(self, session_id: str, after: int, limit: int | None) -> list[SessionEvent]:
        query = (
            select(session_events)
            .where(session_events.c.session_id == session_id, session_events.c.seq > after)
            .order_by(session_events.c.seq)
        )
        if limit is not None:
            query = query.limit(limit)

        def operation(conn: Connection) -> list[Any]:
            rows = conn.execute(query).all()
            conn.rollback()
            return list(rows)

        rows = await self._run(operation, write=False)
        return [
            with_detail(
                SessionEvent(
                    session_id=r.session_id,
                    seq=r.seq,
                    from_status=r.from_status,
                    event=r.event,
                    to_status=r.to_status,
                    at=r.at,
                ),
                r.detail,
            )
            for r in rows
        ]

    async def versions(self, session_ids: list[str]) -> dict[str, int]:
        if not session_ids:
            return {}
        query = select(sessions.c.session_id, sessions.c.version).where(
            sessions.c.session_id.in_(bindparam("b_ids", expanding=True))
        )

        def operation(conn: Connection) -> dict[str, int]:
            found: dict[str, int] = {}
            for start in range(0, len(session_ids), 500):  # bounded IN lists
                rows = conn.execute(query, {"b_ids": session_ids[start : start + 500]}).all()
                found.update((r.session_id, int(r.version)) for r in rows)
            conn.rollback()
            return found

        return await self._run(operation, write=False)

    async def count_by_status(self) -> dict[str, int]:
        def operation(conn: Connection) -> list[Any]:
            rows = conn.execute(select(sessions.c.status, func.count()).group_by(sessions.c.status)).all()
            conn.rollback()
            return list(rows)

        return {status: int(count) for status, count in await self._run(operation, write=False)}

    # ---- v1 wallet login -------------------------------------------------------------------------------

    async def put_challenge(self, challenge: LoginChallenge) -> None:
        def operation(conn: Connection) -> None:
            conn.execute(
                login_challenges.insert().values(
                    challenge_id=challenge.challenge_id,
                    wallet=challenge.wallet,
                    message=challenge.message,
                    terms_version=challenge.terms_version,
                    issued_at=challenge.issued_at,
                    expires_at=challenge.expires_at,
                    used_at=None,
                )
            )
            conn.commit()

        await self._run(operation, write=True)

    async def get_challenge(self, challenge_id: str) -> LoginChallenge | None:
        def operation(conn: Connection) -> Any:
            row = conn.execute(
                select(login_challenges).where(login_challenges.c.challenge_id == challenge_id)
            ).first()
            conn.rollback()
            return row

        row = await self._run(operation, write=False)
        if row is None:
            return None
        return LoginChallenge(
            challenge_id=row.challenge_id,
            wallet=row.wallet,
            message=row.message,
            terms_version=row.terms_version,
            issued_at=row.issued_at,
            expires_at=row.expires_at,
            used_at=row.used_at,
        )

    async def redeem_challenge(self, challenge_id: str, now: datetime, grant: AccessGrant) -> bool:
        """Mark the challenge used and store the grant, in one transaction, iff it is unused and unexpired.
        False (nothing written) when another request redeemed it first or it expired."""
        utc(now)

        def operation(conn: Connection) -> bool:
            updated = conn.execute(
                update(login_challenges)
                .where(
                    login_challenges.c.challenge_id == challenge_id,
                    login_challenges.c.used_at.is_(None),
                    login_challenges.c.expires_at > now,
                )
                .values(used_at=now)
            )
            if updated.rowcount != 1:
                conn.rollback()
                return False
            conn.execute(
                access_tokens.insert().values(
                    token_sha256=grant.token_sha256,
                    wallet=grant.wallet,
                    challenge_id=grant.challenge_id,
                    issued_at=grant.issued_at,
                    expires_at=grant.expires_at,
                )
            )
            conn.commit()
            return True

        return await self._run(operation, write=True)

    async def get_grant(self, token_sha256: str) -> AccessGrant | None:
        def operation(conn: Connection) -> Any:
            row = conn.execute(
                select(access_tokens).where(access_tokens.c.token_sha256 == token_sha256)
            ).first()
            conn.rollback()
            return row

        row = await self._run(operation, write=False)
        if row is None:
            return None
        return AccessGrant(
            token_sha256=row.token_sha256,
            wallet=row.wallet,
            challenge_id=row.challenge_id,
            issued_at=row.issued_at,
            expires_at=row.expires_at,
        )

    # ---- helpers -------------------------------------------------------------------------------------

    @staticmethod
    def _idempotent(conn: Connection, scope: str, key: str) -> IdempotentAnswer | None:
        row = conn.execute(_SELECT_ANSWER, {"b_scope": scope, "b_key": key}).first()
        if row is not None and not isinstance(row.response, dict):
            raise malformed_document("answer", f"{scope}\0{key}", TypeError(type(row.response).__name__))
        return None if row is None else IdempotentAnswer(row.request_sha256, row.response)

    @staticmethod
    def event_row(event: SessionEvent, detail_json: str | None) -> dict[str, Any]:
        return {
            "session_id": event.session_id,
            "seq": event.seq,
            "from_status": event.from_status,
            "event": event.event,
            "to_status": event.to_status,
            "at": event.at,
            "detail": detail_json,
        }

    @asynccontextmanager
    async def _write_slot(self) -> AsyncIterator[None]:
        """SQLite takes one writer at a time: queue this process's writers on a lock instead of letting them
        spin in SQLite's busy handler (which sleeps up to 100 ms a try). Other processes still meet the
        file lock and `busy_timeout`; PostgreSQL needs no slot."""
        if self._sqlite_writes is None:
            yield
            return
        async with self._sqlite_writes:
            yield

    @asynccontextmanager
    async def _guard(self) -> AsyncIterator[None]:
        try:
            yield
        except (StoreUnavailable, IdempotencyConflict, ValueError):
            raise
        except DB_ERRORS as exc:
            raise StoreUnavailable(db_reason(exc)) from None
