"""GET /v2/session/{id}/events over real HTTP (uvicorn, the real composition root, an SQLite file): the session's
event log as Server-Sent Events. Replay from Last-Event-ID after a reconnect, live events, the end after the
event that brings the session to rest, the token rules, the per-client cap under 1,000 connections, and a
client that never reads being dropped. The events streamed are compared with the stored log, byte for byte."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import sqlite3
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from httpx_sse import connect_sse
from tests.integration.test_sessions_api import ONE_STEP, Api, created, new_token
from tests.support.observable import OBSERVABLE
from tests.support.postgres import require_postgres, temporary_database
from tests.support.server import free_port, running_server
from tests.unit.actions.support import START
from tests.unit.sessions.corpus import FakeEvm, swap_receipts

from routequote.app import create_app
from routequote.client import AsyncRouteQuoteClient, RouteQuoteClient, SessionHandle, SessionToken
from routequote.client.errors import Rejected
from routequote.clock import FixedClock
from routequote.config import Settings
from routequote.core.quote import SESSION_HEADER
from routequote.ports import SessionEvent
from routequote.sessions.event_stream import encode_event
from routequote.storage.sessions_common import with_detail
from routequote.storage.sessions_sql import SqlSessionStore

CAP = 10  # open streams per client in this server


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    clock = FixedClock(START)
    port = free_port()
    db = tmp_path_factory.mktemp("events") / "s.sqlite3"
    url = f"sqlite+aiosqlite:///{db}"
    settings = Settings(
        rate_limit="off",
        port=port,
        database_url=url,
        event_stream_max_per_client=CAP,
        event_stream_heartbeat_seconds=1.0,
        event_stream_poll_seconds=0.2,
        event_stream_send_timeout_seconds=1.0,
        **OBSERVABLE,
    )
    app = create_app(settings, clock=clock)
    with running_server(app, port) as base:
        a = Api(base, clock)
        a.db_path = db  # type: ignore[attr-defined]
        a.app = app  # type: ignore[attr-defined]
        a.base = base  # type: ignore[attr-defined]
        yield a


def stored_log(api: Api, sid: str) -> list[str]:
    """The session's stored event log, read from the database file itself, encoded as the stream encodes."""
    with contextlib.closing(sqlite3.connect(api.db_path)) as conn:  # type: ignore[attr-defined]
        rows = conn.execute(
            "SELECT seq, from_status, event, to_status, at, detail FROM session_events WHERE session_id = ? "
            "ORDER BY seq",
            (sid,),
        ).fetchall()
    out = []
    for seq, from_status, event, to_status, at, detail in rows:
        instant = datetime.fromisoformat(at).replace(tzinfo=UTC)
        entry = SessionEvent(sid, seq, from_status, event, to_status, instant)
        out.append(encode_event(with_detail(entry, json.loads(detail) if detail else None)))
    return out


def stream(api: Api, sid: str, token: str, last_event_id: str | None = None) -> tuple[int, list[Any]]:
    """(status, [(id, data)]) of one stream, read until the server ends it."""
    headers = {SESSION_HEADER: token}
    if last_event_id is not None:
        headers["Last-Event-ID"] = last_event_id
    path = f"/v2/session/{sid}/events"
    with (
        httpx.Client(base_url=api.base, timeout=60) as http,  # type: ignore[attr-defined]
        connect_sse(http, "GET", path, headers=headers) as source,
    ):
        if source.response.status_code != 200:
            source.response.read()
            return source.response.status_code, [source.response.content]
        return 200, [(m.id, m.data) for m in source.iter_sse() if m.data]


def cancel(api: Api, sid: str, token: str) -> None:
    r = api.op(sid, "cancel", token, {"idempotency_key": f"cancel-{sid[:8]}"})
    assert r.status_code == 200 and r.json()["status"] == "cancelled", r.text


