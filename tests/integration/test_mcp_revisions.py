"""MCP at 2025-06-18, 2025-11-25 and 2026-07-28 on both HTTP endpoints (/mcp, /mcp/v2) and on stdio (both
profiles), with the official MCP Python SDK client (mcp 2.3.0) pinned to each revision (issue 40 item 1): it
lists the tools and calls every one of them. A 2026-07-28 client sends no `initialize` (checked on the wire).

The SDK's handshake client always offers its newest handshake revision (2025-11-25); the 2025-06-18 client is
the same client with that offer pinned to 2025-06-18 (the module constant `initialize` reads), and the test
checks that the server agreed to it."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import mcp.client.session as mcp_session
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from tests.support.server import free_port, running_server

from routequote.app import create_app
from routequote.config import Settings

REVISIONS = ["2025-06-18", "2025-11-25", "2026-07-28"]
ENDPOINTS = ["/mcp", "/mcp/v2"]
QUOTE_ARGS = {
    "from_chain": "base",
    "from_token": "USDC",
    "to_chain": "base",
    "to_token": "ETH",
    "amount_usd": 100,
}
SUCCEED_WITH = {  # the tools a fresh caller can call successfully; every other tool needs state it has not made
    "service_status": {},
    "service_v2_status": {},
    "service_v2_capabilities": {},
    "service_manifest": {},
    "service_v2_quote": QUOTE_ARGS,
    "service_quote": {"amount_usd": 50, "destination_chain": "base"},
}


@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    port = free_port()
    with running_server(create_app(Settings(rate_limit="off", port=port)), port) as url:
        yield url


def client_for(target: Any, revision: str, monkeypatch: pytest.MonkeyPatch) -> Client:
    if revision == "2026-07-28":
        return Client(target, mode=revision)
    monkeypatch.setattr(mcp_session, "LATEST_HANDSHAKE_VERSION", revision)
    return Client(target, mode="legacy")


async def list_and_call_every_tool(c: Client, revision: str) -> dict[str, bool]:
    assert c.protocol_version == revision
    tools = (await c.list_tools()).tools
    assert len(tools) >= 10, [t.name for t in tools]
    outcome: dict[str, bool] = {}
    for tool in tools:
        result = await c.call_tool(tool.name, SUCCEED_WITH.get(tool.name, {}))  # a protocol error raises
        if tool.name in SUCCEED_WITH:
            assert result.is_error is False, (tool.name, result.structured_content)
        else:  # refused by the tool's own input rules: a classified tool error, never a protocol error
            assert result.is_error is True, tool.name
            assert result.structured_content and result.structured_content["error"]["reason_class"], result
        outcome[tool.name] = bool(result.is_error)
    return outcome


@pytest.mark.parametrize("endpoint", ENDPOINTS)
@pytest.mark.parametrize("revision", REVISIONS)
async def test_the_official_client_at_each_revision_lists_and_calls_every_tool(
    served: str, endpoint: str, revision: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    methods: list[str] = []

    async def record(request: httpx2.Request) -> None:
        if request.method == "POST":
            methods.append(json.loads(request.content)["method"] if request.content else "")

    async with httpx2.AsyncClient(event_hooks={"request": [record]}, timeout=60) as http:
        transport = streamable_http_client(served + endpoint, http_client=http)
        async with client_for(transport, revision, monkeypatch) as c:
            outcome = await list_and_call_every_tool(c, revision)
    assert set(SUCCEED_WITH) & set(outcome), outcome
    if revision == "2026-07-28":
        assert "initialize" not in methods and methods[0] == "tools/list", methods[:3]
    else:
        assert methods[:2] == ["initialize", "notifications/initialized"], methods[:3]


@pytest.mark.parametrize("profile", ["v1", "v2"])
@pytest.mark.parametrize("revision", REVISIONS)
async def test_stdio_at_each_revision_lists_and_calls_every_tool(
    tmp_path: Path, profile: str, revision: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    exe = shutil.which("routequote", path=str(Path(sys.executable).parent))
    assert exe is not None
    env = {
        "ROUTEQUOTE_LOG_LEVEL": "warning",
        "ROUTEQUOTE_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path}/s.db",
    }
    args = ["mcp"] if profile == "v1" else ["mcp", "--profile", "v2"]
    async with client_for(StdioServerParameters(command=exe, args=args, env=env), revision, monkeypatch) as c:
        await list_and_call_every_tool(c, revision)
