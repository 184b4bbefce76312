"""The pure steps that change a session document. No I/O: every function takes the document it changes and
hands back a new one (`document.SessionDocument` is frozen; nested entries are copied before they change),
with the event the machine will apply.

What moves a session is a `Decision`: the event, the new document, a note for the caller, and optionally a
request for the next action (`NextAction`), which the engine fulfils by re-quoting from the verified output.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from routequote.core.actions.approval import reapproval_body
from routequote.core.routes import Route, Step
from routequote.core.sessions.document import MODE_V1, MODE_V2, SESSION_VERSION, SessionDocument
from routequote.core.sessions.entries import (
    ActionEntry,
    Cancelled,
    Funds,
    Proof,
    Reapproval,
    StepEntry,
    StepStatus,
    parse_bridge,
)
from routequote.core.sessions.evidence_common import ObservationRejected, StepEvidence
from routequote.core.sessions.machine import Event, Status
from routequote.errors import InvalidRequest, ReapprovalRequired, RouteQuoteError

SESSION_BINDING_VERSION = "routequote-quote-bound-session-constraints-v1"
SERVER_FLAGS = {"server_signing": False, "server_submission": False}
# a session's id is derived from the approved quote's id: one quote opens at most one session (v2 and v1 alike),
# enforced by the store's unique session id
SESSION_NAMESPACE = uuid.UUID("6f0b7c1e-2a55-5b7e-9d0c-3e1f4a2b8c61")


def session_id_for(quote_id: str) -> str:
    return str(uuid.uuid5(SESSION_NAMESPACE, quote_id.lower()))


State = SessionDocument


def iso(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def parse_ts(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


@dataclass(frozen=True)
class NextAction:
    """Build step `step`'s action from `input_base` (re-quoted and held to the approval), then apply `event`."""

    step: int
    input_base: int
    event: Event


@dataclass(frozen=True)
class Decision:
    """What one observation decided: the event, the new document, and what the engine still has to do."""

    event: Event
    state: SessionDocument
    note: str | None = None
    error: RouteQuoteError | None = None  # committed, then raised (409 reapproval_required)
    next_action: NextAction | None = None
    receive_action: bool = False  # build the CCTP receiveMessage for the current step (destination EVM)


# ---- entries ---------------------------------------------------------------------------------------------


def funds(endpoint: str, amount: str | int | None, wallet: str, where: str, note: str) -> Funds:
    return Funds.of(endpoint=endpoint, amount_base=amount, wallet=wallet, state=where, note=note)


def step_entry(step: Step) -> StepEntry:
    return StepEntry.of(
        index=step.index,
        provider=step.provider.value,
        from_=step.source.key,
        to=step.target.key,
        status=StepStatus.PENDING,
    )


def action_entry(bundle: dict[str, Any], phase: str, refreshed: bool = False) -> ActionEntry:
    return ActionEntry.of(
        action_id=bundle["action_id"],
        step_index=bundle["step_index"],
        phase=phase,
        payload_sha256=bundle["payload_sha256"],
        prepared_at=bundle["prepared_at"],
        expires_at=bundle["expires_at"],
        refreshed=refreshed,
    )


def evidence_entry(evidence: StepEvidence) -> Proof:
    return Proof.of(
        tx_ids=list(evidence.tx_ids),
        actual_input_base=None if evidence.actual_input_base is None else str(evidence.actual_input_base),
        actual_output_base=None if evidence.actual_output_base is None else str(evidence.actual_output_base),
        service_fee_paid_base=str(evidence.service_fee_paid_base),
        network_fee={k: str(v) for k, v in evidence.network_fee.items()},
        block_times=list(evidence.block_times),
    )


