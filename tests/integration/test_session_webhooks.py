"""Session webhooks over real HTTP: a real server (SQLite, and PostgreSQL with two replicas) delivers each event
of a session to a loopback receiver, signed by the Standard Webhooks scheme, at least once and in order; a
bad URL is a 400 that creates nothing; the URL and the secret are never stored in the clear."""

from __future__ import annotations

import base64
import contextlib
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from standardwebhooks import Webhook
from tests.integration.test_sessions_api import database_bytes
from tests.support.observable import OBSERVABLE
from tests.support.postgres import require_postgres, temporary_database
from tests.support.server import free_port, running_server
from tests.unit.actions.support import approval_for, intent_for, wallets_for

from routequote.app import create_app
from routequote.client import WebhookInvalid, verify_webhook
from routequote.config import Settings
from routequote.core.quote import SESSION_HEADER

ROUTE = "base:ETH->base:USDC"


class Receiver:
    """A loopback webhook receiver: keeps every delivery; `fail_first` answers 503 that many times."""

    def __init__(self, fail_first: int = 0) -> None:
        self.deliveries: list[tuple[dict[str, str], bytes]] = []
        self.fail_first = fail_first
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the stdlib's name)
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                with receiver.lock:
                    failing = receiver.fail_first > 0
                    receiver.fail_first -= 1 if failing else 0
                    if not failing:
                        receiver.deliveries.append(({k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(503 if failing else 204)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *_: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks/rq-marker-7f3a?team=blue"

    def events(self) -> list[dict[str, Any]]:
        import json

        with self.lock:
            return [json.loads(body) for _, body in self.deliveries]

    def wait_for(self, done: Callable[[list[dict[str, Any]]], bool], what: str) -> list[dict[str, Any]]:
        deadline = time.monotonic() + 90  # bounds a hang only
        while not done(self.events()):
            assert time.monotonic() < deadline, f"timed out waiting for {what}: {self.events()}"
            time.sleep(0.05)
        return self.events()


@contextlib.contextmanager
def receiving(fail_first: int = 0) -> Iterator[Receiver]:
    rx = Receiver(fail_first)
    rx.thread.start()
    try:
        yield rx
    finally:
        rx.server.shutdown()
        rx.server.server_close()


def new_token() -> str:
    return base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()


def create_body(http: httpx.Client, webhook: Any) -> dict[str, Any]:
    r = http.post("/v2/quote", json=intent_for(ROUTE, 100))
    assert r.status_code == 200, r.text
    key = f"k-{secrets.token_hex(6)}"
    body: dict[str, Any] = {
        "caller_approved": True,
        **intent_for(ROUTE, 100),
        "wallets": wallets_for(ROUTE),
        "approval_v3": approval_for(r.json(), key=key, selected_mode="session"),
        "idempotency_key": key,
    }
    if webhook is not None:
        body["webhook"] = webhook
    return body


def delivery_state(http: httpx.Client, sid: str, token: str, through: int) -> dict[str, Any]:
    """The session's `webhook` block once its store records delivery through `through`: a receiver sees an event
    before the deliverer writes that it was delivered, so the test waits for the write (the deadline bounds a
    hang only)."""
    deadline = time.monotonic() + 90
    while True:
        block: dict[str, Any] = http.get(f"/v2/session/{sid}", headers={SESSION_HEADER: token}).json()[
            "webhook"
        ]
        if block["delivered_through"] >= through:
            return block
        assert time.monotonic() < deadline, block
        time.sleep(0.05)


def settings(port: int, url: str) -> Settings:
    return Settings(
        rate_limit="off",
        port=port,
        database_url=url,
        webhook_allow_hosts="127.0.0.1",
        webhook_interval_seconds=0.1,
        **OBSERVABLE,
    )


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with contextlib.ExitStack() as stack:
        if request.param == "postgresql":
            require_postgres()
            url = stack.enter_context(temporary_database())
        else:
            url = f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('hooks') / 's.sqlite3'}"
        port = free_port()
        base = stack.enter_context(running_server(create_app(settings(port, url)), port))
        http = stack.enter_context(httpx.Client(base_url=base, timeout=30))
        api = type("Served", (), {})()
        api.http, api.db_path, api.db_url = http, None, url  # type: ignore[attr-defined]
        if request.param == "sqlite":
            from pathlib import Path

            api.db_path = Path(url.split("///", 1)[1])  # type: ignore[attr-defined]
        yield api


def test_every_event_is_delivered_signed_in_order_and_the_secret_is_never_stored(served: Any) -> None:
    http: httpx.Client = served.http
    token = new_token()
    with receiving() as rx:
        body = create_body(http, {"url": rx.url})
        r = http.post("/v2/session", json=body, headers={SESSION_HEADER: token})
        assert r.status_code == 201, r.text
        created = r.json()
        sid, secret = created["session_id"], created["webhook"]["secret"]
        assert secret.startswith("whsec_") and len(base64.b64decode(secret[6:])) == 32
        first = rx.wait_for(lambda e: len(e) >= 1, "the create event")
        assert [(e["session_id"], e["sequence"], e["status"]) for e in first] == [(sid, 1, "action_ready")]

        c = http.post(
            f"/v2/session/{sid}/cancel",
            json={"idempotency_key": "cancel-0001"},
            headers={SESSION_HEADER: token},
        )
        assert c.status_code == 200, c.text
        events = rx.wait_for(lambda e: len(e) >= 2, "the cancel event")
        assert [(e["sequence"], e["type"], e["status"]) for e in events] == [
            (1, "create", "action_ready"),
            (2, "cancel", "cancelled"),
        ]
        for headers, raw in rx.deliveries:
            assert verify_webhook(secret, raw, headers)["session_id"] == sid
            assert headers["webhook-id"] == f"{sid}:{verify_webhook(secret, raw, headers)['sequence']}"
            with pytest.raises(WebhookInvalid):
                verify_webhook("whsec_" + base64.b64encode(b"\x02" * 32).decode(), raw, headers)
            with pytest.raises(WebhookInvalid):
                verify_webhook(secret, raw.replace(b"cancel", b"create"), headers) if b"cancel" in raw else (
                    verify_webhook(secret, raw + b" ", headers)
                )
            # an independent check with the Standard Webhooks library itself
            Webhook(secret).verify(raw, headers)

        block = delivery_state(http, sid, token, 2)
        assert block["delivered_through"] == 2 and block["undeliverable"] == []
        read = http.get(f"/v2/session/{sid}", headers={SESSION_HEADER: token}).json()
        assert "secret" not in read["webhook"] and "rq-marker-7f3a" not in str(read)

        replay = http.post("/v2/session", json=body, headers={SESSION_HEADER: token})
        assert replay.status_code == 201 and replay.json()["webhook"]["secret"] == secret
        assert replay.json()["idempotent_replay"] is True

    stored = database_bytes(served)
    assert secret.encode() not in stored and secret[6:].encode() not in stored
    assert b"rq-marker-7f3a" not in stored and str(rx.port).encode() + b"/hooks" not in stored


def test_a_failing_receiver_gets_the_same_event_again_then_the_next_in_order(served: Any) -> None:
    http: httpx.Client = served.http
    token = new_token()
    with receiving(fail_first=2) as rx:
        r = http.post("/v2/session", json=create_body(http, {"url": rx.url}), headers={SESSION_HEADER: token})
        assert r.status_code == 201, r.text
        sid = r.json()["session_id"]
        http.post(
            f"/v2/session/{sid}/cancel",
            json={"idempotency_key": "cancel-0001"},
            headers={SESSION_HEADER: token},
        )
        events = rx.wait_for(lambda e: len(e) >= 2, "both events after two failed attempts")
        assert [e["sequence"] for e in events] == [1, 2]
        assert rx.fail_first == 0  # both refusals were answered, then the same first event came again
        block = delivery_state(http, sid, token, 2)
        assert block["failed_attempts"] == 0 and block["last_failure"] is None


@pytest.mark.parametrize(
    ("webhook", "reason"),
    [
        ({"url": "https://127.0.0.2/in"}, "webhook_url_invalid"),  # loopback, not the allowed host
        ({"url": "https://169.254.169.254/latest/meta-data"}, "webhook_url_invalid"),
        ({"url": "https://[::1]/in"}, "webhook_url_invalid"),
        ({"url": "https://10.1.2.3/in"}, "webhook_url_invalid"),
        ({"url": "https://localhost/in"}, "webhook_url_invalid"),  # a name that resolves to loopback
        ({"url": "http://hooks.example.com/in"}, "webhook_url_invalid"),
        ({"url": "https://user:secret-pass@hooks.example.com/in"}, "webhook_url_invalid"),
        ({"url": "https://hooks.example.com/in", "extra": 1}, "unknown_field"),
        ({}, "missing_field"),
        ("https://hooks.example.com/in", "webhook_invalid"),
    ],
)
def test_a_refused_webhook_is_a_400_that_creates_nothing_and_never_repeats_the_url(
    served: Any, webhook: Any, reason: str
) -> None:
    http: httpx.Client = served.http
    before = database_bytes(served) if served.db_path is None else _rows(served)
    r = http.post("/v2/session", json=create_body(http, webhook), headers={SESSION_HEADER: new_token()})
    assert r.status_code == 400, r.text
    assert r.json()["reason_class"] == reason
    if isinstance(webhook, dict) and "url" in webhook:
        assert webhook["url"] not in r.text and "secret-pass" not in r.text
    after = database_bytes(served) if served.db_path is None else _rows(served)
    assert after == before


def _rows(served: Any) -> bytes:
    import sqlite3

    with contextlib.closing(sqlite3.connect(served.db_path)) as conn:
        tables = ("sessions", "session_events", "session_idempotency", "session_webhooks")
        return repr([sorted(conn.execute(f"SELECT * FROM {t}").fetchall()) for t in tables]).encode()


@pytest.mark.postgres
def test_two_replicas_deliver_each_event_once() -> None:
    """Two servers on one PostgreSQL database, both delivering: each event reaches the receiver once (claims)."""
    require_postgres()
    with contextlib.ExitStack() as stack:
        url = stack.enter_context(temporary_database())
        bases = []
        for _ in range(2):
            port = free_port()
            bases.append(stack.enter_context(running_server(create_app(settings(port, url)), port)))
        rx = stack.enter_context(receiving())
        clients = [stack.enter_context(httpx.Client(base_url=b, timeout=30)) for b in bases]
        sessions = []
        for i in range(12):
            http, token = clients[i % 2], new_token()
            r = http.post(
                "/v2/session", json=create_body(http, {"url": rx.url}), headers={SESSION_HEADER: token}
            )
            assert r.status_code == 201, r.text
            sessions.append((r.json()["session_id"], token))
        for i, (sid, token) in enumerate(sessions):
            c = clients[(i + 1) % 2].post(
                f"/v2/session/{sid}/cancel",
                json={"idempotency_key": "cancel-0001"},
                headers={SESSION_HEADER: token},
            )
            assert c.status_code == 200, c.text
        rx.wait_for(lambda e: len(e) >= 24, "24 events")
        time.sleep(0.5)  # lets a duplicate, if one were sent, arrive before counting (a duplicate only adds)
        ids = [h["webhook-id"] for h, _ in rx.deliveries]
        assert len(ids) == 24 and len(set(ids)) == 24
        for sid, _ in sessions:
            assert [e["sequence"] for e in rx.events() if e["session_id"] == sid] == [1, 2]


def test_delivery_survives_a_restart(tmp_path: Any) -> None:
    """Events still undelivered when the server stops are delivered by the next server on the same store."""
    url = f"sqlite+aiosqlite:///{tmp_path / 's.sqlite3'}"
    token = new_token()
    with receiving(fail_first=1_000_000) as rx:
        port = free_port()
        with (
            running_server(create_app(settings(port, url)), port) as base,
            httpx.Client(base_url=base) as http,
        ):
            r = http.post(
                "/v2/session", json=create_body(http, {"url": rx.url}), headers={SESSION_HEADER: token}
            )
            assert r.status_code == 201, r.text
            sid = r.json()["session_id"]
            deadline = time.monotonic() + 60  # bounds a hang only
            while (
                http.get(f"/v2/session/{sid}", headers={SESSION_HEADER: token}).json()["webhook"][
                    "failed_attempts"
                ]
                < 1
            ):
                assert time.monotonic() < deadline
                time.sleep(0.05)
        assert rx.events() == []
        with rx.lock:
            rx.fail_first = 0
        port = free_port()
        with running_server(create_app(settings(port, url)), port):
            events = rx.wait_for(lambda e: len(e) >= 1, "the create event after the restart")
        assert [(e["session_id"], e["sequence"]) for e in events] == [(sid, 1)]
