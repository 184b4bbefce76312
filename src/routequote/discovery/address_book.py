"""Third-party contracts and programs that actions on the 72 routes may touch, by provider and chain.

The action builders' own address book is the source: `routequote.core.actions.evm` (the EVM
deployments a `PrepareService` uses: SwapRouter02, CCTP TokenMessengerV2, Across SpokePool, USDG OFT,
with the reasons for any that are not pinned) and `routequote.core.actions.solana` (the CCTP programs,
and which Solana venues are not pinned). This module only adds the few addresses a route involves that
no builder calls itself (the CCTP mint side, the Solana venue programs), each with where it came from:

- `pinned_in_action_builder`: the address the action builders put into unsigned actions.
- `issuer_docs`: the protocol's own documentation or repository.
- `third_party`: third-party code or notes; check on chain before relying on it.
- `not_pinned`: the step exists but this build pins no address, so its actions are not built.

Token contracts and mints come from `routequote.core.assets`; pool accounts from the market view.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from routequote.core.actions.evm import DEFAULT_DEPLOYMENTS, EvmDeployment
from routequote.core.actions.solana import (
    CCTP_MESSAGE_TRANSMITTER_V2,
    CCTP_TOKEN_MESSENGER_MINTER_V2,
    SOLANA_UNPINNED,
)
from routequote.core.assets import Chain
from routequote.core.routes import ROUTES, Provider


@dataclass(frozen=True, slots=True)
class Contract:
    provider: Provider
    chain: Chain
    role: str
    address: str | None
    basis: str  # pinned_in_action_builder | issuer_docs | third_party | not_pinned
    note: str | None = None


_EVM_ROLES = {
    Provider.UNISWAP_V3: "swap_router_02",
    Provider.CIRCLE_CCTP: "token_messenger_v2",
    Provider.ACROSS: "spoke_pool",
    Provider.PAXOS_OFT: "usdg_oft",
}

# Involved in routes but not called by a builder in this build.
REFERENCE: tuple[Contract, ...] = (
    Contract(Provider.CIRCLE_CCTP, Chain.BASE, "message_transmitter_v2", "0x81D40F21F12A8F0E3252Bccb954D722d4c464B64",
             "issuer_docs", "destination mint: the caller's receiveMessage transaction"),
    Contract(Provider.CIRCLE_CCTP, Chain.ARBITRUM, "message_transmitter_v2", "0x81D40F21F12A8F0E3252Bccb954D722d4c464B64",
             "issuer_docs", "destination mint: the caller's receiveMessage transaction"),
    Contract(Provider.CIRCLE_CCTP, Chain.SOLANA, "message_transmitter_v2", str(CCTP_MESSAGE_TRANSMITTER_V2),
             "pinned_in_action_builder", "passed to the CCTP burn instruction; destination mint on Solana"),
    Contract(Provider.RAYDIUM_CLMM, Chain.SOLANA, "clmm_program", "CAMMCzo5YL8w4VFF8KVHrK22GGUsp5VTaW7grrKgrWqK",
             "third_party", SOLANA_UNPINNED.get(Provider.RAYDIUM_CLMM)),
    Contract(Provider.ORCA_WHIRLPOOL, Chain.SOLANA, "whirlpool_program", "whirLbMiicVdio4qvUfM5KAg6Ct8VwpYzGff3uctyCc",
             "third_party", SOLANA_UNPINNED.get(Provider.ORCA_WHIRLPOOL)),
)  # fmt: skip


def _used() -> set[tuple[Provider, Chain]]:
    """(provider, chain) pairs where a route step starts: where the caller's action runs."""
    return {(s.provider, s.source.chain) for r in ROUTES.values() for s in r.steps}


def contracts(deployments: Mapping[Chain, EvmDeployment] | None = None) -> list[Contract]:
    """The address book for the deployments an instance's action builders use (default: the built-in)."""
    deps = {**DEFAULT_DEPLOYMENTS, **(deployments or {})}
    used = _used()
    out: list[Contract] = []
    for provider, chain in sorted(used, key=lambda pc: (pc[1].value, pc[0].value)):
        if chain is Chain.SOLANA:
            if provider is Provider.CIRCLE_CCTP:
                out.append(Contract(provider, chain, "token_messenger_minter_v2", str(CCTP_TOKEN_MESSENGER_MINTER_V2),
                                    "pinned_in_action_builder"))  # fmt: skip
            continue
        dep = deps.get(chain)
        address = dep.contract(provider) if dep is not None else None
        if address is not None:
            out.append(Contract(provider, chain, _EVM_ROLES[provider], address, "pinned_in_action_builder"))
        else:
            reason = dep.unpinned_reasons.get(provider.value) if dep is not None else "no deployment for the chain"
            out.append(Contract(provider, chain, _EVM_ROLES.get(provider, "contract"), None, "not_pinned", reason))
    return out + [c for c in REFERENCE if (c.provider, c.chain) in used or c.role == "message_transmitter_v2"]
