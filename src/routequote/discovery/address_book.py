"""Third-party contracts and programs that actions on the 72 routes may touch, by provider and chain.

One table, read by the safety document (its `claims.scope`) and usable by action builders. Token
contracts and mints come from `routequote.core.assets`; pool accounts come from the market view.
Every entry says where its address was taken from (`basis`), so an operator knows which ones to check
on chain before enabling execution:

- `issuer_docs`: the protocol's or issuer's own documentation or repository.
- `third_party`: third-party code or notes; check on chain before relying on it.
- `not_pinned`: the program/contract exists but this build pins no address for it.
"""

from __future__ import annotations

from dataclasses import dataclass

from routequote.core.assets import Chain
from routequote.core.routes import Provider


@dataclass(frozen=True, slots=True)
class Contract:
    provider: Provider
    chain: Chain
    role: str
    address: str | None
    basis: str  # issuer_docs | third_party | not_pinned


_CCTP_TOKEN_MESSENGER_V2 = "0x28b5a0e9C621a5BadaA536219b3a228C8168cf5d"
_CCTP_MESSAGE_TRANSMITTER_V2 = "0x81D40F21F12A8F0E3252Bccb954D722d4c464B64"

CONTRACTS: tuple[Contract, ...] = (
    # Uniswap v3 (swaps go through SwapRouter02 into the pools named by the market snapshot)
    Contract(Provider.UNISWAP_V3, Chain.BASE, "swap_router_02", "0x2626664c2603336E57B271c5C0b26F421741e481", "issuer_docs"),
    Contract(Provider.UNISWAP_V3, Chain.BASE, "factory", "0x33128a8fC17869897dcE68Ed026d694621f6FDfD", "issuer_docs"),
    Contract(Provider.UNISWAP_V3, Chain.ARBITRUM, "swap_router_02", "0x68b3465833fb72A70ecDF485E0e4C7bD8665Fc45", "issuer_docs"),
    Contract(Provider.UNISWAP_V3, Chain.ARBITRUM, "factory", "0x1F98431c8aD98523631AE4a59f267346ea31F984", "issuer_docs"),
    Contract(Provider.UNISWAP_V3, Chain.ROBINHOOD, "swap_router_02", "0xCaf681a66D020601342297493863E78C959E5cb2", "third_party"),
    Contract(Provider.UNISWAP_V3, Chain.ROBINHOOD, "factory", "0x1f7d7550b1b028f7571e69a784071f0205fd2efa", "third_party"),
    # Solana CLMM venues
    Contract(Provider.RAYDIUM_CLMM, Chain.SOLANA, "clmm_program", "CAMMCzo5YL8w4VFF8KVHrK22GGUsp5VTaW7grrKgrWqK", "third_party"),
    Contract(Provider.ORCA_WHIRLPOOL, Chain.SOLANA, "whirlpool_program", "whirLbMiicVdio4qvUfM5KAg6Ct8VwpYzGff3uctyCc", "third_party"),
    # Circle CCTP v2 (same EVM addresses on every mainnet)
    Contract(Provider.CIRCLE_CCTP, Chain.BASE, "token_messenger_v2", _CCTP_TOKEN_MESSENGER_V2, "issuer_docs"),
    Contract(Provider.CIRCLE_CCTP, Chain.BASE, "message_transmitter_v2", _CCTP_MESSAGE_TRANSMITTER_V2, "issuer_docs"),
    Contract(Provider.CIRCLE_CCTP, Chain.ARBITRUM, "token_messenger_v2", _CCTP_TOKEN_MESSENGER_V2, "issuer_docs"),
    Contract(Provider.CIRCLE_CCTP, Chain.ARBITRUM, "message_transmitter_v2", _CCTP_MESSAGE_TRANSMITTER_V2, "issuer_docs"),
    Contract(Provider.CIRCLE_CCTP, Chain.SOLANA, "token_messenger_minter_v2", "CCTPV2vPZJS2u2BBsUoscuikbYjnpFmbFsvVuJdgUMQe", "issuer_docs"),
    Contract(Provider.CIRCLE_CCTP, Chain.SOLANA, "message_transmitter_v2", "CCTPV2Sm4AdWt5296sk4P66VBZ7bEhcARwFaaS9YPbeC", "issuer_docs"),
    # Across (USDC on Base/Arbitrum -> USDG on Robinhood)
    Contract(Provider.ACROSS, Chain.BASE, "spoke_pool", "0x09aea4b2242abC8bb4BB78D537A67a245A7bEC64", "issuer_docs"),
    Contract(Provider.ACROSS, Chain.ARBITRUM, "spoke_pool", "0xe35e9842fceaCA96570B734083f4a58e8F7C5f2A", "issuer_docs"),
    Contract(Provider.ACROSS, Chain.ROBINHOOD, "spoke_pool", "0xd29c85f15df544ba632c9e25829fd29d767d7978", "third_party"),
    # Paxos USDG over LayerZero v2 OFT (Robinhood -> Solana)
    Contract(Provider.PAXOS_OFT, Chain.ROBINHOOD, "usdg_oft", "0x0d54755f5106BfdB43f7a35f5D49a23F940628d1", "third_party"),
    Contract(Provider.PAXOS_OFT, Chain.ROBINHOOD, "layerzero_endpoint_v2", "0x6F475642a6e85809B1c36Fa62763669b1b48DD5B", "third_party"),
    Contract(Provider.PAXOS_OFT, Chain.SOLANA, "usdg_oft_program", None, "not_pinned"),
)


def contracts_for(provider: Provider, chain: Chain) -> tuple[Contract, ...]:
    return tuple(c for c in CONTRACTS if c.provider is provider and c.chain is chain)


def address_of(provider: Provider, chain: Chain, role: str) -> str | None:
    for c in CONTRACTS:
        if c.provider is provider and c.chain is chain and c.role == role:
            return c.address
    raise KeyError(f"no {role} for {provider.value} on {chain.value}")
