"""The session store's tables (SQLAlchemy Core): one definition for SQLite and PostgreSQL, created and
changed by the Alembic migrations in storage/migrations."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import JSON, Column, DateTime, ForeignKey, Integer, MetaData, String, Table, Text
from sqlalchemy.dialects import postgresql as pg
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator

from routequote.storage.sessions_common import utc


class UtcDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC instant on every backend (SQLite keeps no zone: stored as UTC, read back as UTC)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        value = utc(value)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


Json = JSON().with_variant(pg.JSONB(), "postgresql")
JsonOrNull = JSON(none_as_null=True).with_variant(pg.JSONB(none_as_null=True), "postgresql")  # None: SQL NULL

metadata = MetaData()
sessions = Table(
    "sessions",
    metadata,
    Column("session_id", String(64), primary_key=True),
    Column("token_sha256", String(64), nullable=False, index=True),
    Column("version", Integer, nullable=False),
    Column("status", String(64), nullable=False, index=True),
    Column("route", String(128), nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
    Column("state", Json, nullable=False),
)
session_events = Table(
    "session_events",
    metadata,
    Column("session_id", String(64), ForeignKey("sessions.session_id", ondelete="CASCADE"), primary_key=True),
    Column("seq", Integer, primary_key=True),
    Column("from_status", String(64), nullable=True),
    Column("event", String(64), nullable=False),
    Column("to_status", String(64), nullable=False),
    Column("at", UtcDateTime, nullable=False),
    # migration 0005: where the session is after the event (step_index, next_operation, transactions, funds),
    # one JSON object; NULL in events stored before it
    Column("detail", JsonOrNull, nullable=True),
)
session_idempotency = Table(
    "session_idempotency",
    metadata,
    Column("scope", String(160), primary_key=True),
    Column("key", String(255), primary_key=True),
    Column("request_sha256", String(64), nullable=False),
    Column("response", Json, nullable=False),
    Column("created_at", UtcDateTime, nullable=False, index=True),
)


# one transaction, one step (migration 0003): a transaction id that advanced a step of any session is kept
# here with a unique key, so it can never advance another step, on every replica. No foreign key: a claim
# outlives its session (a purged session's transaction still cannot advance another)
session_transactions = Table(
    "session_transactions",
    metadata,
    Column("tx_id", String(128), primary_key=True),
    Column("session_id", String(64), nullable=False, index=True),
    Column("step_index", Integer, nullable=False),
    Column("claimed_at", UtcDateTime, nullable=False),
)


# v1 wallet login (migration 0002): single-use challenges and wallet-bound access tokens (SHA-256 only)
login_challenges = Table(
    "login_challenges",
    metadata,
    Column("challenge_id", String(64), primary_key=True),
    Column("wallet", String(64), nullable=False),
    Column("message", Text, nullable=False),
    Column("terms_version", String(160), nullable=False),
    Column("issued_at", UtcDateTime, nullable=False),
    Column("expires_at", UtcDateTime, nullable=False, index=True),
    Column("used_at", UtcDateTime, nullable=True),
)
access_tokens = Table(
    "access_tokens",
    metadata,
    Column("token_sha256", String(64), primary_key=True),
    Column("wallet", String(64), nullable=False, index=True),
    Column("challenge_id", String(64), nullable=False, unique=True),
    Column("issued_at", UtcDateTime, nullable=False),
    Column("expires_at", UtcDateTime, nullable=False, index=True),
)