def quote_record(quote: dict[str, Any]) -> dict[str, Any]:
    """What a session keeps of the quote it was opened from."""
    summary_steps = quote["direct_route_summary"]["steps"]
    cost = quote["cost_summary"]
    return {
        "quote_id": quote["quote_id"],
        "quote_fingerprint": quote["continuation_v3"]["quote_fingerprint"],
        "direct_route_summary_sha256": quote["continuation_v3"]["direct_route_summary_sha256"],
        "as_of": quote["as_of"],
        "expires_at": quote["expires_at"],
        "market": quote.get("market"),
        "input_base": summary_steps[0]["expected_input_base"],
        "expected_output_base": summary_steps[-1]["expected_output_base"],
        "minimum_output_base": summary_steps[-1]["minimum_output_base"],
        "expected_total_cost_percent": cost["expected_total_cost_percent"],
        "maximum_total_cost_percent": cost["maximum_total_cost_percent"],
        "input_value_usd": cost["input_value_usd"],
    }


def new_state(
    mode: str,
    route: Route,
    intent: dict[str, Any],
    wallets: dict[str, str],
    signer: str | None,
    approval: dict[str, Any],
    binding: dict[str, Any],
    quote: dict[str, Any],
    bundle: dict[str, Any] | None,
    now: datetime,
    funds_note: str,
) -> SessionDocument:
    """A session's first document: what was quoted and approved, its steps, and the first action (if built)."""
    summary_steps = quote["direct_route_summary"]["steps"]
    steps = [step_entry(s) for s in route.steps]
    if bundle is None:
        steps[0] = steps[0].set(status=StepStatus.ACTION_REQUIRED)
    else:
        steps[0] = steps[0].set(status=StepStatus.ACTION_READY, action_id=bundle["action_id"])
    return SessionDocument(
        version=SESSION_VERSION,
        mode=mode,
        route=route.key,
        intent=intent,
        wallets=dict(sorted(wallets.items())),
        event_signer_public=signer,
        approval=approval,
        binding=binding,
        quote=quote_record(quote),
        summary_steps=tuple(summary_steps),
        current_step=0,
        phase="source",
        current_action=bundle,
        actions=(action_entry(bundle, "source"),) if bundle is not None else (),
        steps=tuple(steps),
        funds=funds(
            route.source.key,
            summary_steps[0]["expected_input_base"],
            wallets[route.source.chain.value],
            "in_wallet",
            funds_note,
        ),
        reapproval=None,
        cancelled=None,
        created_at=iso(now),
    )


# ---- the rules every step kind shares --------------------------------------------------------------------


def check_step_minimum(state: State, k: int, amount: int) -> None:
    """The one rule: a step that delivered less than its minimum (the action's, else the quoted) never advances."""
    minimum = step_minimum(state, k)
    if amount < minimum:
        raise ObservationRejected(
            "observation_below_step_minimum",
            f"step {k} delivered {amount} base units, below its minimum {minimum}; the session does not advance",
        )


def step_minimum(state: State, k: int) -> int:
    """Step k's minimum output: its action's, else the quoted one."""
    return int(state.steps[k].minimum_output_base or state.summary_steps[k]["minimum_output_base"])


def source_names(state: State, named: Sequence[str]) -> list[str]:
    """The source transactions the caller names now, else those named before (still awaiting their receipts)."""
    names = list(named) or list(state.steps[state.current_step].claimed_tx_ids or [])
    if not names:
        raise InvalidRequest(
            "transaction_hashes_required", "name the transactions you submitted for the current action"
        )
    return names


def pending_source(state: State, named: list[str], why: str) -> Decision:
    """The named source transactions are not final yet: keep them, decide nothing."""
    k = state.current_step
    entry = state.step(k).set(claimed_tx_ids=named, status=StepStatus.AWAITING_RECEIPT)
    return Decision(Event.SUBMITTED_PENDING, state.with_step(k, entry), note=why)


def destination_pending(state: State, note: str, status: str | None = None, **bridge: Any) -> Decision:
    """The bridge has not delivered yet; `status` and `bridge` (search cursors) are kept for the next look."""
    k = state.current_step
    entry = state.step(k)
    if status is not None:
        entry = entry.set(destination_status=status)
    entry = entry.set(bridge=entry.the_bridge().set(**bridge))
    return Decision(Event.DESTINATION_PENDING, state.with_step(k, entry), note=note)


