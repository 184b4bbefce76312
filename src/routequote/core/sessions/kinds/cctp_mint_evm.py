"""CCTP v2 mint on an EVM destination.

Circle Iris attests the burn (`attested`); the service then prepares the caller's `receiveMessage`
(`install_receive`, built by `core.actions.cctp_receive`) and verifies the mint transaction the caller names
(`decide_mint`, `evidence.verify_cctp_mint`). The v1 corridor does not prepare it: anyone relays the mint and
the service finds it by its `MessageReceived` log (`decide_relayed`).
"""

from __future__ import annotations

from typing import Any

from routequote.core.assets import CHAINS, Chain
from routequote.core.chain import CctpMessage, EvmTransaction
from routequote.core.routes import Route
from routequote.core.sessions.evidence import EVM_TX_RE, ObservationRejected, verify_cctp_mint
from routequote.core.sessions.machine import Event
from routequote.core.sessions.state import (
    Decision,
    State,
    action_entry,
    delivered,
    destination_pending,
    evidence_entry,
    fork,
    funds,
)


def attested(state: State, messages: list[CctpMessage], dst: Chain) -> tuple[bool, State]:
    """Iris's messages for this burn: when one is complete, keep its message and attestation in the bridge
    record (True); else mark the step awaiting the attestation (False)."""
    state = fork(state)
    entry = state["steps"][state["current_step"]]
    bridge = entry["bridge"]
    match = next(
        (
            m
            for m in messages
            if m.amount is not None
            and int(m.amount) == int(bridge["burn_amount"])
            and m.destination_domain == CHAINS[dst].cctp_domain
        ),
        None,
    )
    if match is None or match.status != "complete" or not match.message or not match.attestation:
        entry["destination_status"] = "awaiting_attestation"
        return False, state
    bridge["message"] = "0x" + match.message.hex()
    bridge["attestation"] = "0x" + match.attestation.hex()
    bridge["fee_executed"] = None if match.fee_executed is None else str(match.fee_executed)
    return True, state


def not_attested(state: State) -> Decision:
    return Decision(Event.DESTINATION_PENDING, state, note="Circle has not attested the burn yet")


def check_mint_name(state: State, route: Route, named: list[str]) -> None:
    dst = route.steps[state["current_step"]].target.chain
    if len(named) != 1 or not EVM_TX_RE.fullmatch(named[0]):
        raise ObservationRejected(
            "observation_wrong_chain",
            f"name the one {dst.value} transaction that submitted the prepared receiveMessage",
        )


def install_receive(state: State, route: Route, bundle: dict[str, Any], refreshed: bool = False) -> State:
    """The prepared receiveMessage becomes the current action (attested, or refreshed after expiry)."""
    state = fork(state)
    k = state["current_step"]
    state["current_action"] = bundle
    state["actions"].append(action_entry(bundle, "destination", refreshed=refreshed))
    if refreshed:
        return state
    step = route.steps[k]
    state["steps"][k]["destination_status"] = "mint_action_ready"
    state["funds"] = funds(
        step.target.key,
        None,
        state["wallets"][step.target.chain.value],
        "in_flight",
        "attested; minted when your receiveMessage transaction lands",
    )
    return state


def _verify(
    state: State, route: Route, tx: EvmTransaction, usdc: str, transmitter: str, confirmations: int
) -> Any:
    k = state["current_step"]
    bridge = state["steps"][k]["bridge"]
    return verify_cctp_mint(
        tx,
        message=bytes.fromhex(bridge["message"][2:]),
        attestation=bytes.fromhex(bridge["attestation"][2:]),
        usdc=usdc,
        recipient=state["wallets"][route.steps[k].target.chain.value],
        transmitter=transmitter,
        required_confirmations=confirmations,
    )


def decide_mint(
    state: State,
    route: Route,
    named: list[str],
    tx: EvmTransaction | None,
    *,
    usdc: str,
    transmitter: str,
    confirmations: int,
) -> Decision:
    """The caller's prepared receiveMessage, as mined."""
    k = state["current_step"]
    if tx is None:
        pending = fork(state)
        pending["steps"][k]["destination_claimed_tx_ids"] = named
        return Decision(Event.DESTINATION_PENDING, pending, note="the mint transaction is not mined yet")
    evidence = _verify(state, route, tx, usdc, transmitter, confirmations)
    if evidence.status == "pending":
        pending = fork(state)
        pending["steps"][k]["destination_claimed_tx_ids"] = named
        return Decision(Event.DESTINATION_PENDING, pending, note="waiting for finality of the mint")
    assert evidence.actual_output_base is not None
    return delivered(state, route, k, evidence.actual_output_base, evidence_entry(evidence))


def decide_relayed(
    state: State,
    route: Route,
    tx: EvmTransaction | None,
    found_log: bool,
    *,
    usdc: str,
    transmitter: str,
    confirmations: int,
    search_from: int,
) -> Decision:
    """v1: the mint anyone relayed, found by its `MessageReceived` log from `search_from`."""
    k = state["current_step"]
    if not found_log:
        return destination_pending(
            state,
            "attested: the mint is relayed by anyone (receiveMessage); observe again after it",
            "attested_awaiting_mint",
            mint_search_from_block=search_from,
        )
    if tx is None:
        return destination_pending(
            state,
            "the mint transaction is not final yet",
            "attested_awaiting_mint",
            mint_search_from_block=search_from,
        )
    evidence = _verify(state, route, tx, usdc, transmitter, confirmations)
    if evidence.status == "pending":
        return destination_pending(
            state,
            "waiting for finality of the mint",
            "mint_awaiting_finality",
            mint_search_from_block=search_from,
        )
    assert evidence.actual_output_base is not None
    state = fork(state)
    state["steps"][k]["bridge"]["mint_search_from_block"] = search_from
    return delivered(
        state,
        route,
        k,
        evidence.actual_output_base,
        {**evidence_entry(evidence), "kind": "cctp_mint_relayed"},
    )
