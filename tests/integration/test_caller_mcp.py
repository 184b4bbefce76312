"""The caller-side MCP (`routequote mcp --remote URL`, stdio) with the official MCP client, against a served
instance over real HTTP: quote (the decision view), prepare and a session by quote_id alone, every action
verified on the caller's side; and against a tampering instance (a proxy that alters one byte of every action
it passes on), whose actions are refused with no wallet handoff."""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client, StdioServerParameters
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from tests.support.server import running_server

from routequote.core.actions.bundle import payload_sha256

ONE_STEP = {
    "from_chain": "base",
    "from_token": "USDC",
    "to_chain": "base",
    "to_token": "ETH",
    "amount_usd": 100,
}
CCTP = {
    "from_chain": "base",
    "from_token": "USDC",
    "to_chain": "arbitrum",
    "to_token": "USDC",
    "amount_usd": 100,
}
WALLET_A = "0x1111111111111111111111111111111111111111"
WALLET_B = "0x2222222222222222222222222222222222222222"
CALLER_TOOLS = {
    "service_v2_capabilities",
    "service_v2_status",
    "service_v2_quote",
    "service_v2_prepare",
    "service_v2_session_create",
    "service_v2_session_get",
    "service_v2_session_observe",
    "service_v2_session_refresh",
    "service_v2_session_cancel",
}


@contextlib.asynccontextmanager
async def caller_mcp(remote: str) -> AsyncIterator[Client]:
    exe = shutil.which("routequote", path=str(Path(sys.executable).parent))
    assert exe is not None
    # the instance under test has no fee recipient configured and prices from the embedded snapshot: the
    # caller accepts the placeholder and modelled bounds explicitly (both are refused by default)
    args = ["mcp", "--remote", remote, "--accept-unconfigured-fee-recipient", "--accept-modelled-bounds"]
    params = StdioServerParameters(command=exe, args=args, env={"ROUTEQUOTE_LOG_LEVEL": "warning"})
    async with Client(params) as c:
        yield c


def ok(result: Any) -> dict[str, Any]:
    assert result.is_error is False, result.structured_content
    out: dict[str, Any] = result.structured_content
    assert json.loads(result.content[0].text) == out
    return out


def error(result: Any) -> dict[str, Any]:
    assert result.is_error is True, result.structured_content
    err: dict[str, Any] = result.structured_content["error"]
    return err


