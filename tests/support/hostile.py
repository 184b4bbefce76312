"""Bodies for every surface that reads a quote intent, and what a clean refusal looks like (issue 14)."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.support.a2a import CAMEL
from tests.unit.actions.support import intent_for, wallets_for

HEX64 = "3f1c9a77e2b04d5e" * 4
HEX128 = HEX64 + "ab" * 32
JSONRPC_HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "A2A-Version": "1.0",
}
QUOTE = {
    "from_chain": "solana",
    "from_token": "SOL",
    "to_chain": "base",
    "to_token": "USDC",
    "amount_usd": 50,
}
EVM_ROUTE = "base:USDC->base:ETH"
LEAK_MARKERS = (
    "Traceback",
    "pydantic",
    "errors.pydantic.dev",
    "Validation error",
    "validation error",
    "sys.set_int_max_str_digits",
    "recursion",
    "Exception",
    "Expecting",
    "line 1 column",
)

SURFACES = ("v2", "v1", "prepare", "mcp", "a2a")
PATHS = {"v2": "/v2/quote", "v1": "/v1/quote", "prepare": "/v2/prepare", "mcp": "/mcp", "a2a": "/a2a"}


# ---- one body per surface, with a raw JSON fragment spliced in ------------------------------------------


def _members(obj: dict[str, Any]) -> str:
    return json.dumps(obj)[1:-1]


def raw_body(surface: str, extra: str = "", amount: str = "50") -> bytes:
    """The surface's body for a v2 quote intent (v1: its corridor) with `extra` (raw JSON members, e.g.
    `"a":1`) appended to the object the surface validates, and `amount` as the amount literal."""
    tail = f",{extra}" if extra else ""
    intent = {k: v for k, v in QUOTE.items() if k != "amount_usd"}
    if surface == "v2":
        return f'{{{_members(intent)},"amount_usd":{amount}{tail}}}'.encode()
    if surface == "v1":
        return f'{{"amount_usd":{amount}{tail}}}'.encode()
    if surface == "prepare":
        fixed = {"caller_approved": True, **intent_for(EVM_ROUTE), "wallets": wallets_for(EVM_ROUTE)}
        del fixed["amount_usd"]
        return f'{{{_members(fixed)},"amount_usd":{amount}{tail}}}'.encode()
    if surface == "mcp":
        args = f'{{{_members(intent)},"amount_usd":{amount}{tail}}}'
        return (
            '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"service_v2_quote","arguments":'
            + args
            + "}}"
        ).encode()
    camel = {CAMEL[k]: v for k, v in intent.items()}
    data = f'{{{_members(camel)},"amountUsd":{amount}{tail}}}'
    return (
        '{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"role":"ROLE_USER","messageId":"m1",'
        '"parts":[{"data":' + data + ',"mediaType":"application/json"}]}}}'
    ).encode()


def post(http: httpx.Client, surface: str, content: bytes) -> httpx.Response:
    return http.post(PATHS[surface], content=content, headers=JSONRPC_HEADERS)


AGENT_CODES = {"request_rejected": 400, "reapproval_required": 409}


def refusal(surface: str, r: httpx.Response) -> tuple[int, str]:
    """(status, reason_class) of a refusal in the surface's own form: the HTTP status of a REST or JSON-RPC
    transport error; for an MCP tool error or an A2A reply error (HTTP 200), the REST status of its code."""
    body = r.json()
    if surface in ("v2", "v1", "prepare"):
        return r.status_code, body["reason_class"]
    if (
        "error" in body
        and isinstance(body["error"], dict)
        and "code" in body["error"]
        and "data" in body["error"]
    ):
        assert body["jsonrpc"] == "2.0" and body["id"] is None
        return r.status_code, body["error"]["data"]["reason_class"]
    assert r.status_code == 200, r.text
    if surface == "mcp":  # a tool error
        err = body["result"]["structuredContent"].get("error")
    else:
        err = body["result"]["message"]["parts"][0]["data"].get("error")
    if err is None:
        return 200, ""
    return AGENT_CODES.get(err["code"], 500), err["reason_class"]


def assert_clean(r: httpx.Response, *secrets: str) -> None:
    """Never a 5xx, never internals, never (a 12-character piece of) secret-shaped material."""
    assert r.status_code < 500, r.text
    for marker in LEAK_MARKERS:
        assert marker not in r.text, (marker, r.text)
    for secret in secrets:
        for i in range(0, len(secret) - 12, 4):
            assert secret[i : i + 12].lower() not in r.text.lower(), (secret, r.text)
