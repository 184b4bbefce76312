"""The watcher's leases: which process follows the sessions waiting on the chain, until when.

One row per lease name: `watcher` (one process watches every session: `ROUTEQUOTE_WATCH_SCOPE=leader`), or
`session:<id>` (each replica leases the sessions it follows: `shared`). A holder renews its rows every tick;
a row past `expires_at` is free for any other process to take.

Revision ID: 0005_watch_leases
Revises: 0004_retention
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005_watch_leases"
down_revision = "0004_retention"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "watch_leases",
        sa.Column("name", sa.String(80), primary_key=True),
        sa.Column("holder", sa.String(120), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_watch_leases_expires_at", "watch_leases", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_watch_leases_expires_at", table_name="watch_leases")
    op.drop_table("watch_leases")
