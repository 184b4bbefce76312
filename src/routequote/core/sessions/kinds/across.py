"""Across: the deposit is proven on the source (`evidence._across_deposit`); the relayer's `FilledRelay` on
the destination SpokePool delivers it (`evidence.verify_across_fill`). Unfilled after the fill deadline, the
deposit is refunded on origin and the session fails with the funds there."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from eth_abi.abi import decode
from eth_utils.address import to_checksum_address
from eth_utils.crypto import keccak

from routequote.core.chain import EvmLog, EvmTransaction, ObservationUnavailable
from routequote.core.routes import Route
from routequote.core.sessions.entries import AcrossDeposit, Proof, StepStatus
from routequote.core.sessions.evidence_common import (
    TOPIC0,
    EvmSend,
    ObservationRejected,
    SendEvidence,
    bytes32_to_address,
    logs_named,
    lower_address,
    topic_int,
    uint_topic,
)
from routequote.core.sessions.machine import Event
from routequote.core.sessions.reads import Facts, LatestBlock, LogsSince, Need, Observing, TxByHash
from routequote.core.sessions.state import Decision, State, delivered, destination_pending, funds


def observe(obs: Observing, facts: Facts) -> Decision | Need:
    """The relayer's fill is found by its log on the pinned destination SpokePool, searched from the block
    recorded at the first look (else the last `across_fill_search_blocks`); a transaction the caller names
    must be that fill. It delivers once its block has the chain's finality confirmations."""
    state = obs.state
    k = state.current_step
    bridge = state.steps[k].bridge_as(AcrossDeposit)
    dst = obs.route.steps[k].target.chain
    spoke = obs.settings.deployments[dst].across_spoke_pool
    if spoke is None:
        raise ObservationUnavailable(
            "across_spoke_pool_not_pinned", f"no Across SpokePool pinned on {dst.value}"
        )
    named = [TxByHash(dst.value, h) for h in obs.named]
    if need := facts.missing(*named):
        return need
    for read in named:
        tx = facts.txs[read]
        if tx is not None and verify_across_fill(tx.logs, bridge, spoke_pool=spoke) is None:
            raise ObservationRejected(
                "observation_bridge_mismatch",
                f"{read.tx_hash} is not the relayer's fill of this deposit (no FilledRelay of its relay data)",
            )
    head = LatestBlock(dst.value)
    if need := facts.missing(head):
        return need
    latest = facts.blocks[head]
    start = bridge.search_from_block
    if start is None:
        start = max(0, latest - obs.settings.across_fill_search_blocks)
    search = LogsSince(dst.value, spoke, tuple(across_fill_topics(bridge)), int(start), latest)
    if need := facts.missing(search):
        return need
    found = verify_across_fill(facts.logs[search], bridge, spoke_pool=spoke)
    if found is not None:  # the fill counts once final, as a named source transaction does
        block = next(lg.block_number for lg in facts.logs[search] if lg.tx_hash == found[1])
        if latest - block + 1 < obs.settings.required_confirmations(dst):
            return destination_pending(
                state, "the relayer's fill is not final yet", "awaiting_fill", search_from_block=start
            )
    return decide(state, obs.route, found, obs.now_unix, start)


def decide(
    state: State, route: Route, found: tuple[int, str] | None, now_unix: int, search_from: int
) -> Decision:
    k = state.current_step
    entry = state.step(k)
    bridge = entry.bridge_as(AcrossDeposit).set(search_from_block=search_from)
    if found is None:
        step = route.steps[k]
        deadline = int(bridge.fill_deadline or 0)
        if deadline and now_unix > deadline:
            entry = entry.set(bridge=bridge, status=StepStatus.REFUNDED_ON_ORIGIN)
            refund = funds(
                step.source.key,
                bridge.input_amount,  # stored as the deposit recorded it (a number)
                state.wallet(step.source.chain.value),
                "refund_expected",
                "unfilled after the fill deadline: Across refunds the deposit on origin",
            )
            return Decision(Event.BRIDGE_FAILED, state.with_step(k, entry, funds=refund))
        return destination_pending(
            state, "no relayer fill seen yet", "awaiting_fill", search_from_block=search_from
        )
    amount, fill_tx = found
    state = state.with_step(k, entry.set(bridge=bridge))
    return delivered(
        state,
        route,
        k,
        amount,
        Proof.of(tx_ids=[fill_tx], actual_output_base=str(amount), kind="across_fill"),
    )


# ---- evidence: the deposit on the source, the fill on the destination ----------------------------


def send_evidence(send: EvmSend) -> SendEvidence:
    return SendEvidence(bridge=deposit_evidence(send.call, send.tx, send.recipient, send.minimum))


def deposit_evidence(call: Any, tx: EvmTransaction, recipient: str, minimum: int) -> dict[str, Any]:
    if call is None or call.name != "deposit":
        raise ValueError("a prepared Across step is SpokePool.deposit")
    (_depositor, p_recipient, p_in, p_out, p_in_amount, p_out_amount, p_dest, *_rest) = call.args
    if bytes32_to_address(p_recipient) is None or lower_address(
        bytes32_to_address(p_recipient)
    ) != lower_address(recipient):
        raise ObservationRejected("observation_wrong_recipient", "the deposit pays another recipient")
    found = _funds_deposited(tx, (p_in, p_out, p_in_amount, p_recipient, p_dest))
    if len(found) != 1:
        raise ObservationRejected(
            "observation_bridge_mismatch",
            "the deposit did not emit exactly one FundsDeposited matching the action",
        )
    lg, out_amount, fill_deadline, exclusive_relayer, message = found[0]
    if out_amount < minimum or out_amount != p_out_amount:
        raise ObservationRejected(
            "observation_below_step_minimum",
            f"the deposit promises {out_amount}, below the step minimum {minimum}",
        )
    return AcrossDeposit.of(
        kind="across",
        origin_chain_id=tx.chain_id,
        destination_chain_id=p_dest,
        deposit_id=topic_int(lg.topics[2]),
        input_amount=p_in_amount,
        input_token="0x" + bytes(p_in).hex(),
        depositor=lg.topics[3],
        exclusive_relayer="0x" + exclusive_relayer.hex(),
        message_hash="0x" + (bytes(32) if not message else keccak(message)).hex(),
        output_amount=out_amount,
        output_token=bytes32_to_address(p_out) or "0x" + bytes(p_out).hex(),
        recipient=str(to_checksum_address(recipient)),
        fill_deadline=fill_deadline,
        spoke_pool=tx.to,
        source_tx=tx.tx_hash,
        source_block=tx.block_number,
    ).to_json()


