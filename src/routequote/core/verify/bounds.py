"""The receipt's `bounds` block (core/bounds.py): consistent with what the action itself shows, and refused when
modelled unless the caller explicitly accepts modelled bounds."""

from __future__ import annotations

from typing import Any

from routequote.core.bounds import (
    ACCEPT_HINT,
    ACCEPTED_CODE,
    BASIS_LIVE,
    BASIS_MODELLED,
    REFUSAL_CODE,
    SNAPSHOT_POOL_STATE,
    SNAPSHOT_SOURCE,
    bounds_sentence,
    refusal_message,
)
from routequote.core.routes import Step
from routequote.core.verify.common import Checker


def check_bounds(
    c: Checker, action: dict[str, Any], receipt: dict[str, Any], step: Step, *, accept_modelled: bool
) -> None:
    bounds = receipt.get("bounds")
    if bounds is None:  # a bundle that does not say where its numbers came from is taken as modelled
        _modelled(
            c,
            {"basis": BASIS_MODELLED, "modelled_parts": ["unknown: the receipt has no bounds block"]},
            accept_modelled,
        )
        return
    parts = bounds.get("modelled_parts") if isinstance(bounds, dict) else None
    if (
        not isinstance(bounds, dict)
        or bounds.get("basis") not in (BASIS_LIVE, BASIS_MODELLED)
        or not isinstance(parts, list)
        or not all(isinstance(p, str) for p in parts)
    ):
        c.fail("bounds_provenance_malformed", "safety_receipt.bounds must state basis and modelled_parts")
        return
    modelled = bounds["basis"] == BASIS_MODELLED
    # the verifier does not take the server's word: what the action itself shows to be modelled must be named
    shown = []
    if action.get("pool_state_source") == SNAPSHOT_POOL_STATE or "poolAccountsFromSnapshotState" in action:
        shown.append(f"solana_tick_arrays:{step.pool_id}")
    if bounds.get("market_source") == SNAPSHOT_SOURCE:
        shown.append("market:embedded_snapshot")
    c.expect(
        modelled == bool(parts)
        and not (shown and not modelled)
        and all(p in parts for p in shown if p.startswith("solana_tick_arrays:"))
        and not (bounds.get("live") is True and bounds.get("market_source") == SNAPSHOT_SOURCE),
        "bounds_provenance_inconsistent",
        "safety_receipt.bounds contradicts the action (a snapshot source or snapshot pool state under a live "
        "basis, or a basis that does not match its modelled_parts)",
    )
    if modelled:
        _modelled(c, bounds, accept_modelled)


def _modelled(c: Checker, bounds: dict[str, Any], accept_modelled: bool) -> None:
    if accept_modelled:
        c.warn(ACCEPTED_CODE, f"accepted as modelled ({ACCEPT_HINT}): {bounds_sentence(bounds)}")
    else:
        c.fail(REFUSAL_CODE, refusal_message(bounds))
