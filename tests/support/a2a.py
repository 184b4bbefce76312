"""What a careful A2A caller does with DataParts (shared by the A2A tests)."""

from __future__ import annotations

import uuid
from typing import Any

from a2a.client import Client
from a2a.helpers import get_data_parts, new_data_part
from a2a.types.a2a_pb2 import Message, Role, SendMessageRequest

from routequote.verify import verification_context
from tests.unit.actions.support import intent_for, wallets_for

CAMEL = {
    "from_chain": "fromChain",
    "from_token": "fromToken",
    "to_chain": "toChain",
    "to_token": "toToken",
    "amount_usd": "amountUsd",
}


def narrow(v: Any) -> Any:
    """DataPart numbers are doubles: whole numbers back to int before comparing or hashing."""
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, dict):
        return {k: narrow(x) for k, x in v.items()}
    if isinstance(v, list):
        return [narrow(x) for x in v]
    return v


def new_session_token() -> str:
    """What a careful caller generates locally: 32 CSPRNG bytes, base64url without padding (43 characters)."""
    import base64
    import secrets

    return base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()


async def send(client: Client, payload: dict[str, Any]) -> dict[str, Any]:
    msg = Message(role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=[new_data_part(payload)])
    replies = [ev async for ev in client.send_message(SendMessageRequest(message=msg))]
    assert len(replies) == 1 and replies[0].HasField("message")
    (data,) = get_data_parts(replies[0].message.parts)
    return narrow(data)


class Caller:
    """A careful agent: quotes, approves the session mode, keeps its token and verification context."""

    def __init__(self, client: Client, route: str, amount: int = 100) -> None:
        self.client, self.route = client, route
        self.intent = intent_for(route, amount)
        self.wallets = wallets_for(route)
        self.token = new_session_token()
        self.key = "a2a-s-" + uuid.uuid4().hex[:16]
        # the suite's servers price from the embedded snapshot: their actions' bounds are modelled, and a
        # caller accepts that explicitly (the refusal without it: test_a2a_sessions, test_a2a_prepare)
        self.accept_modelled_bounds = True

    async def quote(self) -> dict[str, Any]:
        reply = await send(self.client, {**{CAMEL[k]: v for k, v in self.intent.items()}, "detail": "full"})
        self.q: dict[str, Any] = reply["quote"]
        self.approval = self.approval_for("session")
        self.ctx = self.context(self.approval)
        return self.q

    def approval_for(self, mode: str, **over: Any) -> dict[str, Any]:
        c = self.q["continuation_v3"]
        return {
            "version": c["approval_v3_version"],
            "quote_id": self.q["quote_id"],
            "quote_fingerprint": c["quote_fingerprint"],
            "selection_status": "selected",
            "selected_mode": mode,
            "maximum_input_base": c["input_base_bounds"]["maximum"],
            "minimum_output_base": c["minimum_output_base"],
            "direct_route_summary_sha256": c["direct_route_summary_sha256"],
            "idempotency_key": self.key,
            **over,
        }

    def context(self, approval: dict[str, Any], **over: Any) -> dict[str, Any]:
        args = {
            "intent": self.intent,
            "wallets": self.wallets,
            "event_signer_public": None,
            "approval_v3": approval,
            "direct_route_summary": self.q["direct_route_summary"],
            **over,
        }
        return verification_context(**args)

    def create_message(self, **over: Any) -> dict[str, Any]:
        msg: dict[str, Any] = {
            "operation": "session_create",
            "callerApproved": True,
            **{CAMEL[k]: v for k, v in self.intent.items()},
            "wallets": self.wallets,
            "approvalV3": self.approval,
            "idempotencyKey": self.key,
            "sessionToken": self.token,
            "verificationContext": self.ctx,
            "acceptModelledBounds": self.accept_modelled_bounds,
        }
        msg.update(over)
        return {k: v for k, v in msg.items() if v is not None}

    def call(self, operation: str, **over: Any) -> dict[str, Any]:
        msg: dict[str, Any] = {
            "operation": operation,
            "sessionToken": self.token,
            "sessionId": self.sid,
            "verificationContext": self.ctx,
            "acceptModelledBounds": self.accept_modelled_bounds,
        }
        msg.update(over)
        return {k: v for k, v in msg.items() if v is not None}

    async def create(self) -> dict[str, Any]:
        await self.quote()
        reply = await send(self.client, self.create_message())
        assert set(reply) == {"session", "guidance", "action_verification", "caller_wallet_handoff"}, reply
        self.sid: str = reply["session"]["session_id"]
        return reply

    async def get(self, view: str | None = None) -> dict[str, Any]:
        return await send(self.client, self.call("session_get", view=view))
