"""REST v2 quote-only surface: GET /v2/capabilities (+ its linked route document), GET /v2/status,
POST /v2/quote, POST /v2/route-matrix (every route at one amount, one rate-limited request)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from routequote.contract.v2 import (
    CapabilitiesResponse,
    ErrorResponse,
    QuoteResponse,
    RouteDetailsResponse,
    RouteMatrixRequest,
    RouteMatrixResponse,
    StatusResponse,
)
from routequote.core.intent import QuoteIntent, parse_quote_request
from routequote.input_rules import loads_strict
from routequote.ratelimit import RateLimiter
from routequote.service import RouteQuoteService
from routequote.surfaces.direct_route import DirectRoute
from routequote.surfaces.http import (
    JsonBytes,
    answer,
    json_request_body,
    read_json_body,
    read_json_bytes,
    schema_ref,
)

_ERR = {"model": ErrorResponse}


class QuoteIntents:
    """QuoteRequest bodies already parsed, by their exact bytes: agents send the same body again and again,
    and the same bytes always give the same intent (`parse_quote_request(loads_strict(raw))`, a pure function).
    Only accepted bodies are kept; a refused one is parsed and refused every time."""

    def __init__(self, max_entries: int = 1024, max_body_bytes: int = 512) -> None:
        self.max_entries, self.max_body_bytes = max_entries, max_body_bytes
        self._seen: dict[bytes, QuoteIntent] = {}

    def parse(self, raw: bytes) -> QuoteIntent:
        found = self._seen.get(raw)
        if found is not None:
            return found
        intent = parse_quote_request(loads_strict(raw))
        if len(raw) <= self.max_body_bytes:
            if len(self._seen) >= self.max_entries:
                del self._seen[next(iter(self._seen))]  # the oldest first
            self._seen[raw] = intent
        return intent


def router(service: RouteQuoteService, limiter: RateLimiter) -> APIRouter:
    api = APIRouter(prefix="/v2", route_class=DirectRoute)  # every endpoint: (request) -> Response
    intents = QuoteIntents()

    # first: the quote is the hot path, and routes are matched in order
    @api.post(
        "/quote",
        operation_id="quoteMultichainRoute",
        response_model=QuoteResponse,
        responses={400: _ERR, 429: _ERR, 502: _ERR, 503: _ERR},
        summary="One fresh, fee-inclusive, non-binding, unranked route quote (moves no funds)",
        openapi_extra=json_request_body(schema_ref("QuoteRequest")),
    )
    async def quote(request: Request) -> Response:
        async def produce() -> JsonBytes:
            issued = await service.quote(intents.parse(await read_json_bytes(request)))
            return JsonBytes(issued.json)

        return await answer(limiter, request, produce)

    @api.post(
        "/route-matrix",
        operation_id="quoteRouteMatrix",
        response_model=RouteMatrixResponse,
        responses={400: _ERR, 429: _ERR, 502: _ERR, 503: _ERR},
        summary="Every directed route priced at one amount, in one request: indicative cells, not quotes",
        description=(
            "Each cell says what a quote of its route at this amount would say about receive, cost and time, from "
            "the same market data, or why the route cannot be priced now (the error a quote would answer). Cells "
            "carry no quote id and can never be approved or prepared: POST /v2/quote for the route you act on. "
            "Counts as one request against the rate limit."
        ),
        openapi_extra=json_request_body(RouteMatrixRequest.model_json_schema()),
    )
    async def route_matrix(request: Request) -> Response:
        async def produce() -> dict[str, Any]:
            return await service.route_matrix(await read_json_body(request))

        return await answer(limiter, request, produce)

    @api.get(
        "/capabilities",
        operation_id="getMultichainCapabilities",
        response_model=CapabilitiesResponse,
        responses={429: _ERR},
        summary="Route matrix, asset endpoints, live prepare availability",
    )
    async def capabilities(request: Request) -> Response:
        async def produce() -> dict[str, Any]:
            return service.capabilities()

        return await answer(limiter, request, produce)

    @api.get(
        "/capabilities/routes",
        operation_id="getRouteDetails",
        response_model=RouteDetailsResponse,
        responses={429: _ERR},
        summary="Per-route detail linked from capabilities: steps, prepare and session readiness and why",
    )
    async def route_details(request: Request) -> Response:
        async def produce() -> dict[str, Any]:
            return service.route_details()

        return await answer(limiter, request, produce)

    @api.get(
        "/status",
        operation_id="getMultichainStatus",
        response_model=StatusResponse,
        responses={429: _ERR, 503: _ERR},
        summary="Release status, market source health, route health and safety boundaries",
    )
    async def status(request: Request) -> Response:
        async def produce() -> dict[str, Any]:
            return service.status()

        return await answer(limiter, request, produce)

    return api