def test_a_stream_replays_the_log_and_ends_after_the_session_rests(api: Api) -> None:
    """create, expiry, refresh, cancel: four events, streamed in order with their ids, equal to the stored log
    byte for byte; the stream ends after `cancelled`. A reconnect with Last-Event-ID gets only what follows;
    after the last event it is 204 (an EventSource stops reconnecting)."""
    sid, token, _, _ = created(api)
    api.clock.advance(181)  # the action's bundle expires: the next read commits `expire`
    assert api.read(sid, token).json()["status"] == "action_expired"
    assert api.op(sid, "refresh", token, {"idempotency_key": "refresh-ev1"}).status_code == 200
    cancel(api, sid, token)
    code, messages = stream(api, sid, token)
    assert code == 200
    assert [m[0] for m in messages] == [f"{sid}:{n}" for n in (1, 2, 3, 4)]
    assert [m[1] for m in messages] == stored_log(api, sid)
    events = [json.loads(m[1]) for m in messages]
    assert [e["type"] for e in events] == ["create", "expire", "refresh", "cancel"]
    assert [e["status"] for e in events] == ["action_ready", "action_expired", "action_ready", "cancelled"]
    assert events[0]["funds"]["chain"] == "base" and events[0]["funds"]["token"] == "ETH"
    assert (
        events[0]["funds"]["amount_base"].isdigit() and events[0]["next_operation"] == "submit_current_action"
    )
    assert events[-1]["terminal"] is True and events[-1]["outcome"] == "cancelled"
    assert events[-1]["final_on_chain"] is False and events[0]["terminal"] is False

    code, resumed = stream(api, sid, token, last_event_id=f"{sid}:2")
    assert code == 200 and resumed == messages[2:]
    assert stream(api, sid, token, last_event_id="3") == (200, messages[3:])
    code, _ = stream(api, sid, token, last_event_id=f"{sid}:4")
    assert code == 204


def test_a_live_stream_receives_each_commit_and_ends_at_complete(api: Api) -> None:
    """A stream opened on a fresh session gets the create event, then the observe that completes the session
    (the chain is a stand-in at the EVM reader port), then ends; what it received equals the stored log. The
    Python client's iterator, resumed from the first event, reads the same events."""
    sessions = api.app.state.sessions  # type: ignore[attr-defined]
    fake = FakeEvm()
    saved = sessions.evm
    sessions.evm = fake
    try:
        sid, token, _, _ = created(api, ONE_STEP)
        received: list[tuple[str, str]] = []
        first = threading.Event()

        def follow() -> None:
            headers = {SESSION_HEADER: token}
            path = f"/v2/session/{sid}/events"
            with (
                httpx.Client(base_url=api.base, timeout=60) as http,  # type: ignore[attr-defined]
                connect_sse(http, "GET", path, headers=headers) as source,
            ):
                for m in source.iter_sse():
                    if m.data:
                        received.append((m.id, m.data))
                        first.set()

        reader = threading.Thread(target=follow, daemon=True)
        reader.start()
        assert first.wait(60)  # bounds a hang only
        action = api.read(sid, token).json()["current_action"]["unsigned_action"]
        hashes = swap_receipts(fake, action, 10**18, seed=0x5E5510)
        done = api.op(sid, "observe", token, {"idempotency_key": "obs-live-01", "transaction_hashes": hashes})
        assert done.status_code == 200 and done.json()["status"] == "complete", done.text
        reader.join(60)
        assert not reader.is_alive()  # the stream ended by itself after `complete`
        assert [m[1] for m in received] == stored_log(api, sid)
        last = json.loads(received[-1][1])
        assert last["status"] == "complete" and last["outcome"] == "complete" and last["terminal"] is True
        assert last["final_on_chain"] is True and last["funds"]["state"] == "delivered"
        assert [t["tx_id"] for t in last["transactions"]] == [
            h.lower() for h in hashes
        ] * 2  # named, then verified
        assert [t["verified"] for t in last["transactions"]] == [False] * len(hashes) + [True] * len(hashes)
        # a replayed observe appends nothing
        again = api.op(
            sid, "observe", token, {"idempotency_key": "obs-live-01", "transaction_hashes": hashes}
        )
        assert again.json()["idempotent_replay"] is True and len(stored_log(api, sid)) == 2

        handle = SessionHandle(sid, SessionToken(token), {})
        with RouteQuoteClient(api.base) as client:  # type: ignore[attr-defined]
            got = list(client.events(handle, last_event_id=f"{sid}:1"))
            assert [e.raw for e in got] == [json.loads(received[1][1])]
            assert [e.sequence for e in client.events(handle)] == [1, 2]
    finally:
        sessions.evm = saved


