"""Solana source actions: Orca Whirlpool / Raydium CLMM swaps, the service fee transfer, the CCTP burn.

A Solana action is one transaction; `evidence.verify_solana_action` holds the evidence rule (exactly the
prepared instructions, in order; amounts from pre/post balances). Next step as for EVM: a swap is done,
a burn goes in flight.
"""

from __future__ import annotations

from routequote.core.chain import SolanaTransaction
from routequote.core.routes import Route
from routequote.core.sessions.evidence_common import SOLANA_SIG_RE, ObservationRejected
from routequote.core.sessions.evidence_solana import verify_solana_action
from routequote.core.sessions.reads import Facts, Need, Observing, SolanaTx
from routequote.core.sessions.state import (
    Decision,
    State,
    pending_source,
    source_names,
    source_verified,
)


def observe(obs: Observing, facts: Facts) -> Decision | Need:
    """The one signature the caller named (or named before), read finalized, held to the prepared transaction."""
    named = source_names(obs.state, obs.named)
    check_names(obs.state, obs.route, named)
    read = SolanaTx(named[0])
    if need := facts.missing(read):
        return need
    return decide(obs.state, obs.route, named, facts.solana_txs[read])


def check_names(state: State, route: Route, named: list[str]) -> None:
    if len(named) != 1 or not SOLANA_SIG_RE.fullmatch(named[0]):
        raise ObservationRejected(
            "observation_wrong_chain", "a Solana action is one transaction: name its signature"
        )


def decide(state: State, route: Route, named: list[str], tx: SolanaTransaction | None) -> Decision:
    if tx is None:
        return pending_source(state, named, "the signature is not finalized yet")
    evidence = verify_solana_action(state.action()["unsigned_action"], tx)
    return source_verified(state, route, named, evidence)
