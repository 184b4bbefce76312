"""The MCP surface over real HTTP (and stdio) with the official MCP Python client.

The expected tool table below is written from the spec's "Tool-protocol adapter" section, not from our
own models: names, inputs, enums and bounds.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from tests.support import independent_hash as ih
from tests.support.observable import OBSERVABLE
from tests.support.server import free_port, running_server
from tests.support.spec_schema import QUOTE_RESPONSE, validate, walk_server_flags

from routequote.app import create_app
from routequote.config import Settings
from routequote.market.failing import FailingMarket

CHAINS = ["solana", "base", "arbitrum", "robinhood"]
TOKENS = ["SOL", "ETH", "USDC", "USDG"]
NONE: dict[str, Any] = {"properties": {}, "required": []}
# the spec's table (tools this build serves); bounds as JSON Schema
SPEC_TOOLS: dict[str, dict[str, Any]] = {
    "service_status": NONE,
    "service_v2_capabilities": NONE,
    "service_v2_quote": {
        "properties": {
            "from_chain": {"type": "string", "enum": CHAINS},
            "from_token": {"type": "string", "enum": TOKENS},
            "to_chain": {"type": "string", "enum": CHAINS},
            "to_token": {"type": "string", "enum": TOKENS},
            "amount_usd": {"type": "number", "minimum": 1, "maximum": 1000},
        },
        "required": ["from_chain", "from_token", "to_chain", "to_token", "amount_usd"],
    },
    "service_quote": {
        "properties": {
            "amount_usd": {"type": "integer", "minimum": 1, "maximum": 1000},
            "destination_chain": {"type": "string", "enum": ["base", "arbitrum"], "default": "base"},
        },
        "required": ["amount_usd"],
    },
}
UUID = {
    "type": "string",
    "pattern": "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$",
}
WALLET = {"type": "string", "minLength": 32, "maxLength": 64}
SIG = {"type": "string", "minLength": 64, "maxLength": 128}
KEY = {"type": "string", "minLength": 8, "maxLength": 128}
TOKEN = {"type": "string", "minLength": 20, "maxLength": 512}


def _tool(required: dict[str, Any], optional: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"properties": {**required, **(optional or {})}, "required": list(required)}


SESSION = {"access_token": TOKEN, "session_id": UUID}
# the spec's session tools (table rows service_start_wallet_auth .. service_observe_destination)
SPEC_TOOLS.update(
    {
        "service_start_wallet_auth": _tool({"source_wallet": WALLET}),
        "service_finish_wallet_auth": _tool(
            {
                "challenge_id": UUID,
                "source_wallet": WALLET,
                "signature": SIG,
                "terms_version": {"type": "string", "minLength": 1, "maxLength": 160},
            }
        ),
        "service_create_session": _tool(
            {
                "access_token": TOKEN,
                "quote_id": UUID,
                "idempotency_key": KEY,
                "source_wallet": WALLET,
                "destination_wallet": {"type": "string", "pattern": "^0x[0-9a-fA-F]{40}$"},
            }
        ),
        "service_read_session": _tool(SESSION, {"view": {}}),
        "service_prepare_source_action": _tool(SESSION),
        "service_verify_source_receipt": _tool({**SESSION, "signature": SIG, "idempotency_key": KEY}),
        "service_prepare_cctp_action": _tool(
            {**SESSION, "event_signer_public": WALLET, "idempotency_key": KEY}
        ),
        "service_observe_cctp": _tool({**SESSION, "burn_signature": SIG, "idempotency_key": KEY}),
        "service_prepare_destination_action": _tool({**SESSION, "idempotency_key": KEY}),
        "service_observe_destination": _tool(
            {
                **SESSION,
                "transaction_hash": {"type": "string", "pattern": "^0x[0-9a-fA-F]{64}$"},
                "idempotency_key": KEY,
            }
        ),
    }
)
VIEWS = ["session", "workflow", "receipt", "next_action"]
READ_ONLY_IDEMPOTENT = {
    "service_status",
    "service_manifest",
    "service_v2_capabilities",
    "service_read_session",
}
QUOTE_TOOLS = {"service_v2_quote", "service_quote"}
QUOTE_ARGS = {
    "from_chain": "solana",
    "from_token": "SOL",
    "to_chain": "base",
    "to_token": "USDC",
    "amount_usd": 1000,
}
SECRET = "sk-DO-NOT-ECHO-3f1c9a77e2b04d5e"


def _app(port: int, **kw: Any) -> Any:
    market = kw.pop("market", None)
    settings = Settings(port=port, **{"rate_limit": "off", **OBSERVABLE, **kw})
    return create_app(settings, market=market)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    port = free_port()
    with running_server(_app(port, allowed_hosts="routes.example.test"), port) as url:
        yield url


def text_json(result: Any) -> Any:
    assert len(result.content) == 1 and result.content[0].type == "text"
    return json.loads(result.content[0].text)


def error_of(result: Any) -> dict[str, Any]:
    assert result.is_error is True
    assert text_json(result) == result.structured_content
    err = result.structured_content["error"]
    assert err["code"] in {"rate_limited", "upstream_unavailable", "request_rejected", "reapproval_required"}
    assert err["reason_class"]
    return err


async def test_list_tools_match_spec_table(server: str) -> None:
    async with Client(server + "/mcp") as c:
        assert c.server_info is not None and c.server_info.version == "0.4.0"
        caps = c.server_capabilities
        assert caps.tools is not None and caps.resources is None and caps.prompts is None
        listed = (await c.list_tools()).tools
    names = [t.name for t in listed]
    # exactly the spec's 15 tools (service_manifest with the signed manifest)
    assert sorted(names) == sorted([*SPEC_TOOLS, "service_manifest"]) and len(names) == 15
    for tool in listed:
        schema = tool.input_schema
        assert schema["type"] == "object" and schema["additionalProperties"] is False, tool.name
        expected = SPEC_TOOLS.get(tool.name, NONE)
        assert sorted(schema.get("required", [])) == sorted(expected["required"]), tool.name
        assert set(schema["properties"]) == set(expected["properties"]), tool.name
        for prop, want in expected["properties"].items():
            got = schema["properties"][prop]
            for key, value in want.items():
                assert got.get(key) == value, (tool.name, prop, key)
        if tool.name == "service_read_session":
            view = schema["properties"]["view"]
            assert VIEWS in [v.get("enum") for v in view.get("anyOf", [view])], view
            assert "view" not in schema.get("required", [])
        ann = tool.annotations
        assert ann is not None
        mutating = (
            tool.name in SPEC_TOOLS
            and tool.name.startswith("service_")
            and tool.name not in (READ_ONLY_IDEMPOTENT | QUOTE_TOOLS)
        )
        assert ann.read_only_hint is (not mutating), tool.name
        if "idempotency_key" in expected["properties"]:
            assert ann.idempotent_hint is True, tool.name
        if tool.name in READ_ONLY_IDEMPOTENT:
            assert ann.idempotent_hint is True, tool.name
        if tool.name in QUOTE_TOOLS:
            assert ann.idempotent_hint is False, tool.name
        assert tool.description


async def test_every_tool_returns_the_rest_json_plus_guidance(server: str) -> None:
    async with httpx.AsyncClient(base_url=server) as http, Client(server + "/mcp") as c:
        caps = await c.call_tool("service_v2_capabilities", {})
        assert caps.is_error is False and text_json(caps) == caps.structured_content
        assert caps.structured_content["capabilities"] == (await http.get("/v2/capabilities")).json()
        assert caps.structured_content["guidance"]["transaction_signed"] is False

        status = await c.call_tool("service_status", {})
        assert status.is_error is False
        legacy = status.structured_content["status"]
        assert [x["corridor"] for x in legacy["corridors"]] == [
            "solana:SOL->base:ETH",
            "solana:SOL->arbitrum:ETH",
        ]
        assert (
            legacy["safety_gates"]["never_signs"] is True and legacy["safety_gates"]["never_submits"] is True
        )
        assert legacy["status"] == "capped_public_agent_release"
        rest_v1 = (await http.get("/v1/status")).json()  # the legacy REST surface: the same translation
        assert {k: v for k, v in legacy.items() if k != "time"} == {
            k: v for k, v in rest_v1.items() if k != "time"
        }

        result = await c.call_tool("service_v2_quote", QUOTE_ARGS)
        assert result.is_error is False
        quote, guidance = result.structured_content["quote"], result.structured_content["guidance"]
        # the text block (what a host's model reads) is the decision view of the same quote, about 1 KB
        decision = text_json(result)["decision"]
        assert decision["quote_id"] == quote["quote_id"] and len(result.content[0].text.encode()) <= 1024
        assert decision["full"] == "structuredContent.quote"
        validate(quote, QUOTE_RESPONSE)
        rest = (await http.post("/v2/quote", json=QUOTE_ARGS)).json()
        assert set(quote) == set(rest)
        assert (
            quote["intent"] == rest["intent"]
            and quote["direct_route_summary"] == rest["direct_route_summary"]
        )
        # the quote travels untouched (guidance sits next to it): its hashes verify as on REST
        assert quote["continuation_v3"]["quote_payload_sha256"] == ih.payload_sha256(quote)
        assert quote["continuation_v3"]["quote_fingerprint"] == ih.fingerprint(quote)
        assert quote["quote_id"] != rest["quote_id"]
        assert guidance["selection_status"] == "unranked_candidate"
        assert guidance["automatic_selection_forbidden"] is True
        assert guidance["transaction_signed"] is False and guidance["transaction_submitted"] is False

        v1 = await c.call_tool("service_quote", {"amount_usd": 250, "destination_chain": "arbitrum"})
        assert v1.is_error is False
        body = v1.structured_content["quote"]
        assert body["corridor"] == "solana:SOL->arbitrum:ETH"
        validate(body["quote"], QUOTE_RESPONSE)
        assert body["quote"]["intent"] == {
            **body["quote"]["intent"],
            "from": "solana:SOL",
            "to": "arbitrum:ETH",
            "amount_usd": 250,
        }
        rest_v1_quote = (
            await http.post("/v1/quote", json={"amount_usd": 250, "destination_chain": "arbitrum"})
        ).json()
        assert set(rest_v1_quote) == set(body) and rest_v1_quote["corridor"] == body["corridor"]
        assert rest_v1_quote["quote"]["direct_route_summary"] == body["quote"]["direct_route_summary"]
        assert text_json(v1)["decision"]["quote_id"] == body["quote_id"] == body["quote"]["quote_id"]
        default = await c.call_tool("service_quote", {"amount_usd": 1})
        assert default.structured_content["quote"]["quote"]["intent"]["to"] == "base:ETH"

        for r in (caps, status, result, v1, default):
            assert walk_server_flags(r.structured_content) == []


@pytest.mark.parametrize(
    ("tool", "args", "where"),
    [
        ("service_v2_quote", {**QUOTE_ARGS, "extra": SECRET}, "extra"),
        ("service_v2_quote", {k: v for k, v in QUOTE_ARGS.items() if k != "to_token"}, "to_token"),
        ("service_v2_quote", {**QUOTE_ARGS, "from_chain": "ethereum"}, "from_chain"),
        ("service_v2_quote", {**QUOTE_ARGS, "from_token": "sol"}, "from_token"),
        ("service_v2_quote", {**QUOTE_ARGS, "amount_usd": 0.99}, "amount_usd"),
        ("service_v2_quote", {**QUOTE_ARGS, "amount_usd": 1000.01}, "amount_usd"),
        ("service_v2_quote", {**QUOTE_ARGS, "amount_usd": "100"}, "amount_usd"),
        ("service_v2_quote", {**QUOTE_ARGS, "amount_usd": True}, "amount_usd"),
        ("service_quote", {"amount_usd": 10.5}, "amount_usd"),
        ("service_quote", {"amount_usd": 1001}, "amount_usd"),
        ("service_quote", {"amount_usd": 10, "destination_chain": "solana"}, "destination_chain"),
        ("service_quote", {"destination_chain": "base"}, "amount_usd"),
        ("service_status", {"verbose": True}, "verbose"),
        ("service_v2_capabilities", {"access_token": SECRET}, "access_token"),
    ],
)
async def test_schema_violations_are_tool_errors(
    server: str, tool: str, args: dict[str, Any], where: str
) -> None:
    async with Client(server + "/mcp") as c:
        result = await c.call_tool(tool, args)
    err = error_of(result)
    assert err["code"] == "request_rejected" and err["reason_class"] == "invalid_arguments"
    assert any(d["loc"][0] == where for d in err["details"]), err
    assert SECRET not in result.content[0].text


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        ({**QUOTE_ARGS, "to_chain": "solana", "to_token": "SOL"}, "identity_route"),
        ({**QUOTE_ARGS, "to_chain": "robinhood", "to_token": "USDC"}, "token_not_on_chain"),
        ({**QUOTE_ARGS, "from_chain": "base", "from_token": "SOL"}, "token_not_on_chain"),
    ],
)
async def test_contract_rules_beyond_the_schema_are_the_services(
    server: str, args: dict[str, Any], reason: str
) -> None:
    async with Client(server + "/mcp") as c:
        result = await c.call_tool("service_v2_quote", args)
    err = error_of(result)
    assert err["code"] == "request_rejected" and err["reason_class"] == reason


async def test_unknown_tool_is_a_protocol_error(server: str) -> None:
    async with Client(server + "/mcp") as c:
        with pytest.raises(MCPError):
            await c.call_tool("service_prepare_anything", {})
        # a listed tool with missing arguments is a tool error naming the rule, never echoing input
        err = error_of(await c.call_tool("service_prepare_source_action", {}))
        assert err["error"] == "invalid_arguments"


async def test_legacy_initialize_handshake_client(server: str) -> None:
    async with Client(server + "/mcp", mode="legacy") as c:
        assert c.server_info is not None and c.server_info.version == "0.4.0"
        assert {t.name for t in (await c.list_tools()).tools} >= set(SPEC_TOOLS)
        result = await c.call_tool("service_v2_quote", {**QUOTE_ARGS, "amount_usd": 12.5})
        assert result.is_error is False and result.structured_content["quote"]["intent"]["amount_usd"] == 12.5


def test_host_checks_and_get(server: str) -> None:
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        },
    }
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    with httpx.Client(base_url=server, timeout=10) as http:
        ok = http.post("/mcp", json=init, headers=headers)
        assert ok.status_code == 200 and ok.json()["result"]["serverInfo"]["version"] == "0.4.0"
        proxied = http.post("/mcp", json=init, headers={**headers, "host": "routes.example.test"})
        assert proxied.status_code == 200  # ROUTEQUOTE_ALLOWED_HOSTS: a deployment behind a real hostname
        rebinding = http.post("/mcp", json=init, headers={**headers, "host": "evil.example.test"})
        assert rebinding.status_code == 421
        other_port = http.post("/mcp", json=init, headers={**headers, "host": "127.0.0.1:1"})
        assert other_port.status_code == 421
        assert http.get("/mcp").status_code == 405  # no idle SSE stream in stateless JSON mode


async def test_rate_limited_and_upstream_errors_carry_codes() -> None:
    port = free_port()
    with running_server(_app(port, rate_limit="3/minute"), port) as url:
        async with Client(url + "/mcp") as c:
            for _ in range(3):
                assert (await c.call_tool("service_v2_capabilities", {})).is_error is False
            limited = error_of(await c.call_tool("service_v2_quote", QUOTE_ARGS))
    assert limited["code"] == "rate_limited" and 1 <= limited["retry_after_seconds"] <= 3600

    for mode, reason in (("down", "market_source_unavailable"), ("busy", "market_source_saturated")):
        port = free_port()
        with running_server(_app(port, market=FailingMarket(mode)), port) as url:
            async with Client(url + "/mcp") as c:
                err = error_of(await c.call_tool("service_v2_quote", QUOTE_ARGS))
        assert err["code"] == "upstream_unavailable" and err["reason_class"] == reason
        assert err["retry_after_seconds"] >= 1


async def test_caller_input_never_reaches_logs_or_results(
    server: str, capfd: pytest.CaptureFixture[str]
) -> None:
    async with Client(server + "/mcp") as c:
        for args in ({**QUOTE_ARGS, "access_token": SECRET}, {**QUOTE_ARGS, "amount_usd": SECRET}):
            result = await c.call_tool("service_v2_quote", args)
            assert result.is_error is True and SECRET not in result.model_dump_json()
    out, err = capfd.readouterr()
    assert SECRET not in out and SECRET not in err


async def test_stdio_transport(tmp_path: Path) -> None:
    exe = shutil.which("routequote", path=str(Path(sys.executable).parent))
    assert exe is not None
    # its own per-user data directory: never the machine's, which another checkout may have migrated further
    env = {"ROUTEQUOTE_LOG_LEVEL": "warning", "XDG_DATA_HOME": str(tmp_path)}
    params = StdioServerParameters(command=exe, args=["mcp"], env=env)
    async with Client(params) as c:
        assert c.server_info is not None and c.server_info.version == "0.4.0"
        names = {t.name for t in (await c.list_tools()).tools}
        assert set(SPEC_TOOLS) | {"service_manifest"} == names
        result = await c.call_tool(
            "service_v2_quote", {**QUOTE_ARGS, "to_chain": "arbitrum", "to_token": "ETH"}
        )
        assert result.is_error is False
        validate(result.structured_content["quote"], QUOTE_RESPONSE)
        bad = await c.call_tool("service_v2_quote", {**QUOTE_ARGS, "amount_usd": 0})
        assert error_of(bad)["code"] == "request_rejected"


async def test_service_manifest_is_the_signed_manifest(server: str) -> None:
    from routequote.core.manifest import MANIFEST_PATH, PUBLIC_KEY_PATH, load_public_key, verify_signature

    async with httpx.AsyncClient(base_url=server) as http, Client(server + "/mcp") as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
        assert "service_manifest" in tools  # the discovery capability is mounted in this build
        assert tools["service_manifest"].input_schema["properties"] == {}
        result = await c.call_tool("service_manifest", {})
        assert result.is_error is False and text_json(result) == result.structured_content
        manifest = result.structured_content["manifest"]
        assert manifest == (await http.get(MANIFEST_PATH)).json()
        verify_signature(manifest, load_public_key((await http.get(PUBLIC_KEY_PATH)).content))
        assert result.structured_content["guidance"]["read_only"] is True
        assert walk_server_flags(result.structured_content) == []


async def test_one_rate_limit_budget_per_client_across_surfaces() -> None:
    port = free_port()
    with running_server(_app(port, rate_limit="4/minute"), port) as url:
        async with httpx.AsyncClient(base_url=url) as http, Client(url + "/mcp") as c:
            assert (await http.get("/v2/capabilities")).status_code == 200
            assert (await http.post("/v2/quote", json=QUOTE_ARGS)).status_code == 200
            assert (await c.call_tool("service_v2_capabilities", {})).is_error is False
            a2a = {
                "jsonrpc": "2.0",
                "id": "1",
                "method": "SendMessage",
                "params": {
                    "message": {
                        "role": "ROLE_USER",
                        "messageId": "m1",
                        "parts": [
                            {
                                "data": {
                                    "fromChain": "base",
                                    "fromToken": "ETH",
                                    "toChain": "base",
                                    "toToken": "USDC",
                                    "amountUsd": 5,
                                },
                                "mediaType": "application/json",
                            }
                        ],
                    }
                },
            }
            reply = (await http.post("/a2a", json=a2a, headers={"A2A-Version": "1.0"})).json()
            assert "decision" in reply["result"]["message"]["parts"][0]["data"]
            # four requests over three surfaces used the one budget: every surface now refuses
            assert error_of(await c.call_tool("service_v2_quote", QUOTE_ARGS))["code"] == "rate_limited"
            assert (await http.post("/v2/quote", json=QUOTE_ARGS)).status_code == 429
            reply = (await http.post("/a2a", json=a2a, headers={"A2A-Version": "1.0"})).json()
            assert reply["result"]["message"]["parts"][0]["data"]["error"]["code"] == "rate_limited"


def test_body_limit_on_agent_endpoints(server: str) -> None:
    big = b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"pad":"' + b"x" * 1_100_000 + b'"}}'
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "A2A-Version": "1.0",
    }
    with httpx.Client(base_url=server, timeout=30) as http:
        assert http.post("/mcp", content=big, headers=headers).status_code == 413
        assert http.post("/a2a", content=big, headers=headers).status_code == 413
