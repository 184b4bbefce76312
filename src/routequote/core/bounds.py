"""Where the numbers an action enforces came from: the `bounds` block of every safety receipt, and the one
rule about it.

An action's bounds (minimum output, CCTP maxFee, Across output amount, LayerZero native fee, Solana tick
arrays) are priced from a market. If any of them came wholly or partly from the embedded snapshot (the
`embedded` market, a component the live market filled from the snapshot under
`ROUTEQUOTE_MARKET_FALLBACK=embedded`, Solana tick arrays chosen from the snapshot's pool state, or a
session step held to minimums its approved quote priced from the snapshot), the block says `basis:
"modelled"` and names each such part. A caller's verifier refuses a modelled action (`bounds_modelled_not_live`)
unless the caller explicitly accepts it (a test, a local chain): a week-old number is a worse bound than the
market justifies when prices rose, and a reverted transaction when they fell.

Shape (hashed with the receipt): `{basis: "live" | "modelled", market_source, live, data_as_of,
modelled_parts: [...], snapshot_as_of, statement}`. `market_source` / `live` / `data_as_of` are the pricing
market's own label (as in the quote's `market` block); `basis` is about this action's bounds only, so a live
market with a fallback component this step does not use still gives `basis: "live"`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from routequote.core.routes import Step

REFUSAL_CODE = "bounds_modelled_not_live"
ACCEPTED_CODE = "bounds_modelled_accepted"
BASIS_LIVE = "live"
BASIS_MODELLED = "modelled"
SNAPSHOT_SOURCE = "embedded_snapshot"
SNAPSHOT_POOL_STATE = "snapshot"  # the action head's `pool_state_source` for a snapshot-built Solana swap
ACCEPT_HINT = "--accept-modelled-bounds / accept_modelled_bounds=True / acceptModelledBounds"


def step_components(step: Step) -> tuple[str, ...]:
    """The market component a step's bounds are priced from: its pool, or its bridge's fee model."""
    return (step.pool_id or step.provider.value,)


def market_label(
    source: str, live: bool, data_as_of: str, fallback_components: Sequence[str] = ()
) -> dict[str, Any]:
    """A market's label as the quote's `market` block carries it (the fallback list only when non-empty)."""
    label: dict[str, Any] = {"source": source, "live": live, "data_as_of": data_as_of}
    if fallback_components:
        label["fallback_components"] = sorted(fallback_components)
    return label


def modelled_components(market: Mapping[str, Any], components: Iterable[str]) -> list[str]:
    """Of `components`, those `market` (a quote's `market` block or `market_label`) priced from the snapshot.
    A live market: none. A live market with fallbacks: the listed ones. Anything else (the embedded snapshot,
    or a non-live label without a list): all of them."""
    if market.get("live") is True:
        return []
    fallback = market.get("fallback_components")
    if market.get("source") != SNAPSHOT_SOURCE and isinstance(fallback, list):
        return [c for c in components if c in fallback]
    return list(components)


def bounds_block(
    market: Mapping[str, Any],
    step: Step,
    *,
    pool_state_from_snapshot: bool = False,
    approved_quote_market: Mapping[str, Any] | None = None,
    approved_quote_components: Sequence[str] = (),
) -> dict[str, Any]:
    """The receipt's `bounds` for an action of `step` priced on `market`. `pool_state_from_snapshot`: a Solana
    swap whose tick arrays were chosen from the snapshot's pool state; `approved_quote_market` / `_components`
    name the approved quote a session step is held to (its step minimums) and the components those minimums
    were priced from."""
    parts = [f"market:{c}" for c in modelled_components(market, step_components(step))]
    if pool_state_from_snapshot:
        parts.append(f"solana_tick_arrays:{step.pool_id}")
    held = (
        modelled_components(approved_quote_market, approved_quote_components)
        if approved_quote_market is not None
        else []
    )
    parts += [f"approved_quote:{c}" for c in held]
    parts = sorted(set(parts))
    snapshot_as_of = None
    if parts:
        snapshot_as_of = str(market.get("data_as_of"))
        if held and not modelled_components(market, step_components(step)) and approved_quote_market:
            snapshot_as_of = str(approved_quote_market.get("data_as_of"))
    block = {
        "basis": BASIS_MODELLED if parts else BASIS_LIVE,
        "market_source": market.get("source"),
        "live": market.get("live") is True,
        "data_as_of": str(market.get("data_as_of")),
        "modelled_parts": parts,
        "snapshot_as_of": snapshot_as_of,
    }
    block["statement"] = bounds_sentence(block)
    return block


def bounds_sentence(bounds: Mapping[str, Any]) -> str:
    """The block in words, built from its typed fields (never from a server's free text)."""
    if bounds.get("basis") == BASIS_LIVE:
        return f"bounds are from live market data as of {bounds.get('data_as_of')}"
    parts = bounds.get("modelled_parts")
    named = f" ({', '.join(str(p) for p in parts)})" if isinstance(parts, list) and parts else ""
    return (
        f"bounds are modelled from the embedded snapshot of {bounds.get('snapshot_as_of') or 'an unknown date'}, "
        f"not live market data{named}"
    )


def receipt_bounds(bundle: Any) -> dict[str, Any] | None:
    """The `bounds` block of a bundle's safety receipt, or None where it has none (a CCTP destination mint:
    its amounts come from the attested message, not from a market)."""
    if not isinstance(bundle, dict):
        return None
    action = bundle.get("unsigned_action")
    receipt = action.get("safety_receipt") if isinstance(action, dict) else None
    bounds = receipt.get("bounds") if isinstance(receipt, dict) else None
    return bounds if isinstance(bounds, dict) else None


def refusal_message(bounds: Mapping[str, Any]) -> str:
    return (
        f"{bounds_sentence(bounds)}. A modelled minimum may be "
        "worse than the market justifies (the difference can be taken from you) or revert (the gas is lost). "
        f"Refused; accept it explicitly only for tests and local chains ({ACCEPT_HINT})"
    )


ACCEPT_OPTIONS = [
    "routequote verify-action --accept-modelled-bounds",
    "routequote.verify.verify_bundle(..., accept_modelled_bounds=True)",
    "RouteQuoteClient(..., accept_modelled_bounds=True) / routequote session create --accept-modelled-bounds",
    "A2A acceptModelledBounds: true / MCP v2 accept_modelled_bounds: true",
]


def execution_mode(
    market: str,
    *,
    fallback_to_snapshot: bool,
    snapshot_as_of: str | None,
    fallback_components: Sequence[str] = (),
) -> dict[str, Any]:
    """Which execution mode an instance is in: whether its actions' bounds are live or modelled (capabilities
    and the safety document). `market` is the market's label ("live", "embedded_snapshot", ...)."""
    live = market == "live"
    if not live:
        statement = (
            f"every action's bounds are modelled from the embedded market snapshot of {snapshot_as_of}, not live "
            "market data: verifiers refuse them unless the caller explicitly accepts modelled bounds"
        )
    elif fallback_components:
        statement = (
            "bounds are priced from live market data, except "
            + ", ".join(sorted(fallback_components))
            + " (priced from the embedded snapshot because the live source failed): an action using it says "
            "basis modelled and is refused unless accepted"
        )
    elif fallback_to_snapshot:
        statement = (
            "bounds are priced from live market data; a component whose live source fails is priced from the "
            "embedded snapshot (ROUTEQUOTE_MARKET_FALLBACK=embedded) and an action using it says basis modelled"
        )
    else:
        statement = (
            "bounds are priced from live market data; a component whose live source fails makes its routes "
            "unavailable (no fallback)"
        )
    return {
        "bounds": BASIS_LIVE if live else BASIS_MODELLED,
        "market": market,
        "snapshot_as_of": None if live else snapshot_as_of,
        "fallback_to_snapshot": fallback_to_snapshot if live else False,
        "fallback_components_now": sorted(fallback_components),
        "receipt_field": "unsigned_action.safety_receipt.bounds",
        "verifiers_refuse_modelled_bounds_by_default": True,
        "refusal_code": REFUSAL_CODE,
        "accept_options": ACCEPT_OPTIONS,
        "statement": statement,
    }
