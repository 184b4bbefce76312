"""While the session database refuses connections, every store-backed answer says what is unavailable and when to
retry, and names no internals: no driver class, no SQLSTATE (issue 22 item 6). Real PostgreSQL: a database of the
run's own is set to refuse connections (ALLOW_CONNECTIONS false, its sessions terminated), so asyncpg meets a
real refusal carrying a driver class and a SQLSTATE, which the answers must not repeat."""

from __future__ import annotations

import asyncio
import base64
import json
import re
import secrets
import uuid
from collections.abc import Iterator

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from solders.keypair import Keypair
from tests.support.a2a import Caller, send
from tests.support.hostile import JSONRPC_HEADERS
from tests.support.postgres import admin_sql, require_postgres, run_coroutine, temporary_database
from tests.support.server import free_port, running_server

from routequote.app import create_app
from routequote.config import Settings
from routequote.core.quote import SESSION_HEADER

pytestmark = pytest.mark.postgres
ROUTE = "base:ETH->base:USDC"
WALLET = str(Keypair().pubkey())  # on curve: a key that can sign
INTERNALS = re.compile(
    r"Error\b|Exception|asyncpg|sqlalchemy|SQLSTATE|\b[0-9A-Z]{5}\b|\(\w+ \d{5}\)|postgres"
)


@pytest.fixture(scope="module")
def refusing() -> Iterator[str]:
    require_postgres()
    with temporary_database() as url:
        port = free_port()
        app = create_app(Settings(rate_limit="off", login_rate_limit="off", port=port, database_url=url))
        with running_server(app, port) as base:
            name = url.rsplit("/", 1)[1]
            run_coroutine(admin_sql(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false'))
            run_coroutine(
                admin_sql(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    f"WHERE datname = '{name}' AND pid <> pg_backend_pid()"
                )
            )
            try:
                yield base
            finally:
                run_coroutine(admin_sql(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true'))


def _token() -> str:
    return base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()


async def _a2a_create(url: str) -> dict[str, object]:
    async with httpx.AsyncClient(timeout=30) as http:
        card = await A2ACardResolver(http, url).get_agent_card()
        caller = Caller(ClientFactory(ClientConfig(streaming=False, httpx_client=http)).create(card), ROUTE)
        await caller.quote()
        reply = await send(caller.client, caller.create_message())
        error: dict[str, object] = reply["error"]
        return error


def _outage(http: httpx.Client, surface: str) -> tuple[int, dict[str, object]]:
    """(HTTP status, the error object) of one store-backed request on `surface`."""
    if surface == "a2a":  # session_create: everything checked, then the store refuses
        error = asyncio.run(_a2a_create(str(http.base_url).rstrip("/")))
        assert error["code"] == "upstream_unavailable", error
        return 503, error
    if surface == "v2":
        r = http.get(f"/v2/session/{uuid.uuid4()}", headers={SESSION_HEADER: _token()})
        return r.status_code, r.json()
    if surface == "v1":
        r = http.post("/v1/auth/challenge", json={"source_wallet": WALLET})
        return r.status_code, r.json()
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "service_start_wallet_auth", "arguments": {"source_wallet": WALLET}},
    }
    r = http.post("/mcp", content=json.dumps(call), headers=JSONRPC_HEADERS)
    result = r.json()["result"]
    assert result["isError"] is True
    return 503, result["structuredContent"]["error"]


@pytest.mark.parametrize("surface", ["v2", "v1", "mcp", "a2a"])
def test_database_outage_answers_name_no_internals(refusing: str, surface: str) -> None:
    with httpx.Client(base_url=refusing, timeout=30) as http:
        status, err = _outage(http, surface)
        assert status == 503, err
        assert err["reason_class"] == "session_store_unavailable", err
        message = str(err["message"])
        assert "session database is unavailable" in message and "retry in" in message, message
        assert not INTERNALS.search(json.dumps(err)), err
        ready = http.get("/readyz")
        assert ready.status_code == 503
        assert not INTERNALS.search(ready.text.replace("postgres", "")), ready.text