def test_another_sessions_token_is_refused_like_every_session_call(api: Api) -> None:
    sid, token, _, _ = created(api)
    other_sid, other_token, _, _ = created(api)
    for headers in ({SESSION_HEADER: other_token}, {SESSION_HEADER: new_token()}, {}):
        r = api.http.get(f"/v2/session/{sid}/events", headers=headers)
        assert r.status_code == 404 and r.json()["reason_class"] == "session_not_found", r.text
        assert token not in r.text and other_token not in r.text
    # an id of another session's log, or no id at all, is not a place to resume from
    for bad in (f"{other_sid}:1", "x", "-1", "99"):
        r = api.http.get(f"/v2/session/{sid}/events", headers={SESSION_HEADER: token, "Last-Event-ID": bad})
        assert r.status_code == 400 and r.json()["reason_class"] == "last_event_id_unknown", (bad, r.text)
    handle = SessionHandle(sid, SessionToken(other_token), {})
    with RouteQuoteClient(api.base) as client, pytest.raises(Rejected) as refused:  # type: ignore[attr-defined]
        next(iter(client.events(handle)))
    assert refused.value.status_code == 404
    cancel(api, sid, token)
    cancel(api, other_sid, other_token)


def test_a_thousand_streams_from_one_client_are_capped(api: Api) -> None:
    """1,000 concurrent stream requests from one client: CAP are served and held open, every other one is 429
    with an ErrorResponse; once those close, a new stream is served again (their slots were given back)."""
    sid, token, _, _ = created(api)
    slots = api.app.state.event_slots  # type: ignore[attr-defined]

    async def run() -> tuple[list[int], list[dict[str, Any]]]:
        limits = httpx.Limits(max_connections=1100, max_keepalive_connections=0)
        async with httpx.AsyncClient(base_url=api.base, timeout=120, limits=limits) as http:  # type: ignore[attr-defined]
            async with contextlib.AsyncExitStack() as stack:

                async def one() -> tuple[int, dict[str, Any] | None]:
                    request = http.build_request(
                        "GET", f"/v2/session/{sid}/events", headers={SESSION_HEADER: token}
                    )
                    response = await http.send(request, stream=True)
                    if response.status_code == 200:
                        stack.push_async_callback(response.aclose)
                        return 200, None
                    await response.aread()
                    await response.aclose()
                    return response.status_code, response.json()

                answers = await asyncio.gather(*(one() for _ in range(1000)))
                assert slots.open_streams() == CAP
            return [a[0] for a in answers], [a[1] for a in answers if a[1] is not None]

    codes, refusals = asyncio.run(run())
    assert codes.count(200) == CAP and codes.count(429) == 1000 - CAP
    assert {r["reason_class"] for r in refusals} == {"event_streams_limit_reached"}
    assert all(r["max_event_streams"] == CAP for r in refusals)
    deadline = 600  # bounds a hang only: the server sees the closed connections
    while slots.open_streams() and deadline:
        threading.Event().wait(0.1)
        deadline -= 1
    assert slots.open_streams() == 0
    cancel(api, sid, token)
    code, messages = stream(api, sid, token)
    assert code == 200 and json.loads(messages[-1][1])["status"] == "cancelled"


def _long_log(db: Path, sid: str, events: int) -> None:
    """Append `events` self-transitions with bulky chain evidence to the session's log through a second store on
    the same file (another process would do the same): a log far larger than any socket buffer."""

    async def write() -> None:
        store = SqlSessionStore(f"sqlite:///{db}")
        await store.start()
        try:
            record = await store.get(sid)
            assert record is not None
            evidence = tuple(
                {
                    "step_index": 0,
                    "side": "source",
                    "chain": "base",
                    "tx_id": f"0x{n:064x}",
                    "verified": False,
                }
                for n in range(40)
            )
            for n in range(events):
                version = record.version + n
                event = SessionEvent(
                    sid,
                    version + 1,
                    record.status,
                    "submitted_pending",
                    record.status,
                    record.updated_at + timedelta(seconds=n),
                    0,
                    "observe",
                    evidence,
                    None,
                )
                assert await store.transition(sid, version, record.status, record.state, event)
        finally:
            await store.aclose()

    asyncio.run(write())