_FUNDS_DEPOSITED_DATA = [
    "bytes32",
    "bytes32",
    "uint256",
    "uint256",
    "uint32",
    "uint32",
    "uint32",
    "bytes32",
    "bytes32",
    "bytes",
]


def _funds_deposited(
    tx: EvmTransaction, want: tuple[Any, ...]
) -> list[tuple[EvmLog, int, int, bytes, bytes]]:
    """The SpokePool's `FundsDeposited` logs of the prepared (input token, output token, input amount,
    recipient, destination chain): each with its output amount, fill deadline, exclusive relayer and message."""
    found = []
    for lg in logs_named(tx, "FundsDeposited", tx.to):
        if len(lg.topics) != 4:
            continue
        t_in, t_out, in_amount, out_amount, _qt, fill_deadline, _ex, l_recipient, relayer, msg = decode(
            _FUNDS_DEPOSITED_DATA, lg.data
        )
        if (t_in, t_out, in_amount, l_recipient, topic_int(lg.topics[1])) == want:
            found.append((lg, int(out_amount), int(fill_deadline), bytes(relayer), bytes(msg)))
    return found


def _deposit(bridge: AcrossDeposit | Mapping[str, Any]) -> AcrossDeposit:
    return bridge if isinstance(bridge, AcrossDeposit) else AcrossDeposit.parse(dict(bridge))


def across_fill_topics(bridge: AcrossDeposit | Mapping[str, Any]) -> list[str | None]:
    """eth_getLogs topics for the destination SpokePool's `FilledRelay` of this deposit."""
    d = _deposit(bridge)
    return [TOPIC0["FilledRelay"], uint_topic(int(d.origin_chain_id)), uint_topic(int(d.deposit_id))]


FILLED_RELAY_DATA = [  # FilledRelay's non-indexed fields (Across V3 SpokePool)
    "bytes32",
    "bytes32",
    "uint256",
    "uint256",
    "uint256",
    "uint32",
    "uint32",
    "bytes32",
    "bytes32",
    "bytes32",
    "bytes32",
    "(bytes32,bytes32,uint256,uint8)",
]


def _is_the_deposits_fill(fields: tuple[Any, ...], d: AcrossDeposit) -> bool:
    """Whether a FilledRelay's relay data is exactly this deposit's (the fields its relay hash covers). Anyone
    can fill other relay data under the same (originChainId, depositId): such a fill is not this deposit's."""
    (
        t_in,
        t_out,
        in_amount,
        out_amount,
        _repay,
        fill_deadline,
        _ed,
        x_relayer,
        depositor,
        recipient,
        msg_hash,
        _info,
    ) = fields
    checks = [
        lower_address(bytes32_to_address(t_out)) == lower_address(str(d.output_token)),
        int(in_amount) == int(d.input_amount),
        int(out_amount) == int(d.output_amount),
        int(fill_deadline) == int(d.fill_deadline),
        lower_address(bytes32_to_address(recipient)) == lower_address(str(d.recipient)),
    ]
    optional = (
        (d.input_token, t_in),
        (d.depositor, depositor),
        (d.exclusive_relayer, x_relayer),
        (d.message_hash, msg_hash),
    )
    for recorded, raw in optional:  # present for deposits observed by this version
        if recorded is not None:
            checks.append(("0x" + bytes(raw).hex()).lower() == str(recorded).lower())
    return all(checks)


def verify_across_fill(
    logs: Sequence[EvmLog], bridge: AcrossDeposit | Mapping[str, Any], *, spoke_pool: str
) -> tuple[int, str] | None:
    """(amount delivered, fill tx hash) of the relayer's `FilledRelay` for this deposit, or None before the fill.

    Only a fill of exactly the deposit's relay data counts; fills of other relay data under the same ids are
    skipped. The delivered amount and recipient are the relay-execution ones (a depositor speed-up may update
    them; the session then holds the amount to the step minimum)."""
    d = _deposit(bridge)
    want_origin, want_id = int(d.origin_chain_id), int(d.deposit_id)
    for lg in logs:
        if (
            lower_address(lg.address) != lower_address(spoke_pool)
            or len(lg.topics) != 4
            or lg.topics[0] != TOPIC0["FilledRelay"]
        ):
            continue
        if (topic_int(lg.topics[1]), topic_int(lg.topics[2])) != (want_origin, want_id):
            continue
        fields = tuple(decode(FILLED_RELAY_DATA, lg.data))
        if not _is_the_deposits_fill(fields, d):
            continue
        updated_recipient, _umh, updated_amount, _fill_type = fields[-1]
        if lower_address(bytes32_to_address(updated_recipient)) != lower_address(str(d.recipient)):
            raise ObservationRejected("observation_wrong_recipient", "the fill paid another recipient")
        return int(updated_amount), lg.tx_hash
    return None
