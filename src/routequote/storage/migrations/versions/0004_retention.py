"""Retention: receipts kept after their session is purged, the client that opened each session (for the per-client
cap on open sessions), and an index for finding sessions idle since a time.

Revision ID: 0004_retention
Revises: 0003_session_transactions
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0004_retention"
down_revision = "0003_session_transactions"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_sessions_updated_at", "sessions", ["updated_at"])
    op.create_table(
        "session_receipts",
        sa.Column("session_id", sa.String(64), primary_key=True),
        sa.Column("route", sa.String(128), nullable=False),
        sa.Column("status", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("archived_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("receipt", sa.JSON().with_variant(postgresql.JSONB(), "postgresql"), nullable=False),
    )
    op.create_index("ix_session_receipts_archived_at", "session_receipts", ["archived_at"])
    op.create_table(
        "session_clients",
        sa.Column("session_id", sa.String(64), primary_key=True),  # no foreign key: deleted with its session
        sa.Column("client", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_session_clients_client", "session_clients", ["client"])


def downgrade() -> None:
    op.drop_index("ix_session_clients_client", table_name="session_clients")
    op.drop_table("session_clients")
    op.drop_index("ix_session_receipts_archived_at", table_name="session_receipts")
    op.drop_table("session_receipts")
    op.drop_index("ix_sessions_updated_at", table_name="sessions")