def test_a_client_that_never_reads_is_dropped(api: Api) -> None:
    """A stream whose client stops reading (a tiny receive buffer, never read) over a log of ~12 MB: the server's
    sends block, and after the send timeout it drops the stream and gives its slot back, holding no backlog.
    The bytes that reached the socket are fewer than the log (the server stopped, it did not buffer it all)."""
    sid, token, _, _ = created(api)
    _long_log(api.db_path, sid, 2500)  # type: ignore[attr-defined]
    slots = api.app.state.event_slots  # type: ignore[attr-defined]
    host, port = api.base.removeprefix("http://").split(":")  # type: ignore[attr-defined]
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect((host, int(port)))
    try:
        sock.sendall(
            f"GET /v2/session/{sid}/events HTTP/1.1\r\nHost: {host}\r\n{SESSION_HEADER}: {token}\r\n\r\n".encode()
        )
        opened = 0
        while not slots.open_streams() and opened < 600:  # bounds a hang only
            threading.Event().wait(0.1)
            opened += 1
        assert slots.open_streams() == 1
        waited = 0
        while slots.open_streams() and waited < 1200:  # bounds a hang only
            threading.Event().wait(0.1)
            waited += 1
        assert slots.open_streams() == 0  # dropped: the slot is back
        received = b""
        sock.settimeout(60)
        while chunk := sock.recv(1 << 16):
            received += chunk
        total = sum(len(e) for e in stored_log(api, sid))
        assert received.startswith(b"HTTP/1.1 200")
        assert 0 < len(received) < total
    finally:
        sock.close()
    # the session itself is untouched, and a reader that reads resumes where it wants
    cancel(api, sid, token)
    code, messages = stream(api, sid, token, last_event_id=f"{sid}:2495")
    assert code == 200 and [m[0] for m in messages] == [f"{sid}:{n}" for n in range(2496, 2503)]
    assert [m[1] for m in messages] == stored_log(api, sid)[2495:]


def test_the_stream_is_in_the_openapi_document(api: Api) -> None:
    doc = api.http.get("/v2/openapi.json").json()
    op = doc["paths"]["/v2/session/{session_id}/events"]["get"]
    assert "text/event-stream" in op["responses"]["200"]["content"]
    assert {p["name"] for p in op["parameters"]} >= {SESSION_HEADER, "Last-Event-ID", "session_id"}
    assert set(op["responses"]) >= {"200", "204", "400", "404", "429"}
    schema = doc["components"]["schemas"]["SessionEvent"]
    assert "funds" in schema["required"] and "sequence" in schema["required"]


def _append(db: Path, sid: str, to_status: str, name: str) -> None:
    """One commit to the session's log by a second store on the same file: another worker's (or replica's)
    commit, which no notifier of the serving process hears."""

    async def write() -> None:
        store = SqlSessionStore(f"sqlite:///{db}")
        await store.start()
        try:
            record = await store.get(sid)
            assert record is not None
            event = SessionEvent(
                sid,
                record.version + 1,
                record.status,
                name,
                to_status,
                record.updated_at + timedelta(seconds=1),
                0,
                "none",
                (),
                None,
            )
            assert await store.transition(sid, record.version, to_status, record.state, event)
        finally:
            await store.aclose()

    asyncio.run(write())


def test_heartbeats_and_another_processs_commits_reach_an_open_stream(api: Api) -> None:
    """An idle stream carries heartbeat comments; a commit written by another store on the same database (as
    another worker would) reaches the open stream by its poll of the log, and ends it when it rests. Then a
    session resting in reapproval_required that is cancelled afterwards: the next stream sends the cancel only."""
    sid, token, _, _ = created(api)
    lines: list[str] = []
    heartbeat = threading.Event()

    def follow() -> None:
        headers = {SESSION_HEADER: token}
        path = f"/v2/session/{sid}/events"
        with (
            httpx.Client(base_url=api.base, timeout=60) as http,  # type: ignore[attr-defined]
            http.stream("GET", path, headers=headers) as response,
        ):
            for line in response.iter_lines():
                lines.append(line)
                if line.startswith(": heartbeat"):
                    heartbeat.set()

    reader = threading.Thread(target=follow, daemon=True)
    reader.start()
    assert heartbeat.wait(60)  # bounds a hang only
    _append(api.db_path, sid, "reapproval_required", "requote_below_approval")  # type: ignore[attr-defined]
    reader.join(60)
    assert not reader.is_alive()  # ended after the resting event another process committed
    data = [json.loads(line[len("data: ") :]) for line in lines if line.startswith("data: ")]
    assert [(e["sequence"], e["status"]) for e in data] == [(1, "action_ready"), (2, "reapproval_required")]
    assert data[-1]["terminal"] is False and data[-1]["outcome"] == "reapproval_required"
    assert stream(api, sid, token, last_event_id=f"{sid}:2")[0] == 204
    cancel(api, sid, token)
    code, messages = stream(api, sid, token, last_event_id=f"{sid}:2")
    assert code == 200 and [json.loads(m[1])["status"] for m in messages] == ["cancelled"]
    assert [m[1] for m in messages] == stored_log(api, sid)[2:]


