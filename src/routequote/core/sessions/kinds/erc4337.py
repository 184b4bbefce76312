"""The v1 corridor's last step: USDC -> native ETH settled as one ERC-4337 user operation from the wallet's
smart account. The plan is built by `core.actions.erc4337` from chain reads (the engine's `EvmStateReader`
port); the bundler's `handleOps` transaction is proven by `evidence_4337.verify_userop_settlement`."""

from __future__ import annotations

from routequote.core.chain import EvmTransaction
from routequote.core.routes import Route
from routequote.core.sessions.entries import Settlement
from routequote.core.sessions.evidence_4337 import verify_userop_settlement
from routequote.core.sessions.reads import Facts, Need, Observing, TxByHash
from routequote.core.sessions.state import (
    Decision,
    State,
    check_step_minimum,
    evidence_entry,
    pending_source,
    step_done,
)
from routequote.errors import Conflict


def observe(obs: Observing, facts: Facts) -> Decision | Need:
    """v1 step 2: the bundler's `handleOps` transaction (the one the caller named) carrying the prepared
    user operation."""
    state = obs.state
    action = state.current_action
    if not action or action.get("kind") != "erc4337_settlement":  # pragma: no cover - guarded by the status
        raise Conflict("step_out_of_order", "no settlement plan was prepared for this step")
    chain = obs.route.steps[state.current_step].source.chain
    read = TxByHash(chain.value, obs.named[0])
    if need := facts.missing(read):
        return need
    return decide(state, obs.route, read.tx_hash, facts.txs[read], obs.settings.required_confirmations(chain))


def decide(
    state: State, route: Route, tx_hash: str, tx: EvmTransaction | None, confirmations: int
) -> Decision:
    k = state.current_step
    if tx is None:
        return pending_source(state, [tx_hash], "the transaction is not mined yet")
    plan = state.action()["plan"]
    evidence = verify_userop_settlement(
        tx,
        plan=plan,
        entry_point=plan["entryPoint"],
        account=plan["smartAccount"],
        wallet=plan["wallet"],
        weth=plan["bounds"]["weth"],
        minimum_eth_out=int(plan["bounds"]["minimumEthOut"]),
        required_confirmations=confirmations,
    )
    if evidence.status == "pending":
        return pending_source(state, [tx_hash], "waiting for finality")
    assert evidence.actual_output_base is not None
    check_step_minimum(state, k, evidence.actual_output_base)
    entry = state.step(k).set(
        claimed_tx_ids=[tx_hash],
        source=evidence_entry(evidence),
        settlement=Settlement.parse(evidence.bridge),
    )
    return step_done(state.with_step(k, entry), route, k, evidence.actual_output_base)
