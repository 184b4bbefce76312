"""Hostile input on every surface that reads it (REST v2, v1, prepare, MCP, A2A), over real HTTP: issue 14.

Each item of the issue has its regression test here, parametrised over the surfaces that read the same
input. Every refusal is a 4xx naming its rule; nothing is ever a 5xx, a traceback, exception or validator
text, or an echo of secret-shaped material.
"""

from __future__ import annotations

import json
import re
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from tests.support.a2a import CAMEL
from tests.support.hostile import (
    EVM_ROUTE,
    HEX64,
    HEX128,
    JSONRPC_HEADERS,
    PATHS,
    QUOTE,
    SURFACES,
    assert_clean,
    post,
    raw_body,
    refusal,
)
from tests.unit.actions.support import SOLANA_WALLET, approval_for, intent_for, wallets_for

from routequote.core.actions.approval import U64_MAX, UINT256_MAX
from routequote.core.routes import ROUTES
from routequote.surfaces import input_guard
from routequote.verify import verification_context


@pytest.fixture(scope="module")
def http(served: tuple[str, Any]) -> Iterator[httpx.Client]:
    url, _ = served
    with httpx.Client(base_url=url, timeout=30) as client:
        yield client


# ---- strict JSON on every surface (items 1 and 8, the duplicate-key and exact-number rules) ------------


@pytest.mark.parametrize("surface", SURFACES)
@pytest.mark.parametrize(
    ("extra", "amount", "reason"),
    [
        ('"\\ud800":1', "50", "invalid_unicode"),  # item 1: a lone-surrogate key
        ('"note":"\\udfff"', "50", "invalid_unicode"),  # ... and value
        ('"deep":{"x":["ok","\\ud83d"]}', "50", "invalid_unicode"),  # ... anywhere
        ('"dup":1,"dup":2', "50", "duplicate_key"),  # never last-wins
        ('"deep":{"a":1,"a":2}', "50", "duplicate_key"),  # at any depth
        ("", "0.99999999999999999999", "inexact_number"),  # below 1 by its exact value
        ("", "1000.0000000000000001", "inexact_number"),  # above 1000 by its exact value
        ("", "NaN", "non_finite_number"),  # item 8: reported as such
        ("", "-Infinity", "non_finite_number"),
        ("", "9" * 5000, "number_too_long"),  # item 8: never Python's int-limit text
        ('"deep":' + "[" * 10_000 + "]" * 10_000, "50", "nesting_too_deep"),  # item 8: never a recursion text
    ],
)
def test_strict_json_rules_on_every_surface(
    http: httpx.Client, surface: str, extra: str, amount: str, reason: str
) -> None:
    r = post(http, surface, raw_body(surface, extra, amount))
    assert_clean(r)
    assert refusal(surface, r) == (400, reason), r.text
    if surface in ("mcp", "a2a"):
        assert r.json()["error"]["code"] == -32600


@pytest.mark.parametrize("surface", SURFACES)
def test_exact_literals_still_pass(http: httpx.Client, surface: str) -> None:
    for amount in ("50", "50.0", "5e1", "12.34"):
        r = post(http, surface, raw_body(surface, amount=amount if surface != "v1" else "50"))
        assert r.status_code == 200, r.text
        if surface in ("mcp", "a2a"):
            assert "error" not in r.json()


def test_surrogate_in_approval_string_is_400(http: httpx.Client) -> None:
    """Item 1: a lone surrogate in an approval_v3 string (quote_id) never reaches hashing."""
    body = raw_body("prepare", '"approval_v3":{"quote_id":"\\ud800"}')
    r = post(http, "prepare", body)
    assert_clean(r)
    assert refusal("prepare", r) == (400, "invalid_unicode")


# ---- item 2: decimal-string bounds fit the field they end up in -----------------------------------------


def _quote(http: httpx.Client, route_key: str) -> dict[str, Any]:
    r = http.post("/v2/quote", json=intent_for(route_key))
    assert r.status_code == 200, r.text
    q: dict[str, Any] = r.json()
    return q


