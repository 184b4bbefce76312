"""The views of a session and its receipt: pure functions of the stored document (no I/O, no clock)."""

from __future__ import annotations

from datetime import datetime
from fractions import Fraction
from typing import Any

from routequote.core.sessions.document import MODE_V2, SESSION_VERSION, SessionDocument
from routequote.core.sessions.entries import Proof, StepEntry
from routequote.core.sessions.machine import NEXT_OPERATION, Status, operations_allowed
from routequote.core.sessions.state import SERVER_FLAGS, iso

VIEWS = ("session", "workflow", "receipt", "next_action")


def render(
    view: str,
    *,
    session_id: str,
    status: str,
    version: int,
    route: str,
    updated_at: datetime,
    document: SessionDocument,
    note: str | None = None,
) -> dict[str, Any]:
    """One view of a session (`session`, `workflow`, `receipt`, `next_action`): what every surface answers.
    Each part is read from the typed document and written in its stored shape (`to_json`)."""
    d = document
    status_ = Status(status)
    head: dict[str, Any] = {
        "version": SESSION_VERSION,
        "view": view,
        "session_id": session_id,
        "status": status_.value,
        "next_operation": NEXT_OPERATION[status_].value,
        "operations_allowed": operations_allowed(status_),
        "route": route,
        "step_count": len(d.steps),
        "current_step": d.current_step,
        "phase": d.phase,
        "mode": MODE_V2 if d.mode is None and "mode" in d.absent else d.mode,  # stored before modes: v2
        "session_version": version,
        "created_at": d.created_at,
        "updated_at": iso(updated_at),
    }
    action = d.current_action
    if view == "session":
        head.update(
            action_available=status_ is Status.ACTION_READY and action is not None,
            current_action=action if status_ is Status.ACTION_READY else None,
            quote_binding=d.binding,
            funds=d.funds.to_json(),
            steps=[s.to_json() for s in d.steps],
            reapproval=None if d.reapproval is None else d.reapproval.to_json(),
            cancelled=None if d.cancelled is None else d.cancelled.to_json(),
            note=note,
        )
    elif view == "workflow":
        head.update(
            wallets=d.wallets,
            steps=[
                {
                    **s.to_json(),
                    "quoted": {
                        k: d.summary_steps[s.index][k]
                        for k in (
                            "expected_input_base",
                            "minimum_input_base",
                            "expected_output_base",
                            "minimum_output_base",
                        )
                    },
                }
                for s in d.steps
            ],
            actions=[a.to_json() for a in d.actions],
        )
    elif view == "receipt":
        head.update(receipt=receipt(document))
    else:
        head.update(
            action_available=status_ is Status.ACTION_READY and action is not None,
            next_action=action if status_ is Status.ACTION_READY else None,
            instructions=INSTRUCTIONS[status_],
        )
    head.update(idempotent_replay=False, signed=False, submitted=False, **SERVER_FLAGS)
    return head


def _receipt_step(s: StepEntry, q: dict[str, Any]) -> dict[str, Any]:
    """One step of the receipt: quoted, re-quoted, and what it actually did."""
    src = s.source or Proof()
    return {
        "index": s.index,
        "provider": s.provider,
        "from": s.from_,
        "to": s.to,
        "status": s.status.value,
        "quoted": {
            "expected_input_base": q["expected_input_base"],
            "minimum_input_base": q["minimum_input_base"],
            "expected_output_base": q["expected_output_base"],
            "minimum_output_base": q["minimum_output_base"],
        },
        "requoted": None if s.requote is None else s.requote.to_json(),
        "action_minimum_output_base": s.minimum_output_base,
        "actual": {
            "input_base": src.actual_input_base,
            "output_base": s.actual_output_base,
            "service_fee_paid_base": src.service_fee_paid_base,
            "network_fee": src.network_fee,
            "source_tx_ids": src.tx_ids,
            "destination_tx_ids": None if s.destination is None else s.destination.tx_ids,
            "block_times": src.block_times,
            "bridge": None if s.bridge is None else s.bridge.to_json(),
        },
    }


def receipt(document: SessionDocument) -> dict[str, Any]:
    """What each step was quoted, re-quoted and actually did, and how the route realised against its quote."""
    steps = [_receipt_step(s, document.summary_steps[s.index]) for s in document.steps]
    quote = document.quote
    final = document.steps[-1].actual_output_base
    realized: dict[str, Any] = {"complete": final is not None}
    if final is not None:
        exp, mn = int(quote["expected_output_base"]), int(quote["minimum_output_base"])
        got = int(final)
        vs_exp = Fraction(got - exp, exp) * 10_000
        exp_cost_bps = Fraction(str(quote["expected_total_cost_percent"])) * 100
        cost = 10_000 - (10_000 - exp_cost_bps) * Fraction(got, exp)
        realized.update(
            actual_output_base=final,
            quoted_expected_output_base=quote["expected_output_base"],
            quoted_minimum_output_base=quote["minimum_output_base"],
            approved_minimum_output_base=document.approval["minimum_output_base"],
            at_or_above_minimum=got >= mn,
            realized_vs_quoted_expected_bps=round(float(vs_exp), 2),
            quoted_expected_cost_bps=round(float(exp_cost_bps), 2),
            realized_cost_bps=round(float(cost), 2),
            cost_basis="token path and provider fees in bps of the quoted input value at the quote's prices; "
            "network gas listed per step, unpriced",
        )
    return {
        "quote": quote,
        "steps": steps,
        "route": realized,
        "funds": document.funds.to_json(),
        "market_note": "re-quotes are priced from the market named in each step's `requoted` block",
    }


INSTRUCTIONS = {
    Status.ACTION_REQUIRED: "v1 corridor: ask for the next action (prepare_action: the tool of the current step); "
    "nothing is built before you ask",
    Status.ACTION_READY: "verify the action (routequote verify-action), sign and submit it yourself, then observe "
    "with its transaction hashes",
    Status.AWAITING_SOURCE_RECEIPT: "observe again once the named transactions are final",
    Status.AWAITING_DESTINATION: "the bridge is in flight: observe again to follow it (name the destination "
    "transaction where you relayed it)",
    Status.ACTION_EXPIRED: "the action expired unsubmitted: refresh it (never re-submit an expired action)",
    Status.REAPPROVAL_REQUIRED: "nothing further in this session: quote from where the funds are and approve anew",
    Status.COMPLETE: "done: read the receipt",
    Status.CANCELLED: "cancelled: see where the funds are",
    Status.FAILED: "failed: see where the funds are",
}


__all__ = ["INSTRUCTIONS", "VIEWS", "receipt", "render"]
