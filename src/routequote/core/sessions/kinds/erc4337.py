"""The v1 corridor's last step: USDC -> native ETH settled as one ERC-4337 user operation from the wallet's
smart account. The plan is built by `core.actions.erc4337` from chain reads (the engine's `EvmStateReader`
port); the bundler's `handleOps` transaction is proven by `evidence_4337.verify_userop_settlement`."""

from __future__ import annotations

from routequote.core.chain import EvmTransaction
from routequote.core.routes import Route
from routequote.core.sessions.evidence_4337 import verify_userop_settlement
from routequote.core.sessions.state import (
    Decision,
    State,
    check_step_minimum,
    evidence_entry,
    pending_source,
    step_done,
)


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
    entry = state.step(k)
    entry["claimed_tx_ids"] = [tx_hash]
    entry["source"] = evidence_entry(evidence)
    entry["settlement"] = evidence.bridge
    return step_done(state.with_step(k, entry), route, k, evidence.actual_output_base)
