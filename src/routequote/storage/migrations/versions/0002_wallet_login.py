"""v1 wallet login: issued challenges (single use) and wallet-bound access tokens (SHA-256 only).

Revision ID: 0002_wallet_login
Revises: 0001_sessions
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002_wallet_login"
down_revision = "0001_sessions"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "login_challenges",
        sa.Column("challenge_id", sa.String(64), primary_key=True),
        sa.Column("wallet", sa.String(64), nullable=False),
        sa.Column("message", sa.Text, nullable=False),
        sa.Column("terms_version", sa.String(160), nullable=False),
        sa.Column("issued_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("used_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index("ix_login_challenges_expires_at", "login_challenges", ["expires_at"])
    op.create_table(
        "access_tokens",
        sa.Column("token_sha256", sa.String(64), primary_key=True),
        sa.Column("wallet", sa.String(64), nullable=False),
        sa.Column("challenge_id", sa.String(64), nullable=False, unique=True),
        sa.Column("issued_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_access_tokens_wallet", "access_tokens", ["wallet"])
    op.create_index("ix_access_tokens_expires_at", "access_tokens", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_access_tokens_expires_at", table_name="access_tokens")
    op.drop_index("ix_access_tokens_wallet", table_name="access_tokens")
    op.drop_table("access_tokens")
    op.drop_index("ix_login_challenges_expires_at", table_name="login_challenges")
    op.drop_table("login_challenges")
