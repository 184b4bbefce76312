"""The A2A session-lifecycle skill over real HTTP with the official a2a-sdk client (uvicorn, the real composition
root, a SQLite session store, a FixedClock): create one-step and multi-step sessions, read every view, cancel,
refresh after expiry, observe an unconfigured chain; each returned action verified by the caller with
routequote.verify and handed off with a self-verifying wallet handoff. Hostile cases are refused with nothing
created or changed (the database rows are read back). The raw session token never appears in a reply or a log."""

from __future__ import annotations

import inspect
import logging
import sqlite3
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from tests.support.a2a import Caller, new_session_token, send
from tests.support.observable import OBSERVABLE
from tests.support.server import free_port, running_server
from tests.unit.actions.support import START
from tests.unit.sessions.corpus import FakeEvm, swap_receipts

import routequote.verify as verify_module
from routequote.app import create_app
from routequote.clock import FixedClock
from routequote.config import Settings
from routequote.core.hashing import canonical_sha256
from routequote.core.sessions.document import SessionDocument
from routequote.core.sessions.state import step_done
from routequote.surfaces.a2a_agent import verify_handoff
from routequote.verify import verify_bundle

ONE_STEP = "base:ETH->base:USDC"
MULTI = "base:ETH->arbitrum:USDC"
OTHER_EVM = "0x4444444444444444444444444444444444444444"
VERIFIER_TAKES_ACTUAL_INPUT = "session_actual_input_base" in inspect.getsource(verify_module)


class Served:
    def __init__(self, url: str, app: Any, clock: FixedClock, db: Path) -> None:
        self.url, self.app, self.clock, self.db = url, app, clock, db

    def rows(self) -> tuple[list[tuple[Any, ...]], int, int]:
        """Every session (id, version, status), and the event and idempotency record counts."""
        with sqlite3.connect(f"file:{self.db}?mode=ro", uri=True) as con:
            sessions = sorted(con.execute("select session_id, version, status from sessions").fetchall())
            events = con.execute("select count(*) from session_events").fetchone()[0]
            keys = con.execute("select count(*) from session_idempotency").fetchone()[0]
        return sessions, events, keys


