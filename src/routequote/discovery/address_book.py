"""Third-party contracts and programs that actions on the 72 routes may touch, by provider and chain.

The action builders' own address book is the source: `routequote.core.actions.evm` (the EVM
deployments a `PrepareService` uses: SwapRouter02, CCTP TokenMessengerV2, Across SpokePool, USDG OFT,
with the reasons for any that are not pinned) and `routequote.core.actions.solana` (the CCTP programs,
and which Solana venues are not pinned). This module only adds the few addresses a route involves that
no builder calls itself (the CCTP mint side), and lists the Solana swap programs and pinned pool accounts
of `routequote.core.actions.solana_swaps`, each with where it came from:

- `pinned_in_action_builder`: the address the action builders put into unsigned actions.
- `issuer_docs`: the protocol's own documentation or repository.
- `third_party`: third-party code or notes; check on chain before relying on it.
- `not_pinned`: the step exists but this build pins no address, so its actions are not built.

Token contracts and mints come from `routequote.core.assets`; pool accounts from the market view.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from routequote.core.actions import solana_swaps as sw
from routequote.core.actions.evm import DEFAULT_DEPLOYMENTS, EvmDeployment
from routequote.core.actions.solana import (
    CCTP_MESSAGE_TRANSMITTER_V2,
    CCTP_TOKEN_MESSENGER_MINTER_V2,
    SOLANA_UNPINNED,
)
from routequote.core.assets import Chain
from routequote.core.providers import PROVIDERS
from routequote.core.routes import ROUTES, Provider


@dataclass(frozen=True, slots=True)
class Contract:
    provider: Provider
    chain: Chain
    role: str
    address: str | None
    basis: str  # pinned_in_action_builder | issuer_docs | third_party | not_pinned
    note: str | None = None


# Involved in routes but not called by a builder in this build.
REFERENCE: tuple[Contract, ...] = (
    Contract(
        Provider.CIRCLE_CCTP,
        Chain.BASE,
        "message_transmitter_v2",
        "0x81D40F21F12A8F0E3252Bccb954D722d4c464B64",
        "issuer_docs",
        "destination mint: the caller's receiveMessage transaction",
    ),
    Contract(
        Provider.CIRCLE_CCTP,
        Chain.ARBITRUM,
        "message_transmitter_v2",
        "0x81D40F21F12A8F0E3252Bccb954D722d4c464B64",
        "issuer_docs",
        "destination mint: the caller's receiveMessage transaction",
    ),
    Contract(
        Provider.CIRCLE_CCTP,
        Chain.SOLANA,
        "message_transmitter_v2",
        str(CCTP_MESSAGE_TRANSMITTER_V2),
        "pinned_in_action_builder",
        "passed to the CCTP burn instruction; destination mint on Solana",
    ),
)

# Solana swap venues: programs and pool accounts pinned in the swap builder. Their swaps are prepared from one
# read of the pinned pool (tick arrays and, on Raydium, the observation follow it): live, or the embedded
# snapshot's modelled state (then the action says `pool_state_source: snapshot`).
_LIVE_ONLY = (
    "swap_v2 built from the pool state the market holds: a live read, or the embedded snapshot's modelled state "
    "(labelled in the action; may fail on mainnet, never pays below its minimum)"
)
SOLANA_SWAPS: tuple[Contract, ...] = (
    Contract(
        Provider.RAYDIUM_CLMM,
        Chain.SOLANA,
        "clmm_program",
        str(sw.RAYDIUM_CLMM_PROGRAM),
        "pinned_in_action_builder",
        SOLANA_UNPINNED.get(Provider.RAYDIUM_CLMM) or _LIVE_ONLY,
    ),
    Contract(
        Provider.ORCA_WHIRLPOOL,
        Chain.SOLANA,
        "whirlpool_program",
        str(sw.ORCA_WHIRLPOOL_PROGRAM),
        "pinned_in_action_builder",
        SOLANA_UNPINNED.get(Provider.ORCA_WHIRLPOOL) or _LIVE_ONLY,
    ),
    *(
        c
        for p in sw.RAYDIUM_POOLS.values()
        for c in (
            Contract(
                Provider.RAYDIUM_CLMM,
                Chain.SOLANA,
                f"pool:{p.pool_id}",
                p.pool,
                "pinned_in_action_builder",
                _LIVE_ONLY,
            ),
            Contract(
                Provider.RAYDIUM_CLMM,
                Chain.SOLANA,
                f"amm_config:{p.pool_id}",
                p.amm_config,
                "pinned_in_action_builder",
            ),
            Contract(
                Provider.RAYDIUM_CLMM,
                Chain.SOLANA,
                f"vault_0:{p.pool_id}",
                p.vault_0,
                "pinned_in_action_builder",
            ),
            Contract(
                Provider.RAYDIUM_CLMM,
                Chain.SOLANA,
                f"vault_1:{p.pool_id}",
                p.vault_1,
                "pinned_in_action_builder",
            ),
        )
    ),
    *(
        c
        for p in sw.ORCA_POOLS.values()
        for c in (
            Contract(
                Provider.ORCA_WHIRLPOOL,
                Chain.SOLANA,
                f"pool:{p.pool_id}",
                p.whirlpool,
                "pinned_in_action_builder",
                _LIVE_ONLY,
            ),
            Contract(
                Provider.ORCA_WHIRLPOOL,
                Chain.SOLANA,
                f"vault_a:{p.pool_id}",
                p.vault_a,
                "pinned_in_action_builder",
            ),
            Contract(
                Provider.ORCA_WHIRLPOOL,
                Chain.SOLANA,
                f"vault_b:{p.pool_id}",
                p.vault_b,
                "pinned_in_action_builder",
            ),
            Contract(
                Provider.ORCA_WHIRLPOOL,
                Chain.SOLANA,
                f"oracle:{p.pool_id}",
                p.oracle,
                "pinned_in_action_builder",
            ),
        )
    ),
)


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
                out.append(
                    Contract(
                        provider,
                        chain,
                        "token_messenger_minter_v2",
                        str(CCTP_TOKEN_MESSENGER_MINTER_V2),
                        "pinned_in_action_builder",
                    )
                )
            continue
        dep = deps.get(chain)
        address = dep.contract(provider) if dep is not None else None
        if address is not None:
            out.append(
                Contract(
                    provider,
                    chain,
                    PROVIDERS[provider].evm_role or "contract",
                    address,
                    "pinned_in_action_builder",
                )
            )
        else:
            reason = (
                dep.unpinned_reasons.get(provider.value) if dep is not None else "no deployment for the chain"
            )
            out.append(
                Contract(
                    provider, chain, PROVIDERS[provider].evm_role or "contract", None, "not_pinned", reason
                )
            )
    reference = [c for c in REFERENCE if (c.provider, c.chain) in used or c.role == "message_transmitter_v2"]
    return out + reference + [c for c in SOLANA_SWAPS if (c.provider, c.chain) in used]
