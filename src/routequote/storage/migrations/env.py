"""Alembic environment for the session tables. Run only through SqlSessionStore.start(), which passes
its own connection (already inside a transaction, and on PostgreSQL under an advisory lock)."""

from __future__ import annotations

from alembic import context

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run the session migrations through routequote's SqlSessionStore.start()")

context.configure(
    connection=connection,
    target_metadata=None,
    version_table=context.config.get_main_option("version_table") or "routequote_alembic_version",
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()
