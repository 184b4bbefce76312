"""The TypeScript client's `events()` and `verifyWebhook` against a real running server (uvicorn, the real
composition root, an SQLite file): sessions are created and moved over REST from here while the compiled
node script clients/typescript/test/live/follow.ts follows them, and what it received is compared with the
stored event log byte for byte. Its webhook check is run over the server's own deliveries to a loopback
receiver and over deliveries signed here by `routequote.webhooks.signing.signed_headers`."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from tests.integration.test_session_events import stored_log
from tests.integration.test_session_webhooks import Receiver, create_body, new_token, receiving
from tests.support.observable import OBSERVABLE
from tests.support.server import free_port, running_server
from tests.support.ts_package import built_package

from routequote.app import create_app
from routequote.clock import FixedClock
from routequote.config import Settings
from routequote.core.quote import SESSION_HEADER
from routequote.webhooks.signing import signed_headers

pytestmark = pytest.mark.node
SCRIPT = "dist/test/live/follow.js"


class Server(SimpleNamespace):
    url: str
    clock: FixedClock
    db_path: Path
    http: httpx.Client
    rx: Receiver


@pytest.fixture(scope="module")
def package() -> Path:
    return built_package()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    # the server's clock starts 90 s before now: after the 181 s an action's bundle takes to expire it is still
    # within Standard Webhooks' 5 minutes of the real clock the TypeScript check reads
    clock = FixedClock(datetime.now(UTC) - timedelta(seconds=90))
    port = free_port()
    db = tmp_path_factory.mktemp("ts-events") / "s.sqlite3"
    settings = Settings(
        rate_limit="off",
        port=port,
        database_url=f"sqlite+aiosqlite:///{db}",
        event_stream_max_per_client=3,
        event_stream_heartbeat_seconds=0.5,
        event_stream_poll_seconds=0.2,
        webhook_allow_hosts="127.0.0.1",
        webhook_interval_seconds=0.1,
        **OBSERVABLE,
    )
    with (
        receiving() as rx,
        running_server(create_app(settings, clock=clock), port) as url,
        httpx.Client(base_url=url, timeout=30) as http,
    ):
        yield Server(url=url, clock=clock, db_path=db, http=http, rx=rx)


def create(srv: Server, webhook: bool) -> tuple[str, str, str | None]:
    token = new_token()
    body = create_body(srv.http, {"url": srv.rx.url} if webhook else None)
    r = srv.http.post("/v2/session", json=body, headers={SESSION_HEADER: token})
    assert r.status_code == 201, r.text
    secret = r.json().get("webhook", {}).get("secret") if webhook else None
    return r.json()["session_id"], token, secret


def op(srv: Server, sid: str, token: str, name: str) -> dict[str, Any]:
    r = srv.http.post(
        f"/v2/session/{sid}/{name}",
        json={"idempotency_key": f"{name}-{sid[:8]}"},
        headers={SESSION_HEADER: token},
    )
    assert r.status_code == 200, r.text
    return dict(r.json())


def node(package: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(shutil.which("node")), SCRIPT, *args],
        cwd=package,
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_the_ts_iterator_follows_a_session_to_rest_resumes_and_verifies_its_webhooks(
    package: Path, server: Server, tmp_path: Path
) -> None:
    """Created here over REST; the node iterator prints the create event; then the bundle expires, is
    refreshed and the session is cancelled here, and the iterator receives each of those live and ends after
    `cancelled`. What it received is the stored log, byte for byte, in order. A reconnect after event 2 gets
    only 3 and 4; after the last event, nothing (204); through a proxy that drops the first connection after
    one event, it resumes with Last-Event-ID and receives each event once. Past the per-client cap it waits
    out the 429's Retry-After. The server's webhook deliveries of the same events pass verifyWebhook."""
    sid, token, secret = create(server, webhook=True)
    other, other_token, _ = create(server, webhook=False)
    env = {
        "RQ_TS_BASE_URL": server.url,
        "RQ_SID": sid,
        "RQ_TOKEN": token,
        "RQ_SID2": other,
        "RQ_TOKEN2": other_token,
    }
    proc = node(package, "follow", env=env)
    try:
        assert proc.stdout is not None
        first = json.loads(proc.stdout.readline() or "{}")
        assert first.get("phase") == "live" and first["sequence"] == 1, (
            first,
            proc.stderr and proc.stderr.read(),
        )
        server.clock.advance(181)  # the bundle expires: the next read commits `expire`
        assert server.http.get(f"/v2/session/{sid}", headers={SESSION_HEADER: token}).json()["status"] == (
            "action_expired"
        )
        assert op(server, sid, token, "refresh")["status"] == "action_ready"
        assert op(server, sid, token, "cancel")["status"] == "cancelled"
        out, err = finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err[-3000:]
    lines = [first, *(json.loads(x) for x in out.splitlines())]
    by_phase: dict[str, list[dict[str, Any]]] = {}
    for entry in lines:
        by_phase.setdefault(entry["phase"], []).append(entry)

    stored = stored_log(SimpleNamespace(db_path=server.db_path), sid)  # type: ignore[arg-type]
    assert len(stored) == 4
    live = by_phase["live"]
    assert [e["data"] for e in live] == stored
    assert [e["id"] for e in live] == [f"{sid}:{n}" for n in (1, 2, 3, 4)]
    assert [e["status"] for e in live] == ["action_ready", "action_expired", "action_ready", "cancelled"]
    assert [e["atRest"] for e in live] == [False, False, False, True]
    assert live[-1]["terminal"] is True and live[-1]["outcome"] == "cancelled"
    assert {e["amountBase"] for e in live} == {"bigint"}
    assert "live-end" in by_phase

    assert [e["data"] for e in by_phase["resume"]] == stored[2:]
    assert by_phase["rested"] == [{"phase": "rested", "count": 0}]
    dropped = by_phase["dropped"][0]
    assert dropped["data"] == stored
    assert dropped["lastIds"] == [None, f"{sid}:1"]
    assert dropped["waits"] == [2000]  # the server's SSE `retry:` before the reconnect
    limited = by_phase["limited"][0]
    assert limited["first"] == 1
    assert limited["waits"] and set(limited["waits"]) == {5000}  # the 429's Retry-After, in ms

    # the server's own deliveries of the same four events, verified by the TypeScript check
    assert secret is not None and secret.startswith("whsec_")
    deadline = time.monotonic() + 90  # bounds a hang only
    while len([b for h, b in server.rx.deliveries if h["webhook-id"].startswith(sid)]) < 4:
        assert time.monotonic() < deadline, server.rx.deliveries
        time.sleep(0.05)
    delivered = [(h, b) for h, b in server.rx.deliveries if h["webhook-id"].startswith(sid)]
    vectors = [
        {
            "name": f"delivered-{n}",
            "secret": secret,
            "body_b64": base64.b64encode(body).decode(),
            "headers": {k: v for k, v in h.items() if k.startswith("webhook-")},
        }
        for n, (h, body) in enumerate(delivered)
    ]
    results = run_verify(package, tmp_path, vectors)
    assert [r["ok"] for r in results] == [True] * len(vectors), results
    assert [r["data"] for r in results[:4]] == stored
    assert all(r["agree"] for r in results)


def finish(proc: subprocess.Popen[str]) -> tuple[str, str]:
    """The script's output once it exits; killed, with what it printed, past a bound that only stops a hang."""
    try:
        return proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"the node script hung; it printed:\n{out[-3000:]}\n{err[-2000:]}")


