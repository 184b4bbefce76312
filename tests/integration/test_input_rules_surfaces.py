"""One rule per input, on every surface that reads it, over real HTTP against one running server (SQLite
store), with the official A2A SDK as the client.

Session tokens (issue 22 item 11): exactly 43 base64url characters, and not plainly non-random. A weak or a
longer token is refused on REST v2 and A2A alike, and nothing is created; a session created over REST is
reachable over A2A. (MCP and v1 take no session token: they use the v1 wallet login's access token.)
"""

from __future__ import annotations

import base64
import secrets
import sqlite3
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from tests.support.a2a import Caller, send
from tests.support.server import free_port, running_server
from tests.unit.actions.support import (
    START,
    approval_for,
    intent_for,
    wallets_for,
)

from routequote.app import create_app
from routequote.clock import FixedClock
from routequote.config import Settings
from routequote.core.quote import SESSION_HEADER

ONE_STEP = "base:ETH->base:USDC"


def new_token() -> str:
    return base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()


def _long_token(n: int) -> str:
    return base64.urlsafe_b64encode(secrets.token_bytes(n)).rstrip(b"=").decode()[:n]


WEAK_TOKENS = {
    "43xA": "A" * 43,
    "period_2": ("Ab" * 22)[:43],
    "period_8": ("q7Zk_3Xw" * 6)[:43],
    "sequence": "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopq",
    "stride_3": "".join("ADGJMPSVYbehknqtwz0369-"[i % 23] for i in range(43)),
    "44_chars": _long_token(44),
    "128_chars": _long_token(128),
    "42_chars": _long_token(42),
}


class Served:
    def __init__(self, url: str, db: Path) -> None:
        self.url, self.db = url, db

    def counts(self) -> tuple[int, int, int]:
        """Sessions, events and idempotency records: a refusal changes none of them."""
        with sqlite3.connect(f"file:{self.db}?mode=ro", uri=True) as con:
            return tuple(  # type: ignore[return-value]
                con.execute(f"select count(*) from {t}").fetchone()[0]
                for t in ("sessions", "session_events", "session_idempotency")
            )


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    port = free_port()
    db = tmp_path_factory.mktemp("input_rules") / "s.sqlite3"
    settings = Settings(
        rate_limit="off", login_rate_limit="off", port=port, database_url=f"sqlite+aiosqlite:///{db}"
    )
    app = create_app(settings, clock=FixedClock(START))
    with running_server(app, port) as url:
        yield Served(url, db)


@pytest.fixture
async def http(served: Served) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=served.url, timeout=30) as c:
        yield c


@pytest.fixture
async def a2a(served: Served) -> AsyncIterator[Client]:
    async with httpx.AsyncClient(timeout=30) as h:
        card = await A2ACardResolver(h, served.url).get_agent_card()
        yield ClientFactory(ClientConfig(streaming=False, httpx_client=h)).create(card)


async def _quote(http: httpx.AsyncClient, route: str) -> dict[str, Any]:
    r = await http.post("/v2/quote", json=intent_for(route, 100))
    assert r.status_code == 200, r.text
    q: dict[str, Any] = r.json()
    return q


async def _session_body(http: httpx.AsyncClient, route: str, **over: Any) -> dict[str, Any]:
    key = "k-" + uuid.uuid4().hex[:12]
    body = {
        "caller_approved": True,
        **intent_for(route, 100),
        "wallets": wallets_for(route),
        "approval_v3": approval_for(await _quote(http, route), key=key, selected_mode="session"),
        "idempotency_key": key,
        **over,
    }
    return body


# ---- session tokens -----------------------------------------------------------------------------------


async def _rest_create(http: httpx.AsyncClient, a2a: Client, token: str) -> dict[str, Any]:
    r = await http.post(
        "/v2/session", json=await _session_body(http, ONE_STEP), headers={SESSION_HEADER: token}
    )
    assert r.status_code in (201, 400), r.text
    out: dict[str, Any] = r.json()
    return out


async def _a2a_create(http: httpx.AsyncClient, a2a: Client, token: str) -> dict[str, Any]:
    caller = Caller(a2a, ONE_STEP)
    await caller.quote()
    reply = await send(a2a, caller.create_message(sessionToken=token))
    return reply.get("error", reply)  # type: ignore[no-any-return]


TOKEN_SURFACES: dict[str, Callable[..., Any]] = {"rest_v2": _rest_create, "a2a": _a2a_create}


@pytest.mark.parametrize("surface", list(TOKEN_SURFACES))
@pytest.mark.parametrize("name", list(WEAK_TOKENS))
async def test_a_weak_or_mis_sized_session_token_is_refused_everywhere(
    served: Served, http: httpx.AsyncClient, a2a: Client, surface: str, name: str
) -> None:
    token = WEAK_TOKENS[name]
    before = served.counts()
    answer = await TOKEN_SURFACES[surface](http, a2a, token)
    assert answer["reason_class"] == "session_token_invalid", answer
    assert token not in str(answer)  # never echoed
    assert served.counts() == before  # nothing created


@pytest.mark.parametrize("surface", list(TOKEN_SURFACES))
async def test_a_random_43_character_token_opens_a_session_everywhere(
    served: Served, http: httpx.AsyncClient, a2a: Client, surface: str
) -> None:
    answer = await TOKEN_SURFACES[surface](http, a2a, new_token())
    session = answer.get("session", answer)
    assert session["status"] == "action_ready", answer


async def test_a_session_created_over_rest_is_reachable_over_a2a(
    http: httpx.AsyncClient, a2a: Client
) -> None:
    caller = Caller(a2a, ONE_STEP)
    await caller.quote()
    body = {
        "caller_approved": True,
        **caller.intent,
        "wallets": caller.wallets,
        "approval_v3": caller.approval,
        "idempotency_key": caller.key,
    }
    r = await http.post("/v2/session", json=body, headers={SESSION_HEADER: caller.token})
    assert r.status_code == 201, r.text
    caller.sid = r.json()["session_id"]
    reply = await caller.get()
    assert reply["session"]["session_id"] == caller.sid and reply["session"]["status"] == "action_ready", (
        reply
    )
