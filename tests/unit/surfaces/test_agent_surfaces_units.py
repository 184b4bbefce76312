"""Unit checks of the agent-surface helpers: A2A number handling, secret detection, legacy v1 translation,
MCP host allow-list and the in-process MCP server (official client, no HTTP)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from mcp import Client

from routequote.clock import FixedClock, SequentialIds
from routequote.config import Settings
from routequote.errors import (
    CapacityBusy,
    InvalidRequest,
    RateLimited,
    ReapprovalRequired,
    UpstreamUnavailable,
)
from routequote.market.snapshot import EmbeddedSnapshot
from routequote.service import RouteQuoteService, ServiceConfig
from routequote.storage.quotes import MemoryQuoteStore
from routequote.surfaces import guidance as g
from routequote.surfaces.a2a_operation import a2a_safe, narrow_numbers, quote_body, secret_keys
from routequote.surfaces.legacy import legacy_quote, legacy_quote_request, legacy_status
from routequote.surfaces.mcp_tools import allowed_hosts, build_server, core_tools


@pytest.fixture
def service() -> RouteQuoteService:
    return RouteQuoteService(
        EmbeddedSnapshot(None),
        MemoryQuoteStore(),
        FixedClock(datetime(2026, 11, 22, tzinfo=UTC)),
        SequentialIds(),
        ServiceConfig(),
    )


def test_narrow_and_safe_numbers() -> None:
    assert narrow_numbers({"a": 1000.0, "b": [2.5, 3.0], "c": "4"}) == {"a": 1000, "b": [2.5, 3], "c": "4"}
    assert isinstance(narrow_numbers(1000.0), int)
    assert narrow_numbers(True) is True
    big = 2**53 + 1
    assert a2a_safe({"x": [big, 2**53 - 1, -big, True, 1.5]}) == {
        "x": [str(big), 2**53 - 1, str(-big), True, 1.5]
    }


def test_secret_keys_are_found_by_name_anywhere() -> None:
    payload = {
        "fromChain": "solana",
        "wallets": {"solana": "pub"},
        "approvalV3": {"quote_id": "q"},
        "verificationContext": {
            "direct_route_summary": {"server_signing": False},
            "event_signer_public": None,
        },
        "extra": [{"seed_phrase": "x"}, {"PrivateKey": "y"}],
        "signedTransaction": "z",
    }
    assert secret_keys(payload, frozenset()) == [
        "extra[0].seed_phrase",
        "extra[1].PrivateKey",
        "signedTransaction",
    ]
    assert secret_keys({"sessionToken": "t"}, frozenset({"sessionToken"})) == []


def test_quote_body_maps_camel_case() -> None:
    assert quote_body({"fromChain": "a", "amountUsd": 1, "other": 2}) == {"from_chain": "a", "amount_usd": 1}


ADAPTER_V1 = {
    "from_chain": "solana",
    "from_token": "SOL",
    "to_chain": "base",
    "to_token": "ETH",
    "amount_usd": 7,
}


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ({"amount_usd": 10.5}, "wrong_type"),
        ({"amount_usd": "10"}, "string_not_number"),
        ({"amount_usd": 0}, "amount_below_minimum"),
        ({"amount_usd": 1001}, "amount_above_maximum"),
        ({"amount_usd": 10, "destination_chain": "robinhood"}, "unsupported_corridor"),
        ({"amount_usd": 10, "destination_chain": 1}, "wrong_type"),
        ({"amount_usd": 10, "other": "x"}, "unknown_field"),
        ({"amount_usd": 10, "to_token": "USDC"}, "missing_field"),  # a half-spelled corridor
        # the corridor spelled out (the public MCP adapter's v1 shape): as strict as the short shape
        ({**ADAPTER_V1, "destination_chain": "base"}, "unknown_field"),
        ({**ADAPTER_V1, "extra": 1}, "unknown_field"),
        ({**ADAPTER_V1, "to_token": "USDC"}, "unsupported_corridor"),
        ({**ADAPTER_V1, "from_token": "USDC"}, "unsupported_corridor"),
        ({**ADAPTER_V1, "from_chain": "base"}, "unsupported_corridor"),
        ({**ADAPTER_V1, "to_chain": "robinhood"}, "unsupported_corridor"),
        ({**ADAPTER_V1, "to_chain": 8453}, "wrong_type"),
        ({**ADAPTER_V1, "from_token": None}, "wrong_type"),
        ({**ADAPTER_V1, "amount_usd": 10.5}, "wrong_type"),
        ({**ADAPTER_V1, "amount_usd": 1001}, "amount_above_maximum"),
        ({k: v for k, v in ADAPTER_V1.items() if k != "from_chain"}, "missing_field"),
        ({}, "missing_field"),
        ([], "body_not_object"),
    ],
)
def test_legacy_request_rules(body: Any, reason: str) -> None:
    with pytest.raises(InvalidRequest) as exc:
        legacy_quote_request(body)
    assert exc.value.reason_class == reason


async def test_legacy_quote_and_status(service: RouteQuoteService) -> None:
    assert legacy_quote_request({"amount_usd": 5}) == {
        "from_chain": "solana",
        "from_token": "SOL",
        "to_chain": "base",
        "to_token": "ETH",
        "amount_usd": 5,
    }
    for chain in ("base", "arbitrum"):  # the adapter's spelled-out corridor: the same v2 request
        spelled = legacy_quote_request({**ADAPTER_V1, "to_chain": chain})
        assert spelled == legacy_quote_request({"amount_usd": 7, "destination_chain": chain})
    v1 = await legacy_quote(service, {"amount_usd": 1000.0, "destination_chain": "arbitrum"})
    assert v1["quote_id"] == v1["quote"]["quote_id"]
    assert v1["corridor"] == "solana:SOL->arbitrum:ETH" and v1["quote"]["intent"]["amount_usd"] == 1000
    assert v1["quote"]["intent"]["to"] == "arbitrum:ETH"
    status = legacy_status(service)
    assert [c["destination_chain"] for c in status["corridors"]] == ["base", "arbitrum"]
    assert all(c["quotable"] for c in status["corridors"])
    assert status["server_signing"] is False and status["server_submission"] is False


def test_error_codes() -> None:
    assert g.agent_error_code(RateLimited("x")) == "rate_limited"
    assert g.agent_error_code(UpstreamUnavailable("x")) == "upstream_unavailable"
    assert g.agent_error_code(CapacityBusy("x")) == "upstream_unavailable"
    assert g.agent_error_code(ReapprovalRequired("x")) == "reapproval_required"
    assert g.agent_error_code(InvalidRequest("x")) == "request_rejected"
    body = g.agent_error(RateLimited("rate_limit_exceeded", retry_after_seconds=99999))
    assert body["retry_after_seconds"] == 3600 and body["code"] == "rate_limited"


def test_allowed_hosts() -> None:
    hosts = allowed_hosts(
        Settings(port=9000, base_url="https://routes.example.com", allowed_hosts="a.example:*, b.example")
    )
    assert hosts[:3] == ["127.0.0.1:9000", "localhost:9000", "[::1]:9000"]
    assert {"routes.example.com", "a.example:*", "b.example"} <= set(hosts)
    assert "127.0.0.1:8080" not in hosts


async def test_in_process_server(service: RouteQuoteService) -> None:
    server = build_server(core_tools(service))
    async with Client(server) as c:
        names = [t.name for t in (await c.list_tools()).tools]
        assert names == ["service_status", "service_v2_capabilities", "service_v2_quote", "service_quote"]
        ok = await c.call_tool(
            "service_v2_quote",
            {
                "from_chain": "base",
                "from_token": "ETH",
                "to_chain": "base",
                "to_token": "USDC",
                "amount_usd": 50,
            },
        )
        assert ok.is_error is False and ok.structured_content["quote"]["intent"]["to"] == "base:USDC"
        bad = await c.call_tool("service_quote", {"amount_usd": 5, "destination_chain": "optimism"})
        assert bad.is_error is True and bad.structured_content["error"]["code"] == "request_rejected"


UUID_RE = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
WALLET = {"type": "string", "minLength": 32, "maxLength": 64}
SIG = {"type": "string", "minLength": 64, "maxLength": 128}
IDEM = {"type": "string", "minLength": 8, "maxLength": 128, "pattern": "^[A-Za-z0-9._:-]{8,128}$"}
TOKEN = {"type": "string", "minLength": 20, "maxLength": 512}
UUID = {"type": "string", "format": "uuid", "pattern": UUID_RE}
SESSION = {"access_token": TOKEN, "session_id": UUID}
# the spec's table, rows service_start_wallet_auth .. service_observe_destination (property -> constraints)
SPEC_SESSION_TOOLS: dict[str, tuple[dict[str, dict[str, Any]], set[str]]] = {
    "service_start_wallet_auth": ({"source_wallet": WALLET}, set()),
    "service_finish_wallet_auth": (
        {
            "challenge_id": UUID,
            "source_wallet": WALLET,
            "signature": SIG,
            "terms_version": {"type": "string", "minLength": 1, "maxLength": 160},
        },
        set(),
    ),
    "service_create_session": (
        {
            "access_token": TOKEN,
            "quote_id": UUID,
            "idempotency_key": IDEM,
            "source_wallet": WALLET,
            "destination_wallet": {"type": "string", "pattern": "^0x[0-9a-fA-F]{40}$"},
        },
        set(),
    ),
    "service_read_session": ({**SESSION, "view": {}}, {"view"}),
    "service_prepare_source_action": (SESSION, set()),
    "service_verify_source_receipt": ({**SESSION, "signature": SIG, "idempotency_key": IDEM}, set()),
    "service_prepare_cctp_action": (
        {**SESSION, "event_signer_public": WALLET, "idempotency_key": IDEM},
        set(),
    ),
    "service_observe_cctp": ({**SESSION, "burn_signature": SIG, "idempotency_key": IDEM}, set()),
    "service_prepare_destination_action": ({**SESSION, "idempotency_key": IDEM}, set()),
    "service_observe_destination": (
        {
            **SESSION,
            "transaction_hash": {"type": "string", "pattern": "^0x[0-9a-fA-F]{64}$"},
            "idempotency_key": IDEM,
        },
        set(),
    ),
}


@pytest.mark.parametrize("name", sorted(SPEC_SESSION_TOOLS))
def test_session_tool_inputs_match_the_spec_table(name: str) -> None:
    from routequote.surfaces.mcp_inputs import SESSION_TOOL_INPUTS, input_schema

    props, optional = SPEC_SESSION_TOOLS[name]
    schema = input_schema(SESSION_TOOL_INPUTS[name])
    assert schema["additionalProperties"] is False
    assert set(schema["properties"]) == set(props)
    assert set(schema["required"]) == set(props) - optional
    for prop, want in props.items():
        got = schema["properties"][prop]
        for key, value in want.items():
            assert got.get(key) == value, (name, prop, key)
    if name == "service_read_session":
        view = schema["properties"]["view"]
        enums = [x.get("enum") for x in view.get("anyOf", [view]) if "enum" in x]
        assert enums == [["session", "workflow", "receipt", "next_action"]]


def test_session_tool_validation_is_strict() -> None:
    from pydantic import ValidationError

    from routequote.surfaces.mcp_inputs import SESSION_TOOL_INPUTS

    model = SESSION_TOOL_INPUTS["service_observe_destination"]
    ok = {
        "access_token": "t" * 20,
        "session_id": "123e4567-e89b-42d3-a456-426614174000",
        "transaction_hash": "0x" + "ab" * 32,
        "idempotency_key": "key-0001",
    }
    model.model_validate(ok)
    for bad in (
        {**ok, "session_id": "not-a-uuid"},
        {**ok, "transaction_hash": "0x12"},
        {**ok, "access_token": "short"},
        {**ok, "extra": 1},
        {**ok, "idempotency_key": 12345678},
    ):
        with pytest.raises(ValidationError):
            model.model_validate(bad)


async def test_session_tool_defs_annotations() -> None:
    from routequote.surfaces.mcp_inputs import SESSION_TOOL_INPUTS
    from routequote.surfaces.mcp_tools import session_tool_def

    async def run(_: dict[str, Any]) -> dict[str, Any]:
        return {}

    hints = {n: session_tool_def(n, n, n, run).tool().annotations for n in SESSION_TOOL_INPUTS}
    assert hints["service_read_session"].read_only_hint is True
    assert hints["service_start_wallet_auth"].idempotent_hint is False
    assert (
        hints["service_observe_cctp"].idempotent_hint is True
        and hints["service_observe_cctp"].read_only_hint is False
    )


async def test_a2a_agent_dispatch_and_unexpected_failure() -> None:
    from routequote.surfaces.a2a_agent import RouteQuoteAgent
    from routequote.surfaces.a2a_operation import Operation

    async def boom(_: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("secret-ish detail that must not leak")

    async def echo(data: dict[str, Any]) -> dict[str, Any]:
        return {"got": data, "big": 2**60}

    agent = RouteQuoteAgent(
        {"quote": Operation("quote", frozenset({"x"}), echo), "boom": Operation("boom", frozenset(), boom)}
    )
    assert await agent.handle([{"x": 3.0}]) == {"got": {"x": 3}, "big": str(2**60)}
    failed = await agent.handle([{"operation": "boom"}])
    assert failed == {
        "error": {"code": "internal_error", "error": "internal_error", "reason_class": "internal_error"}
    }
    assert (await agent.handle([{"y": 1}]))["error"]["reason_class"] == "unknown_field"
    assert (await agent.handle([]))["error"]["reason_class"] == "one_data_part_required"
    assert (await agent.handle(["text"]))["error"]["reason_class"] == "one_data_part_required"
