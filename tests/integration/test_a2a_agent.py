"""The A2A agent over real HTTP with the official a2a-sdk client: the card, the quote skill, refusals."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.helpers import get_data_parts, new_data_part, new_text_part
from a2a.types.a2a_pb2 import Message, Part, Role, SendMessageRequest
from tests.support import independent_hash as ih
from tests.support.server import free_port, running_server
from tests.support.spec_schema import QUOTE_RESPONSE, validate, walk_server_flags

from routequote.app import create_app
from routequote.config import Settings

QUOTE = {"fromChain": "solana", "fromToken": "SOL", "toChain": "base", "toToken": "ETH", "amountUsd": 1000}
CODES = {"rate_limited", "upstream_unavailable", "request_rejected", "reapproval_required"}


@pytest.fixture
async def client(served: tuple[str, Any]) -> AsyncIterator[Client]:
    url, _ = served
    async with httpx.AsyncClient(timeout=30) as http:
        card = await A2ACardResolver(http, url).get_agent_card()
        yield ClientFactory(ClientConfig(streaming=False, httpx_client=http)).create(card)


async def send(client: Client, *parts: Part) -> dict[str, Any]:
    request = SendMessageRequest(
        message=Message(role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=list(parts))
    )
    replies = [ev async for ev in client.send_message(request)]
    assert len(replies) == 1 and replies[0].HasField("message")
    message = replies[0].message
    assert message.role == Role.ROLE_AGENT and len(message.parts) == 1
    assert message.parts[0].media_type == "application/json"
    (data,) = get_data_parts(message.parts)
    return data


def task_count(app: Any) -> int:
    return sum(len(v) for v in app.state.a2a.task_store._impl.tasks.values())


async def test_agent_card(served: tuple[str, Any]) -> None:
    url, _ = served
    async with httpx.AsyncClient(base_url=url) as http:
        card = (await http.get("/.well-known/agent-card.json")).json()
        alias = (await http.get("/.well-known/agent.json")).json()
    assert card == alias
    assert card["version"] == "1.7.0"
    assert card["supportedInterfaces"] == [
        {"url": f"{url}/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
    ]
    assert card["capabilities"] == {"streaming": False, "pushNotifications": False}
    assert "extensions" not in card["capabilities"] and "extendedAgentCard" not in card["capabilities"]
    assert "securitySchemes" not in card and "securityRequirements" not in card
    assert card["defaultInputModes"] == ["application/json"] == card["defaultOutputModes"]
    skills = {s["id"]: s for s in card["skills"]}
    # the default app mounts prepare and the session engine: exactly three skills, in this order
    assert list(skills) == ["quote-cross-chain-route", "prepare-first-unsigned-action", "session-lifecycle"]
    for skill in skills.values():
        assert skill["description"] and skill["examples"]
        assert skill["inputModes"] == ["application/json"] == skill["outputModes"]


async def test_official_client_resolves_card_and_quotes(client: Client, served: tuple[str, Any]) -> None:
    url, app = served
    before = task_count(app)
    data = await send(client, new_data_part({**QUOTE, "detail": "full"}))
    assert set(data) == {"quote", "guidance"}
    quote = data["quote"]
    # DataPart numbers are doubles: narrow whole numbers back before schema checks; big ints are strings
    assert quote["intent"]["amount_usd"] == 1000
    big = quote["continuation_v3"]["minimum_output_base"]
    assert isinstance(big, str) and int(big) > 2**53
    summary = quote["direct_route_summary"]
    assert summary["steps"][-1]["minimum_output_base"] == big
    assert quote["route"]["minimum_output_base"] == big  # an int beyond 2**53 travels as its decimal string
    narrowed = _narrow(quote)
    narrowed["route"]["minimum_output_base"] = int(big)
    validate(narrowed, QUOTE_RESPONSE)
    # the payload hash substitutes exactly these decimal strings, so it still verifies
    assert quote["continuation_v3"]["quote_payload_sha256"] == ih.payload_sha256(narrowed)
    assert walk_server_flags(data) == []
    g = data["guidance"]
    assert g["selection_status"] == "unranked_candidate" and g["automatic_selection_forbidden"] is True
    assert g["transaction_signed"] is False and g["transaction_submitted"] is False
    assert task_count(app) == before  # an immediate message reply: no task record

    explicit = await send(client, new_data_part({"operation": "quote", **QUOTE, "amountUsd": 12.5}))
    assert explicit["decision"]["pay"]["amount_usd"] == 12.5  # the decision view by default


def _narrow(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _narrow(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_narrow(v) for v in value]
    return value


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        ({**QUOTE, "toChain": "solana", "toToken": "SOL"}, "identity_route"),
        ({**QUOTE, "toToken": "USDG"}, "token_not_on_chain"),
        ({**QUOTE, "amountUsd": 1000.5}, "amount_above_maximum"),
        ({**QUOTE, "amountUsd": "100"}, "string_not_number"),
        ({k: v for k, v in QUOTE.items() if k != "fromChain"}, "missing_field"),
        ({**QUOTE, "from_chain": "solana"}, "unknown_field"),
        ({**QUOTE, "privateKey": "redacted"}, "secret_field_rejected"),
        ({**QUOTE, "wallet": {"mnemonic": "redacted"}}, "secret_field_rejected"),
        ({**QUOTE, "operation": "observe_output"}, "operation_unsupported"),
        ({**QUOTE, "operation": "session_create"}, "caller_approval_required"),
        ({**QUOTE, "operation": 7}, "operation_unsupported"),
    ],
)
async def test_quote_refusals_are_structured(
    client: Client, served: tuple[str, Any], payload: dict[str, Any], reason: str
) -> None:
    _, app = served
    before = (task_count(app), app.state.service.quotes.retained())
    data = await send(client, new_data_part(payload))
    assert set(data) == {"error"}
    err = data["error"]
    assert err["code"] == "request_rejected" and err["reason_class"] == reason, err
    assert "redacted" not in str(data)
    assert (task_count(app), app.state.service.quotes.retained()) == before


async def test_message_must_be_exactly_one_data_part(client: Client) -> None:
    for parts in ((new_text_part("quote SOL to base"),), (new_data_part(QUOTE), new_data_part(QUOTE))):
        data = await send(client, *parts)
        assert data["error"]["reason_class"] == "one_data_part_required"


def test_wire_request_and_version_header(served: tuple[str, Any]) -> None:
    url, _ = served
    body = {
        "jsonrpc": "2.0",
        "id": "1",
        "method": "SendMessage",
        "params": {
            "message": {
                "role": "ROLE_USER",
                "messageId": "m1",
                "parts": [{"data": QUOTE, "mediaType": "application/json"}],
            }
        },
    }
    with httpx.Client(base_url=url, timeout=30) as http:
        ok = http.post("/a2a", json=body, headers={"A2A-Version": "1.0"}).json()
        data = ok["result"]["message"]["parts"][0]["data"]
        assert data["decision"]["route"].startswith("solana:SOL->")
        old = http.post("/a2a", json=body).json()  # no version header: treated as 0.3, which is not served
        assert old["error"]["code"] == -32009


async def test_rate_limited_and_upstream_errors() -> None:
    from routequote.market.failing import FailingMarket

    for kw, code, reason in (
        ({"rate_limit": "2/minute"}, "rate_limited", "rate_limit_exceeded"),
        ({"market": FailingMarket("down")}, "upstream_unavailable", "market_source_unavailable"),
    ):
        port = free_port()
        market = kw.pop("market", None)
        settings = Settings(port=port, **{"rate_limit": "off", **kw})
        with running_server(create_app(settings, market=market), port) as url:
            async with httpx.AsyncClient(timeout=30) as http:
                card = await A2ACardResolver(http, url).get_agent_card()
                client = ClientFactory(ClientConfig(streaming=False, httpx_client=http)).create(card)
                replies = [await send(client, new_data_part(QUOTE)) for _ in range(3)]
        err = replies[-1]["error"]
        assert err["code"] == code and err["reason_class"] == reason
        assert 1 <= err["retry_after_seconds"] <= 3600
