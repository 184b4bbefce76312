"""Session webhooks: each session's sealed webhook URL and how far delivery of its event log has got.

Revision ID: 0007_session_webhooks
Revises: 0006_session_event_log
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0007_session_webhooks"
down_revision = "0006_session_event_log"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "session_webhooks",
        sa.Column("session_id", sa.String(64), primary_key=True),  # no foreign key: purged with its session
        sa.Column("url_sealed", sa.Text, nullable=False),
        sa.Column("delivered_seq", sa.Integer, nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("first_failure_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("claimed_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("claimed_by", sa.String(64), nullable=True),
        sa.Column("last_failure", sa.String(160), nullable=True),
        sa.Column("undeliverable", sa.JSON().with_variant(postgresql.JSONB(), "postgresql"), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_session_webhooks_next_attempt_at", "session_webhooks", ["next_attempt_at"])


def downgrade() -> None:
    op.drop_index("ix_session_webhooks_next_attempt_at", table_name="session_webhooks")
    op.drop_table("session_webhooks")
