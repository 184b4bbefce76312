"""Legacy REST v1: GET /v1/status and POST /v1/quote for the two original corridors (solana SOL to
native ETH on base or on arbitrum), with their own OpenAPI document at GET /openapi.json.

The v1 shapes are produced by `routequote.surfaces.legacy` (shared with the MCP legacy tools) over the
same `RouteQuoteService`; this module only adds HTTP, rate limits and the OpenAPI description.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Request
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import Response

from routequote import __version__
from routequote.contract.v2 import ErrorResponse
from routequote.ratelimit import RateLimiter
from routequote.service import RouteQuoteService
from routequote.surfaces.errors import json_response
from routequote.surfaces.http import answer, read_json_body
from routequote.surfaces.legacy import DEFAULT_DESTINATION, legacy_quote, legacy_status

V1_OPENAPI_VERSION = "1.0.0-legacy"
_ERR = {"model": ErrorResponse}


class LegacyQuoteRequest(BaseModel):
    """solana SOL -> native ETH on `destination_chain`; nothing else is accepted."""

    model_config = ConfigDict(extra="forbid")
    amount_usd: int = Field(ge=1, le=1000, description="Whole USD notional; no funds move")
    destination_chain: Literal["base", "arbitrum"] = Field(DEFAULT_DESTINATION, description="Default base")


class LegacyCorridor(BaseModel):
    model_config = ConfigDict(extra="allow")
    corridor: str
    destination_chain: Literal["base", "arbitrum"]
    quotable: bool
    prepare_ready: bool


class LegacyStatusResponse(BaseModel):
    model_config = ConfigDict(extra="allow")
    api_version: str
    status: Literal["capped_public_agent_release"]
    corridors: list[LegacyCorridor] = Field(min_length=2, max_length=2)
    server_signing: Literal[False]
    server_submission: Literal[False]


class LegacyQuoteResponse(BaseModel):
    """The v2 quote of the corridor, untouched (its hashes still verify), under `quote`."""

    model_config = ConfigDict(extra="allow")
    api_version: str
    status: Literal["capped_public_agent_release"]
    corridor: str
    destination_chain: Literal["base", "arbitrum"]
    current_interface: str
    quote: dict[str, Any]
    server_signing: Literal[False]
    server_submission: Literal[False]


def router(service: RouteQuoteService, limiter: RateLimiter) -> APIRouter:
    """The /v1 routes and GET /openapi.json describing exactly them."""
    v1 = APIRouter(prefix="/v1", tags=["legacy-v1"], deprecated=False)

    @v1.get(
        "/status",
        operation_id="getLegacyStatus",
        response_model=LegacyStatusResponse,
        responses={429: _ERR, 503: _ERR},
        summary="Status of the two original corridors and their safety gates",
    )
    async def status(request: Request) -> Response:
        async def produce() -> dict[str, Any]:
            return legacy_status(service)

        return await answer(limiter, request, produce)

    @v1.post(
        "/quote",
        operation_id="quoteLegacyCorridor",
        response_model=LegacyQuoteResponse,
        responses={400: _ERR, 429: _ERR, 502: _ERR, 503: _ERR},
        summary="One fresh quote for solana SOL -> ETH on base or arbitrum (moves no funds)",
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/LegacyQuoteRequest"}}},
            }
        },
    )
    async def quote(request: Request) -> Response:
        async def produce() -> dict[str, Any]:
            return await legacy_quote(service, await read_json_body(request))

        return await answer(limiter, request, produce)

    cache: dict[str, Any] = {}

    def openapi_document() -> dict[str, Any]:
        if "doc" not in cache:
            doc = get_openapi(
                title="routequote legacy v1",
                version=V1_OPENAPI_VERSION,
                description=(
                    "Legacy v1: only the two original corridors, solana SOL to native ETH on base or arbitrum. "
                    "v2 (/v2/openapi.json) is the current interface. The service never signs and never submits."
                ),
                routes=v1.routes,
            )
            doc.setdefault("components", {}).setdefault("schemas", {})["LegacyQuoteRequest"] = (
                LegacyQuoteRequest.model_json_schema()
            )
            doc["info"]["x-build-version"] = __version__
            doc["x-current-interface"] = "/v2/openapi.json"
            doc["x-service-safety"] = {"server_signing": False, "server_submission": False, "legacy": True}
            cache["doc"] = doc
        return cache["doc"]

    root = APIRouter(include_in_schema=False)

    @root.get("/openapi.json")
    async def openapi_v1() -> Response:
        """OpenAPI description of legacy v1."""
        return json_response(openapi_document())

    outer = APIRouter()
    outer.include_router(v1, include_in_schema=False)
    outer.include_router(root)
    return outer
