"""`routequote serve` under SIGTERM: in-flight requests finish with complete answers, sessions are never
half-written, the process exits 0. And a bad configuration stops `serve` before it starts (exit 2).

Real subprocesses over loopback, configured through ROUTEQUOTE_* variables only (tests/support/server_process)."""

from __future__ import annotations

import base64
import json
import os
import secrets
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.support.server_process import listens, read_connections, start_server
from tests.unit.actions.support import approval_for, intent_for, wallets_for

from routequote.core.quote import SESSION_HEADER

ONE_STEP = "base:ETH->base:USDC"
WORKERS = 4
# seconds: bounds a process that never starts, answers or exits (never asserted as a timing). Under load a
# `routequote serve` process took longer than the 60 s once allowed just to import and start its workers.
HANG_BOUND = 300.0


def _token() -> str:
    return base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()


class Burst:
    """Client threads sending a mix (quote, status, session create, cancel) until the server goes away."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.answers: list[tuple[str, int, str]] = []  # (operation, status, body text)
        self.errors: list[str] = []
        self.created: dict[str, str] = {}  # session id -> status the client was last told
        self.lock = threading.Lock()
        self.stop = threading.Event()

    def run(self) -> None:
        with httpx.Client(base_url=self.url, timeout=30) as http:
            n = 0
            while not self.stop.is_set():
                n += 1
                try:
                    self._one(http, n)
                except httpx.HTTPError as exc:
                    with self.lock:
                        self.errors.append(f"{type(exc).__name__}: {exc}")
                    if isinstance(exc, httpx.ConnectError):
                        return  # the listener is closed: the server is going away

    def _record(self, op: str, r: httpx.Response) -> Any:
        with self.lock:
            self.answers.append((op, r.status_code, r.text))
        return r.json() if r.headers.get("content-type", "").startswith("application/json") else None

    def _one(self, http: httpx.Client, n: int) -> None:
        if n % 3 == 0:
            self._record("status", http.get("/v2/status"))
            return
        q = self._record("quote", http.post("/v2/quote", json=intent_for(ONE_STEP, 100)))
        if not isinstance(q, dict) or "quote_id" not in q:
            return
        key, token = f"burst-{secrets.token_hex(8)}", _token()
        body = {
            "caller_approved": True,
            **intent_for(ONE_STEP, 100),
            "wallets": wallets_for(ONE_STEP),
            "approval_v3": approval_for(q, key=key, selected_mode="session"),
            "idempotency_key": key,
        }
        s = self._record("create", http.post("/v2/session", json=body, headers={SESSION_HEADER: token}))
        if not isinstance(s, dict) or "session_id" not in s:
            return
        with self.lock:
            self.created[s["session_id"]] = s["status"]
        if n % 2 == 0:
            c = self._record(
                "cancel",
                http.post(
                    f"/v2/session/{s['session_id']}/cancel",
                    json={"idempotency_key": "c-" + key},
                    headers={SESSION_HEADER: token},
                ),
            )
            if isinstance(c, dict) and c.get("session", c).get("status") == "cancelled":
                with self.lock:
                    self.created[s["session_id"]] = "cancelled"


def _half_sent_quote(url: str) -> tuple[socket.socket, bytes]:
    """A request whose body is half sent: in flight when SIGTERM arrives."""
    host, port = url.removeprefix("http://").split(":")
    body = json.dumps(intent_for(ONE_STEP, 100)).encode()
    s = socket.create_connection((host, int(port)), timeout=20)
    s.sendall(
        f"POST /v2/quote HTTP/1.1\r\nHost: {host}:{port}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\n\r\n".encode()
        + body[:20]
    )
    return s, body[20:]


def _read_answer(s: socket.socket) -> tuple[int, bytes]:
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    return status, body


def test_sigterm_during_a_burst_finishes_in_flight_work_and_exits_0(tmp_path: Path) -> None:
    db = tmp_path / "sessions.sqlite3"
    server = start_server(
        tmp_path,
        "term",
        {"database_url": f"sqlite+aiosqlite:///{db}", "graceful_shutdown_seconds": "15"},
        timeout=HANG_BOUND,
    )
    burst = Burst(server.url)
    threads = [threading.Thread(target=burst.run, daemon=True) for _ in range(WORKERS)]
    try:
        for t in threads:
            t.start()
        deadline = time.monotonic() + HANG_BOUND
        while len(burst.created) < 8 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(burst.created) >= 8, server.log_tail()
        slow, rest = _half_sent_quote(server.url)
        # the server has accepted it (a busy one may not have yet when the client's write is done) and read
        # its head: the request is in flight
        deadline = time.monotonic() + HANG_BOUND
        client = slow.getsockname()[1]
        while not read_connections(server.process.pid, {client}):
            assert time.monotonic() < deadline, server.log_tail()
            time.sleep(0.05)
        server.process.send_signal(signal.SIGTERM)
        port = int(server.url.rsplit(":", 1)[1])
        while listens(server.process.pid, port):  # shutting down: the listener closes, in-flight work goes on
            assert time.monotonic() < deadline, server.log_tail()
            time.sleep(0.05)
        slow.sendall(rest)
        slow_status, slow_body = _read_answer(slow)
        slow.close()
        rc = server.process.wait(HANG_BOUND)
    finally:
        burst.stop.set()
        for t in threads:
            t.join(30)
        server.stop()
    assert rc == 0, server.log_tail()
    # the request in flight at SIGTERM got its whole answer
    assert slow_status == 200, slow_body[:200]
    assert json.loads(slow_body)["quote_id"]
    # every answered request got a complete JSON body of a success status
    assert len(burst.answers) >= 20
    for op, status, text in burst.answers:
        assert status in (200, 201), (op, status, text[:200])
        assert isinstance(json.loads(text), dict), (op, text[:200])
    # a connection may be refused or closed unanswered, never cut in the middle of an answer
    assert not [e for e in burst.errors if "complete message body" in e or "incomplete" in e.lower()], (
        burst.errors
    )
    # no session half-written: each row's version is its number of events, its status the last event's
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT s.session_id, s.version, s.status, COUNT(e.seq), MAX(e.seq) FROM sessions s "
            "LEFT JOIN session_events e ON e.session_id = s.session_id GROUP BY s.session_id"
        ).fetchall()
        last = dict(
            conn.execute(
                "SELECT e.session_id, e.to_status FROM session_events e WHERE e.seq = "
                "(SELECT MAX(seq) FROM session_events x WHERE x.session_id = e.session_id)"
            ).fetchall()
        )
    stored = {sid: status for sid, _, status, _, _ in rows}
    for sid, version, status, count, top in rows:
        assert version == count == top and last[sid] == status, (sid, version, status, count, top)
    for sid, told in burst.created.items():  # every answered create (and cancel) is in the database as told
        assert stored.get(sid) == told, (sid, told, stored.get(sid))
    assert "Finished server process" in server.log_tail(20_000) or "Shutting down" in server.log_tail(20_000)


def _serve(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("routequote")
    base = {k: v for k, v in os.environ.items() if not k.startswith("ROUTEQUOTE_")}
    return subprocess.run(
        [str(exe), "serve", *args], env={**base, **env}, capture_output=True, text=True, timeout=HANG_BOUND
    )


@pytest.mark.parametrize(
    ("env", "args", "expected"),
    [
        ({"ROUTEQUOTE_MARKET": "bogus"}, (), "ROUTEQUOTE_MARKET: unknown market 'bogus'"),
        ({"ROUTEQUOTE_QUOTE_STORE": "redis"}, (), "ROUTEQUOTE_QUOTE_STORE=redis needs ROUTEQUOTE_REDIS_URL"),
        ({"ROUTEQUOTE_PORT": "70000"}, (), "ROUTEQUOTE_PORT: must be 1..65535"),
        ({}, ("--port", "0"), "ROUTEQUOTE_PORT: must be 1..65535"),
        ({}, ("--workers", "0"), "ROUTEQUOTE_WORKERS: must be 1..64"),
        ({"ROUTEQUOTE_PORT": "eighty"}, (), "ROUTEQUOTE_PORT: Input should be a valid integer"),
    ],
)
def test_serve_exits_2_with_one_line_per_bad_setting(
    env: dict[str, str], args: tuple[str, ...], expected: str
) -> None:
    done = _serve(env, *args)
    assert done.returncode == 2, done.stderr[-2000:]
    lines = [line for line in done.stderr.splitlines() if line.startswith("configuration error: ")]
    assert lines == [f"configuration error: {expected}"] or (
        len(lines) == 1 and lines[0].startswith(f"configuration error: {expected}")
    ), done.stderr[-2000:]


def test_serve_lists_every_bad_setting_and_never_a_password() -> None:
    done = _serve(
        {
            "ROUTEQUOTE_MARKET": "bogus",
            "ROUTEQUOTE_DATABASE_URL": "mysql://u:hunter2-secret@db.internal/x",
            "ROUTEQUOTE_FEE_RECIPIENT_SOLANA": "not-base58!",
            "ROUTEQUOTE_QUOTE_TTL_SECONDS": "600",
            "ROUTEQUOTE_REDIS_URL": "http://u:hunter2-secret@cache.internal",
        }
    )
    assert done.returncode == 2
    lines = [line for line in done.stderr.splitlines() if line.startswith("configuration error: ")]
    assert [line.split(":")[1].strip().split("=")[0] for line in lines] == [
        "ROUTEQUOTE_QUOTE_TTL_SECONDS",
        "ROUTEQUOTE_MARKET",
        "ROUTEQUOTE_REDIS_URL",
        "ROUTEQUOTE_DATABASE_URL",
        "ROUTEQUOTE_FEE_RECIPIENT_SOLANA",
    ]
    assert "hunter2" not in done.stderr and "internal" not in done.stderr


def test_two_workers_serve_and_stop_on_sigterm_with_status_0(tmp_path: Path) -> None:
    from tests.support.server import free_port

    port = free_port()
    env = {
        "ROUTEQUOTE_PORT": str(port),
        "ROUTEQUOTE_RATE_LIMIT": "off",
        "ROUTEQUOTE_DEV_SIGNING_KEY_PATH": "",
        "ROUTEQUOTE_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 's.sqlite3'}",
    }
    exe = Path(sys.executable).with_name("routequote")
    base = {k: v for k, v in os.environ.items() if not k.startswith("ROUTEQUOTE_")}
    log = tmp_path / "two.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(exe), "serve", "--workers", "2"], env={**base, **env}, stdout=out, stderr=out
        )
    try:
        started: set[str] = set()
        deadline = time.monotonic() + HANG_BOUND
        while (
            len(started) < 2 and time.monotonic() < deadline
        ):  # both workers answer (one socket, two processes)
            try:
                r = httpx.get(f"http://127.0.0.1:{port}/livez", timeout=30, headers={"connection": "close"})
                assert r.status_code == 200 and r.headers["x-request-id"]
            except httpx.HTTPError:
                time.sleep(0.2)
                continue
            started |= {
                line for line in log.read_text().splitlines() if "Application startup complete" in line
            }
            time.sleep(0.1)
        assert len(started) == 2, log.read_text()[-2000:]
        process.send_signal(signal.SIGTERM)
        assert process.wait(HANG_BOUND) == 0, log.read_text()[-2000:]
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    assert sum(line["event"].startswith("Finished server process") for line in lines) == 2
