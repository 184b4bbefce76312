"""Terminal rendering for the CLI (rich): exact token units, stacked so nothing is cut at 80 columns.

Numbers are never truncated: long values wrap (overflow "fold") instead of ending in an ellipsis."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from routequote.client.units import token_amount
from routequote.core.assets import ENDPOINT_KEYS

SHORT_CHAIN = {"solana": "sol", "base": "base", "arbitrum": "arb", "robinhood": "rh"}


def _amount(base: int | str, endpoint: str, base_units: bool) -> str:
    return f"{int(base)} base units {endpoint}" if base_units else token_amount(base, endpoint)


def _grid() -> Table:
    t = Table.grid(padding=(0, 2))
    t.add_column(no_wrap=True, style="bold")
    t.add_column(overflow="fold")
    return t


def render_quote(console: Console, q: dict[str, Any], *, base_units: bool = False) -> None:
    """One quote: header, each step stacked (in, out, minimum), receive, costs, ETA and expiry."""
    summary = q["direct_route_summary"]
    steps = summary["steps"]
    first, last = steps[0], steps[-1]
    console.print(f"[bold]{q['route']['route']}[/bold]  ${q['intent']['amount_usd']}")
    console.print(f"[dim]{q['market']['label']}[/dim]", overflow="fold")
    for s in steps:
        console.print()
        fee = "  [yellow]fee step: 1 bp service fee[/yellow]" if s["service_fee_bps"] else ""
        console.print(f"step {s['index']}  {s['provider']}  {s['from']} -> {s['to']}{fee}", overflow="fold")
        g = _grid()
        g.add_row("  in", _amount(s["expected_input_base"], s["from"], base_units))
        if s["minimum_input_base"] != s["expected_input_base"]:
            g.add_row("  in (min)", _amount(s["minimum_input_base"], s["from"], base_units))
        g.add_row("  out", _amount(s["expected_output_base"], s["to"], base_units))
        g.add_row("  out (min)", _amount(s["minimum_output_base"], s["to"], base_units))
        console.print(g)
    console.print()
    cost = q["cost_summary"]
    fee = cost["service_fee"]
    g = _grid()
    g.add_row("spend", _amount(first["expected_input_base"], first["from"], base_units))
    g.add_row("receive", f"{_amount(last['expected_output_base'], last['to'], base_units)} expected")
    g.add_row("", f"{_amount(last['minimum_output_base'], last['to'], base_units)} minimum")
    g.add_row(
        "value",
        f"≈ ${cost['expected_receive_value_usd']} expected, ≥ ${cost['minimum_receive_value_usd']} minimum",
    )
    g.add_row(
        "cost",
        f"expected ${cost['expected_total_cost_usd']} ({cost['expected_total_cost_percent']}%), "
        f"max ${cost['maximum_total_cost_usd']} ({cost['maximum_total_cost_percent']}%)",
    )
    g.add_row(
        "service fee",
        f"{_amount(fee['amount_base'], fee['token'], base_units)} (1 bp of step "
        f"{fee['step_index']}'s input, included)",
    )
    for f in cost["provider_fee_components"]:
        g.add_row(
            "provider fee",
            f"step {f['step_index']} {f['provider']} {f['kind']}: "
            f"{_amount(f['amount_base'], f['token'], base_units)}",
        )
    for gas in cost.get("network_gas", []):
        g.add_row("gas", f"{gas['chain']}: ~{gas['estimated_units']} {gas['unit']}, unpriced")
    eta = q["eta"]["estimated_time_seconds"]
    g.add_row("ETA", "unknown (no complete estimate)" if eta is None else f"{eta} s (modelled)")
    g.add_row("expires", f"in {q['ttl_seconds']} s ({q['expires_at']})")
    g.add_row("quote_id", str(q["quote_id"]))
    console.print(g)


def cost_bps(q: dict[str, Any]) -> Decimal:
    """Expected total cost in bps of the input value (from the quote's percent, read as a decimal)."""
    return (Decimal(str(q["cost_summary"]["expected_total_cost_percent"])) * 100).quantize(Decimal("0.1"))


def eta_text(seconds: int | None) -> str:
    if seconds is None:
        return "?"
    if seconds < 100:
        return f"{seconds}s"
    return f"{round(seconds / 60)}m" if seconds < 6000 else f"{round(seconds / 3600)}h"


def matrix_cell(q: dict[str, Any]) -> dict[str, Any]:
    return {"cost_bps": str(cost_bps(q)), "eta_seconds": q["eta"]["estimated_time_seconds"]}


def _label(endpoint: str, sep: str) -> str:
    chain, token = endpoint.split(":")
    return f"{SHORT_CHAIN[chain]}{sep}{token}"


def render_matrix(console: Console, cells: dict[str, dict[str, Any]], *, title: str) -> None:
    """The 9 x 9 matrix: rows are sources, columns targets; each cell `cost bps` over `ETA`."""
    t = Table(
        title=title,
        box=box.SIMPLE_HEAD,
        padding=(0, 1),
        pad_edge=False,
        show_edge=False,
        title_justify="left",
    )
    t.add_column("from \\ to", no_wrap=True)
    for dst in ENDPOINT_KEYS:
        t.add_column(_label(dst, "\n"), justify="right", no_wrap=True)
    for src in ENDPOINT_KEYS:
        row = [_label(src, ":")]
        for dst in ENDPOINT_KEYS:
            if src == dst:
                row.append("·")
                continue
            c = cells.get(f"{src}->{dst}")
            if c is None:
                row.append("")
            elif "error" in c:
                row.append("[red]n/a[/red]")
            else:
                row.append(f"{c['cost_bps']}\n[dim]{eta_text(c['eta_seconds'])}[/dim]")
        t.add_row(*row, end_section=False)
    console.print(t)
    console.print("cell: expected cost (bps of input value, gas unpriced) over ETA")
    for route, c in sorted(cells.items()):
        if "error" in c:
            console.print(f"[red]n/a[/red] {route}: {c['error']}", overflow="fold")
