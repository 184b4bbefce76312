"""One whole v2 session through the caller-side MCP (`routequote mcp --remote`) on local chains: the agent
quotes, creates the session by quote_id alone, hands the wallet handoff's eth_sendTransaction requests to its
wallet (the test's throwaway key signs exactly those), observes the hashes and reads the receipt. The caller
side runs in-process with the official MCP client (the stdio runs are tests/integration/test_caller_mcp.py)
because its verifier must know the local chains' contract addresses. Chains and app: test_sessions_anvil.py."""

from __future__ import annotations

from typing import Any

import pytest
from _evm import sign_and_send
from _session_world import ETH_USDC, World, catch_up, eth, hashes, usd, wallet
from mcp import Client
from test_sessions_anvil import w, world

from routequote.caller_mcp import CallerSide, RemoteOptions, caller_side_tools, remote_client
from routequote.surfaces.mcp_tools import build_server

__all__ = ["w", "world"]  # the chain fixtures of test_sessions_anvil.py
pytestmark = pytest.mark.chain


def ok(result: Any) -> dict[str, Any]:
    assert result.is_error is False, result.structured_content
    out: dict[str, Any] = result.structured_content
    return out


def wallet_requests(handoff: dict[str, Any]) -> list[dict[str, Any]]:
    """What an EIP-1193 wallet receives, as the transactions it signs."""
    assert handoff["kind"] == "eip1193_eth_sendTransaction"
    txs = []
    for request in handoff["requests"]:
        assert request["method"] == "eth_sendTransaction"
        (tx,) = request["params"]
        txs.append({**tx, "value": int(tx["value"], 16), "chainId": int(tx["chainId"], 16)})
    return txs


async def test_a_whole_session_through_the_caller_side_mcp(w: World) -> None:
    who, key = wallet(w)
    src, dst = ETH_USDC.split("->")
    intent = {
        "from_chain": src.split(":")[0],
        "from_token": src.split(":")[1],
        "to_chain": dst.split(":")[0],
        "to_token": dst.split(":")[1],
        "amount_usd": 100,
    }
    # local chains: a placeholder fee recipient, and bounds modelled from the embedded snapshot
    options = RemoteOptions(accept_modelled_bounds=True, accept_unconfigured_fee_recipient=True)
    client = remote_client(w.api.url, options, deployments=w.deployments)
    try:
        async with Client(build_server(caller_side_tools(CallerSide(client)))) as c:
            view = ok(await c.call_tool("service_v2_quote", intent))["decision"]
            created = ok(
                await c.call_tool(
                    "service_v2_session_create",
                    {"caller_approved": True, "quote_id": view["quote_id"], "wallets": {"base": who}},
                )
            )
            assert created["session"]["status"] == "action_ready"
            assert created["action_verification"]["verified"] is True
            sid = created["session"]["session_id"]

            before = usd(w.base, who), eth(w.base, who)
            catch_up(w.base)
            receipts = sign_and_send(w.base, key, wallet_requests(created["caller_wallet_handoff"]))
            after = usd(w.base, who), eth(w.base, who)
            done = ok(
                await c.call_tool(
                    "service_v2_session_observe", {"session_id": sid, "transaction_hashes": hashes(receipts)}
                )
            )["session"]
            assert done["status"] == "complete" and done["next_operation"] == "none"
            receipt = ok(await c.call_tool("service_v2_session_get", {"session_id": sid, "view": "receipt"}))
            route = receipt["session"]["receipt"]["route"]
            assert route["complete"] is True and int(route["actual_output_base"]) == after[0] - before[0] > 0
            assert after[1] < before[1]
    finally:
        await client.aclose()