def _a2a_prepare(
    http: httpx.Client, route_key: str, quote: dict[str, Any], approval: dict[str, Any]
) -> httpx.Response:
    intent = intent_for(route_key)
    wallets = wallets_for(route_key)
    signer = (
        "HN7cABqLq46Es1jh92dQQisAq662SmxELLLsHHe4YWrH" if ROUTES[route_key].event_signer_required else None
    )
    ctx = verification_context(
        intent=intent,
        wallets=wallets,
        event_signer_public=signer,
        approval_v3=approval,
        direct_route_summary=quote["direct_route_summary"],
    )
    data: dict[str, Any] = {
        "operation": "prepare",
        "callerApproved": True,
        **{CAMEL[k]: v for k, v in intent.items()},
        "wallets": wallets,
        "approvalV3": approval,
        "verificationContext": ctx,
    }
    if signer:
        data["eventSignerPublic"] = signer
    msg = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {
            "message": {
                "role": "ROLE_USER",
                "messageId": str(uuid.uuid4()),
                "parts": [{"data": data, "mediaType": "application/json"}],
            }
        },
    }
    return http.post("/a2a", json=msg, headers=JSONRPC_HEADERS)


def _rest_prepare(
    http: httpx.Client, route_key: str, quote: dict[str, Any], approval: dict[str, Any]
) -> httpx.Response:
    body: dict[str, Any] = {
        "caller_approved": True,
        **intent_for(route_key),
        "wallets": wallets_for(route_key),
        "approval_v3": approval,
    }
    if ROUTES[route_key].event_signer_required:
        body["event_signer_public"] = "HN7cABqLq46Es1jh92dQQisAq662SmxELLLsHHe4YWrH"
    return http.post("/v2/prepare", json=body)


PREPARES: dict[str, Callable[..., httpx.Response]] = {"prepare": _rest_prepare, "a2a": _a2a_prepare}
ONE_STEP_READY = [
    "base:USDC->base:ETH",
    "arbitrum:USDC->base:USDC",
    "base:USDC->robinhood:USDG",
    "base:USDC->solana:USDC",
    "solana:USDC->base:USDC",
    "robinhood:USDG->solana:USDG",
]


def _solana_first(route_key: str) -> bool:
    return route_key.startswith("solana:")


@pytest.mark.parametrize("surface", ["prepare", "a2a"])
@pytest.mark.parametrize("route_key", ONE_STEP_READY)
@pytest.mark.parametrize("field", ["minimum_output_base", "maximum_input_base"])
def test_bound_beyond_its_field_is_400(http: httpx.Client, surface: str, route_key: str, field: str) -> None:
    widest = U64_MAX if _solana_first(route_key) else UINT256_MAX
    q = _quote(http, route_key)
    r = PREPARES[surface](
        http, route_key, q, approval_for(q, key=f"k-{uuid.uuid4().hex}", **{field: str(widest + 1)})
    )
    assert_clean(r)
    assert refusal(surface, r) == (400, "approval_v3_amount_out_of_range"), r.text


@pytest.mark.parametrize("surface", ["prepare", "a2a"])
@pytest.mark.parametrize("route_key", ONE_STEP_READY)
def test_widest_minimum_output_never_5xx(http: httpx.Client, surface: str, route_key: str) -> None:
    """The widest bound that fits is "stricter" and is built (the caller's chain will refuse it), never a 500."""
    widest = U64_MAX if _solana_first(route_key) else UINT256_MAX
    q = _quote(http, route_key)
    r = PREPARES[surface](
        http, route_key, q, approval_for(q, key=f"k-{uuid.uuid4().hex}", minimum_output_base=str(widest))
    )
    assert_clean(r)
    body = r.json()
    if surface == "prepare":
        assert r.status_code == 200, r.text
    else:  # the caller-side verifier may withhold it, but as a structured answer
        data = body["result"]["message"]["parts"][0]["data"]
        assert "bundle" in data or data["error"]["code"] in ("safety_boundary_failed", "request_rejected"), (
            data
        )


# ---- item 3: a client that aborts mid-body ---------------------------------------------------------------


def _five_xx(http: httpx.Client) -> float:
    text = http.get("/metrics").text
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("routequote_http_requests_total") and re.search(r'status="5\d\d"', line)
    )


