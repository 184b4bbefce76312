"""Across: the deposit is proven on the source (`evidence._across_deposit`); the relayer's `FilledRelay` on
the destination SpokePool delivers it (`evidence.verify_across_fill`). Unfilled after the fill deadline, the
deposit is refunded on origin and the session fails with the funds there."""

from __future__ import annotations

from routequote.core.routes import Route
from routequote.core.sessions.machine import Event
from routequote.core.sessions.state import Decision, State, delivered, destination_pending, fork, funds


def decide(
    state: State, route: Route, found: tuple[int, str] | None, now_unix: int, search_from: int
) -> Decision:
    k = state["current_step"]
    if found is None:
        state = fork(state)
        step = route.steps[k]
        entry = state["steps"][k]
        bridge = entry["bridge"]
        bridge["search_from_block"] = search_from
        deadline = int(bridge.get("fill_deadline") or 0)
        if deadline and now_unix > deadline:
            entry["status"] = "refunded_on_origin"
            state["funds"] = funds(
                step.source.key,
                bridge.get("input_amount"),
                state["wallets"][step.source.chain.value],
                "refund_expected",
                "unfilled after the fill deadline: Across refunds the deposit on origin",
            )
            return Decision(Event.BRIDGE_FAILED, state)
        return destination_pending(state, "no relayer fill seen yet", "awaiting_fill")
    amount, fill_tx = found
    state = fork(state)
    state["steps"][k]["bridge"]["search_from_block"] = search_from
    return delivered(
        state,
        route,
        k,
        amount,
        {"tx_ids": [fill_tx], "actual_output_base": str(amount), "kind": "across_fill"},
    )
