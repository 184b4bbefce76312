"""POST /v2/prepare: the first unsigned action for a caller-approved quote (never signed, never submitted)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from routequote.contract.v2 import ErrorResponse
from routequote.errors import RouteQuoteError
from routequote.prepare import PrepareService
from routequote.ratelimit import RateLimiter
from routequote.surfaces.errors import error_response, json_response
from routequote.surfaces.http import client_key, read_json_body

_ERR = {"model": ErrorResponse}


def router(prepare: PrepareService, limiter: RateLimiter) -> APIRouter:
    api = APIRouter(prefix="/v2")

    @api.post(
        "/prepare",
        operation_id="prepareFirstUnsignedAction",
        responses={400: _ERR, 409: _ERR, 429: _ERR, 502: _ERR, 503: _ERR},
        summary="Bounded, verifiable unsigned first action for an approved quote (the service never signs)",
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": {"type": "object"}}},
            }
        },
    )
    async def prepare_action(request: Request) -> Response:
        headers: dict[str, str] = {}
        try:
            headers = await limiter.check(client_key(request))
            body: Any = await read_json_body(request)
            return json_response(await prepare.prepare(body), headers=headers)
        except RouteQuoteError as exc:
            return error_response(exc, headers)

    return api
