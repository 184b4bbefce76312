"""Forwarded client addresses (issue 22 item 7), over real HTTP on every surface that keys a per-client limit
(REST v2 and v1 quotes, the MCP quote tool, the A2A quote skill, v1 wallet-login challenges).

* Untrusted peer (the default: no proxy named): after the client's budget is spent, a rotated `X-Forwarded-For`
  changes nothing; still 429 (the rate-limit key is the TCP peer).
* A named proxy (`ROUTEQUOTE_TRUSTED_PROXIES=127.0.0.1`): its `X-Forwarded-For` names the client, so another
  forwarded address has a budget of its own.
* `routequote serve` itself (a real process) follows the setting: the uvicorn options come from it.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from solders.keypair import Keypair
from tests.support.hostile import JSONRPC_HEADERS, raw_body
from tests.support.server import free_port, running_server
from tests.support.server_process import start_server

from routequote.app import create_app
from routequote.config import Settings

SURFACES = ["v2", "v1", "mcp", "a2a", "v1_login"]
LIMIT = 3
_octet = itertools.count(1)


def _server(trusted: str) -> Iterator[str]:
    port = free_port()
    settings = Settings(
        rate_limit=f"{LIMIT}/minute", login_rate_limit=f"{LIMIT}/minute", port=port, trusted_proxies=trusted
    )
    with running_server(create_app(settings), port) as url:
        yield url


@pytest.fixture(scope="module")
def untrusted() -> Iterator[str]:
    yield from _server("")


@pytest.fixture(scope="module")
def trusted() -> Iterator[str]:
    yield from _server("127.0.0.1")


def _send(http: httpx.Client, surface: str, forwarded: str) -> bool:
    """One request on `surface` claiming to come from `forwarded`; True when it was rate-limited."""
    headers = {**JSONRPC_HEADERS, "x-forwarded-for": forwarded}
    if surface == "v1_login":
        wallet = str(Keypair().pubkey())  # a fresh wallet each time: only the per-client limit can bite
        r = http.post("/v1/auth/challenge", json={"source_wallet": wallet}, headers=headers)
        return _limited(r, None)
    r = http.post(_path(surface), content=raw_body(surface), headers=headers)
    return _limited(r, surface)


def _path(surface: str) -> str:
    return {"v2": "/v2/quote", "v1": "/v1/quote", "mcp": "/mcp", "a2a": "/a2a"}[surface]


def _limited(r: httpx.Response, surface: str | None) -> bool:
    assert r.status_code < 500, r.text[:300]
    if r.status_code == 429:
        return True
    body: Any = r.json()
    error: Any = None
    if surface == "mcp":
        error = body["result"].get("structuredContent", {}).get("error")
    elif surface == "a2a":
        error = body["result"]["message"]["parts"][0]["data"].get("error")
    return isinstance(error, dict) and error.get("code") == "rate_limited"


@pytest.mark.parametrize("surface", SURFACES)
def test_a_spoofed_header_from_an_untrusted_peer_changes_nothing(untrusted: str, surface: str) -> None:
    with httpx.Client(base_url=untrusted, timeout=30) as http:
        for _ in range(LIMIT):
            _send(http, surface, "203.0.113.7")
        assert _send(http, surface, "203.0.113.7")  # budget spent
        n = next(_octet)
        for fake in (f"198.51.100.{n}", f"192.0.2.{n}, 10.9.9.9", "::1"):
            assert _send(http, surface, fake), fake  # a rotated header is still the same client


@pytest.mark.parametrize("surface", SURFACES)
def test_a_named_proxy_is_honoured(trusted: str, surface: str) -> None:
    n = next(_octet)
    with httpx.Client(base_url=trusted, timeout=30) as http:
        for _ in range(LIMIT):
            _send(http, surface, f"198.51.100.{n}")
        assert _send(http, surface, f"198.51.100.{n}")  # that client's budget is spent
        assert not _send(http, surface, f"192.0.2.{n}")  # another client behind the proxy has its own


def test_routequote_serve_follows_the_setting(tmp_path: Path) -> None:
    for trusted, rotated_ok in (("", False), ("127.0.0.1", True)):
        server = start_server(
            tmp_path, f"proxies-{bool(trusted)}", {"rate_limit": "2/minute", "trusted_proxies": trusted}
        )
        try:
            with httpx.Client(base_url=server.url, timeout=30) as http:
                for _ in range(3):
                    _send(http, "v2", "203.0.113.50")
                assert _send(http, "v2", "203.0.113.50")
                assert _send(http, "v2", "203.0.113.51") is not rotated_ok, server.log_tail()
        finally:
            server.stop()