class _Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, dict[str, Any]]] = []

    def info(self, event: str, **kw: Any) -> None:
        self.events.append(("info", event, kw))

    def error(self, event: str, **kw: Any) -> None:
        self.events.append(("error", event, kw))


@pytest.mark.parametrize("surface", SURFACES)
def test_client_abort_mid_body_is_no_5xx_and_one_quiet_line(
    http: httpx.Client,
    served: tuple[str, Any],
    surface: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    url, _ = served
    port = int(url.rsplit(":", 1)[1])
    recorder = _Recorder()
    monkeypatch.setattr(input_guard, "log", recorder)
    before = _five_xx(http)
    caplog.set_level("INFO", logger="uvicorn.error")
    for _ in range(3):
        with socket.create_connection(("127.0.0.1", port)) as s:
            s.sendall(
                f"POST {PATHS[surface]} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\n"
                "accept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n".encode()
                + b'{"amount_usd"'
            )
    deadline = time.monotonic() + 10
    while len(recorder.events) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert recorder.events == [("info", "client_disconnected_mid_body", {"method": "POST"})] * 3
    assert _five_xx(http) == before
    assert not [r for r in caplog.records if r.exc_info or "Exception" in r.getMessage()]


@pytest.mark.parametrize("surface", ["v2", "v1", "prepare"])
def test_a_500_is_json_and_closes_the_connection(
    served: tuple[str, Any], surface: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, app = served

    async def boom(*_: Any, **__: Any) -> Any:
        raise RuntimeError("secret internals " + HEX64)

    monkeypatch.setattr(app.state.service, "quote_request", boom)
    monkeypatch.setattr(app.state.service, "quote", boom)  # REST v2 issues through `quote` directly
    monkeypatch.setattr(app.state.prepare, "prepare", boom)
    monkeypatch.setattr(input_guard, "log", _Recorder())
    with httpx.Client(base_url=url, timeout=10) as client:
        r = post(client, surface, raw_body(surface))
    assert r.status_code == 500
    assert r.headers["connection"] == "close"
    assert r.json() == {"error": "internal_error", "reason_class": "internal_error"}
    assert "internals" not in r.text and HEX64[:12] not in r.text


# ---- items 4-6: secret-shaped names and values, full-match patterns ---------------------------------------


@pytest.mark.parametrize("surface", SURFACES)
@pytest.mark.parametrize(
    "name", [HEX64, "0x" + HEX64, "private_key=" + HEX64, HEX128, "seed phrase " + HEX64]
)
def test_secret_shaped_names_are_never_echoed(http: httpx.Client, surface: str, name: str) -> None:
    for extra in (f"{json.dumps(name)}:1", f'"wrap":{{{json.dumps(name)}:1}}'):
        r = post(http, surface, raw_body(surface, extra))
        assert_clean(r, HEX64, HEX128)
        status, _ = refusal(surface, r)
        assert status in (200, 400)


@pytest.mark.parametrize("surface", ["prepare", "a2a"])
@pytest.mark.parametrize("name", [HEX64, "private_key=" + HEX64])
def test_secret_shaped_names_inside_approval_are_never_echoed(
    http: httpx.Client, surface: str, name: str
) -> None:
    q = _quote(http, EVM_ROUTE)
    approval = {**approval_for(q, key=f"k-{uuid.uuid4().hex}"), name: "1"}
    r = PREPARES[surface](http, EVM_ROUTE, q, approval)
    assert_clean(r, HEX64)
    assert refusal(surface, r)[0] == 400


@pytest.mark.parametrize("surface", ["prepare", "a2a"])
@pytest.mark.parametrize("key", ["0X" + HEX64, "0x" + HEX64.upper(), HEX128, HEX128.upper(), "0x" + HEX128])
def test_secret_looking_idempotency_keys_are_refused(http: httpx.Client, surface: str, key: str) -> None:
    q = _quote(http, EVM_ROUTE)
    r = PREPARES[surface](http, EVM_ROUTE, q, approval_for(q, key=key))
    assert_clean(r, HEX64, HEX128)
    assert refusal(surface, r) in ((400, "invalid_idempotency_key"), (400, "secret_material_rejected"))


@pytest.mark.parametrize("surface", ["prepare", "a2a"])
@pytest.mark.parametrize(
    "field",
    [
        "maximum_input_base",
        "minimum_output_base",
        "idempotency_key",
        "quote_fingerprint",
        "direct_route_summary_sha256",
    ],
)
def test_trailing_newline_never_passes(http: httpx.Client, surface: str, field: str) -> None:
    q = _quote(http, EVM_ROUTE)
    approval = approval_for(q, key=f"abcdefgh-{uuid.uuid4().hex[:8]}")
    approval[field] += "\n"
    r = PREPARES[surface](http, EVM_ROUTE, q, approval)
    assert_clean(r)
    status, reason = refusal(surface, r)
    assert status == 400 and reason.startswith(("approval_v3_", "invalid_idempotency_key")), r.text


@pytest.mark.parametrize("surface", ["prepare", "a2a"])
def test_trailing_newline_in_a_wallet_never_passes(http: httpx.Client, surface: str) -> None:
    q = _quote(http, "solana:USDC->base:USDC")
    body = {
        "caller_approved": True,
        **intent_for("solana:USDC->base:USDC"),
        "wallets": {"solana": SOLANA_WALLET + "\n", "base": "0x" + "1" * 40 + "\n"},
        "event_signer_public": "HN7cABqLq46Es1jh92dQQisAq662SmxELLLsHHe4YWrH",
        "approval_v3": approval_for(q, key=f"k-{uuid.uuid4().hex}"),
    }
    r = http.post("/v2/prepare", json=body)
    assert refusal("prepare", r) == (400, "invalid_wallet_address")


# ---- item 7: MCP transport errors; item 11: JSON-RPC error objects ----------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        b'{"private_key":"' + HEX64.encode() + b'"}',
        b'{"jsonrpc":"1.0","id":1,"method":"tools/list","params":{"x":"' + HEX64.encode() + b'"}}',
        b'[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":2,"method":"'
        + HEX64.encode()
        + b'"}]',
        b"[]",
        b'"' + HEX64.encode() + b'"',
    ],
)
def test_mcp_transport_errors_are_short_and_generic(http: httpx.Client, raw: bytes) -> None:
    r = http.post("/mcp", content=raw, headers=JSONRPC_HEADERS)
    assert_clean(r, HEX64)
    body = r.json()
    assert r.status_code == 400 and body["jsonrpc"] == "2.0" and body["error"]["code"] in (-32600, -32700)
    assert len(body["error"]["message"]) < 80


