"""Faults, each over real HTTP: the right status while it lasts, recovery by itself, nothing lost.

* the live market's upstream answering garbage, failing (HTTP 500) or hanging past the source timeout
  (tests/recordings/fake_upstreams.py behind the real httpx client, as tests/integration/test_live_market.py):
  502 market_source_unavailable on exactly the routes that need it, the others still 200; a quote issued
  before the fault still binds a session after it;
* PostgreSQL stopped and started (a `routequote serve` process): /readyz 503 naming the database, session
  create 503 session_store_unavailable with nothing half-written, quotes still served; afterwards the
  same process is ready again and the sessions read back equal (tests/integration/test_sessions_replicas.py
  covers reads and cancels through an outage and a restart; this adds create, readiness and quotes);
* a private Redis (the rate limiter and the issued-quote store) stopped and started: never a 500, /readyz
  503 naming Redis; afterwards the same process serves again and a quote issued before binds a prepare;
* SIGTERM under load: requests in flight (bodies still arriving) complete, the process exits 0, every
  answered session create reads back equal from the next process;
* SIGKILL in the middle of concurrent session creates and cancels: every session is whole or absent
  (test_sessions_replicas.py kills between steps; this kills mid-request).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import secrets
import signal
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.recordings.fake_upstreams import FakeUpstreams, live_config
from tests.support.observable import OBSERVABLE
from tests.support.postgres import postgres_stopped, require_postgres, temporary_database
from tests.support.redis_private import private_redis
from tests.support.server import free_port, running_server
from tests.support.server_process import (
    ServerProcess,
    listens,
    read_connections,
    shared_signing_key,
    start_server,
)
from tests.unit.actions.support import approval_for, intent_for, wallets_for

from routequote.app import create_app
from routequote.clock import FixedClock, SequentialIds
from routequote.config import Settings
from routequote.core.quote import SESSION_HEADER
from routequote.market.live import LiveMarket

ONE_STEP = "base:ETH->base:USDC"
VIA_CCTP = "base:ETH->arbitrum:USDC"  # needs Circle Iris (circle_cctp)


def new_token() -> str:
    return base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()


def session_body(q: dict[str, Any], route: str, key: str) -> dict[str, Any]:
    return {
        "caller_approved": True,
        **intent_for(route, 100),
        "wallets": wallets_for(route),
        "approval_v3": approval_for(q, key=key, selected_mode="session"),
        "idempotency_key": key,
    }


def prepare_body(q: dict[str, Any], route: str, key: str) -> dict[str, Any]:
    return {
        "caller_approved": True,
        **intent_for(route, 100),
        "wallets": wallets_for(route),
        "approval_v3": approval_for(q, key=key, selected_mode="one_shot"),
    }


def fingerprint(s: dict[str, Any]) -> tuple[Any, ...]:
    action = s.get("current_action") or {}
    return (
        s["session_id"],
        s["status"],
        s["session_version"],
        s["current_step"],
        action.get("action_id"),
        action.get("payload_sha256"),
    )


def poll(call: Callable[[], httpx.Response], want: int, timeout: float = 30.0) -> httpx.Response:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = call()
            if last.status_code == want:
                return last
        except httpx.HTTPError as exc:
            last = exc
        time.sleep(0.2)
    raise AssertionError(f"no {want} within {timeout} s; last: {getattr(last, 'text', last)}")


# ---- the market source -----------------------------------------------------------------------------------


@pytest.fixture
async def live(tmp_path: Path) -> AsyncIterator[tuple[str, FakeUpstreams, FixedClock, LiveMarket]]:
    from datetime import UTC, datetime

    clock = FixedClock(datetime(2026, 11, 20, 12, 0, tzinfo=UTC))
    fake = FakeUpstreams(clock)
    http = httpx.AsyncClient(transport=fake.transport())
    # The source deadline is the fake upstream's: its hanging request ends it, and no answer from it races the
    # wall clock (at a 0.2 s and then a 1.5 s timeout of wall time, loaded runs saw healthy and garbage answers
    # time out). The wall-clock deadline itself: test_live_market.py.
    market = LiveMarket(live_config(), clock, http=http, source_deadline=fake.deadline)
    port = free_port()
    settings = Settings(
        rate_limit="off", port=port, database_url=f"sqlite+aiosqlite:///{tmp_path}/s.sqlite3", **OBSERVABLE
    )
    app = create_app(settings, market=market, clock=clock, ids=SequentialIds())
    with running_server(app, port) as url:
        yield url, fake, clock, market
    await http.aclose()


async def healthy_quote(c: httpx.AsyncClient) -> httpx.Response:
    """A live quote through the healthy upstream."""
    got = await c.post("/v2/quote", json=intent_for(VIA_CCTP, 100))
    assert got.status_code == 200 and got.json()["market"]["live"] is True, got.text
    return got


@pytest.mark.parametrize("fault", ["garbage", "http500", "hang"])
async def test_market_source_fault_right_status_recovers_and_loses_nothing(
    live: tuple[str, FakeUpstreams, FixedClock, LiveMarket], fault: str
) -> None:
    url, fake, clock, market = live
    async with httpx.AsyncClient(base_url=url, timeout=30) as c:
        before = await healthy_quote(c)
        fake.faults["iris.test"] = fault
        clock.advance(5)  # past the cache TTL: the next view asks the upstream
        down = await c.post("/v2/quote", json=intent_for(VIA_CCTP, 100))
        # a hanging upstream is cut at the source deadline (which its hanging request ended)
        assert (fake.deadlines_ended > 0) == (fault == "hang"), fake.deadlines_ended
        assert down.status_code == 502, down.text
        body = down.json()
        assert (
            body["reason_class"] == "market_source_unavailable"
            and body["unavailable_component"] == "circle_cctp"
        )
        assert int(down.headers["Retry-After"]) >= 1
        expected_kind = {"garbage": "invalid", "http500": "transport_error", "hang": "timeout"}[fault]
        assert expected_kind in body["message"], body
        assert (
            "Traceback" not in down.text and "http://" not in down.text
        )  # no upstream URL (a key may be in it)
        other = await c.post("/v2/quote", json=intent_for(ONE_STEP, 100))
        assert other.status_code == 200, other.text  # a route that does not need Circle is unaffected
        assert (await c.get("/v2/status")).json()["market"]["healthy"] is False
        # recovery by itself: the upstream heals, the breaker (if it opened) cools down
        del fake.faults["iris.test"]
        clock.advance(market.config.cooldown_seconds + 1)
        await healthy_quote(c)
        assert (await c.get("/v2/status")).json()["market"]["healthy"] is True
        # nothing lost: the quote issued before the fault (still inside its TTL) binds a session
        token, key = new_token(), f"fault-{fault}-1"
        made = await c.post(
            "/v2/session", json=session_body(before.json(), VIA_CCTP, key), headers={SESSION_HEADER: token}
        )
        assert made.status_code == 201, made.text
        assert made.json()["current_action"]["quote_binding"]["quote_id"] == before.json()["quote_id"]


# ---- PostgreSQL --------------------------------------------------------------------------------------------


@pytest.mark.postgres
def test_postgres_away_and_back_create_readiness_and_quotes(tmp_path: Path) -> None:
    require_postgres()
    with temporary_database() as pg_url:
        server = start_server(tmp_path, "pg", {"database_url": pg_url, "signing_key": shared_signing_key()})
        try:
            with httpx.Client(base_url=server.url, timeout=30) as c:
                token = new_token()
                q0 = c.post("/v2/quote", json=intent_for(ONE_STEP, 100)).json()
                first = c.post(
                    "/v2/session",
                    json=session_body(q0, ONE_STEP, "pg-before-1"),
                    headers={SESSION_HEADER: token},
                )
                assert first.status_code == 201, first.text
                sid = first.json()["session_id"]
                assert poll(lambda: c.get("/readyz"), 200).status_code == 200
                q1 = c.post("/v2/quote", json=intent_for(ONE_STEP, 100)).json()
                with postgres_stopped():
                    ready = poll(lambda: c.get("/readyz"), 503)
                    assert "database" in " ".join(ready.json()["failing"]), ready.text
                    assert pg_url.rsplit("/", 1)[1] not in ready.text and "5432" not in ready.text
                    assert c.get("/livez").status_code == 200  # alive: an orchestrator must not restart it
                    refused = c.post(
                        "/v2/session",
                        json=session_body(q1, ONE_STEP, "pg-during-1"),
                        headers={SESSION_HEADER: token},
                    )
                    assert refused.status_code == 503, refused.text
                    assert refused.json()["reason_class"] == "session_store_unavailable"
                    assert c.post("/v2/quote", json=intent_for(ONE_STEP, 100)).status_code == 200
                poll(lambda: c.get("/readyz"), 200)  # the same process, no restart
                assert fingerprint(
                    c.get(f"/v2/session/{sid}", headers={SESSION_HEADER: token}).json()
                ) == fingerprint(first.json())
                # nothing half-written: the refused create's key is free and creates exactly once now
                made = c.post(
                    "/v2/session",
                    json=session_body(q1, ONE_STEP, "pg-during-1"),
                    headers={SESSION_HEADER: token},
                )
                assert made.status_code == 201 and made.json()["idempotent_replay"] is False, made.text
                replay = c.post(
                    "/v2/session",
                    json=session_body(q1, ONE_STEP, "pg-during-1"),
                    headers={SESSION_HEADER: token},
                )
                assert (
                    replay.json()["idempotent_replay"] is True
                    and replay.json()["session_id"] == made.json()["session_id"]
                )
        finally:
            server.stop()


# ---- Redis -------------------------------------------------------------------------------------------------


def test_redis_away_and_back(tmp_path: Path) -> None:
    (tmp_path / "redis").mkdir()
    with private_redis(tmp_path / "redis") as redis:
        server = start_server(
            tmp_path,
            "redis",
            {
                "redis_url": redis.url,
                "quote_store": "redis",
                "rate_limit": "100000/minute",
                "database_url": f"sqlite+aiosqlite:///{tmp_path}/s.sqlite3",
            },
        )
        try:
            with httpx.Client(base_url=server.url, timeout=30) as c:
                before = c.post("/v2/quote", json=intent_for(ONE_STEP, 100))
                assert before.status_code == 200 and "RateLimit-Remaining" in before.headers, before.text
                redis.stop()
                during = [c.post("/v2/quote", json=intent_for(ONE_STEP, 100)) for _ in range(3)]
                during.append(
                    c.post("/v2/prepare", json=prepare_body(before.json(), ONE_STEP, "redis-during-1"))
                )
                for r in during:
                    assert r.status_code == 503, (
                        r.text
                    )  # a dependency is down: never a 500, never a pass-through
                    assert "Traceback" not in r.text and str(redis.port) not in r.text
                    assert int(r.headers.get("Retry-After", "1")) >= 1
                ready = poll(lambda: c.get("/readyz"), 503)
                assert "redis" in " ".join(ready.json()["failing"]), ready.text
                redis.start()  # same port, its data loaded back
                poll(lambda: c.post("/v2/quote", json=intent_for(ONE_STEP, 100)), 200)
                poll(lambda: c.get("/readyz"), 200)
                # nothing lost: the quote issued before the outage binds a prepare now
                prepared = c.post("/v2/prepare", json=prepare_body(before.json(), ONE_STEP, "redis-after-1"))
                assert prepared.status_code == 200, prepared.text
            assert "Traceback" not in server.log.read_text(errors="replace"), server.log_tail()
        finally:
            server.stop()


# ---- SIGTERM under load ------------------------------------------------------------------------------------


async def _slow_post(
    port: int,
    path: str,
    body: bytes,
    headers: dict[str, str],
    started: asyncio.Event,
    release: asyncio.Event,
    client_ports: set[int],
) -> bytes:
    """Send the head and half the body, wait for `release`, send the rest; return the whole answer."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    client_ports.add(writer.get_extra_info("sockname")[1])
    head = (
        f"POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
    )
    writer.write(head.encode() + body[: len(body) // 2])
    await writer.drain()
    started.set()
    await release.wait()
    writer.write(body[len(body) // 2 :])
    await writer.drain()
    out = b""
    with contextlib.suppress(OSError, TimeoutError):
        async with asyncio.timeout(30):
            while chunk := await reader.read(65_536):
                out += chunk
    writer.close()
    return out


BACKGROUND_BEFORE_TERM = (
    1000  # quotes the background clients ask for before SIGTERM (then: until the server is gone)
)


def _whole_answer(answer: bytes) -> tuple[int, bool]:
    """The status of a raw HTTP/1.1 answer, and whether its body is as long as its Content-Length says."""
    head, found, body = answer.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    fields = lines[0].split(b" ", 2)
    if not found or len(fields) < 2 or not fields[1].isdigit():
        return 0, False
    lengths = [
        v.strip()
        for k, _, v in (h.partition(b":") for h in lines[1:])
        if k.strip().lower() == b"content-length"
    ]
    return int(fields[1]), len(lengths) == 1 and lengths[0].isdigit() and int(lengths[0]) == len(body)


def test_sigterm_under_load_completes_in_flight_requests_and_exits_0(tmp_path: Path) -> None:
    import orjson

    db = f"sqlite+aiosqlite:///{tmp_path}/s.sqlite3"
    settings = {"database_url": db, "signing_key": shared_signing_key()}
    server = start_server(tmp_path, "term", settings)
    port = int(server.url.rsplit(":", 1)[1])
    answered: list[tuple[str, str, dict[str, Any]]] = []  # (session id, token, created answer)
    errors: list[str] = []
    stop = threading.Event()

    term_sent: list[float] = []
    dropped_at_shutdown: list[str] = []
    sent: list[int] = []  # client ports of background requests sent whole
    read_at_term: set[int] = set()  # of those, the ones the server had read when SIGTERM left: in flight
    quote_body = orjson.dumps(intent_for(ONE_STEP, 50))
    quote_request = (
        f"POST /v2/quote HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        f"content-length: {len(quote_body)}\r\nconnection: close\r\n\r\n"
    ).encode() + quote_body

    termed = threading.Event()

    def background() -> None:  # plain quote traffic on fresh connections until the server is gone
        while not stop.is_set():
            if (
                len(sent) >= BACKGROUND_BEFORE_TERM
            ):  # the server keeps 2048 quotes: the six approved stay known
                termed.wait(120)
            try:
                sock = socket.create_connection(("127.0.0.1", port), timeout=30)
            except OSError:
                return  # the listener is closed: the request never started
            answer = b""
            with sock:
                client = sock.getsockname()[1]
                try:
                    sock.sendall(quote_request)
                    sent.append(client)
                    while chunk := sock.recv(65536):
                        answer += chunk
                except OSError:  # closed or reset (ECONNRESET, seen on a loaded machine)
                    pass
            if not answer:
                # no answer at all (never a partial one), retryable by the client: acceptable only for a request
                # the server had not read when SIGTERM was sent (still in the listener's backlog, or accepted
                # and not read: uvicorn closes a connection without a request at shutdown). A request it had
                # read is in flight, and is answered.
                gone = bool(term_sent) and client not in read_at_term
                (dropped_at_shutdown if gone else errors).append(f"no answer on port {client}")
                return
            status, whole = _whole_answer(answer)
            if not whole:  # started and then dropped mid-answer: a lost in-flight request
                errors.append(f"cut answer: {answer[:200]!r}")
                return
            if status != 200 and not (term_sent and status == 503):
                errors.append(f"{status} {answer[:300]!r}")

    quotes = [
        httpx.post(f"{server.url}/v2/quote", json=intent_for(ONE_STEP, 100), timeout=30).json()
        for _ in range(6)
    ]
    tokens = [new_token() for _ in quotes]

    async def scenario() -> list[bytes]:
        started = [asyncio.Event() for _ in quotes]
        release = asyncio.Event()
        client_ports: set[int] = set()
        tasks = [
            asyncio.ensure_future(
                _slow_post(
                    port,
                    "/v2/session",
                    orjson.dumps(session_body(q, ONE_STEP, f"term-{i}-key")),
                    {SESSION_HEADER: tokens[i]},
                    started[i],
                    release,
                    client_ports,
                )
            )
            for i, q in enumerate(quotes)
        ]
        for e in started:
            await e.wait()
        # the server has accepted all six (a busy one may not have yet when the client's writes are done) and
        # read what was sent of each, its head: each is a request in flight
        async with asyncio.timeout(60):  # bounds a hang only
            while read_connections(server.process.pid, client_ports) != client_ports:
                await asyncio.sleep(0.05)
        read_at_term.update(read_connections(server.process.pid, set(list(sent))))
        term_sent.append(time.monotonic())
        server.process.send_signal(signal.SIGTERM)  # six creates are in flight, bodies half-sent
        termed.set()
        async with asyncio.timeout(60):  # shutting down: the listener is closed, the six are still in flight
            while listens(server.process.pid, port):
                await asyncio.sleep(0.05)
        release.set()
        return list(await asyncio.gather(*tasks))

    threads = [threading.Thread(target=background) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        results = asyncio.run(scenario())
        code = server.process.wait(60)
    finally:
        stop.set()
        termed.set()
        for t in threads:
            t.join(60)
        server.kill()
    assert code == 0, server.log_tail()
    assert errors == [], errors
    assert len(dropped_at_shutdown) <= 3, dropped_at_shutdown  # at most one per background client
    for raw, token in zip(results, tokens):
        assert raw.startswith(b"HTTP/1.1 201"), raw[:400]
        created = orjson.loads(raw.split(b"\r\n\r\n", 1)[1])
        answered.append((created["session_id"], token, created))
    # a new process on the same database: every answered session is there, whole
    again = start_server(tmp_path, "after-term", settings)
    try:
        for sid, token, created in answered:
            r = httpx.get(f"{again.url}/v2/session/{sid}", headers={SESSION_HEADER: token}, timeout=30)
            assert r.status_code == 200 and fingerprint(r.json()) == fingerprint(created), r.text
    finally:
        again.stop()


# ---- SIGKILL mid-request -------------------------------------------------------------------------------------


def test_sigkill_mid_creates_and_cancels_leaves_every_session_whole_or_absent(tmp_path: Path) -> None:
    db = f"sqlite+aiosqlite:///{tmp_path}/s.sqlite3"
    settings = {"database_url": db, "signing_key": shared_signing_key()}
    first: ServerProcess = start_server(tmp_path, "kill", settings)
    with httpx.Client(base_url=first.url, timeout=30) as c:
        quotes = [c.post("/v2/quote", json=intent_for(ONE_STEP, 100)).json() for _ in range(24)]
        settled = []  # sessions created before the storm, to be cancelled during it
        for i in range(8):
            token = new_token()
            r = c.post(
                "/v2/session",
                json=session_body(quotes[i], ONE_STEP, f"kill-pre-{i}"),
                headers={SESSION_HEADER: token},
            )
            assert r.status_code == 201, r.text
            settled.append((r.json(), token))
    outcomes: dict[str, Any] = {}

    def create(i: int, token: str) -> None:
        try:
            outcomes[f"create-{i}"] = httpx.post(
                f"{first.url}/v2/session",
                timeout=30,
                headers={SESSION_HEADER: token},
                json=session_body(quotes[i], ONE_STEP, f"kill-new-{i}"),
            )
        except httpx.HTTPError as exc:
            outcomes[f"create-{i}"] = exc

    def cancel(j: int) -> None:
        made, token = settled[j]
        try:
            outcomes[f"cancel-{j}"] = httpx.post(
                f"{first.url}/v2/session/{made['session_id']}/cancel",
                timeout=30,
                json={"idempotency_key": f"kill-cancel-{j}"},
                headers={SESSION_HEADER: token},
            )
        except httpx.HTTPError as exc:
            outcomes[f"cancel-{j}"] = exc

    new_tokens = {i: new_token() for i in range(8, 24)}
    threads = [threading.Thread(target=create, args=(i, t)) for i, t in new_tokens.items()]
    threads += [threading.Thread(target=cancel, args=(j,)) for j in range(8)]
    for t in threads:
        t.start()
    time.sleep(0.05)
    first.kill()  # SIGKILL while creates and cancels are in flight
    for t in threads:
        t.join(60)
    assert first.process.returncode == -signal.SIGKILL
    second = start_server(tmp_path, "after-kill", settings)
    try:
        with httpx.Client(base_url=second.url, timeout=30) as c:
            # cancels: committed (cancelled, version + 1) or not at all (as before); an answered 200 is committed
            for j, (made, token) in enumerate(settled):
                now = c.get(f"/v2/session/{made['session_id']}", headers={SESSION_HEADER: token}).json()
                answer = outcomes[f"cancel-{j}"]
                if isinstance(answer, httpx.Response) and answer.status_code == 200:
                    assert (now["status"], now["session_version"]) == (
                        "cancelled",
                        made["session_version"] + 1,
                    )
                else:
                    assert (now["status"], now["session_version"]) in (
                        (made["status"], made["session_version"]),
                        ("cancelled", made["session_version"] + 1),
                    )
                    if now["status"] != "cancelled":
                        assert fingerprint(now) == fingerprint(made)
            # creates: the replay either finds the whole stored session or proves nothing was stored (the quote
            # lived only in the killed process, so a new create is refused before anything is written)
            committed = 0
            for i, token in new_tokens.items():
                answer = outcomes[f"create-{i}"]
                replay = c.post(
                    "/v2/session",
                    json=session_body(quotes[i], ONE_STEP, f"kill-new-{i}"),
                    headers={SESSION_HEADER: token},
                )
                if replay.status_code == 201:
                    committed += 1
                    assert replay.json()["idempotent_replay"] is True
                    sid = replay.json()["session_id"]
                    read = c.get(f"/v2/session/{sid}", headers={SESSION_HEADER: token})
                    assert read.status_code == 200 and read.json()["status"] == "action_ready", read.text
                    assert read.json()["current_action"]["payload_sha256"], read.text
                    if isinstance(answer, httpx.Response) and answer.status_code == 201:
                        assert fingerprint(read.json()) == fingerprint(answer.json())
                else:
                    assert replay.status_code == 409 and replay.json()["error"] == "reapproval_required", (
                        replay.text
                    )
                    assert replay.json()["action_created"] is False, replay.text
                    assert not (isinstance(answer, httpx.Response) and answer.status_code == 201), answer.text
            print(f"\nSIGKILL mid-request: {committed} of {len(new_tokens)} in-flight creates had committed")
    finally:
        second.stop()
    with (
        contextlib.suppress(OSError),
        socket.create_connection(("127.0.0.1", int(first.url.rsplit(":", 1)[1])), 0.2),
    ):
        raise AssertionError("the killed process still listens")
