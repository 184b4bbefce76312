"""v1 corridor: the CCTP mint on the EVM destination is not prepared; Circle Iris attests the burn
(`cctp_mint_evm.attest`), anyone relays the mint, and the service finds it by its `MessageReceived` log on the
pinned MessageTransmitterV2 (searched from the block recorded at the first look, else the last
`cctp_mint_search_blocks`) and verifies it (`cctp_mint_evm.verify_cctp_mint`).

When the attestation first arrives the kind decides `DESTINATION_ACTION_READY` with the attested document:
the v1 shell holds the attested message to this session's burn (it assembles the receiveMessage it would
hand out) and observes again, now searching for the mint."""

from __future__ import annotations

from routequote.core.chain import EvmTransaction
from routequote.core.routes import Route
from routequote.core.sessions.document import SessionDocument
from routequote.core.sessions.entries import CctpBurn
from routequote.core.sessions.kinds.cctp_mint_evm import (
    attest,
    attested_bytes,
    cctp_received_topics,
    verify_attested_mint,
)
from routequote.core.sessions.machine import Event
from routequote.core.sessions.reads import Facts, LatestBlock, LogsSince, Need, Observing, TxByHash
from routequote.core.sessions.state import (
    Decision,
    State,
    delivered,
    destination_pending,
    evidence_entry,
)


def observe(obs: Observing, facts: Facts) -> Decision | Need:
    state, route = obs.state, obs.route
    k = state.current_step
    dst = route.steps[k].target.chain
    if not state.steps[k].bridge_as(CctpBurn).attestation:
        got = attest(state, facts, dst)
        if not isinstance(got, SessionDocument):
            return got
        return Decision(Event.DESTINATION_ACTION_READY, got, receive_action=True)
    bridge = state.steps[k].bridge_as(CctpBurn)
    dep = obs.settings.deployments[dst]
    transmitter = dep.message_transmitter_v2 or ""
    head = LatestBlock(dst.value)
    if need := facts.missing(head):
        return need
    latest = facts.blocks[head]
    start = bridge.mint_search_from_block
    if start is None:
        start = max(0, latest - obs.settings.cctp_mint_search_blocks)
    message = attested_bytes(bridge.message)
    search = LogsSince(dst.value, transmitter, tuple(cctp_received_topics(message)), int(start), latest)
    if need := facts.missing(search):
        return need
    logs = facts.logs[search]
    tx: EvmTransaction | None = None
    if logs:
        read = TxByHash(dst.value, logs[0].tx_hash)
        if need := facts.missing(read):
            return need
        tx = facts.txs[read]
    return decide_relayed(
        state,
        route,
        tx,
        bool(logs),
        usdc=dep.tokens["USDC"],
        transmitter=transmitter,
        confirmations=obs.settings.required_confirmations(dst),
        search_from=start,
    )


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
    k = state.current_step
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
    evidence = verify_attested_mint(state, route, tx, usdc, transmitter, confirmations)
    if evidence.status == "pending":
        return destination_pending(
            state,
            "waiting for finality of the mint",
            "mint_awaiting_finality",
            mint_search_from_block=search_from,
        )
    assert evidence.actual_output_base is not None
    entry = state.step(k)
    bridge = entry.bridge_as(CctpBurn).set(mint_search_from_block=search_from)
    state = state.with_step(k, entry.set(bridge=bridge))
    return delivered(
        state,
        route,
        k,
        evidence.actual_output_base,
        evidence_entry(evidence).set(kind="cctp_mint_relayed"),
    )
