"""One transaction, one step: every transaction id that advanced a session step, unique across sessions.

Revision ID: 0003_session_transactions
Revises: 0002_wallet_login
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003_session_transactions"
down_revision = "0002_wallet_login"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "session_transactions",
        sa.Column("tx_id", sa.String(128), primary_key=True),
        # no foreign key: a claim outlives its session (a purged session's transaction still cannot advance
        # another)
        sa.Column("session_id", sa.String(64), nullable=False),
        sa.Column("step_index", sa.Integer, nullable=False),
        sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_session_transactions_session_id", "session_transactions", ["session_id"])


def downgrade() -> None:
    op.drop_index("ix_session_transactions_session_id", table_name="session_transactions")
    op.drop_table("session_transactions")
