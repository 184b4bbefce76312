"""One module per step kind: its evidence check and its next-step rule (the actions themselves are built by
`core.actions`, through `PrepareService`). The engine gathers the chain facts a rule needs through its ports
(`sessions.gather`), then calls the rule; a rule is pure: (state, facts) -> `state.Decision`.

    evm_swap          Uniswap v3 swap output                         -> step done, next step re-quoted
    fee_transfer      the 1 bp service fee inside a fee step's action (never advances on its own)
    cctp_burn         CCTP depositForBurn on EVM                     -> bridge in flight
    cctp_mint_evm     Iris attestation, the prepared receiveMessage, the relayed mint (v1)
    cctp_mint_solana  attested: the prepared receive_message (or a relayed one), bound to the attested message
    across            Across deposit (source) and relayer fill (destination), refund after the deadline
    oft               LayerZero OFT send (source) and the lz_receive of its GUID on Solana (destination)
    erc4337           the v1 corridor's user-operation settlement
    source_evm        one prepared EVM action: each transaction matched, then the kind's rule above
    source_solana     one prepared Solana transaction (swap, fee, burn: `evidence_solana`)

Adding a kind: one module here, and one line in `SOURCE` (by the chain family its action runs on; an EVM
action kind also gets its line in `source_evm.verify_evm_action`) or in `DESTINATION` (by the bridge kind
its source evidence records).
"""

from __future__ import annotations

from types import ModuleType

from routequote.core.assets import ChainFamily
from routequote.core.sessions.kinds import (
    across,
    cctp_mint_evm,
    cctp_mint_solana,
    erc4337,
    oft,
    source_evm,
    source_solana,
)

SOURCE: dict[ChainFamily, ModuleType] = {ChainFamily.EVM: source_evm, ChainFamily.SOLANA: source_solana}
DESTINATION: dict[str, ModuleType] = {"cctp": cctp_mint_evm, "across": across, "oft": oft}
SETTLEMENT = erc4337

__all__ = [
    "DESTINATION",
    "SETTLEMENT",
    "SOURCE",
    "across",
    "cctp_mint_evm",
    "cctp_mint_solana",
    "erc4337",
    "oft",
]
