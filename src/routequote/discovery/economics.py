"""Route economics: for each of the 72 routes, what the pricing model says it costs at a few amounts
and from which amount it is price-recommended. Advisory only; never an execution gate.

Every number is computed by the same code a live quote uses (`price_route` + `quote_body`), so the
document agrees with quotes of the same route, amount and market version by construction, and a test
checks it does. `price_recommended_for_amount` is `QuoteBody.price_recommended` itself.
"""

from __future__ import annotations

from typing import Any

from routequote.core.intent import MAX_AMOUNT_USD, MIN_AMOUNT_USD, QuoteIntent
from routequote.core.market import MarketView
from routequote.core.pricing import SERVICE_FEE_BPS, price_route
from routequote.core.quote import PRICE_RECOMMENDATION_MAX_COST_BPS, QuoteBody, quote_body
from routequote.core.routes import ROUTES, Route
from routequote.errors import RouteQuoteError

ECONOMICS_VERSION = "routequote-route-economics-v1"
SAMPLE_AMOUNTS_USD = (1, 50, 250, 1000)
SEARCH_RESOLUTION_USD = 1


def _body(route: Route, amount_usd: int, view: MarketView) -> QuoteBody:
    intent = QuoteIntent(route.source, route.target, amount_usd)
    input_base = intent.input_base(view.prices_usd_e8[route.source.token])
    return quote_body(intent, price_route(route, input_base, view), view)


def _recommended(route: Route, amount_usd: int, view: MarketView) -> bool:
    try:
        return _body(route, amount_usd, view).price_recommended
    except RouteQuoteError:
        return False


def smallest_recommended_amount(route: Route, view: MarketView) -> tuple[int | None, str]:
    """The smallest whole-USD amount in 1..1000 at which the route is price-recommended, and how it was
    found. Binary search at 1 USD resolution (the rule, once true, stays true as the amount grows on
    every route of the shipped snapshot); the answer is then checked at A and A-1, and if that check
    fails the amounts are scanned one by one so the answer is exact whatever the market does."""
    lo, hi = MIN_AMOUNT_USD, MAX_AMOUNT_USD
    if not _recommended(route, hi, view):
        # either never recommended, or only below 1000: scan to be exact
        return _scan(route, view)
    while lo < hi:
        mid = (lo + hi) // 2
        if _recommended(route, mid, view):
            hi = mid
        else:
            lo = mid + 1
    if _recommended(route, lo, view) and (lo == MIN_AMOUNT_USD or not _recommended(route, lo - 1, view)):
        return lo, "binary_search_checked"
    return _scan(route, view)


def _scan(route: Route, view: MarketView) -> tuple[int | None, str]:
    for amount in range(MIN_AMOUNT_USD, MAX_AMOUNT_USD + 1, SEARCH_RESOLUTION_USD):
        if _recommended(route, amount, view):
            return amount, "linear_scan"
    return None, "linear_scan"


def _sample(route: Route, amount_usd: int, view: MarketView) -> dict[str, Any]:
    try:
        body = _body(route, amount_usd, view)
    except RouteQuoteError as exc:
        return {"amount_usd": amount_usd, "quotable": False, "reason_class": exc.reason_class}
    cost = body.cost_summary
    return {
        "amount_usd": amount_usd,
        "quotable": True,
        "expected_cost_bps": round(cost["expected_total_cost_percent"] * 100, 2),
        "maximum_cost_bps": round(cost["maximum_total_cost_percent"] * 100, 2),
        "expected_total_cost_usd": cost["expected_total_cost_usd"],
        "maximum_total_cost_usd": cost["maximum_total_cost_usd"],
        "service_fee_bps": SERVICE_FEE_BPS,
        "price_recommended_for_amount": body.price_recommended,
    }


def route_economics(view: MarketView) -> dict[str, Any]:
    routes = []
    starts: dict[str, int] = {}
    for route in ROUTES.values():
        start, method = smallest_recommended_amount(route, view)
        bucket = "none_up_to_1000" if start is None else ("from_1" if start == 1 else "above_1")
        starts[bucket] = starts.get(bucket, 0) + 1
        routes.append(
            {
                "route": route.key,
                "providers": list(route.provider_path),
                "step_count": len(route.steps),
                "classification": route.classification,
                "costs": [_sample(route, a, view) for a in SAMPLE_AMOUNTS_USD],
                "price_recommended_from_usd": start,
                "price_recommended_from_method": method,
            }
        )
    return {
        "version": ECONOMICS_VERSION,
        "advisory_only": True,
        "economic_guidance_blocks_execution": False,
        "amount_is_never_rejected_by_economic_guidance": True,
        "not_a_best_price_guarantee": True,
        "fresh_quote_and_caller_decision_control": True,
        "currency": "USD",
        "route_count": len(routes),
        "sample_amounts_usd": list(SAMPLE_AMOUNTS_USD),
        "cost_definition": (
            "token-path cost (input USD minus receive USD at the reference prices, plus provider native fees) in "
            "basis points of amount_usd; network gas excluded (unpriced); expected path and minimum path"
        ),
        "price_recommendation_rule": {
            "rule": "maximum token-path cost below 1% of amount_usd",
            "maximum_cost_bps_exclusive": PRICE_RECOMMENDATION_MAX_COST_BPS,
            "same_code_as": "QuoteResponse.price_recommended_for_amount",
            "search_range_usd": [MIN_AMOUNT_USD, MAX_AMOUNT_USD],
            "search_resolution_usd": SEARCH_RESOLUTION_USD,
            "search_method": (
                "binary search over whole USD amounts, checked at the result and one USD below; "
                "linear scan when that check fails or the rule does not hold at USD 1000"
            ),
        },
        "advisory_start_distribution": starts,
        "data_source": {
            "source": view.source,
            "live": view.live,
            "data_as_of": view.as_of,
            "market_version": view.version,
            "label": (
                "live market data"
                if view.live
                else f"modelled from the embedded market snapshot of {view.as_of}; not live"
            ),
        },
        "routes": routes,
        "server_signing": False,
        "server_submission": False,
    }
