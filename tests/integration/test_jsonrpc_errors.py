"""JSON-RPC protocol errors on every JSON-RPC endpoint (each MCP endpoint, /a2a) over real HTTP (issue 22 item 5):
nothing the caller sent comes back (an unknown method holding a mnemonic, 64-hex keys, a base58 secret key, or
500 KB of text), the answer is bounded, an oversize id is refused, and protocol errors spend the same per-client
budget as tool calls (429 past it)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
from tests.support.hostile import JSONRPC_HEADERS
from tests.support.server import free_port, running_server

from routequote.app import create_app
from routequote.config import Settings

MNEMONIC = "abandon ability able about above absent absorb abstract absurd abuse access accident"
HEX_KEY = "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"
B58_KEY = "5MaiiCavjCmn9Hs1o3eznqDEhRwxo7pXiAYez7keQUviUkauRiTMD8DrESdrNjN8zd9mTmVhRvBJeg5vhyvgrAhG"
METHODS = [MNEMONIC, HEX_KEY, "0x" + HEX_KEY * 2, B58_KEY, "tools/" + "A" * 500_000]
PATHS = ["/mcp", "/a2a"]  # every MCP endpoint the app mounts is listed by `mcp_paths` below


def mcp_paths(app: object) -> list[str]:
    return sorted({r.path for r in app.router.routes if getattr(r, "name", "") == "mcp"})  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def served_limited() -> Iterator[tuple[str, object]]:
    port = free_port()
    app = create_app(Settings(rate_limit="5/minute", port=port))
    with running_server(app, port) as url:
        yield url, app


@pytest.fixture(scope="module")
def served_open() -> Iterator[tuple[str, object]]:
    port = free_port()
    app = create_app(Settings(rate_limit="off", port=port))
    with running_server(app, port) as url:
        yield url, app


def _call(http: httpx.Client, path: str, method: str, rid: object = 1) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": {}}
    return http.post(path, content=json.dumps(body), headers=JSONRPC_HEADERS)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("method", METHODS, ids=["mnemonic", "hex64", "hex128", "base58", "500kb"])
def test_unknown_method_is_not_echoed(served_open: tuple[str, object], path: str, method: str) -> None:
    url, app = served_open
    assert "/mcp" in mcp_paths(app)
    with httpx.Client(base_url=url, timeout=30) as http:
        r = _call(http, path, method)
        assert r.status_code < 500, r.text[:300]
        assert len(r.content) < 1024, len(r.content)
        for piece in (MNEMONIC[:20], HEX_KEY[:16], B58_KEY[:16], "AAAAAAAAAAAA"):
            assert piece not in r.text, r.text[:300]
        error = r.json()["error"]
        assert set(error) == {"code", "message"}, error
        assert error["message"] in ("Method not found", "Invalid Request", "Invalid params")


@pytest.mark.parametrize("path", PATHS)
def test_an_oversize_id_is_refused_not_echoed(served_open: tuple[str, object], path: str) -> None:
    url, _ = served_open
    with httpx.Client(base_url=url, timeout=30) as http:
        r = _call(http, path, "ping", rid="i" * 100_000)
        assert r.status_code == 400 and len(r.content) < 1024, r.text[:300]
        assert r.json()["id"] is None and r.json()["error"]["code"] == -32600


@pytest.mark.parametrize("path", PATHS)
def test_protocol_errors_are_rate_limited_like_tool_calls(
    served_limited: tuple[str, object], path: str
) -> None:
    url, _ = served_limited
    with httpx.Client(base_url=url, timeout=30, headers={"x-test": path}) as http:
        statuses = [_call(http, path, f"no/such/method/{i}").status_code for i in range(8)]
        assert 429 in statuses, statuses
        limited = next(r for r in [_call(http, path, "again")] if r.status_code == 429)
        assert len(limited.content) < 1024 and "again" not in limited.text
