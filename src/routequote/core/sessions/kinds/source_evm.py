"""EVM source actions: Uniswap v3 swap, service fee transfer, CCTP burn, Across deposit, OFT send.

One prepared EVM action may carry several of these (approve, fee transfer, then the swap or the bridge send);
`evidence.verify_evm_action` holds each kind's evidence rule (`_uniswap_output`, `_fee_paid`, `_cctp_burn`,
`_across_deposit`, `_oft_sent`). Next step: a swap is done (its output re-quotes the next step), a bridge
send goes in flight (its destination rule follows it: `cctp_mint_evm`, `cctp_mint_solana`, `across`, `oft`).
"""

from __future__ import annotations

from collections.abc import Sequence

from routequote.core.chain import EvmTransaction
from routequote.core.routes import Route
from routequote.core.sessions.evidence import EVM_TX_RE, ObservationRejected, verify_evm_action
from routequote.core.sessions.state import Decision, State, pending_source, source_verified


def check_names(state: State, route: Route, named: list[str]) -> None:
    k = state["current_step"]
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
    action = state["current_action"]["unsigned_action"]
    evidence = verify_evm_action(
        action, [t for t in txs if t is not None], required_confirmations=confirmations
    )
    return source_verified(state, route, named, evidence)
