"""A store that cannot serve is a 503 with its fault named, never a 500 and never a silent wrong answer (issue 38,
items 4 and 5), against a running server and a real Redis (127.0.0.1:6379, databases 10 and 11 here, and a
private redis-server for the database that does not exist).

- A record that does not parse (Redis idempotency and quote records, SQLite quote and idempotency rows, session
  documents) is 503 with `store_fault: malformed_record`, logged once however often it is read.
- A database number the server refuses makes every Redis user unavailable (quote store, idempotency store, rate
  limits), `/readyz` says why, and nothing runs on database 0.
"""

from __future__ import annotations

import base64
import secrets
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.support.observable import OBSERVABLE
from tests.support.redis_private import private_redis
from tests.support.server import running_server
from tests.support.services import require_redis
from tests.unit.actions.support import approval_for, intent_for, wallets_for

from routequote.app import create_app
from routequote.config import Settings
from routequote.core.quote import SESSION_HEADER
from routequote.prepare import idempotency_scope

ROUTE = "base:USDC->base:ETH"
IDEMPOTENCY_DB = "redis://127.0.0.1:6379/10"
QUOTE_DB = "redis://127.0.0.1:6379/11"
HANG_BOUND = 60.0  # seconds: bounds a server or a Redis that never answers (never asserted as a timing)


def prepare_body(quote: dict[str, Any]) -> dict[str, Any]:
    return {
        "caller_approved": True,
        **intent_for(ROUTE, 100),
        "wallets": wallets_for(ROUTE),
        "approval_v3": approval_for(quote),
    }


def logged(caplog: pytest.LogCaptureFixture, event: str) -> int:
    """How many log lines the server wrote with this event (structlog writes through the stdlib's logging)."""
    return sum(
        f"'event': '{event}'" in r.getMessage() or f'"event": "{event}"' in r.getMessage()
        for r in caplog.records
    )


def assert_store_fault(r: httpx.Response, reason_class: str, fault: str) -> None:
    assert r.status_code == 503, r.text
    body = r.json()
    assert body["error"] == "dependency_unavailable" and body["reason_class"] == reason_class, body
    assert body["store_fault"] == fault and int(r.headers["Retry-After"]) >= 1


