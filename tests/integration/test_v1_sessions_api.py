"""The v1 wallet login and corridor session over REST (the real composition root in-process): Bearer tokens,
401 with WWW-Authenticate, wallet binding, quote locking, idempotency and step order. The whole corridor with
chain observations runs in tests/e2e/test_v1_corridor.py (the same engine through the MCP tools)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from solders.keypair import Keypair
from tests.support.observable import OBSERVABLE
from tests.support.server import free_port, running_server

from routequote.app import create_app
from routequote.config import Settings

DEST = "0x" + "ab" * 20


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    db = tmp_path_factory.mktemp("v1-api") / "s.sqlite3"
    port = free_port()
    app = create_app(
        Settings(rate_limit="off", port=port, database_url=f"sqlite+aiosqlite:///{db}", **OBSERVABLE)
    )
    with running_server(app, port) as url:
        yield url


@pytest.fixture
async def client(server: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=server) as c:
        yield c


async def login(c: httpx.AsyncClient, wallet: Keypair) -> str:
    r = await c.post("/v1/auth/challenge", json={"source_wallet": str(wallet.pubkey())})
    assert r.status_code == 200, r.text
    ch = r.json()
    assert ch["can_authorize_transaction"] is False and "cannot authorize a transaction" in ch["message"]
    body = {
        "challenge_id": ch["challenge_id"],
        "source_wallet": str(wallet.pubkey()),
        "signature": str(wallet.sign_message(ch["message"].encode())),
        "terms_version": ch["terms_version"],
    }
    r = await c.post("/v1/auth/verify", json=body)
    assert r.status_code == 200, r.text
    token: str = r.json()["access_token"]
    replay = await c.post("/v1/auth/verify", json=body)
    assert replay.status_code == 400 and replay.json()["reason_class"] == "challenge_already_used"
    assert body["signature"] not in replay.text and token not in replay.text
    return token


async def quote(c: httpx.AsyncClient) -> str:
    r = await c.post("/v1/quote", json={"amount_usd": 100, "destination_chain": "base"})
    assert r.status_code == 200, r.text
    qid: str = r.json()["quote"]["quote_id"]
    return qid


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_login_session_binding_and_idempotency(client: httpx.AsyncClient) -> None:
    c = client
    wallet, other = Keypair(), Keypair()
    token, stranger = await login(c, wallet), await login(c, other)
    qid = await quote(c)
    body: dict[str, Any] = {
        "quote_id": qid,
        "idempotency_key": "create-0001",
        "source_wallet": str(wallet.pubkey()),
        "destination_wallet": DEST,
    }
    for headers in ({}, {"Authorization": "Bearer nope-not-a-token-000000"}, {"Authorization": "Basic abc"}):
        r = await c.post("/v1/session", json=body, headers=headers)
        assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer"), r.text
    # a token of another wallet cannot open a session for this wallet
    r = await c.post("/v1/session", json=body, headers=bearer(stranger))
    assert r.status_code == 400 and r.json()["reason_class"] == "source_wallet_not_logged_in"
    # the embedded market builds the Raydium swap from the snapshot: the corridor session opens
    r = await c.post("/v1/session", json={**body, "idempotency_key": "create-open-01"}, headers=bearer(token))
    assert r.status_code == 201, r.text
    assert r.json()["status"] == "action_required"
    # an unknown or expired quote
    r = await c.post(
        "/v1/session",
        json={**body, "quote_id": "00000000-0000-4000-8000-00000000abcd"},
        headers=bearer(token),
    )
    assert r.status_code == 400 and r.json()["reason_class"] == "quote_not_found_or_expired"
    # a v2 quote of another route is not a corridor
    r = await c.post(
        "/v2/quote",
        json={
            "from_chain": "solana",
            "from_token": "SOL",
            "to_chain": "base",
            "to_token": "USDC",
            "amount_usd": 50,
        },
    )
    r = await c.post("/v1/session", json={**body, "quote_id": r.json()["quote_id"]}, headers=bearer(token))
    assert r.status_code == 400 and r.json()["reason_class"] == "quote_not_v1_corridor"
    # reads of unknown sessions: 404 whatever the wallet
    r = await c.get("/v1/session/00000000-0000-4000-8000-00000000abcd", headers=bearer(token))
    assert r.status_code == 404 and r.json()["reason_class"] == "session_not_found"
    r = await c.post(
        "/v1/session/00000000-0000-4000-8000-00000000abcd/prepare-destination-action",
        json={"idempotency_key": "k-00000001", "extra": 1},
        headers=bearer(token),
    )
    assert r.status_code == 400 and r.json()["reason_class"] == "unknown_field"


async def test_openapi_documents_the_v1_session_shapes(client: httpx.AsyncClient) -> None:
    doc = (await client.get("/openapi.json")).json()
    paths = doc["paths"]
    assert "/v1/auth/challenge" in paths and "/v1/session/{session_id}/observe-destination" in paths
    create = paths["/v1/session"]["post"]
    assert create["security"] == [{"bearerAuth": []}] and "401" in create["responses"]
    schemas = doc["components"]["schemas"]
    assert schemas["V1SessionCreateRequest"]["required"] == [
        "quote_id",
        "idempotency_key",
        "source_wallet",
        "destination_wallet",
    ]
    assert schemas["WalletAuthFinishRequest"]["properties"]["signature"]["maxLength"] == 128
    assert "action_required" in str(schemas["V1Session"])


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
async def test_login_records_in_the_session_database(
    backend: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Challenges are redeemed exactly once (two concurrent finishes: one grant), only the token's SHA-256 is
    kept, on SQLite and on PostgreSQL (migration 0002)."""
    import asyncio
    import contextlib
    from datetime import UTC, datetime, timedelta

    from tests.support.postgres import require_postgres, temporary_database

    from routequote.core.auth import AccessGrant, LoginChallenge
    from routequote.storage.sessions_sql import SqlSessionStore

    with contextlib.ExitStack() as stack:
        if backend == "postgresql":
            require_postgres()
            url = stack.enter_context(temporary_database())
        else:
            url = f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('login')}/s.sqlite3"
        store = SqlSessionStore(url)
        await store.start()
        try:
            now = datetime(2026, 11, 20, 12, tzinfo=UTC)
            ch = LoginChallenge(
                "00000000-0000-4000-8000-000000000001",
                "W" * 44,
                "message",
                "t",
                now,
                now + timedelta(minutes=5),
            )
            await store.put_challenge(ch)
            got = await store.get_challenge(ch.challenge_id)
            assert got is not None and got.message == "message" and got.used_at is None
            grants = [
                AccessGrant(f"{i:064x}", ch.wallet, ch.challenge_id, now, now + timedelta(hours=1))
                for i in (1, 2)
            ]
            results = await asyncio.gather(*(store.redeem_challenge(ch.challenge_id, now, g) for g in grants))
            assert sorted(results) == [False, True]
            kept = [await store.get_grant(g.token_sha256) for g in grants]
            assert sum(k is not None for k in kept) == 1
            used = await store.get_challenge(ch.challenge_id)
            assert used is not None and used.used_at == now
            late = LoginChallenge("00000000-0000-4000-8000-000000000002", ch.wallet, "m", "t", now, now)
            await store.put_challenge(late)
            assert (
                await store.redeem_challenge(
                    late.challenge_id, now, AccessGrant("f" * 64, ch.wallet, late.challenge_id, now, now)
                )
                is False
            )  # expired: nothing written
            assert await store.get_grant("f" * 64) is None
        finally:
            await store.aclose()


