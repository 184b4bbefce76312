"""CCTP v2 mint on an EVM destination.

Circle Iris attests the burn (`attested`); the service then prepares the caller's `receiveMessage`
(`install_receive`, built by `core.actions.cctp_receive`) and verifies the mint transaction the caller names
(`decide_mint`, `evidence.verify_cctp_mint`). The v1 corridor does not prepare it: anyone relays the mint and
the service finds it by its `MessageReceived` log (`cctp_mint_relayed`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from eth_abi.abi import decode

from routequote.core.assets import CHAINS, Chain
from routequote.core.chain import CctpMessage, EvmTransaction
from routequote.core.routes import Route
from routequote.core.sessions.document import SessionDocument
from routequote.core.sessions.entries import CctpBurn
from routequote.core.sessions.evidence_common import (
    CCTP_BURN_BODY_BYTES,
    CCTP_HEADER_BYTES,
    EVM_TX_RE,
    RECEIVE_MESSAGE_SELECTOR,
    TOPIC0,
    ZERO_ADDRESS,
    ObservationRejected,
    StepEvidence,
    erc20_transfers,
    logs_named,
    lower_address,
    network_fee_of,
    topic_address,
)
from routequote.core.sessions.machine import Event
from routequote.core.sessions.reads import Attestation, Facts, Need, Observing, TxByHash
from routequote.core.sessions.state import (
    Decision,
    State,
    action_entry,
    delivered,
    evidence_entry,
    funds,
)


def observe(obs: Observing, facts: Facts) -> Decision | Need:
    """Before the prepared receiveMessage: Iris's attestation (then the action is built); after it: the mint
    transaction the caller names (or named before)."""
    state, route = obs.state, obs.route
    k = state.current_step
    dst = route.steps[k].target.chain
    if state.current_action is None:
        got = attest(state, facts, dst)
        if not isinstance(got, SessionDocument):
            return got
        return Decision(Event.DESTINATION_ACTION_READY, got, receive_action=True)
    named = list(obs.named) or list(state.steps[k].destination_claimed_tx_ids or [])
    check_mint_name(state, route, named)
    read = TxByHash(dst.value, named[0])
    if need := facts.missing(read):
        return need
    dep = obs.settings.deployments[dst]
    return decide_mint(
        state,
        route,
        named,
        facts.txs[read],
        usdc=dep.tokens["USDC"],
        transmitter=dep.message_transmitter_v2 or "",
        confirmations=obs.settings.required_confirmations(dst),
    )


def attest(state: State, facts: Facts, dst: Chain) -> State | Decision | Need:
    """Iris's messages for this step's burn (`Need` until read): the document with the attested message kept,
    or the decision that Circle has not attested it yet."""
    bridge = state.steps[state.current_step].bridge_as(CctpBurn)
    read = Attestation(int(bridge.source_domain), bridge.source_tx)
    if need := facts.missing(read):
        return need
    ok, state = attested(state, facts.attestations[read], dst)
    return state if ok else not_attested(state)


def attested(state: State, messages: Sequence[CctpMessage], dst: Chain) -> tuple[bool, State]:
    """Iris's messages for this burn: when one is complete, keep its message and attestation in the bridge
    record (True); else mark the step awaiting the attestation (False)."""
    k = state.current_step
    entry = state.step(k)
    bridge = entry.bridge_as(CctpBurn)
    match = next(
        (
            m
            for m in messages
            if m.amount is not None
            and int(m.amount) == int(bridge.burn_amount)
            and m.destination_domain == CHAINS[dst].cctp_domain
        ),
        None,
    )
    if match is None or match.status != "complete" or not match.message or not match.attestation:
        return False, state.with_step(k, entry.set(destination_status="awaiting_attestation"))
    bridge = bridge.set(
        message="0x" + match.message.hex(),
        attestation="0x" + match.attestation.hex(),
        fee_executed=None if match.fee_executed is None else str(match.fee_executed),
    )
    return True, state.with_step(k, entry.set(bridge=bridge))


def not_attested(state: State) -> Decision:
    return Decision(Event.DESTINATION_PENDING, state, note="Circle has not attested the burn yet")


def check_mint_name(state: State, route: Route, named: list[str]) -> None:
    dst = route.steps[state.current_step].target.chain
    if len(named) != 1 or not EVM_TX_RE.fullmatch(named[0]):
        raise ObservationRejected(
            "observation_wrong_chain",
            f"name the one {dst.value} transaction that submitted the prepared receiveMessage",
        )


def install_receive(state: State, route: Route, bundle: dict[str, Any], refreshed: bool = False) -> State:
    """The prepared receiveMessage becomes the current action (attested, or refreshed after expiry)."""
    k = state.current_step
    state = state.with_action(action_entry(bundle, "destination", refreshed=refreshed), current_action=bundle)
    if refreshed:
        return state
    step = route.steps[k]
    entry = state.step(k).set(destination_status="mint_action_ready")
    return state.with_step(
        k,
        entry,
        funds=funds(
            step.target.key,
            None,
            state.wallet(step.target.chain.value),
            "in_flight",
            "attested; minted when your receiveMessage transaction lands",
        ),
    )


def verify_attested_mint(
    state: State, route: Route, tx: EvmTransaction, usdc: str, transmitter: str, confirmations: int
) -> StepEvidence:
    k = state.current_step
    bridge = state.steps[k].bridge_as(CctpBurn)
    return verify_cctp_mint(
        tx,
        message=attested_bytes(bridge.message),
        attestation=attested_bytes(bridge.attestation),
        usdc=usdc,
        recipient=state.wallet(route.steps[k].target.chain.value),
        transmitter=transmitter,
        required_confirmations=confirmations,
    )


def attested_bytes(hex_text: str | None) -> bytes:
    """An attested message (or attestation) as kept in the bridge record (0x hex); none is a corrupt document."""
    if not hex_text:
        raise ValueError("the bridge record holds no attested message")
    return bytes.fromhex(hex_text[2:])


def _claimed(state: State, k: int, named: list[str]) -> State:
    return state.with_step(k, state.step(k).set(destination_claimed_tx_ids=named))


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
    k = state.current_step
    if tx is None:
        return Decision(
            Event.DESTINATION_PENDING, _claimed(state, k, named), note="the mint transaction is not mined yet"
        )
    evidence = verify_attested_mint(state, route, tx, usdc, transmitter, confirmations)
    if evidence.status == "pending":
        return Decision(
            Event.DESTINATION_PENDING, _claimed(state, k, named), note="waiting for finality of the mint"
        )
    assert evidence.actual_output_base is not None
    return delivered(state, route, k, evidence.actual_output_base, evidence_entry(evidence))


# ---- evidence: the message and the mint ----------------------------------------------------------


def parse_cctp_message(message: bytes) -> dict[str, Any]:
    """A CCTP v2 message: the 148-byte header (MessageV2) and the burn body (BurnMessageV2), ints and hex."""
    if len(message) < CCTP_HEADER_BYTES + CCTP_BURN_BODY_BYTES:
        raise ValueError(
            f"a CCTP v2 burn message is at least {CCTP_HEADER_BYTES + CCTP_BURN_BODY_BYTES} bytes"
        )
    h, b = message[:CCTP_HEADER_BYTES], message[CCTP_HEADER_BYTES:]

    def u32(raw: bytes, at: int) -> int:
        return int.from_bytes(raw[at : at + 4], "big")

    def w(raw: bytes, at: int) -> bytes:
        return raw[at : at + 32]

    return {
        "version": u32(h, 0),
        "source_domain": u32(h, 4),
        "destination_domain": u32(h, 8),
        "nonce": "0x" + w(h, 12).hex(),
        "sender": "0x" + w(h, 44).hex(),
        "recipient": "0x" + w(h, 76).hex(),
        "destination_caller": "0x" + w(h, 108).hex(),
        "min_finality_threshold": u32(h, 140),
        "finality_threshold_executed": u32(h, 144),
        "body_version": u32(b, 0),
        "burn_token": "0x" + w(b, 4).hex(),
        "mint_recipient": "0x" + w(b, 36).hex(),
        "amount": int.from_bytes(w(b, 68), "big"),
        "message_sender": "0x" + w(b, 100).hex(),
        "max_fee": int.from_bytes(w(b, 132), "big"),
        "fee_executed": int.from_bytes(w(b, 164), "big"),
        "expiration_block": int.from_bytes(w(b, 196), "big"),
        "hook_data": "0x" + b[CCTP_BURN_BODY_BYTES:].hex(),
        "message_body": b,
    }


def cctp_received_topics(message: bytes) -> list[str | None]:
    """eth_getLogs topics for the destination MessageTransmitterV2's `MessageReceived` of this message."""
    return [TOPIC0["MessageReceived"], None, parse_cctp_message(message)["nonce"]]


