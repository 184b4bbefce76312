"""The A2A session-lifecycle skill over real HTTP with the official a2a-sdk client (uvicorn, the real composition
root, a SQLite session store, a FixedClock): create one-step and multi-step sessions, read every view, cancel,
refresh after expiry, observe an unconfigured chain; each returned action verified by the caller with
routequote.verify and handed off with a self-verifying wallet handoff. The raw session token never appears in a
reply or a log. Later steps: test_a2a_sessions_steps.py; hostile cases, refused with nothing created or changed:
test_a2a_sessions_hostile.py (their fixtures: tests/integration/conftest.py)."""

from __future__ import annotations

import logging
import uuid

import httpx
import pytest
from a2a.client import Client
from tests.support.a2a import Caller, new_session_token, send
from tests.support.a2a_sessions import MULTI, ONE_STEP, Served, check_action, now
from tests.unit.sessions.corpus import FakeEvm, swap_receipts

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