def step_done(state: State, route: Route, k: int, output: int) -> Decision:
    """Step k delivered `output` (verified): the route completes, or the next step's action is requested
    (v2: built now from `output`; v1 corridor: built when the caller asks)."""
    step = route.steps[k]
    entry = state.step(k).set(status=StepStatus.COMPLETE, actual_output_base=str(output))
    wallet = state.wallet(step.target.chain.value)
    state = state.with_step(k, entry, current_action=None)
    if k == len(route.steps) - 1:
        delivered_funds = funds(step.target.key, str(output), wallet, "delivered", "the route is complete")
        return Decision(Event.STEP_VERIFIED_FINAL, state.evolve(funds=delivered_funds, phase="done"))
    state = state.evolve(
        funds=funds(
            step.target.key,
            str(output),
            wallet,
            "in_wallet",
            f"verified output of step {k}; input of step {k + 1}",
        )
    )
    if state.is_v1:  # v1 corridor: the next action is built when the caller asks for it
        following = state.step(k + 1).set(status=StepStatus.ACTION_REQUIRED)
        state = state.with_step(k + 1, following, current_step=k + 1, phase="source")
        return Decision(Event.STEP_VERIFIED_NEXT_REQUIRED, state)
    return Decision(
        Event.STEP_VERIFIED_NEXT_READY,
        state,
        next_action=NextAction(k + 1, output, Event.STEP_VERIFIED_NEXT_READY),
    )


def delivered(state: State, route: Route, k: int, amount: int, destination: Proof) -> Decision:
    """A bridge delivered `amount` on the destination (its evidence in `destination`): held to the step
    minimum, then the step is done."""
    check_step_minimum(state, k, amount)
    entry = state.step(k).set(destination=destination)
    return step_done(state.with_step(k, entry, current_action=None), route, k, amount)


def source_verified(state: State, route: Route, named: list[str], evidence: StepEvidence) -> Decision:
    """The source action is proven: a bridge goes in flight, a swap (or fee-carrying swap) is done."""
    if evidence.status == "pending":
        return pending_source(state, named, "waiting for finality")
    k = state.current_step
    step = route.steps[k]
    entry = state.step(k).set(claimed_tx_ids=named, source=evidence_entry(evidence))
    if evidence.bridge is not None:
        entry = entry.set(status=StepStatus.IN_FLIGHT, bridge=parse_bridge(evidence.bridge))
        in_flight = funds(
            step.target.key,
            None,
            state.wallet(step.target.chain.value),
            "in_flight",
            f"{step.provider.value} message in flight to {step.target.chain.value}",
        )
        state = state.with_step(k, entry, phase="destination", current_action=None, funds=in_flight)
        return Decision(Event.STEP_VERIFIED_BRIDGE_IN_FLIGHT, state)
    assert evidence.actual_output_base is not None
    return step_done(state.with_step(k, entry), route, k, evidence.actual_output_base)


def install_action(
    state: State, k: int, bundle: dict[str, Any], minimum: int, event: Event, phase: str = "source"
) -> Decision:
    """Step k's freshly built action becomes the current one (the one "action ready" block)."""
    entry = state.step(k).set(
        status=StepStatus.ACTION_READY, action_id=bundle["action_id"], minimum_output_base=str(minimum)
    )
    state = state.with_step(
        k, entry.unset("claimed_tx_ids"), current_step=k, phase=phase, current_action=bundle
    )
    return Decision(event, state.with_action(action_entry(bundle, phase)))


def arrived(state: State, route: Route, k: int, amount: int, destination: Proof) -> Decision:
    """A verified bridge arrival (its evidence in `destination`): at or above the step minimum the step is done;
    below it the tokens are already in the caller's wallet, so the session parks them there (409
    `reapproval_required` with `funds` and `quote_from_here`) and records the arrival, never stuck waiting."""
    minimum = step_minimum(state, k)
    if amount >= minimum:
        return delivered(state, route, k, amount, destination)
    step = route.steps[k]
    entry = state.step(k).set(destination=destination, actual_output_base=str(amount))
    state = state.with_step(k, entry, current_action=None)
    why = f"step {k} delivered {amount} base units, below its minimum {minimum}"
    wallet = state.wallet(step.target.chain.value)
    return reapproval(
        state, route, step, amount, wallet, "session_arrival_below_step_minimum", why, at_target=True
    )