async def test_the_adapters_paths_read_views_and_verify_source(client: httpx.AsyncClient) -> None:
    """The public MCP adapter reads a view as a path segment and posts receipts to /verify-source: the same
    operations as ?view= and /verify-source-receipt (the whole sequence on chain: tests/e2e/test_adapter_v1_replay.py)."""
    c = client
    token = await login(c, Keypair())
    sid = "00000000-0000-4000-8000-00000000abcd"  # no such session: both spellings answer alike
    for segment, view in (("workflow", "workflow"), ("receipt", "receipt"), ("next-action", "next_action")):
        by_path = await c.get(f"/v1/session/{sid}/{segment}", headers=bearer(token))
        by_query = await c.get(f"/v1/session/{sid}", params={"view": view}, headers=bearer(token))
        assert by_path.status_code == by_query.status_code == 404, by_path.text
        assert by_path.json()["reason_class"] == by_query.json()["reason_class"] == "session_not_found"
        assert (await c.get(f"/v1/session/{sid}/{segment}")).status_code == 401  # still needs the token
    receipt = {"signature": "1" * 88, "idempotency_key": "adapter-verify-1"}
    alias = await c.post(f"/v1/session/{sid}/verify-source", json=receipt, headers=bearer(token))
    named = await c.post(f"/v1/session/{sid}/verify-source-receipt", json=receipt, headers=bearer(token))
    assert (alias.status_code, alias.json()["reason_class"]) == (
        named.status_code,
        named.json()["reason_class"],
    )
    assert alias.status_code == 404
    for path in ("verify-source", "verify-source-receipt"):  # unknown fields refused by both spellings
        extra = await c.post(f"/v1/session/{sid}/{path}", json={**receipt, "x": 1}, headers=bearer(token))
        assert extra.status_code == 400 and extra.json()["reason_class"] == "unknown_field", extra.text
    doc = (await c.get("/openapi.json")).json()
    assert not any(
        p.endswith(("/workflow", "/verify-source")) for p in doc["paths"]
    )  # aliases, not in the doc


async def test_on_the_defaults_a_corridor_that_cannot_be_observed_is_not_opened(tmp_path: Any) -> None:
    """No RPC URL (the defaults): the corridor could not be carried to complete, so no session is created."""
    port = free_port()
    app = create_app(
        Settings(rate_limit="off", port=port, database_url=f"sqlite+aiosqlite:///{tmp_path}/s.db")
    )
    with running_server(app, port) as url:
        async with httpx.AsyncClient(base_url=url) as c:
            wallet = Keypair()
            token = await login(c, wallet)
            body = {
                "quote_id": await quote(c),
                "idempotency_key": "create-0001",
                "source_wallet": str(wallet.pubkey()),
                "destination_wallet": DEST,
            }
            r = await c.post("/v1/session", json=body, headers=bearer(token))
            assert r.status_code == 400, r.text
            err = r.json()
            assert err["reason_class"] == "route_not_session_ready" and err["missing"] == [
                "no RPC URL for solana (ROUTEQUOTE_RPC_URL_SOLANA)",
                "no RPC URL for base (ROUTEQUOTE_RPC_URL_BASE)",
            ]
            again = await c.post("/v1/session", json=body, headers=bearer(token))
            assert again.status_code == 400 and again.json()["missing"] == err["missing"]  # nothing was kept
