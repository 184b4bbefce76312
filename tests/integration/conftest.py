"""Integration fixtures: a real server over loopback HTTP, built by the real composition root."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from tests.support.observable import OBSERVABLE
from tests.support.server import free_port, running_server

from routequote.app import create_app
from routequote.config import Settings


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