def reapproval(
    state: State,
    route: Route,
    step: Step,
    amount: int,
    wallet: str,
    reason: str,
    why: str,
    *,
    at_target: bool = False,
) -> Decision:
    """Re-quoted below what was approved (or, `at_target`, a bridge delivered below the step minimum): park the
    funds where they are, build nothing, answer 409 with where they are."""
    body = reapproval_body(reason, route)
    where = step.target.key if at_target else step.source.key
    parked = funds(where, str(amount), wallet, "in_wallet", "parked: nothing was built or moved")
    chain, token = where.split(":")
    body.update(
        do_not_start_new_session=False,
        recover_current_session=False,
        recovery_operation="obtain_new_quote_and_make_new_selection",
        funds=parked.to_json(),
        quote_from_here={
            "from_chain": chain,
            "from_token": token,
            "to_chain": route.target.chain.value,
            "to_token": route.target.token.value,
            "amount_base": str(amount),
            "note": "quote this intent (amount_usd = the value of amount_base at current prices) and approve anew",
        },
        session_id=state.session_id,
        step_index=step.index,
    )
    entry = state.step(step.index).set(status=StepStatus.REAPPROVAL_REQUIRED)
    state = state.with_step(
        step.index,
        entry,
        reapproval=Reapproval.of(
            reason=reason, message=why, funds=parked, quote_from_here=body["quote_from_here"]
        ),
        funds=parked,
        current_action=None,
    )
    error = ReapprovalRequired(
        reason,
        f"{why}; nothing was built. Your funds are {parked.amount_base} base units "
        f"of {parked.endpoint} in {wallet}",
        details=body,
    )
    return Decision(Event.REQUOTE_BELOW_APPROVAL, state, error=error)


def transactions_proven(before: State, after: State) -> tuple[tuple[str, int], ...]:
    """The (transaction id, step index) pairs whose evidence `after` records and `before` did not: what a
    transition proves advanced a step. One transaction advances one step of one session (the store keeps
    these unique); an EVM hash is compared lower-cased."""
    out: list[tuple[str, int]] = []
    for k, entry in enumerate(after.steps):
        old = before.steps[k] if k < len(before.steps) else None
        for now, then in ((entry.source, old and old.source), (entry.destination, old and old.destination)):
            known = set((then.tx_ids if then else None) or [])
            for tx_id in (now.tx_ids if now else None) or []:
                if tx_id not in known:
                    out.append((tx_id.lower() if tx_id.startswith("0x") else tx_id, k))
    return tuple(out)


def expired(state: State) -> State:
    entry = state.step(state.current_step).set(status=StepStatus.ACTION_EXPIRED)
    return state.with_step(state.current_step, entry)


def cancelled(state: State, from_status: str, now: datetime) -> Decision:
    """Cancel: the session stops following; the funds note says what may still move."""
    held = state.funds
    if from_status in (Status.ACTION_READY, Status.ACTION_EXPIRED):
        held = held.set(note="the current action was not observed: if you did not submit it, nothing moved")
    elif from_status == Status.AWAITING_SOURCE_RECEIPT:
        held = held.set(
            note="transactions you named may still land: check them on chain; the session will not follow them "
            "further"
        )
    elif from_status == Status.AWAITING_DESTINATION:
        held = held.set(
            note="a bridge message is in flight; cancelling does not stop it: it arrives at "
            f"{held.endpoint} (or refunds on origin)"
        )
    record = Cancelled.of(at=iso(now), from_status=from_status, funds=held)
    return Decision(Event.CANCEL, state.evolve(cancelled=record, funds=held, current_action=None))


__all__ = ["MODE_V1", "MODE_V2", "SESSION_VERSION", "Decision", "NextAction", "SessionDocument", "State"]
