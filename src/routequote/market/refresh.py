"""`routequote market refresh`: rebuild the embedded snapshot file from live sources.

Every live source is read once (concurrently, each behind its own timeout); the readings replace the
matching parts of the current snapshot document, and a diff summary says how far prices, pool prices,
in-range liquidity and bridge fees moved. A source that fails leaves its part of the document as it was
and is reported; with `strict` (the default) nothing is written when any source failed.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from routequote.core.assets import ASSETS
from routequote.core.clmm import ClmmPool
from routequote.core.market import MarketView, market_view_from_dict
from routequote.market.live import LiveMarket, pool_document
from routequote.ports import Clock


@dataclass
class Change:
    what: str
    old: str
    new: str
    moved_percent: float | None


@dataclass
class RefreshResult:
    document: dict[str, Any]
    changes: list[Change] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)  # source -> reason
    refreshed: list[str] = field(default_factory=list)


def _pct(old: Fraction, new: Fraction) -> float | None:
    return None if old == 0 else float((new - old) / old * 100)


def pool_price(pool: ClmmPool, token0: str, token1: str) -> Fraction:
    """token1 per token0, in whole tokens (from the pool's sqrt price)."""
    q = 96 if pool.venue == "uniswap_v3" else 64
    raw = Fraction(pool.sqrt_price * pool.sqrt_price, 1 << (2 * q))
    return raw * ASSETS[token0].one / ASSETS[token1].one


def apply_view(old_doc: dict[str, Any], view: MarketView, clock: Clock) -> RefreshResult:
    """A new snapshot document: `old_doc` with every available live number of `view` substituted."""
    old = market_view_from_dict(old_doc, source="embedded_snapshot", live=False)
    doc = json.loads(json.dumps(old_doc))
    res = RefreshResult(doc)
    for token, e8 in sorted(view.prices_usd_e8.items()):
        if f"price:{token.value}" in view.unavailable:
            continue
        before = old.prices_usd_e8.get(token, 0)
        doc["prices_usd_e8"][token.value] = str(e8)
        res.changes.append(
            Change(
                f"price {token.value}/USD",
                f"{before / 1e8:,.4f}",
                f"{e8 / 1e8:,.4f}",
                _pct(Fraction(before), Fraction(e8)),
            )
        )
    by_id = {p["pool_id"]: i for i, p in enumerate(doc["pools"])}
    for pool_id, ps in sorted(view.pools.items()):
        if pool_id in view.unavailable or pool_id not in by_id:
            continue
        prev = old.pools[pool_id]
        new_doc = pool_document(ps)
        keep = {k: v for k, v in doc["pools"][by_id[pool_id]].items() if k not in new_doc}
        doc["pools"][by_id[pool_id]] = {**new_doc, **keep, "address": ps.address or prev.address}
        p_old = pool_price(prev.clmm, prev.token0, prev.token1)
        p_new = pool_price(ps.clmm, ps.token0, ps.token1)
        res.changes.append(
            Change(f"{pool_id} price", f"{float(p_old):,.6g}", f"{float(p_new):,.6g}", _pct(p_old, p_new))
        )
        res.changes.append(
            Change(
                f"{pool_id} in-range liquidity",
                str(prev.clmm.liquidity),
                str(ps.clmm.liquidity),
                _pct(Fraction(prev.clmm.liquidity), Fraction(ps.clmm.liquidity)),
            )
        )
    if "circle_cctp" not in view.unavailable:
        for dom, fee in sorted(view.cctp.fast_fee_bps_milli.items()):
            before = old.cctp.fast_fee_bps_milli.get(dom, 0)
            doc["cctp"]["fast_fee_bps_milli"][str(dom)] = fee
            res.changes.append(
                Change(
                    f"CCTP fast fee, domain {dom} (bp)",
                    f"{before / 1000:g}",
                    f"{fee / 1000:g}",
                    _pct(Fraction(before), Fraction(fee)),
                )
            )
    if "across_intent_bridge" not in view.unavailable:
        a = view.across
        for key, before, after in (
            ("lp_fee_ppm", old.across.lp_fee_ppm, a.lp_fee_ppm),
            ("relayer_capital_fee_ppm", old.across.relayer_capital_fee_ppm, a.relayer_capital_fee_ppm),
            ("relayer_gas_fee_base", old.across.relayer_gas_fee_base, a.relayer_gas_fee_base),
            ("fill_seconds", old.across.fill_seconds, a.fill_seconds),
        ):
            doc["across"][key] = str(after) if key == "relayer_gas_fee_base" else after
            res.changes.append(
                Change(f"Across {key}", str(before), str(after), _pct(Fraction(before), Fraction(after)))
            )
    if "paxos_usdg_layerzero_oft" not in view.unavailable:
        before = old.oft.native_fee_wei
        doc["oft"]["native_fee_wei"] = str(view.oft.native_fee_wei)
        res.changes.append(
            Change(
                "LayerZero OFT native fee (wei)",
                str(before),
                str(view.oft.native_fee_wei),
                _pct(Fraction(before), Fraction(view.oft.native_fee_wei)),
            )
        )
    now = clock.now().isoformat().replace("+00:00", "Z")
    doc["as_of"] = view.as_of
    doc["version"] = f"refreshed-{view.version}"
    doc["notes"] = [
        f"Refreshed from live sources at {now} (data as of {view.as_of}); pool tick windows are those the live "
        "reader fetched. Components whose source failed keep the previous snapshot's values.",
        *[n for n in view.notes if not n.startswith("Live market data")],
        *old_doc.get("notes", []),
    ]
    return res


async def refresh_snapshot(
    market: LiveMarket, old_doc: dict[str, Any], progress: Any | None = None
) -> RefreshResult:
    """Read every live source once (`progress`: a rich Progress to advance per source) and apply the view."""
    sources = market.ensure_sources()
    task = progress.add_task("reading live sources", total=len(sources)) if progress is not None else None

    async def one(src: Any) -> None:
        await market.refresh_source(src)
        if progress is not None:
            progress.update(task, advance=1, description=f"read {src.name}")

    await asyncio.gather(*(one(s) for s in sources))
    view = await market.view()
    res = apply_view(old_doc, view, market.clock)
    res.failed = {s.name: s.error or "failed" for s in market.sources if s.reading is None}
    res.failed.update({f"unconfigured:{k}": v for k, v in market.static_unavailable.items()})
    res.refreshed = [s.name for s in market.sources if s.reading is not None]
    return res


def write_document(path: Path, doc: dict[str, Any]) -> None:
    path.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n")
