"""Sessions across real server processes (`routequote serve` subprocesses, configured by ROUTEQUOTE_* only):

* three replicas sharing Redis (issued quotes) and one PostgreSQL database: a quote issued by A is sessioned
  on B, read and cancelled on C; two processes sharing one SQLite file see each other's sessions;
* SIGKILL between steps: a new process on the same database finds the session intact and it goes on (a refresh
  after expiry needs the clock to move, which a subprocess cannot be made to do: cancel and read are used);
* PostgreSQL stopped and restarted mid-session: 503 session_store_unavailable while it is down, then the same
  server recovers by itself and nothing is lost;
* two concurrent cancels of one session on two processes: exactly one wins, the version rises by one.

PostgreSQL / Redis tests are marked and skip with the reason when the service is unreachable."""

from __future__ import annotations

import base64
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.support.postgres import postgres_stopped, require_postgres, restart_postgres, temporary_database
from tests.support.server_process import ServerProcess, server_processes, shared_signing_key, start_server
from tests.support.services import require_redis
from tests.unit.actions.support import approval_for, intent_for, wallets_for

from routequote.core.quote import SESSION_HEADER

ROUTE = "base:ETH->base:USDC"
MULTI = "base:ETH->arbitrum:USDC"
REDIS_URL = "redis://127.0.0.1:6379/13"


def new_token() -> str:
    return base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()


def quote(url: str, route: str = ROUTE) -> dict[str, Any]:
    r = httpx.post(f"{url}/v2/quote", json=intent_for(route, 100), timeout=30)
    assert r.status_code == 200, r.text
    return r.json()


def create(
    url: str, q: dict[str, Any], token: str, route: str = ROUTE, key: str | None = None
) -> httpx.Response:
    key = key or f"k-{secrets.token_hex(6)}"
    body = {
        "caller_approved": True,
        **intent_for(route, 100),
        "wallets": wallets_for(route),
        "approval_v3": approval_for(q, key=key, selected_mode="session"),
        "idempotency_key": key,
    }
    return httpx.post(f"{url}/v2/session", json=body, headers={SESSION_HEADER: token}, timeout=30)


def read(url: str, sid: str, token: str, view: str = "session") -> httpx.Response:
    return httpx.get(
        f"{url}/v2/session/{sid}", params={"view": view}, headers={SESSION_HEADER: token}, timeout=30
    )