def test_mcp_and_a2a_http_errors_are_jsonrpc_objects(served: tuple[str, Any]) -> None:
    url, _ = served
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        },
    }
    big = b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"pad":"' + b"x" * 1_100_000 + b'"}}'
    with httpx.Client(base_url=url, timeout=30) as http:
        answers = {
            ("mcp", 405): http.get("/mcp"),
            ("mcp", 413): http.post("/mcp", content=big, headers=JSONRPC_HEADERS),
            ("a2a", 413): http.post("/a2a", content=big, headers=JSONRPC_HEADERS),
            ("mcp", 421): http.post("/mcp", json=init, headers={**JSONRPC_HEADERS, "host": "evil.example"}),
            ("mcp", 403): http.post(
                "/mcp", json=init, headers={**JSONRPC_HEADERS, "origin": "http://evil.example"}
            ),
            ("mcp", 400): http.post("/mcp", content=b'{"jsonrpc":"2.0"}', headers=JSONRPC_HEADERS),
            ("mcp", 406): http.post("/mcp", json=init, headers={**JSONRPC_HEADERS, "accept": "text/html"}),
            ("a2a", 415): http.post(
                "/a2a", content=b"{}", headers={**JSONRPC_HEADERS, "content-type": "text/plain"}
            ),
            ("mcp", 415): http.post(
                "/mcp", content=b"{}", headers={**JSONRPC_HEADERS, "content-type": "text/plain"}
            ),
            ("a2a", 405): http.get("/a2a"),
        }
    for (surface, status), r in answers.items():
        assert r.status_code == status, (surface, status, r.text)
        assert r.headers["content-type"] == "application/json"
        body = r.json()
        # the SDK read the request (id 1) before refusing it: its error carries the id (issue 40 item 1)
        rid = 1 if status in (403, 406, 421) else None
        assert body["jsonrpc"] == "2.0" and body["id"] == rid, (surface, status, body)
        assert body["error"]["code"] == -32600 and body["error"]["message"]
        assert "evil" not in r.text


