"""The session event log: each event says where the session is after it (step index, next operation, the chain
evidence it recorded, where the funds are), in one JSON column; events stored before read back without it.

Revision ID: 0006_session_event_log
Revises: 0005_watch_leases
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0006_session_event_log"
down_revision = "0005_watch_leases"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "session_events",
        sa.Column("detail", sa.JSON().with_variant(postgresql.JSONB(), "postgresql"), nullable=True),
    )


def downgrade() -> None:
    with op.batch_alter_table("session_events") as batch:
        batch.drop_column("detail")
