"""EVM source actions: Uniswap v3 swap, service fee transfer, CCTP burn, Across deposit, OFT send.

One prepared EVM action may carry several of these (approve, fee transfer, then the swap or the bridge send).
`verify_evm_action` matches every named transaction to the prepared ones, checks the fee
(`fee_transfer.fee_paid`), then applies the evidence rule of the action's last transaction kind
(`EVM_EVIDENCE`: each kind module's `send_evidence`). Next step: a swap is done (its output re-quotes the next
step), a bridge send goes in flight (its destination kind follows it: `cctp_mint_evm`, `cctp_mint_solana`,
`cctp_mint_relayed`, `across`, `oft`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from routequote.core.actions.evm import decode_call
from routequote.core.chain import EvmTransaction
from routequote.core.routes import Route
from routequote.core.sessions.evidence_common import (
    EVM_TX_RE,
    EvmSend,
    ObservationRejected,
    SendEvidence,
    StepEvidence,
    base_amount,
    erc20_transfers,
    lower_address,
    network_fee_of,
    prepared_matches,
)
from routequote.core.sessions.kinds import across, cctp_burn, evm_swap, oft
from routequote.core.sessions.kinds.fee_transfer import fee_paid
from routequote.core.sessions.reads import Facts, Need, Observing, TxByHash
from routequote.core.sessions.state import (
    Decision,
    State,
    pending_source,
    source_names,
    source_verified,
)

# the evidence rule of each EVM action kind (the kind of the action's last transaction, `kinds[-1]`)
EVM_EVIDENCE: dict[str, Callable[[EvmSend], SendEvidence]] = {
    "uniswap_v3_swap": evm_swap.send_evidence,
    "cctp_deposit_for_burn": cctp_burn.send_evidence,
    "across_deposit": across.send_evidence,
    "oft_send": oft.send_evidence,
}


def observe(obs: Observing, facts: Facts) -> Decision | Need:
    """Every transaction the caller named (or named before), read by hash, held to the prepared action."""
    state, route = obs.state, obs.route
    named = source_names(state, obs.named)
    check_names(state, route, named)
    chain = route.steps[state.current_step].source.chain
    reads = [TxByHash(chain.value, h) for h in named]
    if need := facts.missing(*reads):
        return need
    txs = [facts.txs[r] for r in reads]
    return decide(state, route, named, txs, obs.settings.required_confirmations(chain))


def check_names(state: State, route: Route, named: list[str]) -> None:
    k = state.current_step
    if not all(EVM_TX_RE.fullmatch(h) for h in named):
        raise ObservationRejected(
            "observation_wrong_chain",
            f"step {k} runs on {route.steps[k].source.chain.value}: name its EVM transaction hashes",
        )


def decide(
    state: State, route: Route, named: list[str], txs: Sequence[EvmTransaction | None], confirmations: int
) -> Decision:
    if any(t is None for t in txs):
        return pending_source(state, named, "not every named transaction is mined yet")
    action = state.action()["unsigned_action"]
    evidence = verify_evm_action(
        action, [t for t in txs if t is not None], required_confirmations=confirmations
    )
    return source_verified(state, route, named, evidence)


def verify_evm_action(
    action: dict[str, Any], txs: Sequence[EvmTransaction], *, required_confirmations: int
) -> StepEvidence:
    """Evidence for one prepared EVM action from the mined transactions the caller named (see module doc)."""
    prepared: list[dict[str, Any]] = list(action.get("transactions") or [])
    kinds: list[str] = list(action.get("kinds") or [])
    if not prepared or len(kinds) != len(prepared):
        raise ValueError("not a prepared EVM action (transactions and kinds)")
    done = _matched(action, prepared, kinds, txs)
    for tx in done:
        if tx.status != 1:
            raise ObservationRejected(
                "observation_reverted", f"{tx.tx_hash} reverted on chain", tx=tx.tx_hash
            )
    tx_ids = tuple(t.tx_hash for t in done)
    if any(t.confirmations < required_confirmations for t in done):
        return StepEvidence.pending(tx_ids)
    sender = str(prepared[0]["from"])
    paid = fee_paid(action, prepared, kinds, done, sender)
    actual_input = _evm_input(prepared, kinds, done, sender)
    last, last_p, kind = done[-1], prepared[-1], kinds[-1]
    call = decode_call(bytes.fromhex(str(last_p["data"])[2:]))
    minimum = base_amount(action.get("minimumOutput"), "minimumOutput")
    recipient = str(action.get("recipient"))
    rule = EVM_EVIDENCE.get(kind)
    if rule is None:
        raise ValueError(f"no evidence rule for an EVM step of kind {kind}")
    sent = rule(EvmSend(action, call, last, recipient, minimum, sender))
    output, bridge = sent.output, sent.bridge
    network_fee = {**network_fee_of(done), **sent.extra_network_fee}
    if output is not None and output < minimum:
        raise ObservationRejected(
            "observation_below_step_minimum",
            f"the step delivered {output}, below its minimum {minimum}",
            actual_output_base=str(output),
            minimum_output_base=str(minimum),
        )
    return StepEvidence(
        status="final",
        tx_ids=tx_ids,
        actual_input_base=actual_input,
        actual_output_base=output,
        service_fee_paid_base=paid,
        network_fee=network_fee,
        block_times=tuple(t.block_timestamp for t in done),
        bridge=bridge,
    )


def _matched(
    action: dict[str, Any], prepared: list[dict[str, Any]], kinds: list[str], txs: Sequence[EvmTransaction]
) -> list[EvmTransaction]:
    """The named transactions in the order of the prepared ones: each on the action's chain, each exactly one
    prepared transaction, and every prepared one named."""
    chain_id = action.get("chainId")
    unique: dict[str, EvmTransaction] = {}
    for tx in txs:
        unique.setdefault(tx.tx_hash.lower(), tx)
    for tx in unique.values():
        if tx.chain_id != chain_id:
            raise ObservationRejected(
                "observation_wrong_chain",
                f"{tx.tx_hash} is on chain {tx.chain_id}, the action is on {chain_id}",
                tx=tx.tx_hash,
            )
    matched: list[EvmTransaction | None] = [None] * len(prepared)
    for tx in unique.values():
        slot = next(
            (i for i, p in enumerate(prepared) if matched[i] is None and prepared_matches(p, tx)), None
        )
        if slot is None:
            raise ObservationRejected(
                "observation_not_prepared_action",
                f"{tx.tx_hash} is not one of the prepared transactions (sender, target, value and calldata must be"
                " exactly as prepared)",
                tx=tx.tx_hash,
            )
        matched[slot] = tx
    missing = [i for i, m in enumerate(matched) if m is None]
    if missing:
        raise ObservationRejected(
            "observation_incomplete",
            f"prepared transaction(s) {missing} ({', '.join(kinds[i] for i in missing)}) not named",
            missing_transaction_indexes=missing,
        )
    return [m for m in matched if m is not None]


def _evm_input(
    prepared: list[dict[str, Any]], kinds: list[str], done: list[EvmTransaction], sender: str
) -> int:
    """What the wallet spent on the step, fee included: ERC-20 moved out of it, or native value for ETH in."""
    if "erc20_approve" in kinds:
        token = str(prepared[kinds.index("erc20_approve")]["to"])
        return sum(
            v
            for tx in done
            for f, _t, v in erc20_transfers(tx, token)
            if lower_address(f) == lower_address(sender)
        )
    return sum(tx.value for tx in done)
