"""The time and cost parts of a quote, from the priced route and the market view: the ETA (per-step
seconds and where each comes from), the fee components in token and USD terms, and the network gas of
each action (estimated, not priced into the receive amounts)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from routequote.core.assets import CHAINS, Asset, Chain, Token
from routequote.core.market import MarketView
from routequote.core.pricing import PricedStep, RoutePricing
from routequote.core.providers import PROVIDERS
from routequote.core.routes import Action, Provider, Route


def usd_value(base: int, a: Asset, view: MarketView) -> Fraction:
    return Fraction(base, a.one) * view.price(a.token)


def display_number(x: Fraction, places: int = 6) -> float:
    return round(float(x), places)


def display_tokens(base: int, a: Asset) -> float:
    return float(Fraction(base, a.one))


def _step_seconds(ps: PricedStep, view: MarketView) -> int | None:
    s = ps.step
    if s.action is Action.SWAP:
        return view.swap_seconds[s.source.chain]
    if s.provider is Provider.CIRCLE_CCTP:
        domain = CHAINS[s.source.chain].cctp_domain
        return view.cctp.attestation_seconds[domain or 0] + view.cctp.mint_seconds
    if s.provider is Provider.ACROSS:
        return view.across.fill_seconds
    return view.oft.delivery_seconds


def eta(pricing: RoutePricing, view: MarketView) -> dict[str, Any]:
    per_step = [_step_seconds(ps, view) for ps in pricing.steps]
    complete = all(x is not None for x in per_step)
    total = sum(x for x in per_step if x is not None) if complete else None
    low = sum((x + 1) // 2 for x in per_step if x is not None) if complete else None
    sources = sorted({src for ps in pricing.steps if (src := PROVIDERS[ps.step.provider].eta_source)})
    return {
        "estimated_time_seconds": total,
        "estimated_time_range_seconds": [low, total] if complete else None,
        "complete_route_estimate": complete,
        "per_step_seconds": per_step,
        "sources": sources,
        "note": _eta_note(pricing, view, complete),
    }


def _eta_note(pricing: RoutePricing, view: MarketView, complete: bool) -> str:
    if not complete:
        return "no complete estimate: at least one step (LayerZero OFT delivery) has no reliable time model"
    note = "sum of modelled per-step times; the caller's own signing and submission time is not included"
    if any(ps.step.provider is Provider.PAXOS_OFT for ps in pricing.steps):
        note += (
            f"; the LayerZero OFT delivery is modelled at {view.oft.delivery_seconds} s (source confirmations, "
            "DVN verification, executor), not measured"
        )
    return note


def fee_components(pricing: RoutePricing, view: MarketView) -> list[dict[str, Any]]:
    eth = view.price(Token.ETH)
    out: list[dict[str, Any]] = []
    for ps in pricing.steps:
        s = ps.step
        if ps.native_fee_wei:
            out.append(
                {
                    "step_index": s.index,
                    "provider": s.provider.value,
                    "kind": PROVIDERS[s.provider].fee_kind,
                    "token": f"{s.source.chain.value}:ETH",
                    "amount_base": str(ps.native_fee_wei),
                    "maximum_amount_base": str(ps.native_fee_max_wei),
                    "expected_usd": display_number(Fraction(ps.native_fee_wei, 10**18) * eth),
                    "maximum_usd": display_number(Fraction(ps.native_fee_max_wei, 10**18) * eth),
                    "included_in_receive_amount": False,
                    "paid_as": "native_value_on_top_of_amount",
                }
            )
        if ps.provider_fee_base or s.action is Action.SWAP:
            entry: dict[str, Any] = {
                "step_index": s.index,
                "provider": s.provider.value,
                "kind": PROVIDERS[s.provider].amount_fee_kind,
                "token": s.source.key,
                "amount_base": str(ps.provider_fee_base),
                "maximum_amount_base": str(ps.provider_fee_max_base),
                "expected_usd": display_number(usd_value(ps.provider_fee_base, s.source, view)),
                "maximum_usd": display_number(usd_value(ps.provider_fee_max_base, s.source, view)),
                "included_in_receive_amount": True,
            }
            if s.action is Action.SWAP and s.pool_id:
                pool = view.pools[s.pool_id]
                entry.update(pool=pool.address, fee_pips=pool.clmm.fee_pips, ticks_crossed=ps.ticks_crossed)
            out.append(entry)
    return out


def network_gas(route: Route, view: MarketView) -> list[dict[str, Any]]:
    by_chain: dict[Chain, list[str]] = {}
    for s in route.steps:
        spec = PROVIDERS[s.provider]
        actions = spec.gas_actions
        if s.source.is_native or s.source.chain is Chain.SOLANA:
            actions = tuple(a for a in actions if a != "erc20_approve")
        by_chain.setdefault(s.source.chain, []).extend(actions)
        if spec.destination_action:
            by_chain.setdefault(s.target.chain, []).append(spec.destination_action)
    out = []
    for chain, chain_actions in by_chain.items():
        units = view.gas_units[chain]
        out.append(
            {
                "chain": chain.value,
                "actions": chain_actions,
                "estimated_units": sum(units.get(a, 0) for a in chain_actions),
                "unit": "compute_units" if chain is Chain.SOLANA else "gas",
                "priced": False,
            }
        )
    return out
