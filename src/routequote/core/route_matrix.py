"""The route matrix: every directed route priced at one amount, in one answer (`POST /v2/route-matrix`).

A cell is what a quote of that route at that amount says about cost, receive and time, from the same priced
body (`service.RouteQuoteService._priced_body`), without a quote's identity: no quote id, no fingerprint, no
expiry. Nothing in a matrix can be approved or prepared; a caller who wants to act asks `POST /v2/quote` for
the route. A route that cannot be priced now has a cell that says why, with the error a quote would answer."""

from __future__ import annotations

from typing import Any

from routequote.core.field_rules import object_fields
from routequote.core.intent import parse_amount_usd
from routequote.core.quote import SERVER_FLAGS, QuoteBody
from routequote.errors import RouteQuoteError

MATRIX_VERSION = "routequote-route-matrix-v1"
MATRIX_FIELDS = ("amount_usd",)
NOT_A_QUOTE = (
    "indicative: each cell is priced as a quote of its route at this amount would be, from the same market "
    "data, but carries no quote id and cannot be approved, prepared or run as a session; ask POST /v2/quote "
    "for the route you want to act on"
)


def parse_matrix_request(body: Any) -> int | float:
    """`{"amount_usd": <number>}` under the quote's own amount rule (one home: core.intent)."""
    fields = object_fields(body, MATRIX_FIELDS)
    return parse_amount_usd(fields["amount_usd"])


def priced_cell(body: QuoteBody, *, prepare_blocker: str | None) -> dict[str, Any]:
    cost, offer = body.cost_summary, body.offer
    return {
        "route": body.route.key,
        "priced": True,
        "estimated_input_base": str(body.pricing.input_base),
        "expected_output_base": offer["expected_output_base"],
        "minimum_output_base": offer["minimum_output_base"],
        "expected_total_cost_percent": cost["expected_total_cost_percent"],
        "maximum_total_cost_percent": cost["maximum_total_cost_percent"],
        "small_amount_warning": cost["small_amount_warning"],
        "estimated_time_seconds": body.eta["estimated_time_seconds"],
        "first_unsigned_action_supported": prepare_blocker is None,
        "blocker": prepare_blocker,
    }


def unpriced_cell(route_key: str, error: RouteQuoteError) -> dict[str, Any]:
    """The route's cell when it cannot be priced now: the ErrorResponse a quote of it would answer."""
    return {"route": route_key, "priced": False, **error.body()}


def matrix_document(
    amount_usd: int | float, market: dict[str, Any], cells: list[dict[str, Any]]
) -> dict[str, Any]:
    priced = sum(1 for c in cells if c["priced"])
    return {
        "version": MATRIX_VERSION,
        "amount_usd": amount_usd,
        "indicative_only": True,
        "note": NOT_A_QUOTE,
        "market": market,
        "route_count": len(cells),
        "priced_routes": priced,
        "unpriced_routes": len(cells) - priced,
        "routes": cells,
        **SERVER_FLAGS,
    }