@pytest.fixture(scope="module")
def served_sessions(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    clock = FixedClock(START)
    port = free_port()
    db = tmp_path_factory.mktemp("a2a_sessions") / "s.sqlite3"
    settings = Settings(
        rate_limit="off", port=port, database_url=f"sqlite+aiosqlite:///{db}", log_level="debug", **OBSERVABLE
    )
    app = create_app(settings, clock=clock)
    with running_server(app, port) as url:
        yield Served(url, app, clock, db)


@pytest.fixture
async def client(served_sessions: Served) -> AsyncIterator[Client]:
    async with httpx.AsyncClient(timeout=30) as http:
        card = await A2ACardResolver(http, served_sessions.url).get_agent_card()
        assert "session-lifecycle" in {s.id for s in card.skills}
        yield ClientFactory(ClientConfig(streaming=False, httpx_client=http)).create(card)


def check_action(
    reply: dict[str, Any], caller: Caller, now: int, field: str = "current_action"
) -> dict[str, Any]:
    """The caller's own checks: the verifier on the bundle, the handoff's hash and binding."""
    bundle = reply["session"][field]
    findings = verify_bundle(
        bundle,
        intent=caller.intent,
        wallets=caller.wallets,
        now_unix=now,
        approval_v3=caller.approval,
        direct_route_summary=caller.q["direct_route_summary"],
        accept_modelled_bounds=True,  # the embedded market
    )
    assert [f for f in findings if f.severity == "error"] == []
    assert reply["action_verification"]["verified"] is True
    # the bounds are modelled and accepted as such: the handoff and the verification say so in words
    assert reply["action_verification"]["bounds"]["accepted_as_modelled"] is True
    assert reply["caller_wallet_handoff"]["bounds"]["modelled_not_live"] is True
    assert reply["action_verification"]["verifier"] == "routequote.verify.verify_bundle"
    handoff = reply["caller_wallet_handoff"]
    assert verify_handoff(handoff, bundle) == []
    assert handoff["bundle_payload_sha256"] == bundle["payload_sha256"]
    assert handoff["automatic_invocation_forbidden"] is True and handoff["adapter_chains_actions"] is False
    assert "handoff_sha256_mismatch" in verify_handoff({**handoff, "step_index": 7}, bundle)
    g = reply["guidance"]
    assert g["adapter_chains_actions"] is False and g["transaction_signed"] is False
    assert g["transaction_submitted"] is False and g["action_available"] is True
    # the session's preflight, summarised next to the handoff (advice: it never withholds the action)
    unread = [f["message"] for f in reply["session"]["preflight"]["findings"] if f["code"] == "unknown"]
    assert g["preflight"]["unread"] == unread and g["preflight"]["advice_only"] is True
    assert caller.token not in str(reply)
    return handoff


def now(s: Served) -> int:
    return int(s.clock.now().timestamp())


# ---- the card -------------------------------------------------------------------------------------------


async def test_card_lists_three_skills(served_sessions: Served) -> None:
    async with httpx.AsyncClient(base_url=served_sessions.url) as http:
        card = (await http.get("/.well-known/agent-card.json")).json()
    skills = {s["id"]: s for s in card["skills"]}
    assert list(skills) == ["quote-cross-chain-route", "prepare-first-unsigned-action", "session-lifecycle"]
    text = skills["session-lifecycle"]["description"]
    for word in (
        "session_create",
        "observe_source",
        "sessionToken",
        "verificationContext",
        "43",
        "never chains",
    ):
        assert word in text, word


# ---- lifecycle --------------------------------------------------------------------------------------------


async def test_one_step_session_create_and_replay(client: Client, served_sessions: Served) -> None:
    caller = Caller(client, ONE_STEP)
    reply = await caller.create()
    s = reply["session"]
    assert (s["status"], s["next_operation"], s["route"], s["step_count"]) == (
        "action_ready",
        "submit_current_action",
        ONE_STEP,
        1,
    )
    assert s["quote_binding"]["quote_id"] == caller.approval["quote_id"]
    handoff = check_action(reply, caller, now(served_sessions))
    assert handoff["kind"] == "eip1193_eth_sendTransaction"
    assert {r["params"][0]["chainId"] for r in handoff["requests"]} == {hex(8453)}
    assert reply["guidance"]["session_created"] is True
    again = await send(client, caller.create_message())  # the same message: the engine's idempotent replay
    assert again["session"]["session_id"] == caller.sid and again["session"]["idempotent_replay"] is True
    assert again["guidance"]["session_created"] is False
    check_action(again, caller, now(served_sessions))


async def test_multi_step_views_and_cancel(client: Client, served_sessions: Served) -> None:
    caller = Caller(client, MULTI)
    created = await caller.create()
    assert created["session"]["step_count"] == 2 and created["session"]["current_action"]["step_index"] == 0
    check_action(created, caller, now(served_sessions))
    session = await caller.get()
    assert session["session"]["view"] == "session"
    check_action(session, caller, now(served_sessions))
    workflow = await caller.get("workflow")
    assert set(workflow) == {"session", "guidance"}  # no action in this view: no handoff
    assert workflow["session"]["wallets"] == caller.wallets
    assert [s["provider"] for s in workflow["session"]["steps"]] == ["uniswap_v3", "circle_cctp"]
    receipt = await caller.get("receipt")
    assert set(receipt) == {"session", "guidance"}
    assert receipt["session"]["receipt"]["route"]["complete"] is False
    nxt = await caller.get("next_action")
    check_action(nxt, caller, now(served_sessions), field="next_action")
    assert nxt["caller_wallet_handoff"] == session["caller_wallet_handoff"]
    bad = await caller.get("everything")
    assert bad["error"]["reason_class"] == "invalid_view"

    cancelled = await send(
        client, caller.call("session_cancel", idempotencyKey="cancel-" + uuid.uuid4().hex[:8])
    )
    assert set(cancelled) == {"session", "guidance"}, cancelled
    c = cancelled["session"]
    assert c["status"] == "cancelled" and c["current_action"] is None and c["next_operation"] == "none"
    assert c["funds"]["endpoint"] == "base:ETH" and "nothing moved" in c["funds"]["note"]
    again = await send(client, caller.call("session_cancel", idempotencyKey="cancel-" + uuid.uuid4().hex[:8]))
    assert again["error"]["reason_class"] == "operation_not_allowed_in_status"


async def test_refresh_only_after_expiry(client: Client, served_sessions: Served) -> None:
    caller = Caller(client, ONE_STEP)
    first = await caller.create()
    early = await send(client, caller.call("refresh_action", idempotencyKey="refresh-early-1"))
    assert early["error"]["code"] == "request_rejected"
    assert early["error"]["reason_class"] == "operation_not_allowed_in_status"
    served_sessions.clock.advance(181)  # the bundle lives 180 s
    expired = await caller.get()
    assert expired["session"]["status"] == "action_expired" and expired["session"]["current_action"] is None
    assert set(expired) == {"session", "guidance"} and expired["guidance"]["action_available"] is False
    fresh = await send(client, caller.call("refresh_action", idempotencyKey="refresh-late-01"))
    assert fresh["session"]["status"] == "action_ready", fresh
    old, new = first["session"]["current_action"], fresh["session"]["current_action"]
    assert new["action_id"] != old["action_id"]
    assert new["unsigned_action"]["inputAmount"] == old["unsigned_action"]["inputAmount"]
    handoff = check_action(fresh, caller, now(served_sessions))
    assert handoff != first["caller_wallet_handoff"]


async def test_a_key_replays_only_its_own_operation(client: Client, served_sessions: Served) -> None:
    """Issue 22 item 1 over A2A: refresh and cancel under one key never answer each other's stored result."""
    caller = Caller(client, ONE_STEP)
    await caller.create()
    served_sessions.clock.advance(181)  # the bundle lives 180 s
    key = "shared-" + uuid.uuid4().hex[:8]
    fresh = await send(client, caller.call("refresh_action", idempotencyKey=key))
    assert fresh["session"]["status"] == "action_ready", fresh
    crossed = await send(client, caller.call("session_cancel", idempotencyKey=key))
    assert set(crossed) == {"error"}, crossed
    assert crossed["error"]["reason_class"] == "idempotency_key_reused_with_different_request"
    still = await caller.get()
    assert still["session"]["status"] == "action_ready"
    assert still["session"]["session_version"] == fresh["session"]["session_version"]
    other = "shared-" + uuid.uuid4().hex[:8]
    cancelled = await send(client, caller.call("session_cancel", idempotencyKey=other))
    assert cancelled["session"]["status"] == "cancelled", cancelled
    back = await send(client, caller.call("refresh_action", idempotencyKey=other))
    assert back["error"]["reason_class"] == "idempotency_key_reused_with_different_request", back
    assert (await caller.get())["session"]["status"] == "cancelled"


async def test_one_approved_quote_opens_one_session(client: Client, served_sessions: Served) -> None:
    """Issue 22 item 2 over A2A: another token or another key for the same approved quote is refused."""
    caller = Caller(client, ONE_STEP)
    first = await caller.create()
    before = served_sessions.rows()
    other_token = new_session_token()
    other_key = "a2a-s-" + uuid.uuid4().hex[:16]
    for over in (
        {"sessionToken": other_token},
        {
            "idempotencyKey": other_key,
            "approvalV3": {**caller.approval, "idempotency_key": other_key},
            "verificationContext": caller.context({**caller.approval, "idempotency_key": other_key}),
        },
    ):
        reply = await send(client, caller.create_message(**over))
        assert set(reply) == {"error"}, reply
        assert reply["error"]["reason_class"] == "session_exists_for_approval", reply
        assert caller.token not in str(reply) and other_token not in str(reply)
    assert served_sessions.rows() == before
    again = await caller.get()
    assert again["session"]["session_id"] == first["session"]["session_id"]
    assert again["session"]["session_version"] == 1


async def test_one_transaction_advances_one_step(client: Client, served_sessions: Served) -> None:
    """Issue 18 part 3 over A2A: the transactions that advanced one session cannot advance another whose
    prepared action is identical (a stand-in chain at the EVM reader port; receipts fabricated)."""
    sessions = served_sessions.app.state.sessions
    fake, saved = FakeEvm(), sessions.evm
    sessions.evm = fake
    try:
        one, two = Caller(client, ONE_STEP), Caller(client, ONE_STEP)
        first, second = await one.create(), await two.create()
        action = first["session"]["current_action"]["unsigned_action"]
        assert (
            action["transactions"] == second["session"]["current_action"]["unsigned_action"]["transactions"]
        )
        hashes = swap_receipts(fake, action, 10**18, seed=int(uuid.uuid4().hex[:8], 16))
        done = await send(
            client, one.call("observe_source", idempotencyKey="obs-a-0001", transactionHashes=hashes)
        )
        assert done["session"]["status"] == "complete", done
        before = served_sessions.rows()
        refused = await send(
            client, two.call("observe_source", idempotencyKey="obs-b-0001", transactionHashes=hashes)
        )
        assert set(refused) == {"error"}, refused
        assert refused["error"]["reason_class"] == "transaction_already_advanced_a_step"
        assert served_sessions.rows() == before
        assert (await two.get())["session"]["status"] == "action_ready"
    finally:
        sessions.evm = saved


async def test_observe_on_an_unreachable_chain_changes_nothing(
    client: Client, served_sessions: Served
) -> None:
    caller = Caller(client, ONE_STEP)
    await caller.create()
    before = served_sessions.rows()
    reply = await send(
        client,
        caller.call(
            "observe_source",
            idempotencyKey="obs-" + uuid.uuid4().hex[:8],
            transactionHashes=["0x" + "22" * 32],
        ),
    )
    assert set(reply) == {"error"}
    err = reply["error"]
    assert (err["code"], err["reason_class"]) == ("upstream_unavailable", "rpc_transport_error:base"), err
    assert 1 <= err["retry_after_seconds"] <= 3600
    assert served_sessions.rows() == before
    after = await caller.get()
    assert after["session"]["status"] == "action_ready" and after["session"]["session_version"] == 1


# ---- later steps: the engine's own re-quote, with only the chain evidence stood in ------------------------


class _StepZeroFacts:
    """Stand-in for the chain facts of step 0 only, injected at the engine's observation port
    (`SessionService.facts`): step 0 "delivered" `output(quoted step 0)`; the core's own `step_done` rule and
    the engine's re-quote build step 1 (or park the funds with 409). Every other read goes to the real port."""

    def __init__(self, real: Any, output: Callable[[dict[str, Any]], int]) -> None:
        self.real = real
        self.output = output

    async def observe(self, key: Any, state: SessionDocument, route: Any, named: Any = ()) -> Any:
        if state.phase == "source":
            return step_done(state, route, 0, self.output(state.summary_steps[0]))
        return await self.real.observe(key, state, route, named)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


def _advance_step_zero(app: Any, output: Callable[[dict[str, Any]], int]) -> Any:
    return _StepZeroFacts(app.state.sessions.facts, output)


async def test_second_step_action_is_verified_from_the_actual_input(
    client: Client, served_sessions: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    caller = Caller(client, MULTI)
    await caller.create()
    mid = lambda q: (int(q["expected_output_base"]) + int(q["minimum_output_base"])) // 2  # noqa: E731
    monkeypatch.setattr(
        served_sessions.app.state.sessions, "facts", _advance_step_zero(served_sessions.app, mid)
    )
    reply = await send(
        client,
        caller.call(
            "observe_source",
            idempotencyKey="obs-" + uuid.uuid4().hex[:8],
            transactionHashes=["0x" + "44" * 32],
        ),
    )
    workflow = (await caller.get("workflow"))["session"]
    assert workflow["current_step"] == 1 and workflow["steps"][1]["status"] == "action_ready"
    actual = mid(caller.q["direct_route_summary"]["steps"][0])
    assert actual != int(caller.q["direct_route_summary"]["steps"][1]["expected_input_base"])
    if VERIFIER_TAKES_ACTUAL_INPUT:  # routequote.verify takes the kwarg (the fallback has its own test below)
        assert set(reply) == {"session", "guidance", "action_verification", "caller_wallet_handoff"}, reply
        bundle = reply["session"]["current_action"]
        assert bundle["step_index"] == 1 and int(bundle["unsigned_action"]["inputAmount"]) == actual
        assert "session_actual_input_base" in reply["action_verification"]["checked_against"]
        assert verify_handoff(reply["caller_wallet_handoff"], bundle) == []
        assert reply["session"]["funds"]["amount_base"] == str(actual)
    else:  # the verifier cannot check a later step yet: the action is withheld, never handed off unverified
        assert set(reply) == {"error"}, reply
        err = reply["error"]
        assert (err["code"], err["reason_class"]) == (
            "safety_boundary_failed",
            "verifier_lacks_session_actual_input_base",
        )
        assert err["action_withheld"] is True and err["session"]["status"] == "action_ready"
        assert "unsigned_action" not in str(err) and "transactions" not in str(err)


@pytest.mark.parametrize("old_behaviour", ["raises_type_error", "reports_bundle_malformed"])
async def test_a_verifier_without_the_actual_input_keyword_withholds_later_steps(
    client: Client, served_sessions: Served, monkeypatch: pytest.MonkeyPatch, old_behaviour: str
) -> None:
    """A verifier that predates `session_actual_input_base` (it raised TypeError, or reported it as
    bundle_malformed) never lets a later step's action through unverified."""
    import routequote.surfaces.a2a_sessions as a2a_sessions
    from routequote.verify import Finding

    def old_verifier(bundle: Any, **kw: Any) -> Any:
        if "session_actual_input_base" in kw:
            message = (
                "TypeError: _verify_bundle() got an unexpected keyword argument 'session_actual_input_base'"
            )
            if old_behaviour == "raises_type_error":
                raise TypeError(message)
            return [Finding("bundle_malformed", f"the bundle cannot be read: {message}")]
        return verify_bundle(bundle, **kw)

    monkeypatch.setattr(a2a_sessions, "verify_bundle", old_verifier)
    caller = Caller(client, MULTI)
    await caller.create()  # step 0 still verifies and is handed off
    mid = lambda q: (int(q["expected_output_base"]) + int(q["minimum_output_base"])) // 2  # noqa: E731
    monkeypatch.setattr(
        served_sessions.app.state.sessions, "facts", _advance_step_zero(served_sessions.app, mid)
    )
    reply = await send(
        client,
        caller.call(
            "observe_source",
            idempotencyKey="obs-" + uuid.uuid4().hex[:8],
            transactionHashes=["0x" + "46" * 32],
        ),
    )
    assert set(reply) == {"error"}, reply
    err = reply["error"]
    assert (err["code"], err["reason_class"]) == (
        "safety_boundary_failed",
        "verifier_lacks_session_actual_input_base",
    )
    assert err["action_withheld"] is True and err["session"]["status"] == "action_ready"
    assert "unsigned_action" not in str(err) and "transactions" not in str(err)


async def test_second_step_wiring_with_a_stand_in_verifier(
    client: Client, served_sessions: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The adapter's side of a later step, whatever the verifier's state: it hands verify_bundle the verified
    actual input (the session's funds, cross-checked with the action's workflow) and builds the handoff only
    on a pass. The stand-in runs the real verifier without the quoted summary (whose step-1 input the actual
    input legitimately differs from); the real kwarg is covered by the test above once the verifier has it."""
    import routequote.surfaces.a2a_sessions as a2a_sessions

    seen: list[int] = []

    def stand_in(bundle: Any, *, session_actual_input_base: int | None = None, **kw: Any) -> Any:
        if session_actual_input_base is not None:
            seen.append(session_actual_input_base)
            kw["direct_route_summary"] = None
        return verify_bundle(bundle, **kw)

    monkeypatch.setattr(a2a_sessions, "verify_bundle", stand_in)
    caller = Caller(client, MULTI)
    await caller.create()
    mid = lambda q: (int(q["expected_output_base"]) + int(q["minimum_output_base"])) // 2  # noqa: E731
    monkeypatch.setattr(
        served_sessions.app.state.sessions, "facts", _advance_step_zero(served_sessions.app, mid)
    )
    reply = await send(
        client,
        caller.call(
            "observe_source",
            idempotencyKey="obs-" + uuid.uuid4().hex[:8],
            transactionHashes=["0x" + "45" * 32],
        ),
    )
    actual = mid(caller.q["direct_route_summary"]["steps"][0])
    assert seen == [actual]
    assert set(reply) == {"session", "guidance", "action_verification", "caller_wallet_handoff"}, reply
    bundle = reply["session"]["current_action"]
    assert bundle["step_index"] == 1 and bundle["unsigned_action"]["inputAmount"] == str(actual)
    assert reply["action_verification"]["checked_against"][-1] == "session_actual_input_base"
    assert verify_handoff(reply["caller_wallet_handoff"], bundle) == []
    assert reply["caller_wallet_handoff"]["step_index"] == 1
    again = await caller.get("next_action")  # the same action read back: same handoff
    assert again["caller_wallet_handoff"] == reply["caller_wallet_handoff"] and seen == [actual, actual]
    session = reply["session"]
    for funds in (
        {**session["funds"], "amount_base": str(actual - 1)},
        {**session["funds"], "endpoint": "base:ETH"},
    ):
        with pytest.raises(a2a_sessions.SafetyBoundaryFailed) as exc:
            a2a_sessions.verify_session_action(
                bundle,
                {**session, "funds": funds},
                caller.ctx,
                caller.approval,
                now_unix=now(served_sessions),
                fee_recipients={},
                deployments={},
            )
        assert exc.value.reason_class == "session_actual_input_mismatch"


async def test_requote_below_approval_is_reapproval_required_with_the_funds(
    client: Client, served_sessions: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    caller = Caller(client, MULTI)
    await caller.create()
    low = lambda q: int(q["minimum_output_base"]) // 2  # noqa: E731
    monkeypatch.setattr(
        served_sessions.app.state.sessions, "facts", _advance_step_zero(served_sessions.app, low)
    )
    reply = await send(
        client,
        caller.call(
            "observe_source",
            idempotencyKey="obs-" + uuid.uuid4().hex[:8],
            transactionHashes=["0x" + "55" * 32],
        ),
    )
    assert set(reply) == {"error"}, reply
    err = reply["error"]
    assert err["code"] == "reapproval_required" and err["action_created"] is False
    amount = str(low(caller.q["direct_route_summary"]["steps"][0]))
    assert err["funds"]["endpoint"] == "base:USDC" and err["funds"]["amount_base"] == amount
    assert err["funds"]["wallet"] == caller.wallets["base"]
    qh = err["quote_from_here"]
    assert (qh["from_chain"], qh["from_token"], qh["to_chain"], qh["to_token"], qh["amount_base"]) == (
        "base",
        "USDC",
        "arbitrum",
        "USDC",
        amount,
    )
    parked = await caller.get()
    assert parked["session"]["status"] == "reapproval_required" and set(parked) == {"session", "guidance"}


async def test_an_action_failing_verification_is_withheld(
    client: Client, served_sessions: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    sessions = served_sessions.app.state.sessions
    original = sessions.create

    async def compromised(
        body: Any, token: Any
    ) -> Any:  # an engine that redirects the swap to another target
        answer = await original(body, token)
        txs = answer.body["current_action"]["unsigned_action"]["transactions"]
        txs[-1] = {**txs[-1], "to": OTHER_EVM}
        return answer

    monkeypatch.setattr(sessions, "create", compromised)
    caller = Caller(client, ONE_STEP)
    await caller.quote()
    reply = await send(client, caller.create_message())
    assert set(reply) == {"error"}
    err = reply["error"]
    assert (err["code"], err["reason_class"]) == (
        "safety_boundary_failed",
        "prepared_action_failed_verification",
    )
    assert {"target_not_allowed", "action_sha256_mismatch"} <= {f["code"] for f in err["findings"]}
    assert err["action_withheld"] is True and "transactions" not in str(err)


# ---- hostile cases: each refused, nothing created or changed ---------------------------------------------

Build = Callable[[Caller, Caller], dict[str, Any]]


def _stale(ctx: dict[str, Any], **over: Any) -> dict[str, Any]:
    return {**ctx, **over}  # body edited, hash left stale


def _rehashed(c: Caller, **over: Any) -> dict[str, Any]:
    return c.context(c.approval, **over)  # consistent, but not the session's


HOSTILE: list[tuple[str, Build, str]] = [
    # session_create
    (
        "create_one_shot_approval",
        lambda c, o: c.create_message(
            approvalV3=c.approval_for("one_shot"), verificationContext=c.context(c.approval_for("one_shot"))
        ),
        "approval_v3_mode_mismatch",
    ),
    (
        "create_key_mismatch",
        lambda c, o: c.create_message(idempotencyKey="another-key-0001"),
        "idempotency_key_mismatch",
    ),
    (
        "create_approval_key_mismatch",
        lambda c, o: c.create_message(
            approvalV3=c.approval_for("session", idempotency_key="another-key-0001")
        ),
        "idempotency_key_mismatch",
    ),
    ("create_token_44", lambda c, o: c.create_message(sessionToken=c.token + "A"), "session_token_invalid"),
    ("create_token_42", lambda c, o: c.create_message(sessionToken=c.token[:42]), "session_token_invalid"),
    (
        "create_token_padded",
        lambda c, o: c.create_message(sessionToken=c.token[:42] + "="),
        "session_token_invalid",
    ),
    ("create_token_missing", lambda c, o: c.create_message(sessionToken=None), "session_token_required"),
    ("create_extra_field", lambda c, o: c.create_message(session_token=c.token), "unknown_field"),
    ("create_not_approved", lambda c, o: c.create_message(callerApproved=False), "caller_approval_required"),
    (
        "create_context_missing",
        lambda c, o: c.create_message(verificationContext=None),
        "verification_context_required",
    ),
    (
        "create_context_sha",
        lambda c, o: c.create_message(
            verificationContext=_stale(c.ctx, verification_context_sha256=canonical_sha256({"not": "it"}))
        ),
        "verification_context_invalid",
    ),
    (
        "create_context_other_wallets_stale",
        lambda c, o: c.create_message(verificationContext=_stale(c.ctx, wallets={"base": OTHER_EVM})),
        "verification_context_invalid",
    ),
    (
        "create_context_other_wallets",
        lambda c, o: c.create_message(verificationContext=_rehashed(c, wallets={"base": OTHER_EVM})),
        "verification_context_wallets_mismatch",
    ),
    (
        "create_context_one_shot",
        lambda c, o: c.create_message(verificationContext=c.context(c.approval_for("one_shot"))),
        "verification_context_mode_mismatch",
    ),
    (
        "create_wallet_drift",
        lambda c, o: c.create_message(wallets={"base": OTHER_EVM}),
        "verification_context_wallets_mismatch",
    ),
    (
        "create_amount_drift",
        lambda c, o: c.create_message(amountUsd=101),
        "verification_context_intent_mismatch",
    ),
    # session calls on the victim session
    (
        "get_wrong_token",
        lambda c, o: c.call("session_get", sessionToken=new_session_token()),
        "session_not_found",
    ),
    (
        "observe_wrong_token",
        lambda c, o: c.call(
            "observe_source",
            sessionToken=new_session_token(),
            idempotencyKey="obs-hostile-1",
            transactionHashes=["0x" + "66" * 32],
        ),
        "session_not_found",
    ),
    (
        "cancel_other_sessions_token",
        lambda c, o: c.call("session_cancel", sessionToken=o.token, idempotencyKey="cancel-hostile-1"),
        "session_not_found",
    ),
    (
        "cancel_other_sessions_context",
        lambda c, o: c.call("session_cancel", verificationContext=o.ctx, idempotencyKey="cancel-hostile-2"),
        "verification_context_route_mismatch",
    ),
    (
        "cancel_other_quotes_context",
        lambda c, o: c.call(
            "session_cancel",
            idempotencyKey="cancel-hostile-7",
            verificationContext=c.context(c.approval_for("session", quote_id=str(uuid.uuid4()))),
        ),
        "verification_context_quote_mismatch",
    ),
    (
        "cancel_token_44",
        lambda c, o: c.call("session_cancel", sessionToken=c.token + "A", idempotencyKey="cancel-hostile-3"),
        "session_token_invalid",
    ),
    ("get_token_44", lambda c, o: c.call("session_get", sessionToken=c.token + "A"), "session_token_invalid"),
    (
        "cancel_context_sha",
        lambda c, o: c.call(
            "session_cancel",
            idempotencyKey="cancel-hostile-4",
            verificationContext=_stale(c.ctx, verification_context_sha256=canonical_sha256({"x": 1})),
        ),
        "verification_context_invalid",
    ),
    (
        "cancel_context_other_wallets",
        lambda c, o: c.call(
            "session_cancel",
            idempotencyKey="cancel-hostile-5",
            verificationContext=_rehashed(c, wallets={"base": OTHER_EVM}),
        ),
        "verification_context_wallets_mismatch",
    ),
    (
        "refresh_context_one_shot",
        lambda c, o: c.call(
            "refresh_action",
            idempotencyKey="refresh-hostile-1",
            verificationContext=c.context(c.approval_for("one_shot")),
        ),
        "verification_context_mode_mismatch",
    ),
    (
        "cancel_context_missing",
        lambda c, o: c.call("session_cancel", idempotencyKey="cancel-hostile-6", verificationContext=None),
        "verification_context_required",
    ),
    (
        "cancel_bad_key",
        lambda c, o: c.call("session_cancel", idempotencyKey="short"),
        "invalid_idempotency_key",
    ),
    (
        "observe_extra_field",
        lambda c, o: c.call(
            "observe_source", idempotencyKey="obs-hostile-2", transactionHashes=["0x" + "66" * 32], amount="5"
        ),
        "unknown_field",
    ),
    (
        "observe_no_hashes",
        lambda c, o: c.call("observe_source", idempotencyKey="obs-hostile-3", transactionHashes=[]),
        "transaction_hashes_invalid",
    ),
    (
        "observe_nine_hashes",
        lambda c, o: c.call(
            "observe_source",
            idempotencyKey="obs-hostile-4",
            transactionHashes=["0x" + f"{i:02x}" * 32 for i in range(9)],
        ),
        "transaction_hashes_invalid",
    ),
    ("get_extra_field", lambda c, o: c.call("session_get", idempotencyKey="get-hostile-01"), "unknown_field"),
    (
        "get_unknown_session",
        lambda c, o: c.call("session_get", sessionId=str(uuid.uuid4())),
        "session_not_found",
    ),
    (
        "get_secret_field",
        lambda c, o: c.call("session_get", privateKey="redacted-secret-value"),
        "secret_field_rejected",
    ),
]


@pytest.fixture
async def victims(client: Client) -> tuple[Caller, Caller]:
    a, b = Caller(client, ONE_STEP), Caller(client, MULTI)
    await a.create()
    await b.create()
    return a, b


@pytest.mark.parametrize(("name", "build", "reason"), HOSTILE, ids=[h[0] for h in HOSTILE])
async def test_hostile_session_calls_refused(
    client: Client,
    served_sessions: Served,
    victims: tuple[Caller, Caller],
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    build: Build,
    reason: str,
) -> None:
    victim, other = victims
    if name.startswith("create"):
        victim = Caller(client, ONE_STEP)
        await victim.quote()
    sessions = served_sessions.app.state.sessions
    mutations: list[str] = []
    for method in ("create", "observe", "refresh", "cancel"):
        original = getattr(sessions, method)

        def spy(*args: Any, _m: str = method, _o: Any = original) -> Any:
            mutations.append(_m)
            return _o(*args)

        monkeypatch.setattr(sessions, method, spy)
    before = served_sessions.rows()
    reply = await send(client, build(victim, other))
    assert set(reply) == {"error"}, reply
    err = reply["error"]
    assert err["reason_class"] == reason, err
    assert err["code"] == "request_rejected" and err["message"]
    assert mutations == []  # refused before the engine was asked to change anything
    assert served_sessions.rows() == before  # nothing created, no version, event or idempotency record
    assert victim.token not in str(reply) and other.token not in str(reply) and "redacted" not in str(reply)
    if hasattr(victim, "sid"):
        after = await victim.get()
        assert after["session"]["status"] == "action_ready" and after["session"]["session_version"] == 1


# ---- the raw token is never echoed or logged ------------------------------------------------------------


async def test_token_never_in_a_reply_or_a_log(
    client: Client,
    served_sessions: Served,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level(logging.DEBUG)
    caller = Caller(client, MULTI)
    replies = [await caller.create()]
    for view in ("session", "workflow", "receipt", "next_action"):
        replies.append(await caller.get(view))
    replies.append(
        await send(
            client,
            caller.call(
                "observe_source", idempotencyKey="obs-log-0001", transactionHashes=["0x" + "77" * 32]
            ),
        )
    )
    replies.append(await send(client, caller.call("refresh_action", idempotencyKey="refresh-log-01")))
    replies.append(await send(client, caller.create_message(sessionToken=caller.token + "x")))  # refused
    replies.append(await send(client, caller.call("session_cancel", idempotencyKey="cancel-log-01")))
    assert replies[-1]["session"]["status"] == "cancelled"
    out, errs = capfd.readouterr()
    logs = caplog.text + out + errs
    assert caller.sid in logs, "the session operations were logged (capture works)"
    for reply in replies:
        assert caller.token not in str(reply)
    assert caller.token not in logs
    blob = b"".join(p.read_bytes() for p in served_sessions.db.parent.iterdir() if p.is_file())
    assert caller.sid.encode() in blob and caller.token.encode() not in blob


async def test_a_modelled_action_is_withheld_unless_the_caller_accepts_modelled_bounds(
    client: Client, served_sessions: Served
) -> None:
    """The embedded market's actions carry modelled bounds: by default the adapter's verifier withholds them
    (the session exists: its id comes back to continue or cancel); accepting says so in the handoff."""
    caller = Caller(client, ONE_STEP)
    caller.accept_modelled_bounds = False
    await caller.quote()
    reply = await send(
        client, {k: v for k, v in caller.create_message().items() if k != "acceptModelledBounds"}
    )
    assert set(reply) == {"error"}, reply
    err = reply["error"]
    assert (err["code"], err["reason_class"]) == (
        "safety_boundary_failed",
        "prepared_action_failed_verification",
    )
    assert [f["code"] for f in err["findings"]] == ["bounds_modelled_not_live"]
    assert "not live market data" in err["findings"][0]["message"]
    assert err["action_withheld"] is True and err["session"]["status"] == "action_ready"
    assert "unsigned_action" not in str(err) and "transactions" not in str(err)
    caller.sid = err["session"]["session_id"]
    refused = await send(client, caller.call("session_get"))
    assert refused["error"]["findings"][0]["code"] == "bounds_modelled_not_live"
    caller.accept_modelled_bounds = True
    accepted = await send(client, caller.call("session_get"))
    check_action(accepted, caller, now(served_sessions))
    bounds = accepted["caller_wallet_handoff"]["bounds"]
    assert bounds["basis"] == "modelled" and bounds["sign_only_on_a_test_or_local_chain"] is True
    assert "not live market data" in accepted["action_verification"]["bounds"]["statement"]
    wrong = await send(client, caller.call("session_get", acceptModelledBounds="yes"))
    assert wrong["error"]["reason_class"] == "wrong_type"
