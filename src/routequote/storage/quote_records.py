"""An issued quote as a record (for the stores shared between processes) and back: its exact JSON plus the
integer per-step amounts it was priced with; loading rebuilds the same domain objects."""

from __future__ import annotations

from typing import Any

import orjson

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


def issued_to_record(issued: IssuedQuote) -> bytes:
    """One line of JSON with what the payload does not hold, a newline, then the payload's exact JSON (kept as
    answered, never re-encoded)."""
    pricing = issued.body.pricing
    head = {
        "quote_id": issued.quote_id,
        "ttl_seconds": issued.ttl_seconds,
        "market_version": pricing.market_version,
        # base amounts can exceed 2^53: decimal strings, as on the wire
        "steps": [{k: str(getattr(ps, k)) for k in _STEP_INTS} for ps in pricing.steps],
    }
    return orjson.dumps(head) + b"\n" + issued.json


def record_head(raw: bytes) -> dict[str, Any]:
    """The record's first line (its quote id and TTL are checked before the payload is decoded)."""
    head: dict[str, Any] = orjson.loads(raw.partition(b"\n")[0])
    return head


def issued_or_none(raw: bytes, expires_at_monotonic: float) -> IssuedQuote | None:
    """`issued_from_record`, or None for a record this version cannot read (one left by an older release
    across a restart, or a damaged one): binding to it fails closed, as for an expired quote."""
    try:
        return issued_from_record(raw, expires_at_monotonic)
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def issued_from_record(raw: bytes, expires_at_monotonic: float) -> IssuedQuote:
    head_json, newline, json = raw.partition(b"\n")
    if not newline:
        raise ValueError("an issued-quote record is a head line and the payload")
    head = orjson.loads(head_json)
    payload = orjson.loads(json)
    route = ROUTES[payload["route"]["route"]]
    intent = QuoteIntent(
        ASSETS[payload["intent"]["from"]], ASSETS[payload["intent"]["to"]], payload["intent"]["amount_usd"]
    )
    steps = tuple(
        PricedStep(step=step, **{k: int(v) for k, v in raw_step.items()})
        for step, raw_step in zip(route.steps, head["steps"], strict=True)
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
        pricing=RoutePricing(route, head["market_version"], steps),
    )
    if payload["quote_id"] != head["quote_id"]:
        raise ValueError("an issued-quote record whose head and payload disagree")
    return IssuedQuote.loaded(payload, json, intent, route, body, expires_at_monotonic)
