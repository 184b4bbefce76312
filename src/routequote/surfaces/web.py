"""The route explorer: one static page at `/` and its assets under `/explorer/` (no build step).

The files live in `routequote/web/` and are read once, when the router is built. Every answer carries a strict
Content-Security-Policy: scripts, styles, images and fetches from this origin only, nothing inline, no frames.
The page itself only calls the public REST v2 operations (capabilities, status, route matrix, quote) of the same
origin, and, to follow a session, its event stream with the token the visitor pastes (sent in the session header,
never in a URL).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from importlib import resources

from fastapi import APIRouter
from starlette.responses import Response

INDEX = "index.html"
ASSETS = {  # the only files served: a fixed list, never a path taken from the request
    "explorer.css": "text/css; charset=utf-8",
    "explorer.js": "text/javascript; charset=utf-8",
    "sse.js": "text/javascript; charset=utf-8",
    "follow.js": "text/javascript; charset=utf-8",
    "favicon.svg": "image/svg+xml",
}
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


def _read(name: str) -> bytes:
    return (resources.files("routequote") / "web" / name).read_bytes()


def _static(name: str, media_type: str) -> Callable[[], Awaitable[Response]]:
    body = _read(name)

    async def asset() -> Response:
        return Response(body, media_type=media_type, headers=SECURITY_HEADERS)

    asset.__doc__ = f"Route explorer asset ({name})."
    return asset


def router() -> APIRouter:
    api = APIRouter(include_in_schema=False)
    page = _read(INDEX)

    @api.api_route("/", methods=["GET", "HEAD"])
    async def explorer() -> Response:
        """Route explorer page (HTML): the route matrix, one quote in detail, readiness, a session followed live."""
        return Response(page, media_type="text/html; charset=utf-8", headers=SECURITY_HEADERS)

    for name, media_type in ASSETS.items():
        api.add_api_route(f"/explorer/{name}", _static(name, media_type), methods=["GET", "HEAD"])
    return api
