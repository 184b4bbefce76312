"""CCTP v2 mint on Solana. Circle Iris attests the burn (`cctp_mint_evm.attested`); only then can an arrival
count, and only as MessageTransmitterV2 `receive_message` of exactly that attested message crediting the
session's Solana wallet (`core.bridge_arrivals.verify_cctp_solana_mint`), whoever submitted it: the prepared
action (`cctp_mint_evm.install_receive`, built by `core.actions.cctp_solana_receive`) or a mint the caller relayed and named. Its amount is the step's actual output."""

from __future__ import annotations

from routequote.core.assets import Chain
from routequote.core.bridge_arrivals import Arrival, verify_cctp_solana_mint
from routequote.core.chain import SolanaTransaction
from routequote.core.routes import Route
from routequote.core.sessions.document import SessionDocument
from routequote.core.sessions.entries import CctpBurn, Proof
from routequote.core.sessions.evidence_common import SOLANA_SIG_RE, ObservationRejected
from routequote.core.sessions.kinds.cctp_mint_evm import attest, attested_bytes
from routequote.core.sessions.machine import Event
from routequote.core.sessions.reads import Facts, Need, Observing, SolanaTx
from routequote.core.sessions.state import Decision, State, arrived


def observe(obs: Observing, facts: Facts) -> Decision | Need:
    """An arrival on Solana counts only after Circle attested the burn, and only as receive_message of that
    attested message to the session's wallet (`decide_mint`)."""
    state = obs.state
    k = state.current_step
    if not state.steps[k].bridge_as(CctpBurn).attestation:
        got = attest(state, facts, Chain.SOLANA)
        if not isinstance(got, SessionDocument):
            return got
        state = got
        if not obs.named:
            return Decision(Event.DESTINATION_ACTION_READY, state, receive_action=True)
    named = list(obs.named) or list(state.steps[k].destination_claimed_tx_ids or [])
    if not named and state.current_action is None:
        return awaiting_mint(state)
    check_mint_name(named)
    read = SolanaTx(named[0])
    if need := facts.missing(read):
        return need
    return decide_mint(state, obs.route, named[0], facts.solana_txs[read])


def check_mint_name(named: list[str]) -> None:
    if len(named) != 1 or not SOLANA_SIG_RE.fullmatch(named[0]):
        raise ObservationRejected(
            "observation_wrong_chain",
            "name the one Solana signature of the receive_message transaction that minted this message",
        )


def arrival_entry(arrival: Arrival, kind: str) -> Proof:
    return Proof.of(
        kind=kind,
        tx_ids=[arrival.tx_id],
        actual_output_base=str(arrival.amount_base),
        block_times=[arrival.block_time],
        bridge=arrival.bridge,
    )


def decide_mint(state: State, route: Route, signature: str, tx: SolanaTransaction | None) -> Decision:
    """The named Solana transaction, held to this session's attested message and Solana wallet."""
    k = state.current_step
    bridge = state.steps[k].bridge_as(CctpBurn)
    if not bridge.attestation:  # pragma: no cover - the engine attests first
        raise ObservationRejected("observation_bridge_mismatch", "Circle has not attested this burn yet")
    if tx is None:
        entry = state.step(k).set(destination_claimed_tx_ids=[signature])
        return Decision(
            Event.DESTINATION_PENDING,
            state.with_step(k, entry),
            note="the mint signature is not finalized yet",
        )
    got = verify_cctp_solana_mint(
        tx, message=attested_bytes(bridge.message), recipient_owner=state.wallet("solana")
    )
    return arrived(state, route, k, got.amount_base, arrival_entry(got, "cctp_receive_message"))


def awaiting_mint(state: State) -> Decision:
    """Attested, nothing named yet: the prepared receive_message (or anyone's relay of it) is awaited."""
    return Decision(
        Event.DESTINATION_PENDING,
        state,
        note="attested: submit the prepared receive_message (or name the signature of a relayed mint)",
    )
