"""HTTP request helpers shared by every JSON POST endpoint: size, content type, strict JSON."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from routequote.errors import InvalidRequest, RouteQuoteError
from routequote.input_rules import (
    MAX_BODY_BYTES as MAX_BODY_BYTES,  # re-exported: the surfaces import it here
)
from routequote.input_rules import loads_strict
from routequote.ratelimit import RateLimiter
from routequote.surfaces.errors import error_response, json_response

BODY_READ = "routequote.body"  # scope key: the whole body, read (and bounded) by the request stack
BODY_CONTENT_TYPE = "routequote.body_content_type"  # scope key: beside it, its first Content-Type (latin-1)
# scope key: the request asked `Expect: 100-continue` and its body is read (by the request stack, with the same
# bounds) only when the app first asks for it, so refusals that need no body come before the invitation
BODY_PENDING = "routequote.body_pending"
# scope key: the rate limiter's count of a request whose body is pending (`count`), run by the request stack once
# the body is read (or when the request ends without asking for it); a body the stack refuses is not counted
COUNT_ON_BODY = "routequote.count_on_body"


def json_request_body(schema: dict[str, Any]) -> dict[str, Any]:
    """`openapi_extra` for an endpoint whose required body is JSON of `schema` (the routes read the raw body
    themselves, so FastAPI does not describe it)."""
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


def schema_ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def client_key(request: Request) -> str:
    return request.client.host if request.client else "unknown"


def is_json(content_type: str) -> bool:
    if content_type == "application/json":  # what nearly every client sends
        return True
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


async def read_json_body(request: Request, max_bytes: int = MAX_BODY_BYTES) -> Any:
    """The parsed JSON body, or InvalidRequest naming the rule it breaks (`input_rules.loads_strict`)."""
    return loads_strict(await read_json_bytes(request, max_bytes))


def body_pending(request: Request) -> bool:
    """The request asked `Expect: 100-continue` and its body has not been asked for yet (`BODY_PENDING`)."""
    return bool(request.scope.get(BODY_PENDING))


def check_json_headers(request: Request, max_bytes: int = MAX_BODY_BYTES) -> None:
    """What `read_json_bytes` refuses from the headers alone (another content type, a declared length over
    `max_bytes`), for a route that must refuse more from the headers before a pending body is asked for."""
    if not is_json(request.headers.get("content-type", "")):
        raise InvalidRequest("unsupported_content_type", "Content-Type must be application/json")
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise InvalidRequest("body_too_large", f"body exceeds {max_bytes} bytes")


async def read_json_bytes(request: Request, max_bytes: int = MAX_BODY_BYTES) -> bytes:
    """The body of a JSON request, unparsed: InvalidRequest for another content type or a body too large."""
    scope = request.scope
    read: bytes | None = scope.get(BODY_READ)
    if read is not None:
        # the request stack read the body, and kept the first Content-Type it saw beside it
        if not is_json(scope[BODY_CONTENT_TYPE]):
            raise InvalidRequest("unsupported_content_type", "Content-Type must be application/json")
        if len(read) > max_bytes:
            raise InvalidRequest("body_too_large", f"body exceeds {max_bytes} bytes")
        return read
    check_json_headers(request, max_bytes)  # before the first receive: a pending body is not invited
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_bytes:
            raise InvalidRequest("body_too_large", f"body exceeds {max_bytes} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


class JsonBytes:
    """A body already serialised as JSON (answered as it is). A wrapper, not a bytes subclass: making one of
    those copies the bytes, ten kilobytes for a quote."""

    __slots__ = ("body",)

    def __init__(self, body: bytes) -> None:
        self.body = body


async def count(limiter: RateLimiter, request: Request, group: str) -> dict[str, str]:
    """`limiter.check` for this request: its RateLimit-* headers, or RateLimited.

    A request whose body is pending (`Expect: 100-continue`) is refused now when over the limit (`check`, as
    ever), without the invitation; otherwise its count waits for its body (`COUNT_ON_BODY`), so that it is
    counted exactly when an eager read would have counted it: a body the transport guard refuses (too large,
    too slow, the client gone) is not. The headers returned are filled in when the count runs."""
    client = client_key(request)
    scope = request.scope
    if not scope.get(BODY_PENDING) or not limiter.enabled or not await limiter.allows(client, group):
        return await limiter.check(client, group)
    headers: dict[str, str] = {}

    async def counted() -> None:
        headers.update(await limiter.check(client, group))

    scope[COUNT_ON_BODY] = counted
    return headers


async def settle_count(request: Request) -> None:
    """Run a count `count` deferred that no body read ran (the answer was decided before the body)."""
    counted = request.scope.pop(COUNT_ON_BODY, None)
    if counted is not None:
        with contextlib.suppress(RouteQuoteError):
            await counted()


async def answer(
    limiter: RateLimiter, request: Request, produce: Callable[[], Awaitable[Any]], *, group: str = "quote_api"
) -> Response:
    """Rate-limit the client, run `produce`, answer JSON; map the error tree to an ErrorResponse.

    RateLimit-* headers ride on every answer, success or error. `produce` may return a body, or an object
    with `status_code` and `body` (e.g. a session create answering 201)."""
    headers: dict[str, str] = {}
    try:
        headers = await count(limiter, request, group)
        result = await produce()
        if type(result) is JsonBytes:
            return Response(result.body, media_type="application/json", headers=headers)
        status = getattr(result, "status_code", None)
        if status is not None:
            return json_response(result.body, status, headers=headers)
        return json_response(result, headers=headers)
    except RouteQuoteError as exc:
        await settle_count(request)  # refused before its body was asked for: counted, as an eager read was
        return error_response(exc, headers)
