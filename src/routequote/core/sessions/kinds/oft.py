"""LayerZero OFT (USDG to Solana): the send is proven on the source (`evidence._oft_sent`); the delivery is
the Solana transaction the caller names, held to the wallet's token balance change
(`evidence.verify_solana_delivery`). The same delivery rule serves a CCTP mint the caller relayed on Solana."""

from __future__ import annotations

from routequote.core.chain import SolanaTransaction
from routequote.core.routes import Route
from routequote.core.sessions.evidence import SOLANA_SIG_RE, verify_solana_delivery
from routequote.core.sessions.machine import Event
from routequote.core.sessions.state import Decision, State, delivered, destination_pending


def needs_signature(hashes: list[str]) -> bool:
    return len(hashes) != 1 or not SOLANA_SIG_RE.fullmatch(hashes[0])


def ask_for_signature(state: State) -> Decision:
    return destination_pending(
        state,
        "name the Solana signature that delivered the tokens to your wallet",
        "awaiting_delivery_signature",
    )


def decide_delivery(
    state: State, route: Route, signature: str, tx: SolanaTransaction | None, token: str, mint: str
) -> Decision:
    if tx is None:
        return Decision(Event.DESTINATION_PENDING, state, note="the delivery signature is not finalized yet")
    amount = verify_solana_delivery(tx, owner=state["wallets"]["solana"], mint=mint)
    destination = {"tx_ids": [signature], "actual_output_base": str(amount), "kind": f"{token}_delivery"}
    return delivered(state, route, state["current_step"], amount, destination)