def test_the_async_client_iterates_the_same_events(api: Api) -> None:
    sid, token, _, _ = created(api)
    cancel(api, sid, token)
    handle = SessionHandle(sid, SessionToken(token), {})

    async def read() -> list[dict[str, Any]]:
        async with AsyncRouteQuoteClient(api.base) as client:  # type: ignore[attr-defined]
            return [e.raw async for e in client.events(handle)]

    got = asyncio.run(read())
    assert [json.dumps(e, separators=(",", ":"), ensure_ascii=False) for e in got] == stored_log(api, sid)


@pytest.mark.postgres
def test_two_replicas_on_postgresql_share_one_log(tmp_path: Path) -> None:
    """Two servers on one PostgreSQL database: a stream open on A receives the cancel committed on B (by A's poll of
    the shared log), then ends; A and B stream the same bytes, and a resume on B from A's first id gets the rest."""
    require_postgres()
    clock = FixedClock(START)
    with contextlib.ExitStack() as stack:
        url = stack.enter_context(temporary_database())
        bases = []
        for _ in range(2):
            port = free_port()
            settings = Settings(
                rate_limit="off", port=port, database_url=url, event_stream_poll_seconds=0.2, **OBSERVABLE
            )
            bases.append(stack.enter_context(running_server(create_app(settings, clock=clock), port)))
        a, b = Api(bases[0], clock), Api(bases[1], clock)
        a.base, b.base = bases  # type: ignore[attr-defined]
        sid, token, _, _ = created(a)
        received: list[tuple[str, str]] = []
        first = threading.Event()

        def follow() -> None:
            path = f"/v2/session/{sid}/events"
            with (
                httpx.Client(base_url=bases[0], timeout=60) as http,
                connect_sse(http, "GET", path, headers={SESSION_HEADER: token}) as source,
            ):
                for m in source.iter_sse():
                    if m.data:
                        received.append((m.id, m.data))
                        first.set()

        reader = threading.Thread(target=follow, daemon=True)
        reader.start()
        assert first.wait(60)  # bounds a hang only
        cancel(b, sid, token)
        reader.join(60)
        assert not reader.is_alive()
        assert [json.loads(m[1])["status"] for m in received] == ["action_ready", "cancelled"]
        assert stream(b, sid, token) == (200, received)
        assert stream(b, sid, token, last_event_id=received[0][0]) == (200, received[1:])


def test_head_answers_the_streams_headers_without_a_stream(api: Api) -> None:
    sid, token, _, _ = created(api)
    r = api.http.head(f"/v2/session/{sid}/events", headers={SESSION_HEADER: token})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    assert r.content == b"" and api.app.state.event_slots.open_streams() == 0  # type: ignore[attr-defined]
    assert (
        api.http.head(f"/v2/session/{sid}/events", headers={SESSION_HEADER: new_token()}).status_code == 404
    )
    cancel(api, sid, token)


def test_metrics_count_the_open_streams(api: Api) -> None:
    sid, token, _, _ = created(api)
    with (
        httpx.Client(base_url=api.base, timeout=60) as http,  # type: ignore[attr-defined]
        http.stream("GET", f"/v2/session/{sid}/events", headers={SESSION_HEADER: token}) as response,
    ):
        assert response.status_code == 200
        scraped = http.get("/metrics").text
        assert "routequote_event_streams_open 1.0" in scraped
    cancel(api, sid, token)
