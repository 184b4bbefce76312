"""An issued quote as a record (for the stores shared between processes) and back: its exact JSON plus the
integer per-step amounts it was priced with; loading rebuilds the same domain objects."""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from routequote.core.assets import ASSETS
from routequote.core.intent import QuoteIntent
from routequote.core.pricing import PricedStep, RoutePricing
from routequote.core.quote import QuoteBody
from routequote.core.quote_issue import fill_json
from routequote.core.routes import ROUTES
from routequote.ports import IssuedQuote
from routequote.storage.store_faults import MalformedRecord

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


def _steps(pricing: RoutePricing) -> list[dict[str, str]]:
    # base amounts can exceed 2^53: decimal strings, as on the wire
    return [{k: str(getattr(ps, k)) for k in _STEP_INTS} for ps in pricing.steps]


def issued_to_record(issued: IssuedQuote) -> bytes:
    """One line of JSON with what the payload does not hold, a newline, then the payload's exact JSON (kept as
    answered, never re-encoded)."""
    pricing = issued.body.pricing
    head = {
        "quote_id": issued.quote_id,
        "ttl_seconds": issued.ttl_seconds,
        "market_version": pricing.market_version,
        "steps": _steps(pricing),
    }
    return orjson.dumps(head) + b"\n" + issued.json


# ---- compact records: a quote filled from a compiled issue, and what it shares with its body's other quotes ----


def shared_record(issued: IssuedQuote) -> bytes | None:
    """What every quote filled from `issued.template` shares: the response JSON's constant runs, the name of
    each value between them, and the pricing. None for a quote of the reference assembly."""
    if issued.template is None:
        return None
    runs, names = issued.template.json_runs()
    pricing = issued.body.pricing
    return orjson.dumps(
        {
            "market_version": pricing.market_version,
            "steps": _steps(pricing),
            "names": list(names),
            "runs": [run.decode() for run in runs],  # cut from orjson's output at ASCII tokens: UTF-8
        }
    )


def shared_key(prefix: str, shared: bytes) -> str:
    """Content-addressed: every worker that compiled the same issue stores it under the same key."""
    return prefix + hashlib.sha256(shared).hexdigest()


def compact_head(key: str, ttl_seconds: int) -> bytes:
    """A compact record is `C`, the key of the shared record, a newline, then the quote's own values as one JSON
    array (its TTL, then its per-quote values, which are JSON already): a few hundred bytes. This is its start,
    the same for every quote of one compiled issue and TTL (a store keeps it)."""
    return b"C%s\n[%d," % (key.encode(), ttl_seconds)


def compact_tail(issued: IssuedQuote) -> bytes:
    """The rest of a compact record: the quote's own values."""
    return b",".join(issued.values) + b"]"


def shared_key_of(compact: bytes) -> str | None:
    """The key of the shared record a compact record needs, or None for a whole record."""
    if compact[:1] != b"C":
        return None
    return compact[1:].partition(b"\n")[0].decode("ascii", "replace")


def whole_record(compact: bytes, shared: bytes) -> bytes:
    """The whole record (`issued_to_record`'s form) of a compact one and its shared record; ValueError when
    the shared record is not the one the compact record names."""
    key, _, own_line = compact[1:].partition(b"\n")
    if not key.endswith(hashlib.sha256(shared).hexdigest().encode()):
        raise ValueError("a shared quote record that is not the one named")
    own, common = orjson.loads(own_line), orjson.loads(shared)
    ttl_seconds, values = own[0], own[1:]
    json = fill_json(
        [run.encode() for run in common["runs"]], common["names"], [orjson.dumps(v) for v in values]
    )
    head = {
        "quote_id": values[0],
        "ttl_seconds": ttl_seconds,
        "market_version": common["market_version"],
        "steps": common["steps"],
    }
    return orjson.dumps(head) + b"\n" + json


def record_head(raw: bytes) -> dict[str, Any]:
    """The record's first line (its quote id and TTL are checked before the payload is decoded)."""
    head: dict[str, Any] = orjson.loads(raw.partition(b"\n")[0])
    return head


def issued_from_stored(raw: bytes, expires_at_monotonic: float) -> IssuedQuote:
    """`issued_from_record` for a record a store read back: one that does not parse (damaged, or left by an older
    release in the moments of an upgrade) is a fault of the store, `MalformedRecord` (503), never a 500."""
    try:
        return issued_from_record(raw, expires_at_monotonic)
    except (ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
        raise MalformedRecord("an issued-quote record that does not parse") from exc


def idempotency_answer(raw: bytes) -> tuple[str, dict[str, Any]]:
    """A stored prepare idempotency record (`{"request_sha256": ..., "response": {...}}`) read back; one that does
    not parse, or holds other types, is `MalformedRecord`."""
    try:
        record = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise MalformedRecord("an idempotency record that is not JSON") from exc
    if not isinstance(record, dict):
        raise MalformedRecord("an idempotency record that is not an object")
    request_sha256, response = record.get("request_sha256"), record.get("response")
    if not isinstance(request_sha256, str) or not isinstance(response, dict):
        raise MalformedRecord("an idempotency record without its request hash and response")
    return request_sha256, response


def stored_response(raw: bytes | str) -> dict[str, Any]:
    """A stored idempotent response (a JSON object) read back; `MalformedRecord` when it is not one."""
    try:
        response = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise MalformedRecord("a stored response that is not JSON") from exc
    if not isinstance(response, dict):
        raise MalformedRecord("a stored response that is not an object")
    return response


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
