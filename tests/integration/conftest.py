"""Integration fixtures: a real server over loopback HTTP, built by the real composition root; the fixtures that
several modules of one theme share (named in their docstrings). A module's own fixture of the same name wins."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from tests.support.a2a_sessions import Served
from tests.support.client_cases import OPERATOR_FEE_RECIPIENTS
from tests.support.observable import OBSERVABLE
from tests.support.postgres import create_database, drop_database, require_postgres
from tests.support.server import free_port, running_server
from tests.support.session_store_contract import BACKENDS, truncate_sessions
from tests.unit.actions.support import START

from routequote.app import create_app
from routequote.clock import FixedClock
from routequote.config import Settings
from routequote.ports import SessionStore
from routequote.storage.sessions_memory import MemorySessionStore
from routequote.storage.sessions_sql import SqlSessionStore


@pytest.fixture(scope="session")
def base_url() -> Iterator[str]:
    """The default app (embedded snapshot) with rate limits off so the sweep tests are not throttled, and an
    RPC URL per chain and the OFT pin configured (OBSERVABLE) so that every route is session-ready; the literal
    defaults, where none is, are tests/integration/test_readiness.py's."""
    port = free_port()  # the app knows its own port, as in production (links, the MCP Host check)
    app = create_app(Settings(rate_limit="off", port=port, **OBSERVABLE))
    with running_server(app, port) as url:
        yield url


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, Any]]:
    """A server of the module's own (its app reachable for white-box counts), port known to the app; every route
    session-ready as in `base_url`."""
    port = free_port()
    app = create_app(Settings(rate_limit="off", port=port, **OBSERVABLE))
    with running_server(app, port) as url:
        yield url, app


@pytest.fixture(scope="session")
def http(base_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=base_url, timeout=30) as client:
        yield client


@pytest.fixture(scope="module")
def served_sessions(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """tests/integration/test_a2a_sessions*.py: the session-lifecycle skill's server (SQLite store, FixedClock)."""
    clock = FixedClock(START)
    port = free_port()
    db = tmp_path_factory.mktemp("a2a_sessions") / "s.sqlite3"
    settings = Settings(
        rate_limit="off", port=port, database_url=f"sqlite+aiosqlite:///{db}", log_level="debug", **OBSERVABLE
    )
    app = create_app(settings, clock=clock)
    with running_server(app, port) as url:
        yield Served(url, app, clock, db)


@pytest.fixture
async def client(served_sessions: Served) -> AsyncIterator[Client]:
    """tests/integration/test_a2a_sessions*.py: the official a2a-sdk client of `served_sessions` (a module of its
    own defines its own `client`)."""
    async with httpx.AsyncClient(timeout=30) as http:
        card = await A2ACardResolver(http, served_sessions.url).get_agent_card()
        assert "session-lifecycle" in {s.id for s in card.skills}
        yield ClientFactory(ClientConfig(streaming=False, httpx_client=http)).create(card)


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    """tests/integration/test_session_store*.py: a fresh database for the module's run, dropped afterwards."""
    require_postgres()
    url = create_database()
    try:
        yield url
    finally:
        drop_database(url)


@pytest.fixture(params=BACKENDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SessionStore]:
    """tests/integration/test_session_store*.py: an empty store of each backend (memory, SQLite, PostgreSQL)."""
    kind = request.param
    s: MemorySessionStore | SqlSessionStore
    if kind == "memory":
        s = MemorySessionStore()
    elif kind == "sqlite":
        s = SqlSessionStore(f"sqlite:///{tmp_path}/db/sessions.sqlite3")
    else:
        s = SqlSessionStore(request.getfixturevalue("pg_url"))
    await s.start()
    if kind == "postgresql":
        assert isinstance(s, SqlSessionStore)
        await truncate_sessions(s)
    try:
        yield s
    finally:
        await s.aclose()


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """tests/integration/test_client*.py: a server with an SQLite session store and an operator's own fee
    recipients."""
    port = free_port()
    db = tmp_path_factory.mktemp("client") / "s.sqlite3"
    settings = Settings(
        rate_limit="off",
        port=port,
        database_url=f"sqlite+aiosqlite:///{db}",
        **OPERATOR_FEE_RECIPIENTS,
        **OBSERVABLE,
    )
    with running_server(create_app(settings), port) as base:
        yield base
