"""Sessions, their transition events and their idempotency records.

Revision ID: 0001_sessions
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0001_sessions"
down_revision = None
branch_labels = None
depends_on = None

_json = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "sessions",
        sa.Column("session_id", sa.String(64), primary_key=True),
        sa.Column("token_sha256", sa.String(64), nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("status", sa.String(64), nullable=False),
        sa.Column("route", sa.String(128), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("state", _json, nullable=False),
    )
    op.create_index("ix_sessions_token_sha256", "sessions", ["token_sha256"])
    op.create_index("ix_sessions_status", "sessions", ["status"])
    op.create_table(
        "session_events",
        sa.Column(
            "session_id",
            sa.String(64),
            sa.ForeignKey("sessions.session_id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("seq", sa.Integer, primary_key=True),
        sa.Column("from_status", sa.String(64), nullable=True),
        sa.Column("event", sa.String(64), nullable=False),
        sa.Column("to_status", sa.String(64), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "session_idempotency",
        sa.Column("scope", sa.String(160), primary_key=True),
        sa.Column("key", sa.String(255), primary_key=True),
        sa.Column("request_sha256", sa.String(64), nullable=False),
        sa.Column("response", _json, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_session_idempotency_created_at", "session_idempotency", ["created_at"])


def downgrade() -> None:
    op.drop_table("session_idempotency")
    op.drop_table("session_events")
    op.drop_index("ix_sessions_status", table_name="sessions")
    op.drop_index("ix_sessions_token_sha256", table_name="sessions")
    op.drop_table("sessions")
