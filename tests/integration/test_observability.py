"""Request ids, log redaction, /metrics additions, /livez and /readyz, over real HTTP (uvicorn, the real
composition root).

The log test puts a deliberately careless layer inside the app (it logs every request's headers and body,
through the stdlib and through structlog, as an SDK might), sends REST, MCP and A2A requests that carry
credentials, and greps everything captured (stderr/stdout and pytest's log records) for them."""

from __future__ import annotations

import base64
import json
import logging
import secrets
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import structlog
from prometheus_client.parser import text_string_to_metric_families
from starlette.middleware import Middleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from tests.support.hostile import JSONRPC_HEADERS
from tests.support.observable import OBSERVABLE
from tests.support.server import free_port, running_server
from tests.unit.actions.support import START, approval_for, intent_for, wallets_for

from routequote.app import create_app
from routequote.clock import FixedClock
from routequote.config import Settings
from routequote.core.quote import SESSION_HEADER

QUOTE = {"from_chain": "solana", "from_token": "SOL", "to_chain": "base", "to_token": "USDC", "amount_usd": 5}
ONE_STEP = "base:ETH->base:USDC"


def token() -> str:
    return base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()


class CarelessLogger:
    """Logs whole requests: headers as a repr (stdlib), headers and JSON body as fields (structlog), body as text."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        logging.getLogger("careless.sdk").info("request %s headers %r", scope["path"], scope["headers"])
        headers = {k.decode(): v.decode("latin-1") for k, v in scope["headers"]}
        chunks: list[bytes] = []

        async def logged_receive() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                chunks.append(message.get("body", b""))
                if not message.get("more_body"):
                    raw = b"".join(chunks)
                    logging.getLogger("careless.sdk").info("body %s", raw.decode("utf-8", "replace"))
                    try:
                        parsed: Any = json.loads(raw) if raw else None
                    except ValueError:
                        parsed = None
                    structlog.get_logger("careless").info("careless_request", headers=headers, body=parsed)
            return message

        await self.app(scope, logged_receive, send)


@pytest.fixture(scope="module")
def careless(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Any]]:
    port = free_port()
    db = tmp_path_factory.mktemp("obs") / "s.sqlite3"
    app = create_app(
        Settings(
            rate_limit="off",
            port=port,
            database_url=f"sqlite+aiosqlite:///{db}",
            log_level="debug",
            **OBSERVABLE,
        ),
        clock=FixedClock(START),
    )
    app.user_middleware.insert(1, Middleware(CarelessLogger))  # just inside the request-id layer
    with running_server(app, port) as url:
        yield url, app


def test_no_credential_reaches_a_log_on_rest_mcp_or_a2a(
    careless: tuple[str, Any], capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    url, _ = careless
    caplog.set_level(logging.DEBUG)
    session_token, bearer, cookie = token(), "bearer-" + secrets.token_hex(12), "sid=" + secrets.token_hex(12)
    private_key = "0x" + secrets.token_hex(32)
    access, login_sig = "acc-" + secrets.token_hex(16), "sig" + secrets.token_hex(30)
    secrets_sent = [session_token, bearer, cookie.split("=")[1], private_key, access, login_sig]
    auth = {"authorization": f"Bearer {bearer}", "cookie": cookie}
    ids: list[str] = []
    with httpx.Client(base_url=url, timeout=30) as http:
        # REST: a quote with credentials in headers, a real session create (token header, idempotency key)
        r = http.post("/v2/quote", json=QUOTE, headers=auth)
        assert r.status_code == 200
        ids.append(r.headers["x-request-id"])
        q = http.post("/v2/quote", json=intent_for(ONE_STEP, 100)).json()
        key = "idem-" + secrets.token_hex(10)
        secrets_sent.append(key)
        body = {
            "caller_approved": True,
            **intent_for(ONE_STEP, 100),
            "wallets": wallets_for(ONE_STEP),
            "approval_v3": approval_for(q, key=key, selected_mode="session"),
            "idempotency_key": key,
        }
        r = http.post("/v2/session", json=body, headers={**auth, SESSION_HEADER: session_token})
        assert r.status_code == 201, r.text
        ids.append(r.headers["x-request-id"])
        sid = r.json()["session_id"]
        r = http.get(f"/v2/session/{sid}", headers={SESSION_HEADER: session_token})
        assert r.status_code == 200
        # a secret-shaped value where a number belongs, and a login signature in a body
        r = http.post("/v2/quote", json={**QUOTE, "amount_usd": private_key, "login_signature": login_sig})
        assert r.status_code == 400
        # MCP: a tool call whose arguments carry an access token
        call = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "service_v2_quote", "arguments": {**QUOTE, "access_token": access}},
        }
        r = http.post("/mcp", json=call, headers={**JSONRPC_HEADERS, **auth})
        assert r.status_code == 200
        ids.append(r.headers["x-request-id"])
        # A2A: a session read whose DataPart carries the session token
        data = {
            "operation": "session_get",
            "sessionId": sid,
            "sessionToken": session_token,
            "idempotencyKey": key,
        }
        msg = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "SendMessage",
            "params": {
                "message": {
                    "role": "ROLE_USER",
                    "messageId": str(uuid.uuid4()),
                    "parts": [{"data": data, "mediaType": "application/json"}],
                }
            },
        }
        r = http.post("/a2a", json=msg, headers={**JSONRPC_HEADERS, **auth})
        assert r.status_code == 200
        ids.append(r.headers["x-request-id"])
    out, err = capfd.readouterr()
    logged = out + err + caplog.text + "".join(str(r.msg) for r in caplog.records)
    # capture works: the careless lines are there, with the request ids, and say what they redacted
    assert "careless_request" in logged and "<redacted>" in logged
    lines = [json.loads(line) for line in err.splitlines() if line.startswith("{") and "careless" in line]
    assert {line.get("request_id") for line in lines} >= set(ids)
    assert sid in logged
    for value in secrets_sent:
        assert value not in logged, value[:8]


def test_request_id_kept_when_sane_replaced_when_not(careless: tuple[str, Any]) -> None:
    url, _ = careless
    with httpx.Client(base_url=url, timeout=30) as http:
        assert (
            http.get("/livez", headers={"x-request-id": "abc:DEF-1.2_3"}).headers["x-request-id"]
            == "abc:DEF-1.2_3"
        )
        for bad in ("", "has space", "x" * 129, "semi;colon", "ünï"):
            got = http.get("/v2/status", headers={"x-request-id": bad.encode()}).headers["x-request-id"]
            assert got != bad and len(got) == 32 and int(got, 16) >= 0
        a, b = (http.get("/v2/capabilities").headers["x-request-id"] for _ in range(2))
        assert a != b
        # every surface and refusals too
        assert http.post("/mcp", content=b"{", headers=JSONRPC_HEADERS).headers.get("x-request-id")
        assert http.post("/a2a", content=b"{}", headers={"content-type": "text/plain"}).headers.get(
            "x-request-id"
        )
        assert http.get("/no-such-page").headers.get("x-request-id")


def samples(http: httpx.Client) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    r = http.get("/metrics")
    assert r.status_code == 200
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for fam in text_string_to_metric_families(r.text)
        for s in fam.samples
    }


def test_metrics_after_activity(tmp_path: Any) -> None:
    port = free_port()
    db = tmp_path / "m.sqlite3"
    app = create_app(
        Settings(rate_limit="3/minute", port=port, database_url=f"sqlite+aiosqlite:///{db}", **OBSERVABLE),
        clock=FixedClock(START),
    )
    routes = {
        "same_chain": "base:ETH->base:USDC",
        "cctp": "base:USDC->arbitrum:USDC",
        "robinhood_ingress": "base:USDC->robinhood:USDG",
        "robinhood_egress": "robinhood:USDG->base:USDC",
    }
    with running_server(app, port) as url, httpx.Client(base_url=url, timeout=30) as http:
        before = samples(http)
        assert before[("routequote_dependency_up", (("component", "database"),))] == 1
        assert before[("routequote_sessions", (("status", "action_ready"),))] == 0
        app.state.limiter.enabled = False  # limits come last
        for route in routes.values():
            assert http.post("/v2/quote", json=intent_for(route, 100)).status_code == 200
        q = http.post("/v2/quote", json=intent_for(ONE_STEP, 100)).json()
        key = "metrics-" + secrets.token_hex(6)
        body = {
            "caller_approved": True,
            **intent_for(ONE_STEP, 100),
            "wallets": wallets_for(ONE_STEP),
            "approval_v3": approval_for(q, key=key, selected_mode="session"),
            "idempotency_key": key,
        }
        tok = token()
        r = http.post("/v2/session", json=body, headers={SESSION_HEADER: tok})
        assert r.status_code == 201, r.text
        sid = r.json()["session_id"]
        r = http.post(
            f"/v2/session/{sid}/cancel",
            json={"idempotency_key": "cancel-" + key},
            headers={SESSION_HEADER: tok},
        )
        assert r.status_code == 200, r.text
        app.state.limiter.enabled = True
        limited = 0
        for _ in range(6):
            limited += http.get("/v2/capabilities").status_code == 429
        app.state.metrics._sessions_counted_at = -1e9  # the scrape cache would hold the counts for 5 s
        after = samples(http)
    for cls in routes:
        assert after.get(("routequote_quote_seconds_count", (("route_class", cls),)), 0) >= 1, cls
    same_chain = ("routequote_quote_seconds_count", (("route_class", "same_chain"),))
    assert after[same_chain] >= before.get(same_chain, 0) + 2
    assert (
        after[("routequote_session_transitions_total", (("event", "create"), ("to_status", "action_ready")))]
        == 1
    )
    assert (
        after[("routequote_session_transitions_total", (("event", "cancel"), ("to_status", "cancelled")))]
        == 1
    )
    assert after[("routequote_sessions", (("status", "cancelled"),))] == 1
    assert after[("routequote_sessions", (("status", "action_ready"),))] == 0
    assert limited == 3
    assert after[("routequote_rate_limit_rejections_total", (("group", "quote_api"),))] == limited
    assert after[("routequote_issued_quote_store_records", ())] == len(routes) + 1
    assert after[("routequote_dependency_up", (("component", "database"),))] == 1
    assert ("routequote_dependency_up", (("component", "redis"),)) not in after  # not configured


def test_livez_readyz_and_their_place(careless: tuple[str, Any]) -> None:
    url, _ = careless
    with httpx.Client(base_url=url, timeout=30) as http:
        live = http.get("/livez")
        assert live.status_code == 200 and live.json() == {"status": "ok"}
        ready = http.get("/readyz")
        assert ready.status_code == 200
        body = ready.json()
        assert body["status"] == "ready" and body["failing"] == []
        assert set(body["checks"]) == {"market", "database"} and body["checks"]["market"]["sources_up"] == 1
        paths = http.get("/v2/openapi.json").json()["paths"]
        assert not {"/livez", "/readyz", "/metrics"} & set(paths)


def test_probes_are_not_rate_limited() -> None:
    port = free_port()
    app = create_app(Settings(rate_limit="1/minute", port=port))
    with running_server(app, port) as url, httpx.Client(base_url=url, timeout=30) as http:
        assert [http.get("/v2/capabilities").status_code for _ in range(2)] == [200, 429]
        assert {http.get(p).status_code for p in ("/livez", "/readyz") for _ in range(10)} == {200}


def test_readyz_names_failing_components_without_their_urls(tmp_path: Any) -> None:
    """A PostgreSQL URL with a password on a closed port, and a Redis on a closed port: 503, both named, and
    neither the password nor the host name in the answer."""
    dead = free_port()
    password = "pw-" + secrets.token_hex(8)
    settings = Settings(
        rate_limit="off",
        port=free_port(),
        redis_url=f"redis://:{password}@127.0.0.1:{dead}/0",
        database_url=f"postgresql://routequote:{password}@127.0.0.1:{dead}/nowhere",
    )
    app = create_app(settings)
    app.state.lifespan_hooks.clear()  # no migrations against a database that is not there
    with running_server(app, settings.port) as url, httpx.Client(base_url=url, timeout=30) as http:
        r = http.get("/readyz")
        assert http.get("/livez").status_code == 200  # liveness never looks at dependencies
        scraped = samples(http)
    assert r.status_code == 503, r.text
    body = r.json()
    assert body["status"] == "not_ready" and body["failing"] == ["database", "redis"]
    assert body["checks"]["market"]["ok"] is True
    assert password not in r.text and str(dead) not in r.text and "routequote:" not in r.text
    assert scraped[("routequote_dependency_up", (("component", "database"),))] == 0
    assert scraped[("routequote_dependency_up", (("component", "redis"),))] == 0


@pytest.mark.redis
def test_readyz_with_redis_configured() -> None:
    from tests.support.services import require_redis  # skips with a reason when Redis is not there

    require_redis()
    settings = Settings(rate_limit="off", port=free_port(), redis_url="redis://127.0.0.1:6379/0")
    with (
        running_server(create_app(settings), settings.port) as url,
        httpx.Client(base_url=url, timeout=30) as http,
    ):
        r = http.get("/readyz")
        scraped = samples(http)
    assert r.status_code == 200 and r.json()["checks"]["redis"] == {"ok": True}
    assert scraped[("routequote_dependency_up", (("component", "redis"),))] == 1
