"""One module per step kind: its evidence check and its next-step rule (the actions themselves are built by
`core.actions`). The engine gathers the chain facts a rule needs through its ports, then calls the rule.

Adding a kind: one module here, and one line in `SOURCE` (by the chain family its action runs on) or in
`DESTINATION` (by the bridge kind its source evidence records).
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
