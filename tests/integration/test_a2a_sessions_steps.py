"""The A2A session-lifecycle skill past step 0 (the fixtures and shared checks: tests/integration/conftest.py,
tests/support/a2a_sessions.py): the engine's own re-quote of a later step with only the chain evidence stood in,
the verifier's check of a later step's actual input, and an action failing verification withheld."""

from __future__ import annotations

import inspect
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from a2a.client import Client
from tests.support.a2a import Caller, send
from tests.support.a2a_sessions import MULTI, ONE_STEP, OTHER_EVM, Served, now

import routequote.verify as verify_module
from routequote.core.sessions.document import SessionDocument
from routequote.core.sessions.state import step_done
from routequote.surfaces.a2a_agent import verify_handoff
from routequote.verify import verify_bundle

VERIFIER_TAKES_ACTUAL_INPUT = "session_actual_input_base" in inspect.getsource(verify_module)


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
