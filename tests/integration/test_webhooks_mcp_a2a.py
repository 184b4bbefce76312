"""Session webhooks through the MCP v2 profile and A2A (issue 42, section 3): their session create takes the same
optional `webhook: {url}` as `POST /v2/session`, checked by the same rule in the session service.

With the official MCP client (/mcp/v2) and the official A2A client, against a real server (SQLite store, the
real clock): a session created with a loopback receiver (ROUTEQUOTE_WEBHOOK_ALLOW_HOSTS=127.0.0.1) gets its
events delivered, each verified with the secret the create answer returned once (`session.webhook.secret`)
by `routequote.client.verify_webhook`; no later answer, no log line and no database byte holds that secret.
A refused webhook is the surface's own error shape with REST's reason code, and creates nothing.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.client import Client as A2AClient
from mcp import Client as McpClient
from tests.integration.test_mcp_v2 import WALLET_A, error, ok, quote_and_context, token
from tests.integration.test_session_webhooks import Receiver, create_body, receiving
from tests.support.a2a import Caller, send
from tests.support.observable import OBSERVABLE
from tests.support.server import free_port, running_server

from routequote.app import create_app
from routequote.client import verify_webhook
from routequote.config import Settings
from routequote.core.quote import SESSION_HEADER

ROUTE = "base:ETH->base:USDC"
INTENT = {
    "from_chain": "base",
    "from_token": "ETH",
    "to_chain": "base",
    "to_token": "USDC",
    "amount_usd": 100,
}
TABLES = ("sessions", "session_events", "session_idempotency", "session_webhooks")
REFUSED = [
    ({"url": "https://169.254.169.254/latest/meta-data"}, "webhook_url_invalid"),  # cloud metadata
    ({"url": "https://127.0.0.2/in"}, "webhook_url_invalid"),  # loopback, not the allowed host
    ({"url": "http://hooks.example.com/in"}, "webhook_url_invalid"),  # http to a host not allowed
    ({"url": "https://hooks.example.com/in", "extra": 1}, "unknown_field"),
    ("https://hooks.example.com/in", "webhook_invalid"),  # not an object
]


class Served:
    def __init__(self, url: str, db: Path) -> None:
        self.url, self.db = url, db

    def rows(self) -> str:
        """Every row of the session tables."""
        with contextlib.closing(sqlite3.connect(f"file:{self.db}?mode=ro", uri=True)) as con:
            return repr([sorted(con.execute(f"SELECT * FROM {t}").fetchall()) for t in TABLES])

    def files(self) -> bytes:
        return b"".join(p.read_bytes() for p in self.db.parent.iterdir() if p.is_file())

    def rest_refusal(self, webhook: Any) -> dict[str, Any]:
        """What `POST /v2/session` answers for the same webhook (the reference every surface matches)."""
        with httpx.Client(base_url=self.url, timeout=30) as http:
            r = http.post("/v2/session", json=create_body(http, webhook), headers={SESSION_HEADER: token()})
        assert r.status_code == 400, r.text
        return dict(r.json())


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    port = free_port()
    db = tmp_path_factory.mktemp("hooks_mcp_a2a") / "s.sqlite3"
    settings = Settings(
        rate_limit="off",
        port=port,
        database_url=f"sqlite+aiosqlite:///{db}",
        webhook_allow_hosts="127.0.0.1",
        webhook_interval_seconds=0.1,
        log_level="debug",
        **OBSERVABLE,
    )
    with running_server(create_app(settings), port) as url:
        yield Served(url, db)


@pytest.fixture
async def a2a(served: Served) -> AsyncIterator[A2AClient]:
    async with httpx.AsyncClient(timeout=30) as http:
        card = await A2ACardResolver(http, served.url).get_agent_card()
        yield ClientFactory(ClientConfig(streaming=False, httpx_client=http)).create(card)


def verified(rx: Receiver, secret: str, sid: str, count: int) -> list[dict[str, Any]]:
    """The first `count` deliveries, each verified with the session's secret: (sequence, status) in order."""
    rx.wait_for(lambda e: len(e) >= count, f"{count} deliveries")
    with rx.lock:
        deliveries = list(rx.deliveries)
    events = [verify_webhook(secret, raw, headers) for headers, raw in deliveries]
    assert all(e["session_id"] == sid for e in events)
    assert [h["webhook-id"] for h, _ in deliveries] == [f"{sid}:{e['sequence']}" for e in events]
    return events


def assert_secret_kept_once(
    secret: str, served: Served, caplog: pytest.LogCaptureFixture, *later: Any
) -> None:
    """The secret was shown by the create answer alone: no later answer, log line or stored byte holds it."""
    assert secret.startswith("whsec_")
    for answer in later:
        assert secret not in str(answer) and secret[6:] not in str(answer)
    assert secret not in caplog.text and secret[6:] not in caplog.text
    stored = served.files()
    assert secret.encode() not in stored and secret[6:].encode() not in stored
    assert (
        "rq-marker-7f3a" not in caplog.text and b"rq-marker-7f3a" not in stored
    )  # the URL: sealed, unlogged