def test_a2a_requires_application_json(http: httpx.Client) -> None:
    """A text/plain POST is a "simple" request a browser sends cross-site without preflight: refused."""
    body = raw_body("a2a")
    for ctype in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""):
        r = http.post("/a2a", content=body, headers={**JSONRPC_HEADERS, "content-type": ctype})
        assert r.status_code == 415 and r.json()["error"]["code"] == -32600


# ---- item 8: A2A internal errors carry no exception text -------------------------------------------------


@pytest.mark.parametrize(
    "params",
    [
        {"message": "not a message " + HEX64},
        {"message": {"role": "ROLE_" + HEX64, "parts": [{"data": 1}]}},
        {"message": {"role": "ROLE_USER", "messageId": "m", "parts": [{"bogus": HEX64}]}},
        [HEX64],
    ],
)
def test_a2a_sdk_errors_are_code_and_fixed_message(http: httpx.Client, params: Any) -> None:
    r = http.post(
        "/a2a",
        json={"jsonrpc": "2.0", "id": 7, "method": "SendMessage", "params": params},
        headers=JSONRPC_HEADERS,
    )
    assert_clean(r, HEX64)
    body = r.json()
    if "error" in body:  # code, fixed message, and the fixed ErrorInfo of the code (A2A 1.0 §9.5)
        assert set(body["error"]) == {"code", "message", "data"}, body
        reason = {-32602: "INVALID_PARAMS", -32600: "INVALID_REQUEST", -32603: "INTERNAL_ERROR"}
        (info,) = body["error"]["data"]
        assert info == {
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": reason[body["error"]["code"]],
            "domain": "a2a-protocol.org",
            "metadata": {"code": str(body["error"]["code"])},
        }, body
        assert body["error"]["message"] in (
            "Invalid params",
            "Invalid Request",
            "Internal error",
            "Parse error",
        )
    else:
        assert body["result"]["message"]["parts"][0]["data"]["error"]["code"] == "request_rejected"


# ---- item 9: no redirect on a trailing slash ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v2/status/"),
        ("POST", "/v2/quote/"),
        ("GET", "/v1/status/"),
        ("POST", "/v2/prepare/"),
        ("GET", "/v2/capabilities/"),
    ],
)
def test_trailing_slash_is_404_never_a_redirect(http: httpx.Client, method: str, path: str) -> None:
    r = http.request(method, path, headers={"host": "evil.example"}, json=QUOTE if method == "POST" else None)
    assert r.status_code == 404 and "location" not in r.headers
    assert r.json()["error"] == "not_found" and "evil" not in r.text


# ---- item 11: idempotency keys are scoped to (quote, selected mode) ----------------------------------------


def test_idempotency_key_scope_matches_the_advertised_scope(http: httpx.Client) -> None:
    key = f"shared-{uuid.uuid4().hex[:12]}"
    first, second = _quote(http, EVM_ROUTE), _quote(http, EVM_ROUTE)
    assert first["continuation_v3"]["idempotency"]["scope"] == "quote_and_selected_mode"
    r1 = _rest_prepare(http, EVM_ROUTE, first, approval_for(first, key=key))
    r2 = _rest_prepare(http, EVM_ROUTE, second, approval_for(second, key=key))  # another quote: its own scope
    assert r1.status_code == 200 and r2.status_code == 200, (r1.text, r2.text)
    assert r2.json()["idempotent_replay"] is False
    replay = _rest_prepare(http, EVM_ROUTE, first, approval_for(first, key=key))
    assert replay.status_code == 200 and replay.json()["idempotent_replay"] is True
    body: dict[str, Any] = {
        "caller_approved": True,
        **intent_for(EVM_ROUTE),
        "wallets": {"base": "0x" + "5" * 40},
        "approval_v3": approval_for(first, key=key),
    }
    conflict = http.post("/v2/prepare", json=body)  # the same quote, mode and key with another body
    assert (
        conflict.status_code == 409
        and conflict.json()["reason"] == "idempotency_key_reused_with_different_request"
    )