def run_verify(package: Path, tmp_path: Path, vectors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    path = tmp_path / "vectors.json"
    path.write_text(json.dumps(vectors))
    proc = node(package, "verify", str(path))
    out, err = finish(proc)
    assert proc.returncode == 0, err[-3000:]
    results = [json.loads(x) for x in out.splitlines()]
    assert [r["name"] for r in results] == [v["name"] for v in vectors]
    return results


def test_verify_webhook_accepts_a_python_signature_and_refuses_tampering(
    package: Path, tmp_path: Path
) -> None:
    """Deliveries signed here by the server's own `signed_headers`: the genuine one is accepted; a body changed
    by one character, another session's secret, a timestamp 10 minutes old, a header naming another event and
    a body with a repeated key (signed correctly) are refused."""
    secret = "whsec_" + base64.b64encode(bytes(range(32))).decode()
    other_secret = "whsec_" + base64.b64encode(bytes(range(1, 33))).decode()
    sid = "0b6f1c2e-0000-4000-8000-00000000abcd"
    event = {
        "id": f"{sid}:3",
        "session_id": sid,
        "sequence": 3,
        "type": "cancel",
        "status": "cancelled",
        "previous_status": "action_ready",
        "step_index": 0,
        "next_operation": "none",
        "transactions": [],
        "funds": {
            "chain": "base",
            "token": "ETH",
            "amount_base": "123456789012345678901",
            "owner": "0x1111111111111111111111111111111111111111",
            "wallet": "0x1111111111111111111111111111111111111111",
            "state": "in_wallet",
        },
        "outcome": "cancelled",
        "terminal": True,
        "final_on_chain": False,
        "at": "2026-11-22T05:00:00.000Z",
    }
    body = json.dumps(event, separators=(",", ":")).encode()
    now = int(time.time())

    def vector(name: str, key: str, sent: bytes, headers: dict[str, str]) -> dict[str, Any]:
        return {"name": name, "secret": key, "body_b64": base64.b64encode(sent).decode(), "headers": headers}

    good = signed_headers(secret, event["id"], now, body)
    tampered = body.replace(b'"amount_base":"123', b'"amount_base":"923')
    assert tampered != body
    duplicate = body[:-1] + b',"status":"complete"}'
    vectors = [
        vector("genuine", secret, body, good),
        vector("tampered_body", secret, tampered, good),
        vector("wrong_secret", other_secret, body, good),
        vector("old_timestamp", secret, body, signed_headers(secret, event["id"], now - 600, body)),
        vector("other_event_id", secret, body, signed_headers(secret, f"{sid}:4", now, body)),
        vector("duplicate_key", secret, duplicate, signed_headers(secret, event["id"], now, duplicate)),
        vector("no_signature", secret, body, {k: v for k, v in good.items() if k != "webhook-signature"}),
    ]
    results = {r["name"]: r for r in run_verify(package, tmp_path, vectors)}
    assert results["genuine"]["ok"] is True and results["genuine"]["id"] == event["id"]
    assert results["genuine"]["data"] == body.decode()
    for name in (
        "tampered_body",
        "wrong_secret",
        "old_timestamp",
        "other_event_id",
        "duplicate_key",
        "no_signature",
    ):
        assert results[name]["ok"] is False, results[name]
        assert results[name]["error"].startswith("WebhookInvalid: "), results[name]
    assert "too old" in results["old_timestamp"]["error"]
    assert "duplicate key" in results["duplicate_key"]["error"]
    assert all(r["agree"] for r in results.values())