# ---- MCP v2 -------------------------------------------------------------------------------------------------


async def mcp_create_args(c: McpClient, webhook: Any) -> dict[str, Any]:
    key = "mcp-hook-" + uuid.uuid4().hex[:12]
    wallets = {"base": WALLET_A}
    _q, approval, ctx = await quote_and_context(c, INTENT, wallets, "session", key)
    return {
        **INTENT,
        "caller_approved": True,
        "wallets": wallets,
        "approval_v3": approval,
        "verification_context": ctx,
        "idempotency_key": key,
        "session_token": token(),
        "accept_modelled_bounds": True,  # the embedded market's bounds are modelled: accepted explicitly
        "webhook": webhook,
    }


async def test_an_mcp_session_create_with_a_webhook_delivers_signed_events_and_returns_the_secret_once(
    served: Served, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with McpClient(served.url + "/mcp/v2") as c:
        tool = next(t for t in (await c.list_tools()).tools if t.name == "service_v2_session_create")
        assert tool.input_schema["properties"]["webhook"]["required"] == ["url"]
        with receiving() as rx:
            args = await mcp_create_args(c, {"url": rx.url})
            created = ok(await c.call_tool("service_v2_session_create", args))
            session = created["session"]
            sid, secret = session["session_id"], session["webhook"]["secret"]
            assert session["webhook"]["scheme"] == "standard-webhooks/v1"
            call = {k: args[k] for k in ("session_token", "verification_context", "accept_modelled_bounds")}
            call["session_id"] = sid
            cancelled = await c.call_tool(
                "service_v2_session_cancel", {**call, "idempotency_key": "cancel-0001"}
            )
            assert ok(cancelled)["session"]["status"] == "cancelled"
            events = verified(rx, secret, sid, 2)
            assert [(e["sequence"], e["status"]) for e in events] == [(1, "action_ready"), (2, "cancelled")]
            read = await c.call_tool("service_v2_session_get", call)
            assert "secret" not in ok(read)["session"]["webhook"]
            # a replayed create hands the same secret back (as REST does), and subscribes nothing twice
            replay = ok(await c.call_tool("service_v2_session_create", args))["session"]
            assert replay["idempotent_replay"] is True and replay["webhook"]["secret"] == secret
    assert_secret_kept_once(secret, served, caplog, read.content[0].text, cancelled.content[0].text)


@pytest.mark.parametrize(("webhook", "reason"), REFUSED)
async def test_an_mcp_create_with_a_refused_webhook_is_the_tool_error_with_rests_reason_and_creates_nothing(
    served: Served, webhook: Any, reason: str
) -> None:
    async with McpClient(served.url + "/mcp/v2") as c:
        args = await mcp_create_args(c, webhook)
        before = served.rows()
        result = await c.call_tool("service_v2_session_create", args)
        refused = error(result)
        assert served.rows() == before
    assert refused["reason_class"] == reason == served.rest_refusal(webhook)["reason_class"]
    if isinstance(webhook, dict):
        assert webhook["url"] not in result.content[0].text


# ---- A2A ----------------------------------------------------------------------------------------------------


async def test_an_a2a_session_create_with_a_webhook_delivers_signed_events_and_returns_the_secret_once(
    served: Served, a2a: A2AClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    caller = Caller(a2a, ROUTE)
    await caller.quote()
    with receiving() as rx:
        message = caller.create_message(webhook={"url": rx.url})
        created = await send(a2a, message)
        assert "error" not in created, created
        sid, secret = created["session"]["session_id"], created["session"]["webhook"]["secret"]
        caller.sid = sid
        cancelled = await send(a2a, caller.call("session_cancel", idempotencyKey="cancel-0001"))
        assert cancelled["session"]["status"] == "cancelled", cancelled
        events = verified(rx, secret, sid, 2)
        assert [(e["sequence"], e["status"]) for e in events] == [(1, "action_ready"), (2, "cancelled")]
        read = await caller.get()
        assert "secret" not in read["session"]["webhook"]
        replay = await send(a2a, message)
        assert (
            replay["session"]["idempotent_replay"] is True
            and replay["session"]["webhook"]["secret"] == secret
        )
    assert_secret_kept_once(secret, served, caplog, read, cancelled)


@pytest.mark.parametrize(("webhook", "reason"), REFUSED)
async def test_an_a2a_create_with_a_refused_webhook_is_the_agent_error_with_rests_reason_and_creates_nothing(
    served: Served, a2a: A2AClient, webhook: Any, reason: str
) -> None:
    caller = Caller(a2a, ROUTE)
    await caller.quote()
    before = served.rows()
    reply = await send(a2a, caller.create_message(webhook=webhook))
    assert served.rows() == before
    assert set(reply) == {"error"}, reply
    assert reply["error"]["reason_class"] == reason == served.rest_refusal(webhook)["reason_class"]
    assert reply["error"]["code"] == "request_rejected"
    if isinstance(webhook, dict):
        assert webhook["url"] not in str(reply)
