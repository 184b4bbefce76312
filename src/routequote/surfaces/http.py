"""HTTP request helpers shared by every JSON POST endpoint: size, content type, strict JSON."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response

from routequote.errors import InvalidRequest, RouteQuoteError
from routequote.ratelimit import RateLimiter
from routequote.surfaces.errors import error_response, json_response

MAX_BODY_BYTES = 1_048_576


def client_key(request: Request) -> str:
    return request.client.host if request.client else "unknown"


def _is_json(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


def _reject_constant(name: str) -> Any:
    raise InvalidRequest("non_finite_number", f"{name} is not a JSON number")


async def read_json_body(request: Request, max_bytes: int = MAX_BODY_BYTES) -> Any:
    """The parsed JSON body, or InvalidRequest naming the rule it breaks."""
    if not _is_json(request.headers.get("content-type", "")):
        raise InvalidRequest("unsupported_content_type", "Content-Type must be application/json")
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise InvalidRequest("body_too_large", f"body exceeds {max_bytes} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_bytes:
            raise InvalidRequest("body_too_large", f"body exceeds {max_bytes} bytes")
        chunks.append(chunk)
    raw = b"".join(chunks)
    if not raw.strip():
        raise InvalidRequest("malformed_json", "request body is empty")
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        pass
    # orjson refuses NaN/Infinity and integers beyond 64 bits; tell those apart from broken JSON
    try:
        return json.loads(raw, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        if isinstance(exc, InvalidRequest):
            raise
        raise InvalidRequest("malformed_json", "request body is not valid JSON") from None


async def answer(
    limiter: RateLimiter, request: Request, produce: Callable[[], Awaitable[Any]], *, group: str = "quote_api"
) -> Response:
    """Rate-limit the client, run `produce`, answer JSON; map the error tree to an ErrorResponse.

    RateLimit-* headers ride on every answer, success or error. `produce` may return a body, or an object
    with `status_code` and `body` (e.g. a session create answering 201)."""
    headers: dict[str, str] = {}
    try:
        headers = await limiter.check(client_key(request), group)
        result = await produce()
        status = getattr(result, "status_code", None)
        if status is not None:
            return json_response(result.body, status, headers=headers)
        return json_response(result, headers=headers)
    except RouteQuoteError as exc:
        return error_response(exc, headers)
