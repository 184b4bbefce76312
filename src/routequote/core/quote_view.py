"""The decision view of a quote: what an agent needs to compare routes and go on, in about 1 KB.

Pure, and built from the issued QuoteResponse alone, so every surface that offers it (MCP /mcp/v2 and stdio,
A2A, the text block of /mcp, the caller-side MCP) shows the same thing and it never disagrees with the full
quote: the ids and hashes are copied, never recomputed. Exact amounts are decimal strings: base units, and the
token amount those units make (no float on the way). USD figures stay the quote's display numbers.
"""

from __future__ import annotations

from typing import Any

from routequote.core.assets import ASSETS

# the bound every surface's decision result is held to (tests assert it for all 72 routes)
DECISION_VIEW_MAX_BYTES = 1024
DETAIL_DECISION = "decision"
DETAIL_FULL = "full"
DETAILS = (DETAIL_DECISION, DETAIL_FULL)
DECISION_NOTE = "Unranked, expiring: never auto-select. Nothing signed or submitted."


def exact_token_amount(base: int, decimals: int) -> str:
    """`base` units of a token with `decimals` decimals as an exact decimal string (no trailing zeros)."""
    whole, frac = divmod(base, 10**decimals)
    if frac == 0:
        return str(whole)
    return f"{whole}.{frac:0{decimals}d}".rstrip("0")


def _amount(base: str, endpoint: str) -> str:
    return exact_token_amount(int(base), ASSETS[endpoint].decimals)


def _modelled(quote: dict[str, Any]) -> str:
    """What in this quote is a model rather than a live reading, in words."""
    market = quote["market"]
    out = []
    if not market["live"]:
        out.append(f"prices, bounds: snapshot of {market['data_as_of']}, not live")
    fallbacks = market.get("fallback_components") or []
    if fallbacks:
        out.append(f"prices of {len(fallbacks)} components: snapshot (market.fallback_components)")
    out.append("eta" if quote["eta"]["complete_route_estimate"] else "eta: none")
    return "; ".join(out)


def _unpriced(costs: list[str]) -> str:
    """`["network_gas:base", "network_gas:solana", "solana_account_rent"]` -> "gas: base, solana; solana rent"."""
    gas = [c.removeprefix("network_gas:") for c in costs if c.startswith("network_gas:")]
    other = [
        c.replace("solana_account_rent", "solana rent") for c in costs if not c.startswith("network_gas:")
    ]
    return "; ".join(([f"gas: {', '.join(gas)}"] if gas else []) + other)


def _path(steps: list[dict[str, Any]]) -> str:
    """Each step's provider and the endpoint it reaches: `p1>chain:TOKEN>p2>...>pN`."""
    hops = [f"{s['provider']}>{s['to']}" for s in steps[:-1]]
    return ">".join([*hops, steps[-1]["provider"]])


def decision_view(quote: dict[str, Any]) -> dict[str, Any]:
    """The decision view of one issued QuoteResponse (a dict as the service returns it)."""
    summary = quote["direct_route_summary"]
    steps = summary["steps"]
    source, target = summary["from"], summary["to"]
    cont = quote["continuation_v3"]
    cost = quote["cost_summary"]
    return {
        "quote_id": quote["quote_id"],
        "route": summary["route"],
        "path": _path(steps),
        "pay": {
            "amount_usd": quote["intent"]["amount_usd"],
            "amount": _amount(steps[0]["expected_input_base"], source),
        },
        "receive": {
            "expected": _amount(steps[-1]["expected_output_base"], target),
            "minimum": _amount(steps[-1]["minimum_output_base"], target),
            "minimum_base": steps[-1]["minimum_output_base"],
        },
        "cost_usd": {
            "expected": cost["expected_total_cost_usd"],
            "maximum": cost["maximum_total_cost_usd"],
            "excludes": _unpriced(cost["unpriced_costs"]),
        },
        "eta_seconds": quote["eta"]["estimated_time_seconds"],
        "expires_at": quote["expires_at"],
        "ttl_seconds": quote["ttl_seconds"],
        "modelled": _modelled(quote),
        "next": {
            "modes": cont["allowed_modes"],
            "prepare_ready": quote["execution"]["first_unsigned_action_supported"],
            "wallets": cont["required_wallet_chains"],
            "event_signer": cont["event_signer_public_required"],
            "quote_fingerprint": cont["quote_fingerprint"],
        },
        "note": DECISION_NOTE,
    }