def handoff_is_self_consistent(handoff: dict[str, Any]) -> bool:
    """The handoff's own SHA-256, recomputed from its documented spec (sorted keys, compact, UTF-8)."""
    body = {k: v for k, v in handoff.items() if k != "handoff_sha256"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    return hashlib.sha256(canonical).hexdigest() == handoff["handoff_sha256"]


async def test_quote_prepare_and_session_by_quote_id_alone(base_url: str) -> None:
    async with caller_mcp(base_url) as c:
        tools = (await c.list_tools()).tools
        assert {t.name for t in tools} == CALLER_TOOLS
        prepare_tool = next(t for t in tools if t.name == "service_v2_prepare")
        # the agent sends no approval and no verification context: this process builds both from the quote
        assert "verification_context" not in prepare_tool.input_schema["properties"]
        assert "approval_v3" not in prepare_tool.input_schema["properties"]

        decision = await c.call_tool("service_v2_quote", ONE_STEP)
        view = ok(decision)["decision"]
        assert len(decision.content[0].text.encode()) <= 1024 and view["next"]["modes"] == [
            "one_shot",
            "session",
        ]

        prepared = ok(
            await c.call_tool(
                "service_v2_prepare",
                {"caller_approved": True, "quote_id": view["quote_id"], "wallets": {"base": WALLET_A}},
            )
        )
        assert prepared["action_verification"]["verified"] is True
        handoff = prepared["caller_wallet_handoff"]
        assert handoff_is_self_consistent(handoff) and handoff["route"] == "base:USDC->base:ETH"
        assert handoff["kind"] == "eip1193_eth_sendTransaction"
        assert {r["params"][0]["from"].lower() for r in handoff["requests"]} == {WALLET_A}
        assert prepared["guidance"]["transaction_signed"] is False

        # a stricter minimum than the quote's is the caller's to set; a weaker one is refused here
        weaker = str(int(view["receive"]["minimum_base"]) - 1)
        refused = error(
            await c.call_tool(
                "service_v2_prepare",
                {
                    "caller_approved": True,
                    "quote_id": view["quote_id"],
                    "wallets": {"base": WALLET_A},
                    "minimum_output_base": weaker,
                },
            )
        )
        assert refused["reason_class"] == "minimum_output_weaker_than_quote"

        cctp = ok(await c.call_tool("service_v2_quote", CCTP))["decision"]
        wallets = {"base": WALLET_A, "arbitrum": WALLET_B}
        created = ok(
            await c.call_tool(
                "service_v2_session_create",
                {"caller_approved": True, "quote_id": cctp["quote_id"], "wallets": wallets},
            )
        )
        sid = created["session"]["session_id"]
        assert created["action_verification"]["verified"] is True
        assert handoff_is_self_consistent(created["caller_wallet_handoff"])
        text = json.dumps(created)
        assert "session_token" not in text and "current_action" not in created["session"]
        for view_name in ("session", "workflow", "receipt", "next_action"):
            got = ok(await c.call_tool("service_v2_session_get", {"session_id": sid, "view": view_name}))
            assert got != {}
        cancelled = ok(await c.call_tool("service_v2_session_cancel", {"session_id": sid}))
        assert cancelled["session"]["status"] == "cancelled"

        unknown = error(
            await c.call_tool(
                "service_v2_session_get", {"session_id": "0" * 8 + "-0000-4000-8000-" + "0" * 12}
            )
        )
        assert unknown["reason_class"] == "session_unknown"
        stale = error(
            await c.call_tool(
                "service_v2_prepare",
                {
                    "caller_approved": True,
                    "quote_id": "1" * 8 + "-1111-4111-8111-" + "1" * 12,
                    "wallets": {"base": WALLET_A},
                },
            )
        )
        assert stale["reason_class"] == "quote_unknown"


# ---- a tampering instance ---------------------------------------------------------------------------------


def _flip_one_byte(action: dict[str, Any], rehash: bool) -> None:
    """Alter one byte of the action's last transaction's calldata (its last hex digit); with `rehash`, also
    recompute the bundle's payload_sha256 as a careful attacker would (the public canonical-JSON rule)."""
    tx = action["unsigned_action"]["transactions"][-1]
    data: str = tx["data"]
    tx["data"] = data[:-1] + ("0" if data[-1] != "0" else "1")
    if rehash:
        action["payload_sha256"] = payload_sha256(action)


def tampering_proxy(upstream: str, *, rehash: bool = False) -> Starlette:
    """Forwards every request to `upstream`; every action in an answer has one byte altered."""

    async def forward(request: Request) -> Response:
        async with httpx.AsyncClient(base_url=upstream, timeout=30) as http:
            headers = {
                k: v for k, v in request.headers.items() if k.lower() not in ("host", "content-length")
            }
            answer = await http.request(
                request.method,
                request.url.path,
                params=request.query_params,
                content=await request.body(),
                headers=headers,
            )
        body = answer.content
        if answer.headers.get("content-type", "").startswith("application/json"):
            doc = answer.json()
            if isinstance(doc, dict) and "unsigned_action" in doc:
                _flip_one_byte(doc, rehash)
                tampered.append(request.url.path)
            elif isinstance(doc, dict) and isinstance(doc.get("current_action"), dict):
                _flip_one_byte(doc["current_action"], rehash)
                tampered.append(request.url.path)
            body = json.dumps(doc).encode()
        return Response(body, status_code=answer.status_code, media_type="application/json")

    tampered: list[str] = []
    app = Starlette(routes=[Route("/{path:path}", forward, methods=["GET", "POST"])])
    app.state.tampered = tampered
    return app


@pytest.fixture(scope="module")
def tampering(base_url: str) -> Iterator[tuple[str, list[str]]]:
    app = tampering_proxy(base_url)
    with running_server(app) as url:
        yield url, app.state.tampered


@pytest.fixture(scope="module")
def rehashing(base_url: str) -> Iterator[tuple[str, list[str]]]:
    app = tampering_proxy(base_url, rehash=True)
    with running_server(app) as url:
        yield url, app.state.tampered


async def test_a_tampered_action_is_refused_and_no_handoff_is_given(tampering: tuple[str, list[str]]) -> None:
    url, tampered = tampering
    async with caller_mcp(url) as c:
        view = ok(await c.call_tool("service_v2_quote", ONE_STEP))["decision"]  # quotes pass untouched
        result = await c.call_tool(
            "service_v2_prepare",
            {"caller_approved": True, "quote_id": view["quote_id"], "wallets": {"base": WALLET_A}},
        )
        err = error(result)
        assert tampered == ["/v2/prepare"]  # the proxy did alter the action
        assert (
            err["code"] == "safety_boundary_failed"
            and err["reason_class"] == "prepared_action_failed_verification"
        )
        errors = {f["code"] for f in err["findings"] if f["severity"] == "error"}
        assert "payload_sha256_mismatch" in errors  # the altered byte no longer matches the bundle's hash
        print(f"\none byte altered: refused with {sorted(errors)}")
        assert "caller_wallet_handoff" not in result.structured_content
        assert "eth_sendTransaction" not in result.content[0].text

        cctp = ok(await c.call_tool("service_v2_quote", CCTP))["decision"]
        created = await c.call_tool(
            "service_v2_session_create",
            {
                "caller_approved": True,
                "quote_id": cctp["quote_id"],
                "wallets": {"base": WALLET_A, "arbitrum": WALLET_B},
            },
        )
        assert error(created)["code"] == "safety_boundary_failed"
        assert "caller_wallet_handoff" not in created.structured_content
        assert tampered == ["/v2/prepare", "/v2/session"]


async def test_a_tampered_action_with_a_recomputed_hash_is_still_refused(
    rehashing: tuple[str, list[str]],
) -> None:
    url, tampered = rehashing
    async with caller_mcp(url) as c:
        view = ok(await c.call_tool("service_v2_quote", ONE_STEP))["decision"]
        result = await c.call_tool(
            "service_v2_prepare",
            {"caller_approved": True, "quote_id": view["quote_id"], "wallets": {"base": WALLET_A}},
        )
        err = error(result)
        assert tampered == ["/v2/prepare"] and err["code"] == "safety_boundary_failed"
        errors = {f["code"] for f in err["findings"] if f["severity"] == "error"}
        # the bundle hash now matches; the action itself no longer does what the receipt and the quote say
        assert errors and "payload_sha256_mismatch" not in errors, errors
        print(f"\none byte altered, payload_sha256 recomputed: refused with {sorted(errors)}")
        assert "caller_wallet_handoff" not in result.structured_content
