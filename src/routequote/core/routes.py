"""The route registry: 72 directed routes composed from a few venue legs.

Every route is built by one composition function from the endpoint pair; there is no per-route table.
Legs: swap to the chain's hub stable (USDC, or USDG on Robinhood), a bridge leg, swap out of the hub.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from routequote.core.assets import ASSETS, Asset, Chain, Token, asset


class Provider(StrEnum):
    UNISWAP_V3 = "uniswap_v3"
    RAYDIUM_CLMM = "raydium_clmm"
    ORCA_WHIRLPOOL = "orca_whirlpool"
    CIRCLE_CCTP = "circle_cctp"
    ACROSS = "across_intent_bridge"
    PAXOS_OFT = "paxos_usdg_layerzero_oft"


class Action(StrEnum):
    SWAP = "swap"
    BRIDGE = "bridge"


class Mode(StrEnum):
    SAME_CHAIN_DIRECT = "same_chain_direct"
    SAME_CHAIN_COMPOSITION = "same_chain_direct_composition"
    CCTP_COMPOSITION = "cctp_direct_composition"
    ROBINHOOD_INGRESS = "robinhood_across_ingress_composition"
    ROBINHOOD_EGRESS = "robinhood_paxos_egress_composition"


SWAP_PROVIDERS = frozenset({Provider.UNISWAP_V3, Provider.RAYDIUM_CLMM, Provider.ORCA_WHIRLPOOL})
EXTERNAL_INTENT_PROVIDERS = frozenset({Provider.ACROSS})


@dataclass(frozen=True, slots=True)
class Step:
    index: int
    provider: Provider
    source: Asset
    target: Asset
    fee_step: bool

    @property
    def action(self) -> Action:
        return Action.SWAP if self.provider in SWAP_PROVIDERS else Action.BRIDGE

    @property
    def pool_id(self) -> str | None:
        """Swaps name their pool: `chain:venue:TOKENA-TOKENB` with the pair in canonical order."""
        if self.action is not Action.SWAP:
            return None
        a, b = sorted((self.source.token.value, self.target.token.value))
        return f"{self.source.chain.value}:{self.provider.value}:{a}-{b}"

    @property
    def external_intent(self) -> bool:
        return self.provider in EXTERNAL_INTENT_PROVIDERS


@dataclass(frozen=True, slots=True)
class Route:
    source: Asset
    target: Asset
    steps: tuple[Step, ...]
    mode: Mode

    @property
    def key(self) -> str:
        return f"{self.source.key}->{self.target.key}"

    @property
    def fee_step_index(self) -> int:
        return next(s.index for s in self.steps if s.fee_step)

    @property
    def external_intent(self) -> bool:
        return any(s.external_intent for s in self.steps)

    @property
    def classification(self) -> str:
        return "external_intent" if self.external_intent else "direct_protocol_only"

    @property
    def required_wallet_chains(self) -> tuple[str, ...]:
        chains = {s.source.chain.value for s in self.steps} | {s.target.chain.value for s in self.steps}
        return tuple(sorted(chains))

    @property
    def event_signer_required(self) -> bool:
        """A CCTP burn on Solana writes its message into a fresh account that must co-sign."""
        return any(s.provider is Provider.CIRCLE_CCTP and s.source.chain is Chain.SOLANA for s in self.steps)

    @property
    def provider_path(self) -> tuple[str, ...]:
        return tuple(s.provider.value for s in self.steps)

    @property
    def non_atomic(self) -> bool:
        return len(self.steps) > 1


_HUB_TOKEN = {
    Chain.SOLANA: Token.USDC,
    Chain.BASE: Token.USDC,
    Chain.ARBITRUM: Token.USDC,
    Chain.ROBINHOOD: Token.USDG,
}
# The one venue that trades each non-hub endpoint against its chain's hub.
_HUB_VENUE = {
    "solana:SOL": Provider.RAYDIUM_CLMM,
    "solana:USDG": Provider.ORCA_WHIRLPOOL,
    "base:ETH": Provider.UNISWAP_V3,
    "arbitrum:ETH": Provider.UNISWAP_V3,
    "robinhood:ETH": Provider.UNISWAP_V3,
}

Leg = tuple[Provider, Asset, Asset]


def _hub(chain: Chain) -> Asset:
    return asset(chain, _HUB_TOKEN[chain])


def _to_hub(a: Asset) -> list[Leg]:
    return [] if a.key == _hub(a.chain).key else [(_HUB_VENUE[a.key], a, _hub(a.chain))]


def _from_hub(a: Asset) -> list[Leg]:
    return [] if a.key == _hub(a.chain).key else [(_HUB_VENUE[a.key], _hub(a.chain), a)]


def _compose(src: Asset, dst: Asset) -> tuple[Mode, list[Leg], int]:
    """Returns the mode, the legs and the index of the single leg that collects the service fee."""
    usdc = {c: asset(c, Token.USDC) for c in (Chain.SOLANA, Chain.BASE, Chain.ARBITRUM)}
    if src.chain is dst.chain:
        if src.key == _hub(src.chain).key or dst.key == _hub(dst.chain).key:
            legs = _to_hub(src) + _from_hub(dst)
            return Mode.SAME_CHAIN_DIRECT, legs, 0
        # solana SOL <-> USDG through USDC; the fee sits on the stable leg (Orca)
        legs = _to_hub(src) + _from_hub(dst)
        fee = next(i for i, leg in enumerate(legs) if leg[0] is Provider.ORCA_WHIRLPOOL)
        return Mode.SAME_CHAIN_COMPOSITION, legs, fee
    if src.chain is Chain.ROBINHOOD:
        oft: Leg = (Provider.PAXOS_OFT, asset(Chain.ROBINHOOD, Token.USDG), asset(Chain.SOLANA, Token.USDG))
        legs = _to_hub(src) + [oft]
        sol_usdg = asset(Chain.SOLANA, Token.USDG)
        if dst.chain is Chain.SOLANA:
            if dst.token is not Token.USDG:
                legs.append((Provider.ORCA_WHIRLPOOL, sol_usdg, usdc[Chain.SOLANA]))
                legs += _from_hub(dst)
        else:
            legs.append((Provider.ORCA_WHIRLPOOL, sol_usdg, usdc[Chain.SOLANA]))
            legs.append((Provider.CIRCLE_CCTP, usdc[Chain.SOLANA], usdc[dst.chain]))
            legs += _from_hub(dst)
        return Mode.ROBINHOOD_EGRESS, legs, len(_to_hub(src))
    if dst.chain is Chain.ROBINHOOD:
        rh_usdg = asset(Chain.ROBINHOOD, Token.USDG)
        legs = _to_hub(src)
        if src.chain is Chain.SOLANA:
            legs.append((Provider.CIRCLE_CCTP, usdc[Chain.SOLANA], usdc[Chain.BASE]))
            fee = len(legs) - 1
            legs.append((Provider.ACROSS, usdc[Chain.BASE], rh_usdg))
            legs += _from_hub(dst)
            return Mode.ROBINHOOD_INGRESS, legs, fee
        legs.append((Provider.ACROSS, usdc[src.chain], rh_usdg))
        legs += _from_hub(dst)
        # the first swap collects the fee; with no swaps, the Across leg does
        swaps = [i for i, leg in enumerate(legs) if leg[0] in SWAP_PROVIDERS]
        return Mode.ROBINHOOD_INGRESS, legs, swaps[0] if swaps else 0
    legs = _to_hub(src) + [(Provider.CIRCLE_CCTP, _hub(src.chain), _hub(dst.chain))] + _from_hub(dst)
    return Mode.CCTP_COMPOSITION, legs, len(_to_hub(src))


def build_route(src: Asset, dst: Asset) -> Route:
    if src.key == dst.key:
        raise ValueError("identity route")
    mode, legs, fee_index = _compose(src, dst)
    steps = tuple(
        Step(index=i, provider=p, source=a, target=b, fee_step=(i == fee_index))
        for i, (p, a, b) in enumerate(legs)
    )
    for prev, nxt in zip(steps, steps[1:], strict=False):
        if prev.target.key != nxt.source.key:
            raise AssertionError(f"legs do not chain in {src.key}->{dst.key}")
    return Route(src, dst, steps, mode)


ROUTES: dict[str, Route] = {
    r.key: r for r in (build_route(a, b) for a in ASSETS.values() for b in ASSETS.values() if a.key != b.key)
}


def route_for(src: Asset, dst: Asset) -> Route:
    return ROUTES[f"{src.key}->{dst.key}"]