def verify_cctp_mint(
    tx: EvmTransaction,
    *,
    message: bytes,
    attestation: bytes,
    usdc: str,
    recipient: str,
    transmitter: str,
    required_confirmations: int,
    minimum_output: int | None = None,
) -> StepEvidence:
    """The destination mint of one attested CCTP message. The transaction must have received exactly this message
    at the pinned MessageTransmitterV2 (`MessageReceived` with its source domain, nonce and body). When it called
    `receiveMessage` directly its calldata must carry this message; the attestation may be another valid one
    (Circle re-attests expired fast messages) since the contract verified it on chain. Output is the USDC minted
    to the recipient (`Transfer` from the zero address)."""
    m = parse_cctp_message(message)
    if tx.status != 1:
        raise ObservationRejected("observation_reverted", f"{tx.tx_hash} reverted on chain", tx=tx.tx_hash)
    if lower_address(tx.to) == lower_address(transmitter):
        ok = tx.input[:4] == RECEIVE_MESSAGE_SELECTOR
        if ok:
            try:
                got_message, _got_attestation = decode(["bytes", "bytes"], tx.input[4:])
            except Exception:  # noqa: BLE001 - any undecodable calldata is simply not this message
                ok = False
            else:
                ok = bytes(got_message) == message
        if not ok:
            raise ObservationRejected(
                "observation_not_prepared_action",
                "the transaction does not call receiveMessage with this message",
            )
    received = False
    for lg in logs_named(tx, "MessageReceived", transmitter):
        if len(lg.topics) != 4 or lg.topics[2] != m["nonce"]:
            continue
        src, _sender, body = decode(["uint32", "bytes32", "bytes"], lg.data)
        received = received or (src == m["source_domain"] and bytes(body) == m["message_body"])
    if not received:
        raise ObservationRejected(
            "observation_not_prepared_action",
            "the transaction did not receive this CCTP message",
            tx=tx.tx_hash,
        )
    if tx.confirmations < required_confirmations:
        return StepEvidence.pending((tx.tx_hash,))
    minted = erc20_transfers(tx, usdc)
    output = sum(
        v
        for f, t, v in minted
        if lower_address(f) == ZERO_ADDRESS and lower_address(t) == lower_address(recipient)
    )
    if output == 0:
        raise ObservationRejected("observation_wrong_recipient", "no USDC was minted to the recipient")
    if minimum_output is not None and output < minimum_output:
        raise ObservationRejected(
            "observation_below_step_minimum",
            f"the mint delivered {output}, below the step minimum {minimum_output}",
        )
    fee = m["fee_executed"]
    for lg in logs_named(tx, "MintAndWithdraw"):
        if len(lg.topics) == 3 and lower_address(topic_address(lg.topics[1])) == lower_address(recipient):
            fee = int(decode(["uint256", "uint256"], lg.data)[1])
    return StepEvidence(
        status="final",
        tx_ids=(tx.tx_hash,),
        actual_input_base=None,
        actual_output_base=output,
        network_fee=network_fee_of([tx]),
        block_times=(tx.block_timestamp,),
        bridge={
            "kind": "cctp_mint",
            "source_domain": m["source_domain"],
            "nonce": m["nonce"],
            "amount": m["amount"],
            "fee_executed": fee,
            "finality_threshold_executed": m["finality_threshold_executed"],
            "mint_tx": tx.tx_hash,
        },
    )
