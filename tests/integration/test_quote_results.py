"""Quote results an LLM can afford, per endpoint, with the official MCP and a2a-sdk clients over real HTTP:
the decision view by default (within 1 KB), the full quote one argument away with its hashes unchanged
(recomputed independently), and tool descriptions that say the nine endpoints and the rules."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.helpers import get_data_parts, new_data_part
from a2a.types.a2a_pb2 import Message, Role, SendMessageRequest
from mcp import Client
from tests.support import independent_hash as ih

from routequote.core.assets import ENDPOINT_KEYS

ARGS = {
    "from_chain": "solana",
    "from_token": "SOL",
    "to_chain": "arbitrum",
    "to_token": "USDC",
    "amount_usd": 250,
}
A2A_ARGS = {
    "fromChain": "solana",
    "fromToken": "SOL",
    "toChain": "arbitrum",
    "toToken": "USDC",
    "amountUsd": 250,
}
BOUND = 1024


def _bytes(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def _hashes_verify(quote: dict[str, Any]) -> None:
    cont = quote["continuation_v3"]
    assert cont["quote_payload_sha256"] == ih.payload_sha256(quote)
    assert cont["direct_route_summary_sha256"] == ih.summary_sha256(quote)
    assert cont["quote_fingerprint"] == ih.fingerprint(quote)


def _says_the_rules(description: str) -> None:
    assert all(key in description for key in ENDPOINT_KEYS), description
    assert "identity route is refused" in description and "1..1000" in description


async def test_mcp_v2_decision_by_default_full_on_request(base_url: str, http: httpx.Client) -> None:
    async with Client(base_url + "/mcp/v2") as c:
        listed = {t.name: t for t in (await c.list_tools()).tools}
        quote_tool = listed["service_v2_quote"]
        _says_the_rules(quote_tool.description or "")
        assert quote_tool.input_schema["properties"]["detail"]["enum"] == ["decision", "full"]

        decision = await c.call_tool("service_v2_quote", ARGS)
        assert decision.is_error is False
        view = decision.structured_content["decision"]
        assert json.loads(decision.content[0].text) == decision.structured_content
        assert (
            len(decision.content[0].text.encode()) <= BOUND and _bytes(decision.structured_content) <= BOUND
        )
        assert view["route"] == "solana:SOL->arbitrum:USDC" and view["full"] == 'detail "full"'

        full = await c.call_tool("service_v2_quote", {**ARGS, "detail": "full"})
        quote = full.structured_content["quote"]
        _hashes_verify(quote)
        rest = http.post("/v2/quote", json=ARGS).json()
        assert set(quote) == set(rest) and quote["direct_route_summary"] == rest["direct_route_summary"]
        assert _bytes(full.structured_content) > 8 * BOUND

        bad = await c.call_tool("service_v2_quote", {**ARGS, "detail": "brief"})
        assert bad.is_error is True and bad.structured_content["error"]["reason_class"] == "invalid_arguments"
        assert "brief" not in bad.content[0].text


async def test_mcp_spec_profile_keeps_its_inputs_and_reads_affordably(base_url: str) -> None:
    async with Client(base_url + "/mcp") as c:
        listed = {t.name: t for t in (await c.list_tools()).tools}
        _says_the_rules(listed["service_v2_quote"].description or "")
        assert set(listed["service_v2_quote"].input_schema["properties"]) == set(ARGS)  # no `detail` here
        result = await c.call_tool("service_v2_quote", ARGS)
        text = result.content[0].text
        assert len(text.encode()) <= BOUND
        quote = result.structured_content["quote"]
        _hashes_verify(quote)  # the full quote in structuredContent, unchanged
        view = json.loads(text)["decision"]
        assert view["quote_id"] == quote["quote_id"]
        assert view["next"]["quote_fingerprint"] == quote["continuation_v3"]["quote_fingerprint"]
        assert view["receive"]["minimum_base"] == quote["continuation_v3"]["minimum_output_base"]


async def test_a2a_decision_by_default_full_on_request(base_url: str) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        card = await A2ACardResolver(http, base_url).get_agent_card()
        skill = next(s for s in card.skills if s.id == "quote-cross-chain-route")
        assert (
            all(key in skill.description for key in ENDPOINT_KEYS) and "identity route" in skill.description
        )
        client = ClientFactory(ClientConfig(streaming=False, httpx_client=http)).create(card)

        async def send(data: dict[str, Any]) -> dict[str, Any]:
            msg = Message(role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=[new_data_part(data)])
            (reply,) = [ev async for ev in client.send_message(SendMessageRequest(message=msg))]
            (part,) = get_data_parts(reply.message.parts)
            return dict(part)

        decision = await send(A2A_ARGS)
        assert set(decision) == {"decision"} and _bytes(decision) <= BOUND
        full = await send({**A2A_ARGS, "detail": "full"})
        assert set(full) == {"quote", "guidance"}
        assert full["quote"]["quote_id"] != decision["decision"]["quote_id"]  # each call is a fresh quote
        refused = await send({**A2A_ARGS, "detail": 3})
        assert refused["error"]["reason_class"] == "invalid_detail"
