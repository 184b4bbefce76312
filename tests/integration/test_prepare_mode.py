"""Prepare is the one_shot mode (issue 22 item 3): a `session` approval is refused by every surface that
prepares outside a session (REST /v2/prepare and A2A's prepare skill), over real HTTP, before anything is
built or stored. v1 and MCP have no one-shot prepare: their prepare tools act inside a session."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.helpers import get_data_parts, new_data_part
from a2a.types.a2a_pb2 import Message, Role, SendMessageRequest
from tests.support.a2a import CAMEL, narrow
from tests.unit.actions.support import approval_for, intent_for, wallets_for

ROUTES = ("base:USDC->base:ETH", "base:ETH->arbitrum:ETH")  # one step (one_shot allowed) and multi-step


def _retained(app: Any) -> tuple[int, int]:
    return app.state.prepare.idempotency.retained(), app.state.service.quotes.retained()


async def _rest(url: str, route: str) -> tuple[int, str]:
    async with httpx.AsyncClient(base_url=url, timeout=30) as http:
        q = (await http.post("/v2/quote", json=intent_for(route, 100))).json()
        body = {
            "caller_approved": True,
            **intent_for(route, 100),
            "wallets": wallets_for(route),
            "approval_v3": approval_for(q, key="k-" + uuid.uuid4().hex[:12], selected_mode="session"),
        }
        r = await http.post("/v2/prepare", json=body)
        assert "bundle" not in r.text
        return r.status_code, r.json()["reason_class"]


async def _a2a(url: str, route: str) -> tuple[int, str]:
    async with httpx.AsyncClient(timeout=30) as http:
        card = await A2ACardResolver(http, url).get_agent_card()
        client = ClientFactory(ClientConfig(streaming=False, httpx_client=http)).create(card)

        async def send(payload: dict[str, Any]) -> dict[str, Any]:
            msg = Message(role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=[new_data_part(payload)])
            replies = [ev async for ev in client.send_message(SendMessageRequest(message=msg))]
            (data,) = get_data_parts(replies[0].message.parts)
            out: dict[str, Any] = narrow(data)
            return out

        intent = intent_for(route, 100)
        q = (await send({**{CAMEL[k]: v for k, v in intent.items()}, "detail": "full"}))["quote"]
        approval = approval_for(q, key="k-" + uuid.uuid4().hex[:12], selected_mode="session")
        reply = await send(
            {
                "operation": "prepare",
                "callerApproved": True,
                **{CAMEL[k]: v for k, v in intent.items()},
                "wallets": wallets_for(route),
                "approvalV3": approval,
            }
        )
        assert "bundle" not in reply
        return 400 if reply["error"]["code"] == "request_rejected" else 0, reply["error"]["reason_class"]


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("surface", ["rest_v2", "a2a"])
async def test_prepare_refuses_a_session_approval(served: tuple[str, Any], surface: str, route: str) -> None:
    url, app = served
    before = _retained(app)[0]
    status, reason = await (_rest if surface == "rest_v2" else _a2a)(url, route)
    assert (status, reason) == (400, "approval_v3_mode_mismatch")
    assert _retained(app)[0] == before  # no idempotency record: nothing was built
