"""One whole v2 session through MCP alone: the official MCP Python client on /mcp/v2 quotes, creates the
session with its own approval and verification context, reads it, observes the transactions the test's
throwaway wallet signed and sent to anvil exactly as the session returned them, and reads the receipt. The
chains, contracts and app are tests/e2e/test_sessions_anvil.py's (its fixtures are reused)."""

from __future__ import annotations

import base64
import secrets
from typing import Any

import pytest
from _session_world import ETH_USDC, World, eth, hashes, submit, usd, wallet
from mcp import Client
from test_sessions_anvil import w, world
from tests.support.json_safety import assert_javascript_safe

from routequote.client.approval import approval_for
from routequote.client.models import Quote
from routequote.verify import verification_context

__all__ = ["w", "world"]  # the chain fixtures of test_sessions_anvil.py
pytestmark = pytest.mark.chain


def ok(result: Any, token: str) -> dict[str, Any]:
    assert result.is_error is False, result.structured_content
    assert token not in result.content[0].text  # the caller's capability is never echoed
    out: dict[str, Any] = result.structured_content
    assert_javascript_safe(out)
    return out


async def test_a_whole_v2_session_through_mcp_alone(w: World) -> None:
    who, key = wallet(w)
    token = base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()
    idem = "mcp-v2-" + secrets.token_hex(6)
    src, dst = ETH_USDC.split("->")
    intent = {
        "from_chain": src.split(":")[0],
        "from_token": src.split(":")[1],
        "to_chain": dst.split(":")[0],
        "to_token": dst.split(":")[1],
        "amount_usd": 100,
    }
    wallets = {"base": who}
    async with Client(w.api.url + "/mcp/v2") as c:
        q = ok(await c.call_tool("service_v2_quote", {**intent, "detail": "full"}), token)["quote"]
        approval = approval_for(Quote.from_raw(q), "session", idempotency_key=idem)
        ctx = verification_context(
            intent=intent,
            wallets=wallets,
            event_signer_public=None,
            approval_v3=approval,
            direct_route_summary=q["direct_route_summary"],
        )
        created = ok(
            await c.call_tool(
                "service_v2_session_create",
                {
                    **intent,
                    "caller_approved": True,
                    "wallets": wallets,
                    "approval_v3": approval,
                    "verification_context": ctx,
                    "idempotency_key": idem,
                    "session_token": token,
                    "accept_modelled_bounds": True,  # a local chain priced from the embedded snapshot
                },
            ),
            token,
        )
        session = created["session"]
        assert session["status"] == "action_ready" and created["action_verification"]["verified"] is True
        assert created["caller_wallet_handoff"]["bounds"]["modelled_not_live"] is True
        call = {
            "session_token": token,
            "session_id": session["session_id"],
            "verification_context": ctx,
            "accept_modelled_bounds": True,
        }
        read = ok(await c.call_tool("service_v2_session_get", call), token)["session"]
        assert read["current_action"] == session["current_action"]

        before = usd(w.base, who), eth(w.base, who)
        receipts = submit(w.base, key, session)  # the wallet signs exactly what MCP returned
        after = usd(w.base, who), eth(w.base, who)
        done = ok(
            await c.call_tool(
                "service_v2_session_observe",
                {
                    **call,
                    "idempotency_key": "observe-" + secrets.token_hex(4),
                    "transaction_hashes": hashes(receipts),
                },
            ),
            token,
        )["session"]
        assert done["status"] == "complete" and done["next_operation"] == "none"
        receipt = ok(await c.call_tool("service_v2_session_get", {**call, "view": "receipt"}), token)
        route = receipt["session"]["receipt"]["route"]
        assert route["complete"] is True and int(route["actual_output_base"]) == after[0] - before[0] > 0
        assert after[1] < before[1]
