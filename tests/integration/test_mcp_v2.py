"""The v2 MCP profile at /mcp/v2 with the official MCP Python client (and over stdio with `--profile v2`):
strict inputs, every action verified before it is returned, the caller's session token never echoed or
logged; /mcp keeps exactly the spec's 15 tools. The whole session on local chains through MCP alone:
tests/e2e/test_mcp_v2_session_anvil.py."""

from __future__ import annotations

import base64
import logging
import secrets
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from tests.support.json_safety import assert_javascript_safe

from routequote.client.approval import approval_for
from routequote.client.models import Quote
from routequote.verify import verification_context

V2_TOOLS = {
    "service_v2_capabilities",
    "service_v2_status",
    "service_v2_quote",
    "service_manifest",
    "service_v2_prepare",
    "service_v2_session_create",
    "service_v2_session_get",
    "service_v2_session_observe",
    "service_v2_session_refresh",
    "service_v2_session_cancel",
}
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


def ok(result: Any) -> dict[str, Any]:
    assert result.is_error is False, result.structured_content
    out: dict[str, Any] = result.structured_content
    assert_javascript_safe(out)
    return out


def error(result: Any) -> dict[str, Any]:
    assert result.is_error is True, result.structured_content
    err: dict[str, Any] = result.structured_content["error"]
    return err


def token() -> str:
    return base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()


