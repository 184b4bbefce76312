"""Logging: one JSON line per event on stderr, configured once before any SDK server is built (the MCP SDK
would otherwise install its own INFO handler and log every stateless request).

Every line, structlog's and the stdlib's (SDKs, uvicorn, drivers), goes through one root handler that renders
it with structlog's ProcessorFormatter, carries the request id of the request it was written in, and passes
the redaction rules of `routequote.observability` (a processor, a filter on the handler, and the record
factory: no path bypasses them)."""

from __future__ import annotations

import logging
import sys
from typing import Any, TextIO

import structlog

from routequote.observability import RedactionFilter, install_record_factory, redact_event

_NOISY = (
    "mcp",
    "mcp.server",
    "a2a",
    "httpx",
    "httpcore",
    "sse_starlette",
    "uvicorn.access",
    "aiosqlite",
    "sqlalchemy",
    "asyncpg",
    "alembic",
)


class _StderrHandler(logging.StreamHandler[TextIO]):
    """Writes to whatever sys.stderr is at the time of the line (a redirected or captured stream too)."""

    def __init__(self) -> None:
        super().__init__()

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, _: Any) -> None:
        pass


def _shared_processors() -> list[Any]:
    return [
        structlog.contextvars.merge_contextvars,  # request_id of the request being served
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]


def json_handler() -> logging.Handler:
    handler = _StderrHandler()
    handler.set_name("routequote-json")
    handler.addFilter(RedactionFilter())
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=_shared_processors(),
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.format_exc_info,
                redact_event,  # once more after the traceback is text
                structlog.processors.JSONRenderer(),
            ],
        )
    )
    return handler


def configure_logging(level: str = "info") -> None:
    lvl = getattr(logging, level.upper(), logging.INFO)
    install_record_factory()
    root = logging.getLogger()
    if not any(h.get_name() == "routequote-json" for h in root.handlers):
        for h in [
            h for h in root.handlers if type(h) is logging.StreamHandler
        ]:  # a plain basicConfig handler
            root.removeHandler(h)
        root.addHandler(json_handler())
    root.setLevel(lvl)
    # database drivers log SQL parameters at debug (idempotency keys): never below WARNING
    for noisy in _NOISY:
        logging.getLogger(noisy).setLevel(max(lvl, logging.WARNING))
    for name in ("uvicorn", "uvicorn.error"):  # uvicorn's own handlers would bypass the root handler
        logger = logging.getLogger(name)
        logger.handlers.clear()
        logger.propagate = True
    structlog.configure(
        processors=[
            *_shared_processors(),
            structlog.processors.StackInfoRenderer(),
            redact_event,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.make_filtering_bound_logger(lvl),
        cache_logger_on_first_use=True,
    )
