"""REST v2 quote-only surface: GET /v2/capabilities (+ its linked route document), GET /v2/status,
POST /v2/quote."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from routequote.contract.v2 import (
    CapabilitiesResponse,
    ErrorResponse,
    QuoteResponse,
    RouteDetailsResponse,
    StatusResponse,
)
from routequote.core.intent import parse_quote_request
from routequote.core.quote import payload_json
from routequote.ratelimit import RateLimiter
from routequote.service import RouteQuoteService
from routequote.surfaces.direct_route import DirectRoute
from routequote.surfaces.http import JsonBytes, answer, read_json_body

_ERR = {"model": ErrorResponse}


def router(service: RouteQuoteService, limiter: RateLimiter) -> APIRouter:
    api = APIRouter(prefix="/v2", route_class=DirectRoute)  # every endpoint: (request) -> Response

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

    @api.post(
        "/quote",
        operation_id="quoteMultichainRoute",
        response_model=QuoteResponse,
        responses={400: _ERR, 429: _ERR, 502: _ERR, 503: _ERR},
        summary="One fresh, fee-inclusive, non-binding, unranked route quote (moves no funds)",
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/QuoteRequest"}}},
            }
        },
    )
    async def quote(request: Request) -> Response:
        async def produce() -> JsonBytes:
            issued = await service.quote(parse_quote_request(await read_json_body(request)))
            return JsonBytes(payload_json(issued.body, issued.payload))

        return await answer(limiter, request, produce)

    return api