async def quote_and_context(
    c: Client, intent: dict[str, Any], wallets: dict[str, str], mode: str, key: str | None = None
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    q = ok(await c.call_tool("service_v2_quote", {**intent, "detail": "full"}))["quote"]
    approval = approval_for(Quote.from_raw(q), mode, idempotency_key=key)
    ctx = verification_context(
        intent=intent,
        wallets=wallets,
        event_signer_public=None,
        approval_v3=approval,
        direct_route_summary=q["direct_route_summary"],
    )
    return q, approval, ctx


async def test_the_spec_profile_keeps_15_tools_and_v2_lists_the_lifecycle(base_url: str) -> None:
    async with Client(base_url + "/mcp") as c:
        assert len((await c.list_tools()).tools) == 15
    async with Client(base_url + "/mcp/v2") as c:
        tools = (await c.list_tools()).tools
    assert {t.name for t in tools} == V2_TOOLS
    for t in tools:
        assert t.input_schema["additionalProperties"] is False, t.name


async def test_inputs_are_strict(base_url: str) -> None:
    async with Client(base_url + "/mcp/v2") as c:
        for name, args in (
            ("service_v2_capabilities", {"x": 1}),
            ("service_v2_quote", {**ONE_STEP, "slippage": 1}),
            ("service_v2_prepare", {**ONE_STEP, "caller_approved": True, "wallets": {}, "approval_v3": {}}),
            (
                "service_v2_session_get",
                {"session_token": "short", "session_id": "x", "verification_context": {}},
            ),
        ):
            err = error(await c.call_tool(name, args))
            assert err["reason_class"] == "invalid_arguments", (name, err)


async def test_prepare_is_verified_and_refuses_a_placeholder_fee_recipient(base_url: str) -> None:
    async with Client(base_url + "/mcp/v2") as c:
        wallets = {"base": WALLET_A}
        _q, approval, ctx = await quote_and_context(c, ONE_STEP, wallets, "one_shot")
        args = {**ONE_STEP, "caller_approved": True, "wallets": wallets, "approval_v3": approval}
        refused = error(await c.call_tool("service_v2_prepare", {**args, "verification_context": ctx}))
        assert refused["reason_class"] == "prepared_action_failed_verification"
        assert "fee_recipient_not_configured" in {f["code"] for f in refused["findings"]}
        # with the fee placeholder accepted, the bounds (modelled from the embedded snapshot) are refused
        fee_only = {**args, "verification_context": ctx, "accept_unconfigured_fee_recipient": True}
        refused = error(await c.call_tool("service_v2_prepare", fee_only))
        assert [f["code"] for f in refused["findings"]] == ["bounds_modelled_not_live"]
        assert "not live market data" in refused["findings"][0]["message"]
        out = ok(await c.call_tool("service_v2_prepare", {**fee_only, "accept_modelled_bounds": True}))
        assert out["action_verification"]["verified"] is True
        assert out["action_verification"]["bounds"]["accepted_as_modelled"] is True
        assert out["caller_wallet_handoff"]["bounds"]["modelled_not_live"] is True
        assert out["bundle"]["fee_recipient_configured"] is False
        assert out["caller_wallet_handoff"]["bundle_payload_sha256"] == out["bundle"]["payload_sha256"]
        assert_preflight_shown(out["bundle"]["preflight"], out["guidance"]["preflight"])


def assert_preflight_shown(preflight: dict[str, Any], shown: dict[str, Any]) -> None:
    """The handoff's guidance summarises the answer's preflight before signing: this server's RPC URLs lead
    nowhere, so every chain read is unread (named, not blocking) and the action is still returned."""
    assert preflight["checked"] is True and preflight["advice_only"] is True
    unread = [f["message"] for f in preflight["findings"] if f["code"] == "unknown"]
    assert unread and shown["unread"] == unread and shown["blocking"] == []
    assert shown["checked"] is True and shown["ok"] is True and shown["advice_only"] is True
    assert shown["summary"].startswith("preflight: nothing that was read blocks this route, but")


async def test_session_lifecycle_never_echoes_or_logs_the_token(
    base_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    secret = token()
    key = "mcp-v2-create-" + secrets.token_hex(4)
    caplog.set_level(logging.DEBUG)
    async with Client(base_url + "/mcp/v2") as c:
        wallets = {"base": WALLET_A, "arbitrum": WALLET_B}
        _q, approval, ctx = await quote_and_context(c, CCTP, wallets, "session", key)
        create = {
            **CCTP,
            "caller_approved": True,
            "wallets": wallets,
            "approval_v3": approval,
            "verification_context": ctx,
            "idempotency_key": key,
            "session_token": secret,
        }
        withheld = error(await c.call_tool("service_v2_session_create", create))  # modelled bounds
        assert withheld["reason_class"] == "prepared_action_failed_verification"
        assert [f["code"] for f in withheld["findings"]] == ["bounds_modelled_not_live"]
        assert withheld["action_withheld"] is True and withheld["session"]["session_id"]
        create["accept_modelled_bounds"] = True  # the embedded market: accepted explicitly from here on
        created = await c.call_tool("service_v2_session_create", create)
        answers = [created]
        s = ok(created)
        sid = s["session"]["session_id"]
        assert s["action_verification"]["verified"] is True and s["caller_wallet_handoff"]
        assert_preflight_shown(s["session"]["preflight"], s["guidance"]["preflight"])
        call = {
            "session_token": secret,
            "session_id": sid,
            "verification_context": ctx,
            "accept_modelled_bounds": True,
        }
        for view in ("session", "workflow", "receipt", "next_action"):
            answers.append(await c.call_tool("service_v2_session_get", {**call, "view": view}))
            assert ok(answers[-1])["session"]["session_id"] == sid
            if view in ("session", "next_action"):  # the views that show the action to sign
                read = ok(answers[-1])
                assert_preflight_shown(read["session"]["preflight"], read["guidance"]["preflight"])
        wrong = await c.call_tool("service_v2_session_get", {**call, "session_token": token()})
        answers.append(wrong)
        assert error(wrong)["reason_class"] == "session_not_found"
        refresh = await c.call_tool("service_v2_session_refresh", {**call, "idempotency_key": "refresh-0001"})
        answers.append(refresh)
        assert refresh.is_error is True  # the action has not expired: nothing to refresh
        cancelled = await c.call_tool(
            "service_v2_session_cancel", {**call, "idempotency_key": "cancel-00001"}
        )
        answers.append(cancelled)
        assert ok(cancelled)["session"]["status"] == "cancelled"
        observe = await c.call_tool(
            "service_v2_session_observe",
            {**call, "idempotency_key": "observe-0001", "transaction_hashes": ["0x" + "ab" * 32]},
        )
        answers.append(observe)
        assert observe.is_error is True
    for a in answers:
        assert secret not in a.content[0].text
    assert secret not in caplog.text


async def test_stdio_profile_v2(tmp_path: Path) -> None:
    exe = shutil.which("routequote", path=str(Path(sys.executable).parent))
    assert exe is not None
    env = {
        "ROUTEQUOTE_LOG_LEVEL": "warning",
        "ROUTEQUOTE_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path}/s.db",
    }
    async with Client(StdioServerParameters(command=exe, args=["mcp", "--profile", "v2"], env=env)) as c:
        assert {t.name for t in (await c.list_tools()).tools} == V2_TOOLS
        decision = await c.call_tool("service_v2_quote", ONE_STEP)  # stdio's v2 profile: the decision view
        view = ok(decision)["decision"]
        assert view["route"] == "base:USDC->base:ETH" and len(decision.content[0].text.encode()) <= 1024
        q = ok(await c.call_tool("service_v2_quote", {**ONE_STEP, "detail": "full"}))["quote"]
        assert q["route"]["input_base"] == q["estimated_input_base_decimal"]
