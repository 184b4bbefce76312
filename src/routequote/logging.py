"""Logging: structlog over stdlib, configured once before any SDK server is built (the MCP SDK would
otherwise install its own INFO handler and log every stateless request)."""

from __future__ import annotations

import logging

import structlog


def configure_logging(level: str = "info") -> None:
    lvl = getattr(logging, level.upper(), logging.INFO)
    root = logging.getLogger()
    if not root.handlers:
        logging.basicConfig(level=lvl, format="%(message)s")
    root.setLevel(lvl)
    # database drivers log SQL parameters at debug (idempotency keys): never below WARNING
    for noisy in ("mcp", "mcp.server", "a2a", "httpx", "sse_starlette", "uvicorn.access", "aiosqlite", "sqlalchemy",
                  "asyncpg", "alembic"):
        logging.getLogger(noisy).setLevel(max(lvl, logging.WARNING))
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            structlog.processors.JSONRenderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(lvl),
        cache_logger_on_first_use=True,
    )
