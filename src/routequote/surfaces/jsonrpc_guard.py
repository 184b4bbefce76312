"""One ASGI guard for every JSON-RPC endpoint (each MCP endpoint, /a2a): protocol errors carry nothing the caller
sent, and are rate-limited like tool calls.

An SDK's protocol error may quote the request: the MCP SDK answers an unknown method with the method itself in
`error.data` (a 500 KB method got a 500 KB answer, a mnemonic came back). This guard rewrites every JSON-RPC
error object of the answer to `{code, message}` with the fixed JSON-RPC message for the code, refuses a request
whose `id` is longer than `MAX_ID_CHARS` (an id must be echoed, so it is bounded instead), and counts every
protocol error against the client's budget (the bucket tool calls use): past it, the answer is 429.
Tool results (`isError` results) are not protocol errors and pass unchanged.
"""

from __future__ import annotations

from typing import Any

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from routequote.errors import RateLimited, RouteQuoteError
from routequote.ratelimit import RateLimiter
from routequote.surfaces.http import MAX_BODY_BYTES

MAX_ID_CHARS = 128
FIXED_MESSAGES = {
    -32700: "Parse error",
    -32600: "Invalid Request",
    -32601: "Method not found",
    -32602: "Invalid params",
    -32603: "Internal error",
}
RATE_LIMITED_CODE = -32029  # server-defined range (-32000..-32099)


def _clean_error(error: Any) -> dict[str, Any]:
    code = error.get("code") if isinstance(error, dict) else None
    if not isinstance(code, int) or isinstance(code, bool):
        code = -32603
    return {"code": code, "message": FIXED_MESSAGES.get(code, "Server error")}


def _bad_id(message: Any) -> bool:
    rid = message.get("id") if isinstance(message, dict) else None
    if isinstance(rid, str):
        return len(rid) > MAX_ID_CHARS
    return isinstance(rid, int) and not isinstance(rid, bool) and not -(2**63) <= rid < 2**63


def _error(rid: Any, code: int) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "error": {"code": code, "message": FIXED_MESSAGES.get(code, "Server error")},
    }


def sanitize(payload: Any) -> tuple[Any, int]:
    """The answer with every error object reduced to code + fixed message, and how many errors it holds."""
    items = payload if isinstance(payload, list) else [payload]
    errors = 0
    for item in items:
        if isinstance(item, dict) and "error" in item:
            item["error"] = _clean_error(item["error"])
            errors += 1
    return payload, errors


class JsonRpcGuard:
    """Wraps one JSON-RPC endpoint (stateless JSON answers). `limiter` is the app's per-client limiter."""

    def __init__(self, app: ASGIApp, limiter: RateLimiter | None = None, group: str = "quote_api") -> None:
        self.app = app
        self.limiter = limiter
        self.group = group

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body = bytearray()
        while True:  # the body is already bounded (1 MiB) by the transport guard in front of every route
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if len(body) > MAX_BODY_BYTES:  # normally refused before: the input guard reads bodies first
                await self._send(send, 413, _error(None, -32600), {}, None)
                return
            if not message.get("more_body", False):
                break
        client = scope.get("client")
        key = str(client[0]) if client else "local"
        try:
            request = orjson.loads(body)
        except orjson.JSONDecodeError:
            request = None
        if any(_bad_id(m) for m in (request if isinstance(request, list) else [request])):
            await self._answer(send, 400, _error(None, -32600), key)
            return

        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()

        start: Message | None = None
        chunks: list[bytes] = []

        async def capture(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
                return
            if message["type"] != "http.response.body" or start is None:
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                await self._finish(send, start, b"".join(chunks), key)

        await self.app(scope, replay, capture)

    async def _finish(self, send: Send, start: Message, raw: bytes, key: str) -> None:
        headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
        ctype = next((v for k, v in headers if k.lower() == b"content-type"), b"")
        errors = 0
        if raw and ctype.startswith(b"application/json"):
            try:
                payload, errors = sanitize(orjson.loads(raw))
                raw = orjson.dumps(payload)
            except orjson.JSONDecodeError:
                raw = orjson.dumps(_error(None, -32603))
        if errors and await self._limited(send, key):
            return
        await send({**start, "headers": [*headers, (b"content-length", str(len(raw)).encode())]})
        await send({"type": "http.response.body", "body": raw, "more_body": False})

    async def _limited(self, send: Send, key: str) -> bool:
        """Count one protocol error against the client's budget; True when this answer became the 429."""
        if self.limiter is None:
            return False
        try:
            await self.limiter.check(key, self.group)
        except RateLimited as exc:
            await self._send(send, 429, _error(None, RATE_LIMITED_CODE) | _rate_data(exc), exc.headers, exc)
            return True
        except RouteQuoteError:  # the limit store is away: the (clean) error answer stands
            return False
        return False

    async def _answer(self, send: Send, status: int, payload: dict[str, Any], key: str) -> None:
        if not await self._limited(send, key):
            await self._send(send, status, payload, {}, None)

    @staticmethod
    async def _send(
        send: Send, status: int, payload: dict[str, Any], extra: dict[str, str], exc: RateLimited | None
    ) -> None:
        raw = orjson.dumps(payload)
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(raw)).encode())]
        headers += [(k.lower().encode(), v.encode()) for k, v in extra.items()]
        if exc is not None and exc.retry_after_seconds is not None:
            headers.append((b"retry-after", str(exc.retry_after_seconds).encode()))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": raw, "more_body": False})


def _rate_data(exc: RateLimited) -> dict[str, Any]:
    return {"error": {"code": RATE_LIMITED_CODE, "message": "Rate limited", "data": exc.body()}}
