"""The instance's execution mode (`core.bounds.execution_mode`) read off its market adapter: which market it
prices from, whether the live market falls back to the snapshot, and the snapshot's date."""

from __future__ import annotations

from typing import Any

from routequote.core.bounds import execution_mode
from routequote.core.market import MarketView
from routequote.ports import MarketData


def market_execution_mode(market: MarketData, view: MarketView | None = None) -> dict[str, Any]:
    """Capabilities (no view: the configured mode) and the safety document (its view: the components that
    fall back right now)."""
    config = getattr(market, "config", None)
    fallback = getattr(config, "fallback", "none") == "embedded"
    doc = getattr(market, "document", None) or getattr(market, "snapshot_document", None)
    as_of = str(doc.get("as_of")) if isinstance(doc, dict) and doc.get("as_of") is not None else None
    if as_of is None and view is not None and not view.live:
        as_of = view.as_of
    return execution_mode(
        market.label,
        fallback_to_snapshot=fallback,
        snapshot_as_of=as_of,
        fallback_components=view.fallback_components if view is not None else (),
    )
