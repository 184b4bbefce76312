"""The A2A session-lifecycle skill's hostile cases (the fixtures and shared checks: tests/integration/conftest.py,
tests/support/a2a_sessions.py): each refused with its reason before the engine is asked to change anything, and
nothing created or changed (the database rows are read back); no token echoed."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from a2a.client import Client
from tests.support.a2a import Caller, new_session_token, send
from tests.support.a2a_sessions import MULTI, ONE_STEP, OTHER_EVM, Served

from routequote.core.hashing import canonical_sha256

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