def op(url: str, sid: str, name: str, token: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(
        f"{url}/v2/session/{sid}/{name}", json=body, headers={SESSION_HEADER: token}, timeout=30
    )


def created_on(url: str, route: str = ROUTE) -> tuple[str, str, dict[str, Any]]:
    token = new_token()
    r = create(url, quote(url, route), token, route)
    assert r.status_code == 201, r.text
    return r.json()["session_id"], token, r.json()


def fingerprint(session: dict[str, Any]) -> tuple[Any, ...]:
    """What must survive a crash or an outage: status, version, step, and the exact action offered."""
    action = session.get("current_action") or {}
    return (
        session["status"],
        session["session_version"],
        session["current_step"],
        session["next_operation"],
        action.get("action_id"),
        action.get("payload_sha256"),
    )


def sqlite_url(path: Path) -> str:
    return f"sqlite+aiosqlite:///{path}"


@pytest.fixture()
def pg_url() -> Iterator[str]:
    require_postgres()
    with temporary_database() as url:
        yield url


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The same test on an SQLite file and on a temporary PostgreSQL database."""
    if request.param == "sqlite":
        yield sqlite_url(tmp_path / "sessions.sqlite3")
        return
    require_postgres()
    with temporary_database() as url:
        yield url


# ---- several replicas ----------------------------------------------------------------------------------


@pytest.mark.postgres
@pytest.mark.redis
def test_quote_on_a_session_on_b_read_and_cancel_on_c(pg_url: str, tmp_path: Path) -> None:
    require_redis()
    settings = {
        "quote_store": "redis",
        "redis_url": REDIS_URL,
        "database_url": pg_url,
        "signing_key": shared_signing_key(),
    }
    with server_processes(tmp_path, ["a", "b", "c"], settings) as (a, b, c):
        token, key = new_token(), "create-on-b-1"
        q = quote(a.url, MULTI)
        r = create(b.url, q, token, MULTI, key=key)  # B never issued this quote: it reads it from Redis
        assert r.status_code == 201, r.text
        made = r.json()
        sid = made["session_id"]
        assert made["status"] == "action_ready" and made["step_count"] == 2
        assert (
            made["current_action"]["quote_binding"]["quote_fingerprint"]
            == q["continuation_v3"]["quote_fingerprint"]
        )
        # every replica reads the same session from the shared database
        views = [read(s.url, sid, token).json() for s in (a, b, c)]
        assert {fingerprint(v) for v in views} == {fingerprint(made)}
        wf = read(c.url, sid, token, "workflow").json()
        assert [s["provider"] for s in wf["steps"]] == ["uniswap_v3", "circle_cctp"]
        assert read(c.url, sid, new_token()).status_code == 404  # the token still gates every replica
        # cancelled on C; the answer is stored with the session, so a replay on A is the same answer
        cancel = op(c.url, sid, "cancel", token, {"idempotency_key": "cancel-on-c-1"})
        assert cancel.status_code == 200, cancel.text
        assert cancel.json()["status"] == "cancelled"
        assert cancel.json()["session_version"] == made["session_version"] + 1
        replay = op(a.url, sid, "cancel", token, {"idempotency_key": "cancel-on-c-1"})
        assert replay.status_code == 200 and replay.json()["idempotent_replay"] is True
        assert replay.json()["session_version"] == cancel.json()["session_version"]
        after = read(b.url, sid, token).json()
        assert (after["status"], after["session_version"]) == ("cancelled", made["session_version"] + 1)
        # a create replay on another replica returns the stored answer, not a second session
        again = create(c.url, q, token, MULTI, key=key)
        assert again.status_code == 201, again.text
        assert again.json()["idempotent_replay"] is True and again.json()["session_id"] == sid


def test_two_processes_share_one_sqlite_file(tmp_path: Path) -> None:
    settings = {"database_url": sqlite_url(tmp_path / "shared.sqlite3"), "signing_key": shared_signing_key()}
    with server_processes(tmp_path, ["a", "b"], settings) as (a, b):
        sid_a, tok_a, made_a = created_on(a.url)  # memory quote store: each quotes and creates on itself
        sid_b, tok_b, made_b = created_on(b.url)
        assert fingerprint(read(b.url, sid_a, tok_a).json()) == fingerprint(made_a)
        assert fingerprint(read(a.url, sid_b, tok_b).json()) == fingerprint(made_b)
        assert read(a.url, sid_b, tok_a).status_code == 404  # another session's token
        cancel = op(b.url, sid_a, "cancel", tok_a, {"idempotency_key": "cancel-a-on-b"})
        assert cancel.status_code == 200 and cancel.json()["status"] == "cancelled", cancel.text
        seen = read(a.url, sid_a, tok_a).json()
        assert (seen["status"], seen["session_version"]) == ("cancelled", made_a["session_version"] + 1)
        tokens = (tok_a, tok_b)
    blob = b"".join(
        p.read_bytes() for p in tmp_path.iterdir() if p.is_file()
    )  # the database files and both logs
    assert b"SQLite format 3" in blob
    for t in tokens:
        assert t.encode() not in blob


# ---- crash -----------------------------------------------------------------------------------------------


def test_sigkill_between_steps_loses_nothing(database_url: str, tmp_path: Path) -> None:
    settings = {"database_url": database_url, "signing_key": shared_signing_key()}
    first = start_server(tmp_path, "first", settings)
    try:
        token = new_token()
        key = "create-before-kill"
        q = quote(first.url)
        r = create(first.url, q, token, key=key)
        assert r.status_code == 201, r.text
        made = r.json()
        sid = made["session_id"]
        before = read(first.url, sid, token).json()
        assert fingerprint(before) == fingerprint(made)
    finally:
        first.kill()
    assert first.process.returncode == -9
    second = start_server(tmp_path, "second", settings)
    try:
        after = read(second.url, sid, token).json()
        assert fingerprint(after) == fingerprint(before)
        assert after["current_action"]["payload_sha256"] == made["current_action"]["payload_sha256"]
        # the create's idempotency record survived with the session: the replay is the stored answer (the quote
        # itself lived only in the killed process, so a new create could not be priced)
        replay = create(second.url, q, token, key=key)
        assert replay.status_code == 201, replay.text
        assert replay.json()["idempotent_replay"] is True and replay.json()["session_id"] == sid
        # it goes on: the state machine still refuses what the status does not allow, and a cancel commits
        early = op(second.url, sid, "refresh", token, {"idempotency_key": "refresh-too-early"})
        assert early.status_code == 409 and early.json()["reason_class"] == "operation_not_allowed_in_status"
        cancel = op(second.url, sid, "cancel", token, {"idempotency_key": "cancel-after-kill"})
        assert cancel.status_code == 200, cancel.text
        assert cancel.json()["status"] == "cancelled"
        assert cancel.json()["session_version"] == before["session_version"] + 1
        final = read(second.url, sid, token).json()
        assert (final["status"], final["session_version"]) == ("cancelled", before["session_version"] + 1)
    finally:
        second.stop()


# ---- PostgreSQL outage -------------------------------------------------------------------------------------


def _poll(server: ServerProcess, sid: str, token: str, want: int, timeout: float = 30.0) -> httpx.Response:
    deadline = time.monotonic() + timeout
    while True:
        try:
            r = read(server.url, sid, token)
            if r.status_code == want:
                return r
        except httpx.HTTPError:
            r = None
        if time.monotonic() > deadline:
            raise AssertionError(f"no {want} within {timeout} s (last: {r and r.text})\n{server.log_tail()}")
        time.sleep(0.2)


@pytest.mark.postgres
def test_postgres_outage_is_503_then_the_same_server_recovers(pg_url: str, tmp_path: Path) -> None:
    server = start_server(tmp_path, "pg", {"database_url": pg_url, "signing_key": shared_signing_key()})
    try:
        sid, token, made = created_on(server.url)
        before = read(server.url, sid, token).json()
        assert fingerprint(before) == fingerprint(made)
        with postgres_stopped():
            down = _poll(server, sid, token, 503)
            assert down.json()["reason_class"] == "session_store_unavailable", down.text
            assert pg_url.rsplit("/", 1)[1] not in down.text  # the reason names no database
            refused = op(server.url, sid, "cancel", token, {"idempotency_key": "cancel-while-down"})
            assert (
                refused.status_code == 503 and refused.json()["reason_class"] == "session_store_unavailable"
            )
            assert quote(server.url)["quote_id"]  # quoting does not need the session database
        back = _poll(server, sid, token, 200)  # the same process, no restart
        assert fingerprint(back.json()) == fingerprint(before)
        # a plain restart (every pooled connection dies under the server) is absorbed as well
        restart_postgres()
        again = _poll(server, sid, token, 200)
        assert fingerprint(again.json()) == fingerprint(before)
        # nothing was half-written during the outage: the refused cancel's key is free, and a cancel commits once
        cancel = op(server.url, sid, "cancel", token, {"idempotency_key": "cancel-while-down"})
        assert cancel.status_code == 200, cancel.text
        assert cancel.json()["idempotent_replay"] is False
        assert cancel.json()["session_version"] == before["session_version"] + 1
        # and a new session can be created on the recovered store
        sid2, token2, made2 = created_on(server.url)
        assert fingerprint(read(server.url, sid2, token2).json()) == fingerprint(made2)
    finally:
        server.stop()


# ---- concurrency -------------------------------------------------------------------------------------------


def race(calls: list[Callable[[], httpx.Response]]) -> list[httpx.Response | None]:
    """Run the calls on threads released together by a barrier; their answers in order."""
    answers: list[httpx.Response | None] = [None] * len(calls)
    barrier = threading.Barrier(len(calls))

    def run(i: int) -> None:
        barrier.wait()
        answers[i] = calls[i]()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return answers


def test_concurrent_cancels_on_two_processes_one_wins(database_url: str, tmp_path: Path) -> None:
    settings = {"database_url": database_url, "signing_key": shared_signing_key()}
    with server_processes(tmp_path, ["a", "b"], settings) as (a, b):
        clients = [httpx.Client(base_url=s.url, timeout=30) for s in (a, b)]
        try:
            for round_ in range(6):
                sid, token, made = created_on(a.url)
                path, headers = f"/v2/session/{sid}/cancel", {SESSION_HEADER: token}
                answers = race(
                    [
                        partial(
                            clients[i].post,
                            path,
                            headers=headers,
                            json={"idempotency_key": f"cancel-{round_}-by-{'ab'[i]}"},
                        )
                        for i in (0, 1)
                    ]
                )
                got = [r for r in answers if r is not None]
                assert len(got) == 2
                codes = sorted(r.status_code for r in got)
                assert codes == [200, 409], [r.text for r in got]
                loser = next(r for r in got if r.status_code == 409).json()
                assert loser["reason_class"] in (
                    "operation_not_allowed_in_status",
                    "session_changed_concurrently",
                )
                final = read(b.url, sid, token).json()
                assert (final["status"], final["session_version"]) == (
                    "cancelled",
                    made["session_version"] + 1,
                )
                assert read(a.url, sid, token).json()["session_version"] == made["session_version"] + 1
        finally:
            for c in clients:
                c.close()
