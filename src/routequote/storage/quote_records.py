"""An issued quote as a JSON-able record (for the stores shared between processes) and back: its exact payload
plus the integer per-step amounts it was priced with; loading rebuilds the same domain objects."""

from __future__ import annotations

from typing import Any

from routequote.core.assets import ASSETS
from routequote.core.intent import QuoteIntent
from routequote.core.pricing import PricedStep, RoutePricing
from routequote.core.quote import QuoteBody
from routequote.core.routes import ROUTES
from routequote.ports import IssuedQuote

_STEP_INTS = (
    "expected_input_base",
    "minimum_input_base",
    "expected_output_base",
    "minimum_output_base",
    "service_fee_base",
    "service_fee_minimum_path_base",
    "provider_fee_base",
    "provider_fee_max_base",
    "native_fee_wei",
    "native_fee_max_wei",
    "ticks_crossed",
    "tolerance_bps",
)
_DYNAMIC_ROUTE_KEYS = ("quote_latency_ms", "server_signing", "server_submission")


def issued_to_record(issued: IssuedQuote) -> dict[str, Any]:
    pricing = issued.body.pricing
    return {
        "payload": issued.payload,
        "market_version": pricing.market_version,
        # base amounts can exceed 2^53: decimal strings, as on the wire
        "steps": [{k: str(getattr(ps, k)) for k in _STEP_INTS} for ps in pricing.steps],
    }


def issued_from_record(record: dict[str, Any], expires_at_monotonic: float) -> IssuedQuote:
    payload = record["payload"]
    route = ROUTES[payload["route"]["route"]]
    intent = QuoteIntent(
        ASSETS[payload["intent"]["from"]], ASSETS[payload["intent"]["to"]], payload["intent"]["amount_usd"]
    )
    steps = tuple(
        PricedStep(step=step, **{k: int(v) for k, v in raw.items()})
        for step, raw in zip(route.steps, record["steps"], strict=True)
    )
    body = QuoteBody(
        intent=payload["intent"],
        offer=payload["offer"],
        route_fields={k: v for k, v in payload["route"].items() if k not in _DYNAMIC_ROUTE_KEYS},
        risk=payload["risk"],
        cost_summary=payload["cost_summary"],
        eta=payload["eta"],
        market=payload["market"],
        summary=payload["direct_route_summary"],
        summary_sha256=payload["continuation_v3"]["direct_route_summary_sha256"],
        price_recommended=payload["price_recommended_for_amount"],
        route=route,
        pricing=RoutePricing(route, record["market_version"], steps),
    )
    return IssuedQuote(payload, intent, route, body, expires_at_monotonic)