@pytest.fixture()
def redis_server(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    """A server on the Redis store (database `request.param`), and that database's URL; flushed around."""
    require_redis()
    import redis

    url = request.param
    redis.Redis.from_url(url).flushdb()
    with running_server(create_app(Settings(rate_limit="off", quote_store="redis", redis_url=url))) as base:
        yield base, url
    redis.Redis.from_url(url).flushdb()


@pytest.mark.redis
@pytest.mark.parametrize("redis_server", [IDEMPOTENCY_DB], indirect=True)
def test_a_malformed_redis_idempotency_record_is_a_store_fault_not_a_500(
    redis_server: tuple[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    import redis

    base, url = redis_server
    quote = httpx.post(f"{base}/v2/quote", json=intent_for(ROUTE, 100)).json()
    body = prepare_body(quote)
    key = f"routequote:idempotency:{idempotency_scope(body['approval_v3'])}"
    shapes = [b"notjson", b"[1, 2]", b'{"request_sha256": 7, "response": {}}', b'{"response": "x"}']
    caplog.clear()
    for shape in shapes:
        redis.Redis.from_url(url).set(key, shape)
        for _ in range(3):  # the 3 of 3: each one 503, none 500
            assert_store_fault(
                httpx.post(f"{base}/v2/prepare", json=body), "quote_store_unavailable", "malformed_record"
            )
    # one record under one key, read 12 times: logged once
    assert logged(caplog, "store_record_malformed") == 1
    assert logged(caplog, "unhandled_error") == 0
    redis.Redis.from_url(url).delete(key)
    assert httpx.post(f"{base}/v2/prepare", json=body).status_code == 200  # the store serves again


@pytest.mark.redis
@pytest.mark.parametrize("redis_server", [QUOTE_DB], indirect=True)
def test_a_malformed_redis_quote_record_is_a_store_fault(redis_server: tuple[str, str]) -> None:
    import redis

    base, url = redis_server
    client = redis.Redis.from_url(url)
    for field in (b"notjson", b"99999999999999|notjson", b"99999999999999|Ckey\n[1,"):
        quote = httpx.post(f"{base}/v2/quote", json=intent_for(ROUTE, 100)).json()
        bucket = f"routequote:quote:b:{int(quote['quote_id'][34:], 16)}"
        assert client.hset(bucket, quote["quote_id"], field) == 0  # replaced in place
        if field.endswith(b"[1,"):
            client.set("key", b"{}")  # the shared record it names is there, and not the one named
        r = httpx.post(f"{base}/v2/prepare", json=prepare_body(quote))
        assert_store_fault(r, "quote_store_unavailable", "malformed_record")
    client.delete("key")


def test_malformed_sqlite_quote_and_idempotency_rows_are_store_faults(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "quotes.sqlite3"
    settings = Settings(rate_limit="off", quote_store="sqlite", quote_store_path=str(path))
    with running_server(create_app(settings)) as base:
        quote = httpx.post(f"{base}/v2/quote", json=intent_for(ROUTE, 100)).json()
        body = prepare_body(quote)
        assert httpx.post(f"{base}/v2/prepare", json=body).status_code == 200
        db = sqlite3.connect(path)
        with db:
            db.execute("UPDATE prepare_idempotency SET response = ?", (b"notjson",))
        caplog.clear()
        for _ in range(3):
            r = httpx.post(f"{base}/v2/prepare", json=body)
            assert_store_fault(r, "quote_store_unavailable", "malformed_record")
        assert logged(caplog, "store_record_malformed") == 1
        with db:
            db.execute("UPDATE prepare_idempotency SET response = ?", (b'"a string"',))
        r = httpx.post(f"{base}/v2/prepare", json=body)
        assert_store_fault(r, "quote_store_unavailable", "malformed_record")
        db.close()
    # another worker's quote file holding a record that does not parse
    with running_server(create_app(settings)) as base:
        other = sqlite3.connect(f"{path}.other")
        with other:
            other.execute(
                "CREATE TABLE issued_quotes (quote_id TEXT PRIMARY KEY, expires_unix REAL NOT NULL, record BLOB)"
            )
        quote = httpx.post(f"{base}/v2/quote", json=intent_for(ROUTE, 100)).json()
        quote_id = "6a1d6f2c-4b7e-4d3c-9a8b-0c1d2e3f4a5b"
        with other:
            other.execute("INSERT INTO issued_quotes VALUES (?, 9e12, ?)", (quote_id, b"{}\nnotjson"))
        other.close()
        r = httpx.post(f"{base}/v2/prepare", json=prepare_body({**quote, "quote_id": quote_id}))
        assert_store_fault(r, "quote_store_unavailable", "malformed_record")


def test_a_malformed_session_document_is_a_store_fault(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    database = tmp_path / "sessions.sqlite3"
    settings = Settings(rate_limit="off", database_url=f"sqlite:///{database}", **OBSERVABLE)
    with running_server(create_app(settings)) as base:
        quote = httpx.post(f"{base}/v2/quote", json=intent_for(ROUTE, 100)).json()
        token = base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()
        headers = {SESSION_HEADER: token}
        body = {
            "caller_approved": True,
            **intent_for(ROUTE, 100),
            "wallets": wallets_for(ROUTE),
            "approval_v3": approval_for(quote, key="faults-1", selected_mode="session"),
            "idempotency_key": "faults-1",
        }
        made = httpx.post(f"{base}/v2/session", json=body, headers=headers)
        assert made.status_code == 201, made.text
        session_id = made.json()["session_id"]
        assert httpx.get(f"{base}/v2/session/{session_id}", headers=headers).status_code == 200
        db = sqlite3.connect(database)
        caplog.clear()
        # not JSON, not an object, an object that is not a session document (each read 3 times)
        # the text that does not parse is this test's own: a JSON reader with no key logs by the text's hash
        for document in (f"notjson-{session_id}", "[1, 2]", "{}", '{"version": "routequote-session-v1"}'):
            with db:
                db.execute("UPDATE sessions SET state = ? WHERE session_id = ?", (document, session_id))
            for _ in range(3):
                r = httpx.get(f"{base}/v2/session/{session_id}", headers=headers)
                assert_store_fault(r, "session_store_unavailable", "malformed_record")
                r = httpx.get(f"{base}/v2/session/{session_id}?view=receipt", headers=headers)
                assert_store_fault(r, "session_store_unavailable", "malformed_record")
        # logged once per damaged record (the text that does not parse, and the session whose state is wrong)
        assert logged(caplog, "store_record_malformed") == 2
        assert logged(caplog, "unhandled_error") == 0
        db.close()


def test_a_database_redis_refuses_makes_every_redis_user_unavailable_and_nothing_runs_on_db_0(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every answer names the refused database, and only that. The service's own waits for Redis (the wire's
    1 s, the start-up check's and the readiness probe's 2 s) are lengthened to this test's hang bound: on a
    starved machine they raced the private server's reply to SELECT, so a probe or a quote could honestly
    say `timed_out` instead (what a Redis that does not answer in time is, and not what this test is about)."""
    import asyncio

    import redis

    from routequote import config_check
    from routequote.config_check import load_settings
    from routequote.errors import DependencyUnavailable
    from routequote.storage import redis_store
    from routequote.storage.redis_store import RedisIdempotencyStore, RedisQuoteStore
    from routequote.surfaces import health

    monkeypatch.setattr(redis_store, "WIRE_TIMEOUT_SECONDS", HANG_BOUND)
    monkeypatch.setattr(config_check, "REDIS_CHECK_TIMEOUT_SECONDS", HANG_BOUND)
    monkeypatch.setattr(health, "CHECK_TIMEOUT_SECONDS", HANG_BOUND)
    with private_redis(tmp_path) as server:  # 16 databases, empty: any key on database 0 came from us
        url = f"redis://127.0.0.1:{server.port}/99"
        # `routequote serve` refuses to start: the configuration check asks the server
        _, found = load_settings(redis_url=url, quote_store="redis")
        assert found == ["ROUTEQUOTE_REDIS_URL: Redis refuses database 99: this Redis has 16 (0..15)"]
        assert load_settings(redis_url=f"redis://127.0.0.1:{server.port}/15", quote_store="redis")[1] == []

        # an app built past the check (as create_app allows): every Redis user answers 503, saying why
        async def quotes(base: str, n: int, streams: int = 16) -> list[httpx.Response]:
            """`n` quotes from `streams` callers, each asking again once answered: some arrive while a
            connection's SELECT is pending (before, 1 to 88 of 400 were written to database 0)."""
            async with httpx.AsyncClient(base_url=base, timeout=HANG_BOUND) as client:

                async def stream() -> list[httpx.Response]:
                    return [
                        await client.post("/v2/quote", json=intent_for(ROUTE, 100 + i % 7))
                        for i in range(n // streams)
                    ]

                return [r for rs in await asyncio.gather(*(stream() for _ in range(streams))) for r in rs]

        def refused(answers: list[httpx.Response], reason_class: str) -> None:
            """Each a 503 saying the database is refused: none answered from another database."""
            assert answers
            for r in answers:
                assert_store_fault(r, reason_class, "database_refused")

        limited = create_app(Settings(rate_limit="100000/minute", redis_url=url))
        with running_server(limited) as base:
            refused(asyncio.run(quotes(base, 20)), "rate_limit_store_unavailable")
        settings = Settings(rate_limit="off", quote_store="redis", redis_url=url)
        with running_server(create_app(settings)) as base:
            refused(asyncio.run(quotes(base, 400)), "quote_store_unavailable")  # the 400
            ready = httpx.get(f"{base}/readyz", timeout=HANG_BOUND)
            assert ready.status_code == 503 and ready.json()["failing"] == ["redis"], ready.text
            check = ready.json()["checks"]["redis"]
            assert check["fault"] == "database_refused" and "database number" in check["reason"], check
            assert str(server.port) not in ready.text

        async def stores() -> None:
            for store in (RedisIdempotencyStore(url), RedisQuoteStore(url)):
                try:
                    with pytest.raises(DependencyUnavailable) as caught:
                        await store.get("6a1d6f2c-4b7e-4d3c-9a8b-0c1d2e3f4a5b", 0.0)
                    assert caught.value.details == {"store_fault": "database_refused"}
                finally:
                    await store.aclose()

        asyncio.run(stores())
        assert redis.Redis(port=server.port, db=0).dbsize() == 0
