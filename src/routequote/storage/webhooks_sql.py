"""Each session's webhook and how far its delivery has got, in the session database (SQLite or PostgreSQL).

The event log (`session_events`) is the outbox: a subscription keeps only the last sequence handled
(`delivered_seq`: delivered, or given up after the retry window) and the state of the next attempt. Events
are sent in order, one session at a time, by whichever process first claims the subscription: a claim is a
conditional UPDATE on `claimed_until`, so on every replica exactly one process holds it until it expires.
A delivery that did not finish (a process killed mid-attempt) is tried again after the claim expires: at
least once. The URL is kept sealed (`webhooks/signing.py`), never in the clear.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Column,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    and_,
    exists,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.dialects import postgresql as pg
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from routequote.ports import SessionEvent
from routequote.storage.sessions_schema import UtcDateTime, session_events
from routequote.storage.sessions_sql import SqlSessionStore
from routequote.webhooks.service import Subscription

_meta = MetaData()
session_webhooks = Table(
    "session_webhooks",
    _meta,
    Column(
        "session_id", String(64), primary_key=True
    ),  # no foreign key: the purge deletes it with its session
    Column("url_sealed", Text, nullable=False),
    Column("delivered_seq", Integer, nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("first_failure_at", UtcDateTime, nullable=True),
    Column("next_attempt_at", UtcDateTime, nullable=False, index=True),
    Column("claimed_until", UtcDateTime, nullable=True),
    Column("claimed_by", String(64), nullable=True),
    Column("last_failure", String(160), nullable=True),
    Column("undeliverable", JSON().with_variant(pg.JSONB(), "postgresql"), nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
)


def _subscription(row: Any) -> Subscription:
    return Subscription(
        row.session_id,
        row.url_sealed,
        row.delivered_seq,
        row.attempts,
        row.first_failure_at,
        row.next_attempt_at,
        row.last_failure,
        tuple(int(s) for s in row.undeliverable or ()),
    )


class SqlWebhookStore:
    """Subscriptions and delivery state beside the sessions they follow (same database, same engine)."""

    def __init__(self, sessions: SqlSessionStore) -> None:
        self.sessions = sessions

    async def subscribe(self, session_id: str, url_sealed: str, now: datetime) -> None:
        """Add the session's webhook; a second subscribe of one session (a replayed create) changes nothing."""

        def operation(conn: Connection) -> None:
            try:
                with conn.begin():
                    conn.execute(
                        insert(session_webhooks).values(
                            session_id=session_id,
                            url_sealed=url_sealed,
                            delivered_seq=0,
                            attempts=0,
                            next_attempt_at=now,
                            undeliverable=[],
                            created_at=now,
                        )
                    )
            except IntegrityError:
                pass

        await self.sessions.execute(operation, write=True)

    async def get(self, session_id: str) -> Subscription | None:
        def operation(conn: Connection) -> Any:
            row = conn.execute(
                select(session_webhooks).where(session_webhooks.c.session_id == session_id)
            ).first()
            conn.rollback()
            return row

        row = await self.sessions.execute(operation, write=False)
        return None if row is None else _subscription(row)

    async def due(self, now: datetime, limit: int) -> list[Subscription]:
        """Subscriptions with an event not yet handled, whose next attempt is due and which nobody holds."""
        pending = exists().where(
            and_(
                session_events.c.session_id == session_webhooks.c.session_id,
                session_events.c.seq > session_webhooks.c.delivered_seq,
            )
        )

        def operation(conn: Connection) -> list[Any]:
            rows = conn.execute(
                select(session_webhooks)
                .where(session_webhooks.c.next_attempt_at <= now)
                .where(
                    or_(session_webhooks.c.claimed_until.is_(None), session_webhooks.c.claimed_until <= now)
                )
                .where(pending)
                .order_by(session_webhooks.c.next_attempt_at)
                .limit(limit)
            ).all()
            conn.rollback()
            return list(rows)

        return [_subscription(r) for r in await self.sessions.execute(operation, write=False)]

    async def claim(self, seen: Subscription, holder: str, now: datetime, until: datetime) -> bool:
        """Hold the subscription until `until`, iff nobody holds it now and it is still as `seen` (delivered
        through the same event, with the same attempts): exactly one claimer wins, and a claimer that read the
        row before another process delivered from it does not deliver the same events again."""
        free = or_(session_webhooks.c.claimed_until.is_(None), session_webhooks.c.claimed_until <= now)

        def operation(conn: Connection) -> bool:
            with conn.begin():
                result = conn.execute(
                    update(session_webhooks)
                    .where(session_webhooks.c.session_id == seen.session_id)
                    .where(session_webhooks.c.delivered_seq == seen.delivered_seq)
                    .where(session_webhooks.c.attempts == seen.attempts)
                    .where(session_webhooks.c.next_attempt_at <= now)
                    .where(free)
                    .values(claimed_until=until, claimed_by=holder)
                )
            return bool(result.rowcount == 1)

        return bool(await self.sessions.execute(operation, write=True))

    async def pending_events(self, session_id: str, after_seq: int, limit: int) -> list[SessionEvent]:
        return await self.sessions.events_after(session_id, after_seq, limit)

    async def record(
        self,
        session_id: str,
        holder: str,
        *,
        delivered_seq: int,
        attempts: int,
        first_failure_at: datetime | None,
        next_attempt_at: datetime,
        last_failure: str | None,
        undeliverable: Sequence[int],
        release: bool,
    ) -> bool:
        """Write the outcome of an attempt, iff `holder` still holds the claim (a claim that expired and was
        taken over is not overwritten: the new holder's outcome counts)."""

        def operation(conn: Connection) -> bool:
            with conn.begin():
                result = conn.execute(
                    update(session_webhooks)
                    .where(session_webhooks.c.session_id == session_id)
                    .where(session_webhooks.c.claimed_by == holder)
                    .values(
                        delivered_seq=delivered_seq,
                        attempts=attempts,
                        first_failure_at=first_failure_at,
                        next_attempt_at=next_attempt_at,
                        last_failure=last_failure,
                        undeliverable=list(undeliverable),
                        **({"claimed_until": None, "claimed_by": None} if release else {}),
                    )
                )
            return bool(result.rowcount == 1)

        return bool(await self.sessions.execute(operation, write=True))
