"""JSON-RPC protocol errors on every JSON-RPC endpoint (/mcp, /mcp/v2, /v2/mcp, /a2a) over real HTTP (issue 22
item 5, issue 38 item 3, issue 40 items 1 and 3), one suite run against each endpoint: nothing the caller sent
comes back (an unknown method holding a mnemonic, 64-hex keys, a base58 secret key, or 500 KB of text), the
answer is bounded, an oversize id is refused, an error to a request with an id carries that id, and protocol
errors spend the same per-client budget as tool calls (429 past it)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from tests.support.hostile import JSONRPC_HEADERS
from tests.support.server import free_port, running_server

from routequote.app import create_app
from routequote.config import Settings
from routequote.surfaces.input_guard import JSONRPC_PATHS

MNEMONIC = "abandon ability able about above absent absorb abstract absurd abuse access accident"
HEX_KEY = "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"
B58_KEY = "5MaiiCavjCmn9Hs1o3eznqDEhRwxo7pXiAYez7keQUviUkauRiTMD8DrESdrNjN8zd9mTmVhRvBJeg5vhyvgrAhG"
METHODS = [MNEMONIC, HEX_KEY, "0x" + HEX_KEY * 2, B58_KEY, "tools/" + "A" * 500_000]
PATHS = ["/mcp", "/mcp/v2", "/v2/mcp", "/a2a"]
PIECES = (MNEMONIC[:20], HEX_KEY[:16], B58_KEY[:16], "AAAAAAAAAAAA")
MODERN = "2026-07-28"
ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"


def test_the_suite_covers_every_jsonrpc_endpoint() -> None:
    app = create_app(Settings(rate_limit="off"))
    posted = {getattr(r, "path", None) for r in app.router.routes} & set(JSONRPC_PATHS)
    assert posted == set(JSONRPC_PATHS) == set(PATHS)


@pytest.fixture(scope="module")
def served_limited() -> Iterator[str]:
    port = free_port()
    with running_server(create_app(Settings(rate_limit="5/minute", port=port)), port) as url:
        yield url


@pytest.fixture(scope="module")
def served_open() -> Iterator[str]:
    port = free_port()
    with running_server(create_app(Settings(rate_limit="off", port=port)), port) as url:
        yield url


def _call(
    http: httpx.Client, path: str, method: str, rid: object = 1, params: Any = None, headers: Any = None
) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": {} if params is None else params}
    return http.post(path, content=json.dumps(body), headers={**JSONRPC_HEADERS, **(headers or {})})


def _modern(method: str, meta: dict[str, Any] | None = None) -> tuple[dict[str, Any], dict[str, str]]:
    """Params and headers of a 2026-07-28 request (no initialize: `_meta` and routing headers on each one)."""
    envelope = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    params = {"_meta": envelope if meta is None else meta}
    return params, {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}


def assert_clean_error(path: str, error: dict[str, Any]) -> None:
    """code + fixed message; on /a2a also exactly the fixed ErrorInfo of the code (A2A 1.0 §9.5)."""
    if path == "/a2a":
        assert set(error) == {"code", "message", "data"}, error
        (info,) = error["data"]
        assert info["@type"] == ERROR_INFO and info["domain"] in ("a2a-protocol.org", "routequote"), info
        assert info["metadata"] == {"code": str(error["code"])}, info
    else:
        assert set(error) == {"code", "message"}, error


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("method", METHODS, ids=["mnemonic", "hex64", "hex128", "base58", "500kb"])
def test_unknown_method_is_not_echoed(served_open: str, path: str, method: str) -> None:
    with httpx.Client(base_url=served_open, timeout=30) as http:
        r = _call(http, path, method)
        assert r.status_code < 500, r.text[:300]
        assert len(r.content) < 1024, len(r.content)
        for piece in PIECES:
            assert piece not in r.text, r.text[:300]
        error = r.json()["error"]
        assert_clean_error(path, error)
        assert error["message"] in ("Method not found", "Invalid Request", "Invalid params")


@pytest.mark.parametrize("path", [p for p in PATHS if p != "/a2a"])
@pytest.mark.parametrize("method", METHODS, ids=["mnemonic", "hex64", "hex128", "base58", "500kb"])
def test_unknown_method_is_not_echoed_at_2026_07_28(served_open: str, path: str, method: str) -> None:
    params, headers = _modern(method)
    fits = len(method) < 1000  # the method also travels in the Mcp-Method header; 500 KB cannot (431)
    if not fits:
        del headers["Mcp-Method"]
    with httpx.Client(base_url=served_open, timeout=30) as http:
        r = _call(http, path, method, rid=101, params=params, headers=headers)
        assert len(r.content) < 1024, r.text[:300]
        for piece in PIECES:
            assert piece not in r.text, r.text[:300]
        error = (
            {"code": -32601, "message": "Method not found"}
            if fits
            else {"code": -32020, "message": "Header mismatch"}
        )
        assert r.status_code == (404 if fits else 400), (r.status_code, r.text[:300])
        assert r.json() == {"jsonrpc": "2.0", "id": 101, "error": error}


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("rid", [101, "req-101"])
def test_an_error_to_a_request_with_an_id_carries_that_id(served_open: str, path: str, rid: object) -> None:
    with httpx.Client(base_url=served_open, timeout=30) as http:
        r = _call(http, path, "no/such/method", rid=rid)
        assert r.json()["id"] == rid and r.json()["error"]["code"] == -32601, r.text


@pytest.mark.parametrize("path", [p for p in PATHS if p != "/a2a"])
@pytest.mark.parametrize(
    ("case", "status", "code"),
    [
        ("missing_meta", 400, -32602),
        ("missing_protocol_version", 400, -32602),
        ("missing_client_capabilities", 400, -32602),
        ("removed_initialize", 404, -32601),
        ("removed_ping", 404, -32601),
        ("header_mismatch", 400, -32020),
    ],
)
def test_2026_07_28_errors_carry_the_revisions_codes_and_the_id(
    served_open: str, path: str, case: str, status: int, code: int
) -> None:
    method = {"removed_initialize": "initialize", "removed_ping": "ping"}.get(case, "tools/list")
    params, headers = _modern(method)
    meta = params["_meta"]
    if case == "missing_meta":
        params = {}
    elif case == "missing_protocol_version":
        del meta["io.modelcontextprotocol/protocolVersion"]
    elif case == "missing_client_capabilities":
        del meta["io.modelcontextprotocol/clientCapabilities"]
    elif case == "header_mismatch":
        headers["Mcp-Method"] = "tools/call"
    with httpx.Client(base_url=served_open, timeout=30) as http:
        r = _call(http, path, method, rid=77, params=params, headers=headers)
        assert r.status_code == status, (r.status_code, r.text)
        assert r.json()["id"] == 77 and r.json()["error"]["code"] == code, r.text
        assert_clean_error(path, r.json()["error"])


@pytest.mark.parametrize("path", [p for p in PATHS if p != "/a2a"])
def test_an_unsupported_version_names_the_served_ones_and_echoes_only_a_version(
    served_open: str, path: str
) -> None:
    with httpx.Client(base_url=served_open, timeout=30) as http:
        for requested, echoed in (("v999.0.0", True), (MNEMONIC, False), (HEX_KEY, False)):
            params, headers = _modern("tools/list")
            params["_meta"]["io.modelcontextprotocol/protocolVersion"] = requested
            headers["MCP-Protocol-Version"] = requested if echoed else "2099-01-01"
            r = _call(http, path, "tools/list", rid=5, params=params, headers=headers)
            error = r.json()["error"]
            assert r.status_code == 400 and r.json()["id"] == 5, r.text
            if not echoed:  # header and body disagree first: the answer is the mismatch, without the text
                assert error == {"code": -32020, "message": "Header mismatch"}, error
                continue
            assert error["code"] == -32022 and error["data"]["supported"] == [MODERN], error
            assert error["data"]["requested"] == requested, error


@pytest.mark.parametrize("path", PATHS)
def test_an_oversize_id_is_refused_not_echoed(served_open: str, path: str) -> None:
    with httpx.Client(base_url=served_open, timeout=30) as http:
        for rid in ("i" * 129, "i" * 100_000, "i" * 500_000, 2**63, -(2**63) - 1, 10**40):
            r = _call(http, path, "ping", rid=rid)
            assert r.status_code == 400 and len(r.content) < 1024, r.text[:300]
            assert r.json()["id"] is None and r.json()["error"]["code"] == -32600
        assert _call(http, path, "no/such/method", rid="i" * 128).json()["id"] == "i" * 128


@pytest.mark.parametrize("path", [p for p in PATHS if p != "/a2a"])
def test_a_rebinding_host_is_refused_with_421(served_open: str, path: str) -> None:
    with httpx.Client(base_url=served_open, timeout=30) as http:
        r = _call(http, path, "tools/list", rid=3, headers={"Host": "evil.example:80"})
        assert r.status_code == 421 and r.json()["error"]["code"] == -32600, r.text
        assert "evil" not in r.text


@pytest.mark.parametrize("path", PATHS)
def test_protocol_errors_are_rate_limited_like_tool_calls(served_limited: str, path: str) -> None:
    with httpx.Client(base_url=served_limited, timeout=30, headers={"x-test": path}) as http:
        statuses = [_call(http, path, f"no/such/method/{i}").status_code for i in range(8)]
        assert 429 in statuses, statuses
        limited = next(r for r in [_call(http, path, "again")] if r.status_code == 429)
        assert len(limited.content) < 1024 and "again" not in limited.text
        assert limited.json()["error"]["code"] == -32029
        if path == "/a2a":
            assert limited.json()["error"]["data"][0]["reason"] == "RATE_LIMITED"


@pytest.mark.parametrize("profile", ["spec", "v2"])
def test_stdio_passes_the_same_guard(tmp_path: Any, profile: str) -> None:
    """MCP over stdio (`routequote mcp`, both profiles): no method comes back, an oversize id is refused."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    exe = Path(sys.executable).with_name("routequote")
    env = {**os.environ, "ROUTEQUOTE_LOG_LEVEL": "warning"}
    env["ROUTEQUOTE_DATABASE_URL"] = f"sqlite+aiosqlite:///{tmp_path}/s.db"
    env["XDG_DATA_HOME"] = str(
        tmp_path
    )  # its own per-user directory (the dev signing key), never the machine's
    init = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    }
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        *({"jsonrpc": "2.0", "id": 10 + i, "method": m} for i, m in enumerate(METHODS)),
        {"jsonrpc": "2.0", "id": "i" * 100_000, "method": "ping"},
        {"jsonrpc": "2.0", "id": 30, "method": "tools/call", "params": {"name": MNEMONIC, "arguments": {}}},
    ]
    process = subprocess.Popen(
        [str(exe), "mcp", "--profile", profile],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    assert process.stdin is not None and process.stdout is not None
    answers: dict[Any, Any] = {}
    raw = b""
    try:
        for message in lines:  # one at a time: an answer is read before the next request is written
            process.stdin.write(json.dumps(message).encode() + b"\n")
            process.stdin.flush()
            if "id" in message:
                line = process.stdout.readline()
                raw += line
                answer = json.loads(line)
                answers[answer["id"]] = answer
    finally:
        process.stdin.close()
        process.wait(30)
    text = raw.decode()
    for i in range(len(METHODS)):
        assert answers[10 + i]["error"] == {"code": -32601, "message": "Method not found"}, answers[10 + i]
    assert answers[None]["error"] == {"code": -32600, "message": "Invalid Request"}
    assert answers[30]["error"] == {"code": -32602, "message": "Invalid params"}
    for piece in PIECES:
        assert piece not in text
    assert "i" * 129 not in text and len(text) < 8192, len(text)
