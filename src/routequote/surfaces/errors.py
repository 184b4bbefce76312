"""RouteQuoteError -> HTTP status and ErrorResponse body (the REST channel of the one error tree)."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.responses import Response

from routequote.errors import (
    CapacityBusy,
    Conflict,
    DependencyUnavailable,
    InvalidRequest,
    NotFound,
    RateLimited,
    ReapprovalRequired,
    RouteQuoteError,
    UpstreamUnavailable,
)

STATUS = (
    (InvalidRequest, 400),
    (NotFound, 404),
    (ReapprovalRequired, 409),
    (Conflict, 409),
    (RateLimited, 429),
    (UpstreamUnavailable, 502),
    (CapacityBusy, 503),
    (DependencyUnavailable, 503),
)


def http_status(exc: RouteQuoteError) -> int:
    for cls, code in STATUS:
        if isinstance(exc, cls):
            return code
    return 400


def json_response(payload: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(payload), status_code=status, media_type="application/json", headers=headers)


def error_response(exc: RouteQuoteError, headers: dict[str, str] | None = None) -> Response:
    headers = {**exc.headers, **(headers or {})}
    if exc.retry_after_seconds is not None:
        headers["Retry-After"] = str(max(0, min(3600, int(exc.retry_after_seconds))))
    return json_response(exc.body(), http_status(exc), headers)
