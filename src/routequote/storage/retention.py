"""Retention of the session database: what is deleted when, in bounded batches off the serving path, and the
per-client cap on open sessions (SQLite and PostgreSQL; the in-memory store is for tests and keeps nothing).

* Login challenges and access tokens: deleted as soon as they expire (a used challenge at its expiry too).
* Sessions: once `session_days` have passed since their last change, a session that is finished (complete,
  cancelled, failed) or that never had funds in flight (its action expired or was never submitted) is deleted,
  with its events and idempotency records. The delete re-checks that condition and the version the purge read
  (an observe may commit in between on PostgreSQL) and returns the rows it deleted; their receipts (route, final
  status, the steps with quoted and actual amounts, the transition history, and `recovery`: where the funds could
  be, as a late CCTP burn has no deadline) go to `session_receipts`, kept `receipt_days` (0: forever).
  Sessions that may have funds in flight (awaiting a receipt or the destination, re-approval required) are
  never deleted by age: they hold the evidence of where the funds are.
* Create idempotency records (`create:` / `v1create:` scopes) older than `session_days`: deleted (their quote
  expired long before).

`Purger.run_once()` deletes at most `batch` rows per statement (`session_batch` sessions), each batch its own
short transaction (on SQLite in a worker thread, not on the event loop), and yields to the event loop between
batches, so a large backlog never holds a lock or the loop for long. `Purger.loop()`
runs it every `interval_seconds` in a background task. `CappedSessionStore` wraps the store: a create from a
client already holding `max_open` unfinished sessions answers 429 (a replay of an earlier create still
replays); the client is the one the rate limiter saw for this request (`ratelimit.current_client`). The count
and the insert are one transaction, and the session's `session_clients` row is written with it
(`sessions_sql_create`): exact under concurrency, across processes and replicas, and after a crash.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import structlog
from sqlalchemy import Column, MetaData, String, Table, delete, func, insert, select, tuple_
from sqlalchemy.engine import Connection

from routequote.errors import RateLimited
from routequote.ports import IdempotentAnswer, SessionEvent, SessionRecord
from routequote.ratelimit import current_client
from routequote.storage.sessions_common import FINISHED
from routequote.storage.sessions_schema import (
    Json,
    UtcDateTime,
    access_tokens,
    login_challenges,
    session_events,
    session_idempotency,
    sessions,
)
from routequote.storage.sessions_sql_create import OpenSessionCapReached
from routequote.storage.webhooks_sql import session_webhooks

NO_FUNDS_IN_FLIGHT = ("action_ready", "action_expired", "action_required")  # nothing was submitted on chain
log = structlog.get_logger("routequote.retention")

_meta = MetaData()
session_receipts = Table(
    "session_receipts",
    _meta,
    Column("session_id", String(64), primary_key=True),
    Column("route", String(128), nullable=False),
    Column("status", String(64), nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    Column("finished_at", UtcDateTime, nullable=False),
    Column("archived_at", UtcDateTime, nullable=False),
    Column("receipt", Json, nullable=False),
)
session_clients = Table(
    "session_clients",
    _meta,
    Column(
        "session_id", String(64), primary_key=True
    ),  # no foreign key: the purge deletes it with its session
    Column("client", String(64), nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
)
SIZED_TABLES = {
    "sessions": sessions,
    "session_events": session_events,
    "session_idempotency": session_idempotency,
    "login_challenges": login_challenges,
    "access_tokens": access_tokens,
    "session_receipts": session_receipts,
    "session_clients": session_clients,
    "session_webhooks": session_webhooks,
}


@dataclass(frozen=True)
class RetentionPolicy:
    session_days: float = 7.0
    receipt_days: float = 365.0  # 0: receipts are kept forever
    batch: int = 500
    session_batch: int = 50  # a session is archived with its receipt (kilobytes of JSON): smaller batches
    interval_seconds: float = 60.0
    max_open_sessions_per_client: int = 20  # 0: no cap


ACTION_KEYS = ("action_id", "step_index", "phase", "payload_sha256", "prepared_at", "expires_at")
UNOBSERVED_NOTE = (
    "deleted with nothing observed on chain after its last change. If the current action was signed and submitted "
    "after all, its funds left `funds.endpoint`: a CCTP burn has no on-chain deadline, so a late burn is in the "
    "bridge, mintable to the step's destination wallet once Circle attests it (find it by the transaction you "
    "sent; this service no longer follows the session). Otherwise nothing moved: the funds are as `funds` says"
)


def _recovery(row: Any, state: dict[str, Any]) -> dict[str, Any]:
    """What a caller needs after the session is gone: its id, route, and where the funds could be (the step it
    was on, the wallets, the funds as last known, and every action prepared, by its payload hash)."""
    raw_steps = state.get("steps")
    steps: list[Any] = raw_steps if isinstance(raw_steps, list) else []
    k = state.get("current_step")
    current = steps[k] if isinstance(k, int) and 0 <= k < len(steps) else None
    action = state.get("current_action") if isinstance(state.get("current_action"), dict) else None
    return {
        "session_id": row.session_id,
        "route": row.route,
        "status_when_deleted": row.status,
        "current_step": k,
        "step": current,
        "phase": state.get("phase"),
        "wallets": state.get("wallets"),
        "funds": state.get("funds"),
        "current_action": None if action is None else {key: action.get(key) for key in ACTION_KEYS},
        "actions_prepared": state.get("actions"),
        "note": UNOBSERVED_NOTE
        if row.status in NO_FUNDS_IN_FLIGHT
        else "finished before it was deleted: the funds are as `funds` says",
    }


def _receipt(row: Any, events: list[Any]) -> dict[str, Any]:
    """What the receipt view is computed from, the history, and how to recover: kept after the session goes."""
    state = row.state if isinstance(row.state, dict) else {}
    return {
        "session_id": row.session_id,
        "route": row.route,
        "status": row.status,
        "quote": state.get("quote"),
        "summary_steps": state.get("summary_steps"),
        "steps": state.get("steps"),
        "events": [{"event": e.event, "to_status": e.to_status, "at": e.at.isoformat()} for e in events],
        "recovery": _recovery(row, state),
    }


class Purger:
    """Deletes what the policy no longer keeps from a `SqlSessionStore`, in bounded batches."""

    def __init__(self, store: Any, policy: RetentionPolicy, now: Callable[[], datetime]) -> None:
        self.store = store
        self.policy = policy
        self.now = now
        self.deleted: dict[str, int] = {}

    async def _batch(self, operation: Callable[[Connection], int]) -> int:
        n: int = await self.store.write_batch(operation)
        await asyncio.sleep(0)  # between batches the loop serves requests
        return n

    async def _drain(self, name: str, operation: Callable[[Connection], int], size: int | None = None) -> int:
        total = 0
        while True:
            n = await self._batch(operation)
            total += n
            if n < (size or self.policy.batch):
                break
        if total:
            self.deleted[name] = self.deleted.get(name, 0) + total
        return total

    def _delete_ids(self, table: Table, key: Any, where: Any) -> Callable[[Connection], int]:
        def operation(conn: Connection) -> int:
            with conn.begin():
                ids = [r[0] for r in conn.execute(select(key).where(where).limit(self.policy.batch))]
                if ids:
                    conn.execute(delete(table).where(key.in_(ids)))
                return len(ids)

        return operation

    def _archive_sessions(self, cutoff: datetime) -> Callable[[Connection], int]:
        at = self.now()

        def operation(conn: Connection) -> int:
            purgeable = sessions.c.status.in_(FINISHED + NO_FUNDS_IN_FLIGHT) & (
                sessions.c.updated_at < cutoff
            )
            with conn.begin():
                read = conn.execute(
                    select(sessions.c.session_id, sessions.c.version)
                    .where(purgeable)
                    .limit(self.policy.session_batch)
                ).all()
                if not read:
                    return 0
                ids = [r.session_id for r in read]
                events: dict[str, list[Any]] = {}
                for e in conn.execute(
                    select(session_events)
                    .where(session_events.c.session_id.in_(ids))
                    .order_by(session_events.c.seq)
                ):
                    events.setdefault(e.session_id, []).append(e)
                # Nothing is locked between the read and this delete (PostgreSQL, READ COMMITTED): an observe may
                # commit in between. The delete re-checks the condition and the version read, on the row as it is
                # now, so a session that moved on (funds in flight) stays; it archives what it deleted.
                rows = conn.execute(
                    delete(sessions)
                    .where(
                        purgeable,
                        tuple_(sessions.c.session_id, sessions.c.version).in_(list(map(tuple, read))),
                    )
                    .returning(*sessions.c)
                ).all()
                if not rows:
                    return 0
                gone = [r.session_id for r in rows]
                conn.execute(delete(session_receipts).where(session_receipts.c.session_id.in_(gone)))
                conn.execute(
                    insert(session_receipts),
                    [
                        {
                            "session_id": r.session_id,
                            "route": r.route,
                            "status": r.status,
                            "created_at": r.created_at,
                            "finished_at": r.updated_at,
                            "archived_at": at,
                            "receipt": json.loads(
                                json.dumps(_receipt(r, events.get(r.session_id, [])), default=str)
                            ),
                        }
                        for r in rows
                    ],
                )
                conn.execute(
                    delete(session_idempotency).where(
                        session_idempotency.c.scope.in_([f"session:{i}" for i in gone])
                    )
                )
                # (its events went with it: foreign key ON DELETE CASCADE)
                conn.execute(delete(session_events).where(session_events.c.session_id.in_(gone)))
                conn.execute(delete(session_clients).where(session_clients.c.session_id.in_(gone)))
                conn.execute(delete(session_webhooks).where(session_webhooks.c.session_id.in_(gone)))
                return len(rows)

        return operation

    async def run_once(self) -> dict[str, int]:
        """One full pass; returns the rows deleted per table in this pass."""
        before = dict(self.deleted)
        now = self.now()
        cutoff = now - timedelta(days=self.policy.session_days)
        await self._drain(
            "login_challenges",
            self._delete_ids(
                login_challenges, login_challenges.c.challenge_id, login_challenges.c.expires_at <= now
            ),
        )
        await self._drain(
            "access_tokens",
            self._delete_ids(access_tokens, access_tokens.c.token_sha256, access_tokens.c.expires_at <= now),
        )
        await self._drain("sessions", self._archive_sessions(cutoff), self.policy.session_batch)
        create_scope = session_idempotency.c.scope.like("create:%") | session_idempotency.c.scope.like(
            "v1create:%"
        )
        await self._drain(
            "session_idempotency",
            self._delete_ids(
                session_idempotency,
                session_idempotency.c.scope,
                create_scope & (session_idempotency.c.created_at < cutoff),
            ),
        )
        if self.policy.receipt_days > 0:
            kept = now - timedelta(days=self.policy.receipt_days)
            await self._drain(
                "session_receipts",
                self._delete_ids(
                    session_receipts, session_receipts.c.session_id, session_receipts.c.archived_at < kept
                ),
            )
        return {k: v - before.get(k, 0) for k, v in self.deleted.items() if v - before.get(k, 0)}

    async def loop(self) -> None:
        while True:
            try:
                done = await self.run_once()
                if done:
                    log.info("retention_purged", **done)
            except Exception as exc:  # an unavailable database: try again next interval, never crash serving
                log.warning("retention_pass_failed", error_type=type(exc).__name__)
            await asyncio.sleep(self.policy.interval_seconds)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """For the app's lifespan: the purge loop in the background while the app serves."""
        task = asyncio.create_task(self.loop(), name="routequote-retention")
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def store_sizes(store: Any) -> dict[str, int]:
    """Rows per table of the session database (for /metrics)."""

    def operation(conn: Connection) -> dict[str, int]:
        return {
            name: int(conn.execute(select(func.count()).select_from(t)).scalar_one())
            for name, t in SIZED_TABLES.items()
        }

    out: dict[str, int] = await store.read(operation)
    return out


class CappedSessionStore:
    """The session store, with at most `max_open` unfinished sessions per client (see the module docstring)."""

    def __init__(self, inner: Any, max_open: int) -> None:
        self.inner = inner
        self.max_open = max_open

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def table_sizes(self) -> dict[str, int]:
        return await store_sizes(self.inner)

    async def create(
        self,
        record: SessionRecord,
        event: SessionEvent,
        idempotency_scope: str,
        idempotency_key: str,
        request_sha256: str,
        response: dict[str, Any],
    ) -> IdempotentAnswer | None:
        try:
            answer: IdempotentAnswer | None = await self.inner.create(
                record,
                event,
                idempotency_scope,
                idempotency_key,
                request_sha256,
                response,
                client=current_client.get(),
                max_open=self.max_open,
            )
        except OpenSessionCapReached:
            raise RateLimited(
                "open_sessions_limit_reached",
                f"this client already has {self.max_open} unfinished sessions: finish or cancel one first",
                retry_after_seconds=60,
                details={"max_open_sessions": self.max_open},
            ) from None
        return answer
