"""CCTP v2 mint on Solana: no `receive_message` is built here (sol18 builds that action); the caller relays
the mint and names the signature that delivered USDC to the wallet (`oft.decide_delivery` with USDC)."""

from __future__ import annotations

from routequote.core.sessions.machine import Event
from routequote.core.sessions.state import Decision, State


def attested_caller_relays(state: State) -> Decision:
    entry = state.step(state.current_step)
    entry["destination_status"] = "attested_caller_relays_mint"
    state = state.with_step(state.current_step, entry)
    return Decision(
        Event.DESTINATION_PENDING,
        state,
        note="attested: submit receive_message on Solana yourself, then observe its signature",
    )
