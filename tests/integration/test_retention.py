"""Retention under a flood and the per-client cap on open sessions (issue 22 item 8), over real HTTP on SQLite and
on PostgreSQL.

One client floods session creates (up to the per-client cap of open sessions, which then answers 429) and v1
login challenges. The clock moves past the challenge lifetime and the session retention period; the background
purge (bounded batches, every second here) brings the store back to its bound while the server keeps answering
/livez and quotes. Store sizes are read from /metrics (`routequote_session_store_rows`); every session's
receipt is archived before the session goes, and the cap frees up again.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import re
import secrets
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from solders.keypair import Keypair
from tests.support.a2a import Caller, send
from tests.support.observable import OBSERVABLE
from tests.support.postgres import require_postgres, run_coroutine, temporary_database
from tests.support.server import free_port, running_server
from tests.unit.actions.support import START, approval_for, intent_for, wallets_for

from routequote.app import create_app
from routequote.clock import FixedClock
from routequote.config import Settings
from routequote.core.quote import SESSION_HEADER

ROUTE = "base:ETH->base:USDC"
CAP = 25
CHALLENGES = 150
LOGINS = 10


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Any, FixedClock]]:
    clock = FixedClock(START)
    port = free_port()
    with contextlib.ExitStack() as stack:
        if request.param == "postgresql":
            require_postgres()
            url = stack.enter_context(temporary_database())
        else:
            url = f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('retention') / 's.sqlite3'}"
        settings = Settings(
            rate_limit="off",
            login_rate_limit="off",
            port=port,
            database_url=url,
            session_retention_days=2,
            retention_interval_seconds=1,
            max_open_sessions_per_client=CAP,
            **OBSERVABLE,
        )
        app = create_app(settings, clock=clock)
        with running_server(app, port) as base:
            yield base, app, clock


def _token() -> str:
    return base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()


def _create(http: httpx.Client) -> httpx.Response:
    q = http.post("/v2/quote", json=intent_for(ROUTE, 100)).json()
    key = f"k-{secrets.token_hex(6)}"
    body = {
        "caller_approved": True,
        **intent_for(ROUTE, 100),
        "wallets": wallets_for(ROUTE),
        "approval_v3": approval_for(q, key=key, selected_mode="session"),
        "idempotency_key": key,
    }
    return http.post("/v2/session", json=body, headers={SESSION_HEADER: _token()})


def _rows(http: httpx.Client, app: Any) -> dict[str, int]:
    # a scrape whose count query timed out (a loaded machine) keeps the last values: none before the first
    deadline = time.monotonic() + 60  # bounds a hang only
    while time.monotonic() < deadline:
        app.state.metrics._sessions_counted_at = -1e9  # scrape now, not from the 5 s cache
        text = http.get("/metrics").text
        found = re.findall(r'routequote_session_store_rows\{table="(\w+)"\} (\S+)', text)
        if found:
            return {m[0]: int(float(m[1])) for m in found}
        time.sleep(0.2)
    raise AssertionError("/metrics never showed the store rows")


PURGED = (
    "sessions",
    "session_events",
    "session_clients",
    "session_idempotency",
    "login_challenges",
    "access_tokens",
)


def test_a_flood_shrinks_back_to_its_bound_while_serving(server: tuple[str, Any, FixedClock]) -> None:
    url, app, clock = server
    with httpx.Client(base_url=url, timeout=30) as http:
        created = [_create(http) for _ in range(CAP)]
        assert all(r.status_code == 201 for r in created), [r.text for r in created if r.status_code != 201][
            :1
        ]
        over = _create(http)
        assert over.status_code == 429 and over.json()["reason_class"] == "open_sessions_limit_reached", (
            over.text
        )
        for i in range(CHALLENGES):
            wallet = Keypair()
            r = http.post("/v1/auth/challenge", json={"source_wallet": str(wallet.pubkey())})
            assert r.status_code == 200, r.text
            if i < LOGINS:  # some challenges are redeemed: an access token each
                ch = r.json()
                body = {
                    "challenge_id": ch["challenge_id"],
                    "source_wallet": str(wallet.pubkey()),
                    "signature": str(wallet.sign_message(ch["message"].encode())),
                    "terms_version": ch["terms_version"],
                }
                assert http.post("/v1/auth/verify", json=body).status_code == 200
        before = _rows(http, app)
        print(f"\nstore rows after the flood: {before}")
        assert before["sessions"] == CAP and before["login_challenges"] == CHALLENGES
        assert before["access_tokens"] == LOGINS and before["session_receipts"] == 0

        purger = app.state.retention  # small batches, so the backlog takes several (as a large one would)
        purger.policy = dataclasses.replace(purger.policy, batch=20, session_batch=10)
        clock.advance(timedelta(days=2, hours=1).total_seconds())  # past the retention period and every TTL
        deadline = time.monotonic() + 90
        served = 0
        after = before
        while time.monotonic() < deadline:
            assert http.get("/livez").status_code == 200  # serving continues during the purge
            assert http.post("/v2/quote", json=intent_for(ROUTE, 100)).status_code == 200
            served += 2
            after = _rows(http, app)
            # the purge takes its tables batch by batch: wait for every one it must empty
            if all(after[t] == 0 for t in PURGED):
                break
            time.sleep(0.2)
        print(f"store rows after the purge: {after} ({served} requests served meanwhile)")
        assert after["sessions"] == 0 and after["session_events"] == 0 and after["session_clients"] == 0
        assert after["login_challenges"] == 0 and after["access_tokens"] == 0
        assert after["session_receipts"] == CAP  # every receipt kept (receipt_retention_days)
        assert after["session_idempotency"] == 0
        # the cap counted open sessions: with them gone, this client may open one again
        assert _create(http).status_code == 201


async def _a2a_creates(url: str, n: int) -> list[dict[str, Any]]:
    async with httpx.AsyncClient(timeout=30) as http:
        card = await A2ACardResolver(http, url).get_agent_card()
        client = ClientFactory(ClientConfig(streaming=False, httpx_client=http)).create(card)
        out = []
        for _ in range(n):
            caller = Caller(client, ROUTE)
            await caller.quote()
            out.append(await send(client, caller.create_message()))
        return out


def test_the_open_session_cap_is_one_per_client_across_surfaces(server: tuple[str, Any, FixedClock]) -> None:
    """A2A creates count against the same per-client cap as REST v2 creates (the store enforces it)."""
    url, _, _ = server
    replies = asyncio.run(_a2a_creates(url, CAP + 1))
    assert all("session" in r for r in replies[:CAP]), replies[0]
    refused = replies[CAP]["error"]
    assert (refused["code"], refused["reason_class"]) == ("rate_limited", "open_sessions_limit_reached")
    with httpx.Client(base_url=url, timeout=30) as http:
        r = _create(http)
        assert r.status_code == 429 and r.json()["reason_class"] == "open_sessions_limit_reached", r.text


def _archived(app: Any, session_id: str) -> dict[str, Any] | None:
    """The archived receipt, read through a store of its own (on a loop of its own, beside the server's)."""
    from sqlalchemy import select

    from routequote.storage.retention import session_receipts
    from routequote.storage.sessions_sql import SqlSessionStore

    url = app.state.retention.store._url.render_as_string(hide_password=False)

    async def read() -> dict[str, Any] | None:
        store = SqlSessionStore(url)
        await store.start()
        try:
            row = await store._run(
                lambda c: c.execute(
                    select(session_receipts.c.receipt).where(session_receipts.c.session_id == session_id)
                ).first(),
                write=False,
            )
            return None if row is None else dict(row.receipt)
        finally:
            await store.aclose()

    return run_coroutine(read())


def test_a_purged_unsubmitted_session_keeps_what_a_late_cctp_burn_needs(
    server: tuple[str, Any, FixedClock],
) -> None:
    """A CCTP burn has no on-chain deadline: a caller may report a signed burn after the session is purged. The
    archived receipt keeps the session's id, route, the step it was on, its wallets, where the funds were and
    every action prepared (by payload hash), so the funds can still be found and minted."""
    url, app, clock = server
    route = "base:USDC->arbitrum:USDC"  # one CCTP step
    with httpx.Client(base_url=url, timeout=30) as http:
        q = http.post("/v2/quote", json=intent_for(route, 100)).json()
        key = f"k-{secrets.token_hex(6)}"
        body = {
            "caller_approved": True,
            **intent_for(route, 100),
            "wallets": wallets_for(route),
            "approval_v3": approval_for(q, key=key, selected_mode="session"),
            "idempotency_key": key,
        }
        made = http.post("/v2/session", json=body, headers={SESSION_HEADER: _token()})
        assert made.status_code == 201, made.text
        created = made.json()
        sid, action = created["session_id"], created["current_action"]
        clock.advance(timedelta(days=2, hours=1).total_seconds())
        deadline = time.monotonic() + 90
        receipt = None
        while receipt is None and time.monotonic() < deadline:
            time.sleep(0.3)
            receipt = _archived(app, sid)
        assert receipt is not None, "the purge never archived the session"
        gone = http.get(f"/v2/session/{sid}", headers={SESSION_HEADER: "x" * 43})
        assert gone.status_code == 404
    recovery = receipt["recovery"]
    assert (recovery["session_id"], recovery["route"], recovery["status_when_deleted"]) == (
        sid,
        route,
        "action_ready",
    )
    assert recovery["current_step"] == 0 and recovery["step"]["provider"] == "circle_cctp"
    assert recovery["wallets"] == wallets_for(route)
    assert recovery["funds"]["endpoint"] == "base:USDC"
    assert recovery["funds"]["wallet"] == wallets_for(route)["base"]
    assert recovery["current_action"]["action_id"] == action["action_id"]
    assert recovery["current_action"]["payload_sha256"] == action["payload_sha256"]
    assert [a["action_id"] for a in recovery["actions_prepared"]] == [action["action_id"]]
    assert "CCTP burn has no on-chain deadline" in recovery["note"]
