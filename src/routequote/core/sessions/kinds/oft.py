"""LayerZero OFT (USDG to Solana): the send is proven on the source (`evidence._oft_sent`, which keeps the GUID
its `OFTSent` emitted); the delivery is the Solana transaction whose `lz_receive` on the USDG OFT program carries
that GUID from the Robinhood endpoint and OFT, paying the session's wallet
(`core.bridge_arrivals.verify_oft_solana_delivery`), found through LayerZero Scan or named by the caller, and
verified on chain whoever named it. Without the OFT program id pinned no delivery can be verified."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from eth_abi.abi import decode

from routequote.core.actions.evm import LZ_EID
from routequote.core.assets import Chain
from routequote.core.bridge_arrivals import verify_oft_solana_delivery
from routequote.core.chain import EvmLog, EvmTransaction, ObservationUnavailable, SolanaTransaction
from routequote.core.routes import Route
from routequote.core.sessions.entries import OftSend
from routequote.core.sessions.evidence_common import (
    LZ_EID_SOLANA,
    SOLANA_SIG_RE,
    TOPIC0,
    EvmSend,
    ObservationRejected,
    SendEvidence,
    bytes32_to_recipient,
    logs_named,
    lower_address,
    topic_address,
)
from routequote.core.sessions.kinds.cctp_mint_solana import arrival_entry
from routequote.core.sessions.machine import Event
from routequote.core.sessions.reads import Facts, Need, Observing, ScanLookup, SolanaTx
from routequote.core.sessions.state import Decision, State, arrived, destination_pending

LZ_EID_ROBINHOOD = LZ_EID[Chain.ROBINHOOD]  # the Robinhood endpoint the USDG is sent from


def observe(obs: Observing, facts: Facts) -> Decision | Need:
    """The LayerZero delivery of the GUID this session's OFTSent emitted: found through LayerZero Scan unless
    the caller names it, then read from Solana and verified either way. Nothing is read while the OFT
    program is unpinned or its pin is in dispute."""
    state, settings = obs.state, obs.settings
    if settings.usdg_oft_pin_problem:
        raise ObservationUnavailable("usdg_oft_solana_program_disagreement", settings.usdg_oft_pin_problem)
    program = settings.usdg_oft_solana_program
    if not program:
        raise ObservationUnavailable(
            "usdg_oft_solana_program_not_pinned",
            "the USDG OFT program on Solana is not pinned (ROUTEQUOTE_USDG_OFT_SOLANA_PROGRAM): no "
            "LayerZero delivery can be verified, so none is accepted",
        )
    named = list(obs.named)
    if not named:
        bridge = state.steps[state.current_step].bridge_as(OftSend)
        lookup = ScanLookup(str(bridge.source_tx), str(bridge.guid))
        if need := facts.missing(lookup):
            return need
        lead = facts.leads[lookup]
        if lead is None or not lead.destination_tx:
            return not_delivered_yet(state, None if lead is None else lead.status)
        named = [lead.destination_tx]
    check_delivery_name(named)
    read = SolanaTx(named[0])
    if need := facts.missing(read):
        return need
    source_oapp = settings.deployments[Chain.ROBINHOOD].usdg_oft or ""
    return decide_delivery(
        state,
        obs.route,
        named[0],
        facts.solana_txs[read],
        oft_program=program,
        source_oapp=bytes(12) + bytes.fromhex(source_oapp.removeprefix("0x")),
    )


def needs_signature(hashes: list[str]) -> bool:
    return len(hashes) != 1 or not SOLANA_SIG_RE.fullmatch(hashes[0])


def check_delivery_name(hashes: list[str]) -> None:
    if needs_signature(hashes):
        raise ObservationRejected(
            "observation_wrong_chain", "name the one Solana signature of the LayerZero delivery (lz_receive)"
        )


def not_delivered_yet(state: State, status: str | None) -> Decision:
    note = (
        "LayerZero has not delivered the message yet"
        if status
        else "LayerZero Scan has not indexed the send yet; observe again, or name the delivery signature"
    )
    return destination_pending(state, note, "awaiting_layerzero_delivery", layerzero_status=status)


def decide_delivery(
    state: State,
    route: Route,
    signature: str,
    tx: SolanaTransaction | None,
    *,
    oft_program: str,
    source_oapp: bytes,
) -> Decision:
    """The delivery of this session's GUID to its Solana wallet, or nothing."""
    k = state.current_step
    if tx is None:
        return Decision(Event.DESTINATION_PENDING, state, note="the delivery signature is not finalized yet")
    got = verify_oft_solana_delivery(
        tx,
        oft_program=oft_program,
        guid=str(state.steps[k].bridge_as(OftSend).guid),
        src_eid=LZ_EID_ROBINHOOD,
        source_oapp=source_oapp,
        recipient_owner=state.wallet("solana"),
    )
    return arrived(state, route, k, got.amount_base, arrival_entry(got, "layerzero_delivery"))


# ---- evidence: the send on the source ------------------------------------------------------------


def send_evidence(send: EvmSend) -> SendEvidence:
    """The OFT send's evidence; the LayerZero native fee it paid is a network fee beside its gas."""
    bridge = sent_evidence(send.call, send.tx, send.recipient, send.minimum, send.sender)
    return SendEvidence(bridge=bridge, extra_network_fee={"layerzero_native_fee_sent_wei": send.tx.value})


def sent_evidence(call: Any, tx: EvmTransaction, recipient: str, minimum: int, sender: str) -> dict[str, Any]:
    if call is None or call.name != "send":
        raise ValueError("a prepared OFT step is send(SendParam, MessagingFee, refund)")
    dst_eid, to, amount_ld, min_amount_ld = call.args[0][:4]
    to_text = bytes32_to_recipient(bytes(to), dst_eid == LZ_EID_SOLANA)
    if to_text != recipient and lower_address(to_text) != lower_address(recipient):
        raise ObservationRejected("observation_wrong_recipient", "the OFT send pays another recipient")
    found = []
    for lg in logs_named(tx, "OFTSent", tx.to):
        if len(lg.topics) != 3 or lower_address(topic_address(lg.topics[2])) != lower_address(sender):
            continue
        eid, sent, received = decode(["uint32", "uint256", "uint256"], lg.data)
        if eid == dst_eid and sent <= amount_ld:
            found.append((lg.topics[1], sent, received))
    if len(found) != 1:
        raise ObservationRejected(
            "observation_bridge_mismatch", "the send did not emit exactly one matching OFTSent"
        )
    guid, sent, received = found[0]
    if received < max(minimum, min_amount_ld):
        raise ObservationRejected(
            "observation_below_step_minimum", f"the OFT delivers {received}, below the step minimum {minimum}"
        )
    return OftSend.of(
        kind="oft",
        guid=guid,
        dst_eid=dst_eid,
        amount_sent=sent,
        amount_received=received,
        to=to_text,
        oft=tx.to,
        source_tx=tx.tx_hash,
        source_block=tx.block_number,
    ).to_json()


def parse_oft_received(logs: Sequence[EvmLog], guid: str, *, oft: str) -> tuple[int, str, str] | None:
    """(amount received, recipient, tx hash) of an EVM `OFTReceived` for this guid, or None before delivery."""
    for lg in logs:
        if (
            lower_address(lg.address) == lower_address(oft)
            and len(lg.topics) == 3
            and lg.topics[0] == TOPIC0["OFTReceived"]
            and lg.topics[1] == guid.lower()
        ):
            _src_eid, amount = decode(["uint32", "uint256"], lg.data)
            return int(amount), topic_address(lg.topics[2]), lg.tx_hash
    return None
