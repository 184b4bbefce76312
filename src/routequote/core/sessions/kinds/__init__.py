"""One module per step kind, each a `StepKind`: it names the chain reads it needs (`core.sessions.reads`) and
decides purely from what they returned: `observe(obs, facts) -> Decision | Need`. The shell's one gatherer
(`sessions.gather.ChainFacts.observe`) runs the reads and asks again until the kind decides. The actions
themselves are built by `core.actions`, through `PrepareService`.

    source_evm         one prepared EVM action: each transaction matched, then its kind's evidence rule
                       (`evm_swap`, `fee_transfer`, `cctp_burn`, `across`, `oft`: `EVM_EVIDENCE` there)
    source_solana      one prepared Solana transaction (swap, fee, burn: `evidence_solana`)
    cctp_mint_evm      Iris attestation, then the prepared receiveMessage (v2)
    cctp_mint_solana   attested: the prepared receive_message (or a relayed one), bound to the attested message
    cctp_mint_relayed  v1: attested, then the mint anyone relayed, found by its MessageReceived log
    across             the relayer's fill on the destination; refund after the fill deadline
    oft                the lz_receive of the OFT send's GUID on Solana (found through LayerZero Scan, or named)
    erc4337            the v1 corridor's user-operation settlement

`select(state, route)` picks the kind of a session's current step: in the source phase by the chain family
the step's action runs on, in the destination phase by the bridge its source evidence recorded and the
destination's chain family. Adding a kind: its module here, its `KindKey` and `REGISTRY` line, and its line in
`SOURCE` or `DESTINATION` (see docs/architecture.md, "Adding a step kind").
"""

from __future__ import annotations

from enum import StrEnum
from typing import Protocol

from routequote.core.assets import CHAINS, ChainFamily
from routequote.core.routes import Route
from routequote.core.sessions.kinds import (
    across,
    cctp_mint_evm,
    cctp_mint_relayed,
    cctp_mint_solana,
    erc4337,
    oft,
    source_evm,
    source_solana,
)
from routequote.core.sessions.reads import Facts, Need, Observing
from routequote.core.sessions.state import Decision, State
from routequote.errors import InvalidRequest


class StepKind(Protocol):
    def observe(self, obs: Observing, facts: Facts) -> Decision | Need:
        """The decision on the facts gathered so far, or the reads still needed (pure)."""
        ...


class KindKey(StrEnum):
    SOURCE_EVM = "source_evm"
    SOURCE_SOLANA = "source_solana"
    CCTP_MINT_EVM = "cctp_mint_evm"
    CCTP_MINT_SOLANA = "cctp_mint_solana"
    CCTP_MINT_RELAYED = "cctp_mint_relayed"
    ACROSS = "across"
    OFT = "oft"
    ERC4337_SETTLEMENT = "erc4337"


class BridgeKind(StrEnum):
    """The `kind` a bridge's source evidence records (`steps[k].bridge.kind`)."""

    CCTP = "cctp"
    ACROSS = "across"
    OFT = "oft"


REGISTRY: dict[KindKey, StepKind] = {
    KindKey.SOURCE_EVM: source_evm,
    KindKey.SOURCE_SOLANA: source_solana,
    KindKey.CCTP_MINT_EVM: cctp_mint_evm,
    KindKey.CCTP_MINT_SOLANA: cctp_mint_solana,
    KindKey.CCTP_MINT_RELAYED: cctp_mint_relayed,
    KindKey.ACROSS: across,
    KindKey.OFT: oft,
    KindKey.ERC4337_SETTLEMENT: erc4337,
}
SOURCE: dict[ChainFamily, KindKey] = {
    ChainFamily.EVM: KindKey.SOURCE_EVM,
    ChainFamily.SOLANA: KindKey.SOURCE_SOLANA,
}
DESTINATION: dict[tuple[BridgeKind, ChainFamily], KindKey] = {
    (BridgeKind.CCTP, ChainFamily.EVM): KindKey.CCTP_MINT_EVM,
    (BridgeKind.CCTP, ChainFamily.SOLANA): KindKey.CCTP_MINT_SOLANA,
    (BridgeKind.ACROSS, ChainFamily.EVM): KindKey.ACROSS,
    (BridgeKind.OFT, ChainFamily.SOLANA): KindKey.OFT,
}


def select(state: State, route: Route) -> KindKey:
    """The kind that observes the session's current step in its current phase."""
    step = route.steps[state.current_step]
    if state.phase == "source":
        return SOURCE[CHAINS[step.source.chain].family]
    bridge = state.steps[state.current_step].bridge
    recorded = None if bridge is None else bridge.kind
    try:
        key = DESTINATION.get((BridgeKind(str(recorded)), CHAINS[step.target.chain].family))
    except ValueError:
        key = None
    if key is None:  # pragma: no cover - a bridge is recorded only by a kind above
        raise InvalidRequest("bridge_kind_unknown", f"no observer for {recorded}")
    return key


__all__ = ["DESTINATION", "REGISTRY", "SOURCE", "BridgeKind", "KindKey", "StepKind", "select"]
