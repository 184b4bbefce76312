"""/v2/session over real HTTP (uvicorn, the real composition root, SQLite store), without a chain: create,
idempotency, token rules, views, refresh/cancel rules, illegal transitions and unobservable chains. Every
refusal changes nothing (the session version and status are read back)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import secrets
import sqlite3
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from tests.support.observable import OBSERVABLE
from tests.support.postgres import require_postgres, temporary_database
from tests.support.server import free_port, running_server
from tests.unit.actions.support import START, approval_for, intent_for, wallets_for
from tests.unit.sessions.corpus import FakeEvm, swap_receipts

from routequote.app import create_app
from routequote.clock import FixedClock
from routequote.config import Settings
from routequote.core.quote import SESSION_HEADER
from routequote.verify import verify_bundle

ONE_STEP = "base:ETH->base:USDC"
MULTI = "base:ETH->arbitrum:USDC"


def new_token() -> str:
    return base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()


class Api:
    def __init__(self, url: str, clock: FixedClock) -> None:
        self.http = httpx.Client(base_url=url, timeout=30)
        self.clock = clock

    def quote(self, route: str, amount: int = 100) -> dict[str, Any]:
        r = self.http.post("/v2/quote", json=intent_for(route, amount))
        assert r.status_code == 200, r.text
        return r.json()

    def body(
        self, route: str, quote: dict[str, Any], key: str | None = None, **approval: str
    ) -> dict[str, Any]:
        key = key or f"k-{secrets.token_hex(6)}"
        appr = approval_for(quote, key=key, selected_mode="session", **approval)
        return {
            "caller_approved": True,
            **intent_for(route, 100),
            "wallets": wallets_for(route),
            "approval_v3": appr,
            "idempotency_key": key,
        }

    def create(self, body: Any, token: str | None) -> httpx.Response:
        headers = {SESSION_HEADER: token} if token else {}
        return self.http.post("/v2/session", json=body, headers=headers)

    def read(self, sid: str, token: str, view: str | None = None) -> httpx.Response:
        params = {"view": view} if view else {}
        return self.http.get(f"/v2/session/{sid}", headers={SESSION_HEADER: token}, params=params)

    def op(self, sid: str, op: str, token: str, body: Any) -> httpx.Response:
        return self.http.post(f"/v2/session/{sid}/{op}", json=body, headers={SESSION_HEADER: token})


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def api(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    """The module runs once on an SQLite file and once on a fresh PostgreSQL database."""
    clock = FixedClock(START)
    port = free_port()
    db = tmp_path_factory.mktemp("sessions") / "s.sqlite3"
    with contextlib.ExitStack() as stack:
        if request.param == "postgresql":
            require_postgres()
            url = stack.enter_context(temporary_database())
        else:
            url = f"sqlite+aiosqlite:///{db}"
        app = create_app(Settings(rate_limit="off", port=port, database_url=url, **OBSERVABLE), clock=clock)
        with running_server(app, port) as base:
            a = Api(base, clock)
            a.db_path = db if request.param == "sqlite" else None  # type: ignore[attr-defined]
            a.db_url = url  # type: ignore[attr-defined]
            a.app = app  # type: ignore[attr-defined]
            yield a


def database_bytes(api: Api) -> bytes:
    """Everything the session database holds, as bytes: the SQLite files, or every PostgreSQL row as text."""
    if api.db_path is not None:  # type: ignore[attr-defined]
        db = api.db_path  # type: ignore[attr-defined]
        return b"".join(p.read_bytes() for p in db.parent.iterdir() if p.is_file())

    async def dump() -> bytes:
        import asyncpg  # type: ignore[import-untyped]

        conn = await asyncpg.connect(api.db_url.replace("+asyncpg", ""))  # type: ignore[attr-defined]
        try:
            out = []
            for table in ("sessions", "session_events", "session_idempotency"):
                rows = await conn.fetch(f"SELECT row_to_json(t)::text AS j FROM {table} t")
                out += [r["j"] for r in rows]
            return "\n".join(out).encode()
        finally:
            await conn.close()

    return asyncio.run(dump())


def database_rows(api: Api) -> bytes:
    """Every row of the session tables (a refused write may still touch SQLite's files, never its rows)."""
    if api.db_path is None:  # type: ignore[attr-defined]
        return database_bytes(api)
    with contextlib.closing(sqlite3.connect(api.db_path)) as conn:  # type: ignore[attr-defined]
        tables = ("sessions", "session_events", "session_idempotency")
        return repr([sorted(conn.execute(f"SELECT * FROM {t}").fetchall()) for t in tables]).encode()


def created(api: Api, route: str = ONE_STEP) -> tuple[str, str, dict[str, Any], dict[str, Any]]:
    token = new_token()
    q = api.quote(route)
    body = api.body(route, q)
    r = api.create(body, token)
    assert r.status_code == 201, r.text
    return r.json()["session_id"], token, body, q


def test_create_returns_a_verifiable_first_action(api: Api) -> None:
    token = new_token()
    q = api.quote(MULTI)
    body = api.body(MULTI, q)
    r = api.create(body, token)
    assert r.status_code == 201, r.text
    s = r.json()
    assert s["status"] == "action_ready" and s["next_operation"] == "submit_current_action"
    assert s["action_available"] is True and s["current_step"] == 0 and s["step_count"] == 2
    assert (
        s["idempotent_replay"] is False and s["server_signing"] is False and s["server_submission"] is False
    )
    bundle = s["current_action"]
    assert bundle["workflow_id"] == s["session_id"] and bundle["step_index"] == 0
    findings = verify_bundle(
        bundle,
        intent=intent_for(MULTI, 100),
        wallets=wallets_for(MULTI),
        approval_v3=body["approval_v3"],
        direct_route_summary=q["direct_route_summary"],
        now_unix=int(api.clock.now().timestamp()),
        accept_modelled_bounds=True,  # the embedded market
    )
    assert [f for f in findings if f.severity == "error"] == []
    assert s["funds"]["endpoint"] == "base:ETH" and s["funds"]["state"] == "in_wallet"
    assert token not in r.text


def test_create_replay_and_key_reuse(api: Api) -> None:
    token = new_token()
    q = api.quote(ONE_STEP)
    body = api.body(ONE_STEP, q)
    first = api.create(body, token)
    assert first.status_code == 201
    again = api.create(body, token)
    assert again.status_code == 201 and again.json()["idempotent_replay"] is True
    assert again.json()["session_id"] == first.json()["session_id"]
    other = dict(body, wallets={"base": "0x" + "ab" * 20})
    r = api.create(other, token)
    assert (
        r.status_code == 409 and r.json()["reason_class"] == "idempotency_key_reused_with_different_request"
    )


def test_token_rules(api: Api) -> None:
    q = api.quote(ONE_STEP)
    body = api.body(ONE_STEP, q)
    assert api.create(body, None).json()["reason_class"] == "session_token_required"
    assert api.create(body, "short").json()["reason_class"] == "session_token_invalid"
    sid, token, _, _ = created(api)
    assert api.read(sid, token).status_code == 200
    for wrong in (new_token(), token[:-1] + ("A" if token[-1] != "A" else "B")):
        r = api.read(sid, wrong)
        assert r.status_code == 404 and r.json()["reason_class"] == "session_not_found"
    unknown = api.read("00000000-0000-4000-8000-000000000999", token)
    assert unknown.status_code == 404 and unknown.json() == r.json()  # no existence oracle
    assert api.http.get(f"/v2/session/{sid}").status_code == 404


def test_mode_and_key_rules(api: Api) -> None:
    token = new_token()
    q = api.quote(ONE_STEP)
    body = api.body(ONE_STEP, q)
    body["approval_v3"]["selected_mode"] = "one_shot"
    assert api.create(body, token).json()["reason_class"] == "approval_v3_mode_not_session"
    body = api.body(ONE_STEP, q)
    body["idempotency_key"] = "another-key-1"
    assert api.create(body, token).json()["reason_class"] == "idempotency_key_mismatch"
    body = api.body(ONE_STEP, q, quote_fingerprint="0" * 64)
    r = api.create(body, token)
    assert r.status_code == 409 and r.json()["error"] == "reapproval_required"
    assert r.json()["action_created"] is False


def test_views(api: Api) -> None:
    sid, token, _, _ = created(api, MULTI)
    for view in ("session", "workflow", "receipt", "next_action"):
        r = api.read(sid, token, view)
        assert r.status_code == 200 and r.json()["view"] == view
    wf = api.read(sid, token, "workflow").json()
    assert [s["provider"] for s in wf["steps"]] == ["uniswap_v3", "circle_cctp"]
    assert all("quoted" in s for s in wf["steps"])
    receipt = api.read(sid, token, "receipt").json()["receipt"]
    assert receipt["route"]["complete"] is False and len(receipt["steps"]) == 2
    nxt = api.read(sid, token, "next_action").json()
    assert nxt["next_action"]["action_id"] and nxt["next_operation"] == "submit_current_action"
    assert api.read(sid, token, "everything").json()["reason_class"] == "invalid_view"


def test_refresh_only_after_expiry_and_cancel_is_final(api: Api) -> None:
    sid, token, _, _ = created(api)
    r = api.op(sid, "refresh", token, {"idempotency_key": "refresh-001"})
    assert r.status_code == 409 and r.json()["reason_class"] == "operation_not_allowed_in_status"
    before = api.read(sid, token).json()
    api.clock.advance(181)  # the bundle lives 180 s
    try:
        expired = api.read(sid, token).json()
        assert expired["status"] == "action_expired" and expired["next_operation"] == "refresh_action"
        assert expired["current_action"] is None
        fresh = api.op(sid, "refresh", token, {"idempotency_key": "refresh-002"})
        assert fresh.status_code == 200, fresh.text
        f = fresh.json()
        assert f["status"] == "action_ready"
        assert f["current_action"]["action_id"] != before["current_action"]["action_id"]
        assert (
            f["current_action"]["unsigned_action"]["inputAmount"]
            == before["current_action"]["unsigned_action"]["inputAmount"]
        )
        replay = api.op(sid, "refresh", token, {"idempotency_key": "refresh-002"})
        assert replay.json()["idempotent_replay"] is True
        assert replay.json()["current_action"]["action_id"] == f["current_action"]["action_id"]
    finally:
        pass
    c = api.op(sid, "cancel", token, {"idempotency_key": "cancel-0001"})
    assert c.status_code == 200 and c.json()["status"] == "cancelled"
    assert c.json()["funds"]["endpoint"] == "base:ETH" and "nothing moved" in c.json()["funds"]["note"]
    v = c.json()["session_version"]
    for op, body in (
        ("observe", {"idempotency_key": "obs-00001", "transaction_hashes": ["0x" + "11" * 32]}),
        ("refresh", {"idempotency_key": "refresh-003"}),
        ("cancel", {"idempotency_key": "cancel-0002"}),
    ):
        r = api.op(sid, op, token, body)
        assert r.status_code == 409 and r.json()["reason_class"] == "operation_not_allowed_in_status", (
            op,
            r.text,
        )
    after = api.read(sid, token).json()
    assert after["status"] == "cancelled" and after["session_version"] == v


def test_observe_with_the_chains_rpc_unreachable_is_503_and_changes_nothing(api: Api) -> None:
    sid, token, _, _ = created(api)
    before = api.read(sid, token).json()
    r = api.op(
        sid, "observe", token, {"idempotency_key": "obs-000001", "transaction_hashes": ["0x" + "22" * 32]}
    )
    assert r.status_code == 503, r.text
    assert r.json()["reason_class"] == "rpc_transport_error:base"  # configured (OBSERVABLE), nothing listens
    after = api.read(sid, token).json()
    assert (after["status"], after["session_version"]) == (before["status"], before["session_version"])


def test_bad_observe_bodies_are_400_and_change_nothing(api: Api) -> None:
    sid, token, _, _ = created(api)
    before = api.read(sid, token).json()["session_version"]
    cases = [
        [],
        {"transaction_hashes": ["0x" + "33" * 32]},
        {"idempotency_key": "short"},
        {"idempotency_key": "obs-0000001", "transaction_hashes": "0x" + "33" * 32},
        {"idempotency_key": "obs-0000001", "transaction_hashes": ["0x1234"]},
        {"idempotency_key": "obs-0000001", "transaction_hashes": ["0x" + "33" * 32] * 2},
        {"idempotency_key": "obs-0000001", "transaction_hashes": ["0x" + "33" * 32], "amount": "5"},
        {"idempotency_key": "obs-0000001", "transaction_hashes": ["0x" + "3" * 64] * 9},
    ]
    for body in cases:
        r = api.op(sid, "observe", token, body)
        assert r.status_code == 400, (body, r.text)
    assert api.read(sid, token).json()["session_version"] == before


def test_the_database_holds_no_raw_token(api: Api) -> None:
    made = [created(api) for _ in range(3)]
    blob = database_bytes(api)
    for sid, token, _, _ in made:
        assert sid.encode() in blob  # the sessions are there (the search would find a token if one were)
        assert token.encode() not in blob
        assert hashlib.sha256(token.encode()).hexdigest().encode() in blob  # only its SHA-256


def test_capabilities_publish_session_readiness(api: Api) -> None:
    caps = api.http.get("/v2/capabilities").json()["sessions"]
    assert caps["token_header"] == SESSION_HEADER and caps["automatic_chaining"] is False
    assert caps["session_ready_routes"] + caps["unavailable_route_count"] == 72
    routes = api.http.get("/v2/capabilities/routes").json()["routes"]  # the why, per route
    blocked = [r for r in routes if not r["session_ready"]]
    assert len(blocked) == caps["unavailable_route_count"] and all(
        r["session_unavailable_reason"] for r in blocked
    )
    r = api.http.get("/v2/openapi.json").json()
    for path in (
        "/v2/session",
        "/v2/session/{session_id}",
        "/v2/session/{session_id}/observe",
        "/v2/session/{session_id}/refresh",
        "/v2/session/{session_id}/cancel",
    ):
        assert path in r["paths"], path


def test_logs_carry_session_events_but_never_the_token(
    api: Api, capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    import logging

    caplog.set_level(logging.DEBUG)
    sid, token, body, _ = created(api)
    api.read(sid, token, "receipt")
    api.read(sid, "A" * 43)  # a wrong token is handled (and must not be logged either)
    api.op(sid, "cancel", token, {"idempotency_key": "cancel-log-1"})
    out, err = capfd.readouterr()
    logged = out + err + caplog.text
    assert "session_created" in logged and "session_transition" in logged and sid in logged
    assert token not in logged and "A" * 43 not in logged
    assert body["idempotency_key"] not in logged


def test_a_key_replays_only_its_own_operation(api: Api) -> None:
    """Issue 22 item 1: an idempotency key replays only the same operation with the same body; refresh,
    cancel and observe under one key never answer each other's stored result (409, nothing changes)."""
    sid, token, _, _ = created(api)
    api.clock.advance(181)  # the bundle lives 180 s: refresh applies
    fresh = api.op(sid, "refresh", token, {"idempotency_key": "shared-key-01"})
    assert fresh.status_code == 200 and fresh.json()["status"] == "action_ready", fresh.text
    version = fresh.json()["session_version"]
    crossed = api.op(sid, "cancel", token, {"idempotency_key": "shared-key-01"})
    assert crossed.status_code == 409, crossed.text
    assert crossed.json()["reason_class"] == "idempotency_key_reused_with_different_request"
    still = api.read(sid, token).json()
    assert still["status"] == "action_ready" and still["session_version"] == version
    cancelled = api.op(sid, "cancel", token, {"idempotency_key": "shared-key-02"})
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    for op in ("refresh", "observe"):
        r = api.op(sid, op, token, {"idempotency_key": "shared-key-02"})
        assert (
            r.status_code == 409
            and r.json()["reason_class"] == "idempotency_key_reused_with_different_request"
        ), (
            op,
            r.text,
        )
    replay = api.op(sid, "cancel", token, {"idempotency_key": "shared-key-02"})
    assert replay.status_code == 200 and replay.json()["idempotent_replay"] is True
    assert api.read(sid, token).json()["status"] == "cancelled"


def test_one_approved_quote_opens_one_session(api: Api) -> None:
    """Issue 22 item 2: a second create for the same approved quote, with another token or another key, is
    409 session_exists_for_approval, names no token, and opens nothing; the first session is unchanged."""
    token = new_token()
    q = api.quote(ONE_STEP)
    body = api.body(ONE_STEP, q)
    first = api.create(body, token)
    assert first.status_code == 201, first.text
    sid = first.json()["session_id"]
    before = database_rows(api)
    other_token = new_token()
    for label, (again_body, again_token) in {
        "another token": (body, other_token),
        "another key": (api.body(ONE_STEP, q), token),
        "another key and token": (api.body(ONE_STEP, q), other_token),
    }.items():
        r = api.create(again_body, again_token)
        assert r.status_code == 409, (label, r.text)
        answer = r.json()
        assert answer["reason_class"] == "session_exists_for_approval", (label, answer)
        assert token not in r.text and other_token not in r.text and "session_id" not in answer
    assert database_rows(api) == before  # nothing opened, nothing changed
    replay = api.create(body, token)
    assert replay.status_code == 201 and replay.json()["idempotent_replay"] is True
    assert replay.json()["session_id"] == sid and replay.json()["session_version"] == 1


def test_one_transaction_advances_one_step(api: Api) -> None:
    """Issue 18 part 3 over REST: two sessions whose prepared actions are identical (same intent, same clock);
    the transactions that advanced the first cannot advance the second (409, nothing changes), on SQLite and
    PostgreSQL. The chain is a stand-in at the EVM reader port (receipts fabricated from the prepared action)."""
    sessions = api.app.state.sessions  # type: ignore[attr-defined]
    fake = FakeEvm()
    saved = sessions.evm
    sessions.evm = fake
    try:
        (sid_a, token_a, _, _), (sid_b, token_b, _, _) = created(api), created(api)
        a = api.read(sid_a, token_a).json()["current_action"]["unsigned_action"]
        b = api.read(sid_b, token_b).json()["current_action"]["unsigned_action"]
        assert a["transactions"] == b["transactions"]  # the precondition: one transaction proves either
        hashes = swap_receipts(fake, a, 10**18, seed=int(secrets.token_hex(4), 16))
        first = api.op(
            sid_a, "observe", token_a, {"idempotency_key": "obs-a-0001", "transaction_hashes": hashes}
        )
        assert first.status_code == 200 and first.json()["status"] == "complete", first.text
        before = database_rows(api)
        second = api.op(
            sid_b, "observe", token_b, {"idempotency_key": "obs-b-0001", "transaction_hashes": hashes}
        )
        assert second.status_code == 409, second.text
        assert second.json()["reason_class"] == "transaction_already_advanced_a_step"
        assert database_rows(api) == before
        still = api.read(sid_b, token_b).json()
        assert still["status"] == "action_ready" and still["session_version"] == 1
    finally:
        sessions.evm = saved
