"""The one ASGI layer in front of every surface: request id, transport guard and metrics in one pass.

Per HTTP request, in this order:
1. one pass over the headers: the caller's `x-request-id` (kept when sane, else a new one), the header count and
   bytes (431), and the three headers the guard reads (content length, content type, transfer encoding);
2. the request id is bound for every log line written while the request runs, and a server span opened when
   tracing is on;
3. the transport guard (`routequote.surfaces.input_guard`): 415 on the JSON-RPC endpoints, the whole body read
   before the app runs (bounded in size and time, strict JSON on /mcp and /a2a), a client that hung up counted
   as 499;
4. the app, behind ONE send wrapper that sets `x-request-id` on every answer, marks every 5xx
   `Connection: close`, replaces any JSON-RPC error answer the JSON-RPC guard did not write (which keeps the
   SDK's code, status and the request's id) with a JSON-RPC error object chosen by status, and records the
   status;
5. an exception that escaped a surface becomes a JSON 500 (the log has only its type);
6. the answer is counted by route template (`/v2/quote`, never a raw path a caller chose) and status, with its
   latency.

HEAD is answered as GET on every route (the app sees GET; the send wrapper drops the body and keeps GET's
headers, Content-Length included).

`Expect: 100-continue`: uvicorn sends `100 Continue` at the app's first `receive()`, so a request is invited to
send its body exactly when something first asks for it. A request that no route takes (404, 405) is answered
without asking. A request a route takes gets the header checks above (431, 415, a declared length over the limit)
first, then the app runs before its body is read (`BODY_PENDING` in the scope): whatever the app refuses before it
reads a body (the rate limit, the MCP Host, Origin and Accept checks, a REST Content-Type, a session or access
token that opens nothing) is answered without the invitation. The rate limiter's count of such a request waits
for its body (`COUNT_ON_BODY`: run at the app's first `receive()`, or when the request ends without one), so it
counts exactly what an eager read let through to the app. The body is read
at the app's first `receive()`, with the same bounds, timer and strict JSON as above, and a refusal there is
answered here (the app then sees a disconnect, and its own answer is dropped). An answer given before the body
was asked for closes the connection (the client may or may not send the body now).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING, Any

from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from structlog.contextvars import bind_contextvars, reset_contextvars

from routequote.errors import InvalidRequest, RouteQuoteError
from routequote.input_rules import loads_strict
from routequote.observability import ASKED_METHOD, new_request_id, request_id_var, sane_request_id
from routequote.surfaces import input_guard
from routequote.surfaces.http import BODY_CONTENT_TYPE, BODY_PENDING, BODY_READ, COUNT_ON_BODY
from routequote.surfaces.http import is_json as is_json_media
from routequote.surfaces.input_guard import (
    BODY_TIMED_OUT,
    CLIENT_CLOSED_REQUEST,
    JSONRPC_ANSWERED,
    JSONRPC_PATHS,
    KEPT_HEADERS,
    TIMED_BY_TRANSPORT,
    ClientGone,
    TooLarge,
    TransportLimits,
    jsonrpc_error,
    read_body,
    refuse,
    replay_body,
    rest_error,
    send_answer,
    too_large,
)

if TYPE_CHECKING:
    from routequote.metrics import Metrics
    from routequote.surfaces.http import BODY_CONTENT_TYPE, BODY_READ
from routequote.observability import Tracing


async def _no_body() -> Message:
    """The receive of a request refused before its body is read: an empty body, never uvicorn's receive (which
    would send `100 Continue`)."""
    return {"type": "http.request", "body": b"", "more_body": False}


class _Reply:
    """The one send wrapper: request id on every answer, status recorded, 5xx closes the connection, and on the
    JSON-RPC endpoints an error answer of the app replaced by a JSON-RPC error object chosen by status alone."""

    __slots__ = ("send", "header", "jsonrpc", "status", "started", "held", "head", "close", "answered")

    def __init__(self, send: Send, header: tuple[bytes, bytes], jsonrpc: bool, head: bool = False) -> None:
        self.send = send
        self.header = header
        self.jsonrpc = jsonrpc
        self.status = [500]  # a list: the tracing span reads the final status through it
        self.started = False
        self.held: Message | None = None
        self.head = head  # a HEAD request answered as GET: every body is dropped here
        self.close = False  # the answer closes the connection (a body announced and never read)
        self.answered = False  # the stack refused a body the app asked for: the app's own answer is dropped

    async def start(self, message: Message) -> None:
        status = message["status"]
        self.status[0] = status
        headers = [h for h in message.get("headers", ()) if h[0].lower() != b"x-request-id"]
        headers.append(self.header)
        if (status >= 500 or self.close) and (b"connection", b"close") not in headers:
            headers.append((b"connection", b"close"))
        await self.send({k: v for k, v in message.items() if k != JSONRPC_ANSWERED} | {"headers": headers})

    async def __call__(self, message: Message) -> None:
        if self.answered:
            return
        if self.head and message["type"] == "http.response.body" and message.get("body"):
            message = {**message, "body": b""}
        kind = message["type"]
        if kind == "http.response.start":
            self.started = True
            if self.jsonrpc and message["status"] >= 400 and not message.get(JSONRPC_ANSWERED):
                self.held = message  # the SDK's own error text is never sent
                return
            await self.start(message)
            return
        if self.held is not None and kind == "http.response.body":
            if message.get("more_body", False):
                return
            held, self.held = self.held, None
            kept = [(k, v) for k, v in held.get("headers", ()) if k.lower() in KEPT_HEADERS]
            await send_answer(self.start_and_send, held["status"], jsonrpc_error(held["status"]), kept)
            return
        await self.send(message)

    async def start_and_send(self, message: Message) -> None:
        """For answers the stack writes itself: they are final, never held or replaced."""
        if message["type"] == "http.response.start":
            self.started = True
            await self.start(message)
        elif self.head and message.get("body"):
            await self.send({**message, "body": b""})
        else:
            await self.send(message)


class RequestStack:
    def __init__(
        self,
        app: ASGIApp,
        metrics: Metrics | None = None,
        limits: TransportLimits | None = None,
        tracing: Tracing | None = None,
    ) -> None:
        self.app = app
        self.metrics = metrics
        self.limits = limits or TransportLimits()
        self.tracing = tracing
        self._routes: list[Any] | None = None  # the router's, found on first use (`_routed`)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        supplied = length = content_type = chunked = expect = None
        size = 0
        headers: list[tuple[bytes, bytes]] = scope["headers"]
        for name, value in headers:  # one pass: request id, size, and the three headers the guard reads
            size += len(name) + len(value)
            if name == b"content-length":
                length = value
            elif (
                name == b"content-type" and content_type is None
            ):  # the first, as Starlette's headers read it
                content_type = value
            elif name == b"transfer-encoding":
                chunked = value
            elif name == b"x-request-id" and supplied is None:
                supplied = value.decode("latin-1")
            elif name == b"expect":
                expect = value
        rid = sane_request_id(supplied) or new_request_id()
        jsonrpc = scope["path"] in JSONRPC_PATHS
        method = scope["method"]
        head = method == "HEAD"
        if head:  # answered as GET, without its body (uvicorn's own scope still says HEAD)
            scope = {**scope, "method": "GET", ASKED_METHOD: method}
        reply = _Reply(send, (b"x-request-id", rid.encode("ascii")), jsonrpc, head)
        pending = False  # the body is read when the app first asks for it (`Expect: 100-continue`)
        if expect is not None and expect.lower() == b"100-continue":
            if not self._routed(
                scope
            ):  # refused before its body is read (404, 405): never invited to send it
                receive, reply.close = _no_body, True
                length = chunked = None
            else:
                pending = True
        token = request_id_var.set(rid)
        bound = bind_contextvars(request_id=rid)
        try:
            if self.tracing is None:
                await self._guarded(
                    scope, receive, reply, headers, size, length, content_type, chunked, pending
                )
            else:
                with self.tracing.server_span(scope, rid, reply.status):
                    await self._guarded(
                        scope, receive, reply, headers, size, length, content_type, chunked, pending
                    )
        finally:
            reset_contextvars(**bound)
            request_id_var.reset(token)
            if self.metrics is not None:
                route: Any = scope.get("route")
                # FastAPI routes name their template; plain Starlette routes (MCP, A2A) have fixed paths
                template = getattr(route, "path", None) or (
                    scope["path"] if scope.get("endpoint") else "unmatched"
                )
                self.metrics.observe_request(method, template, reply.status[0], time.perf_counter() - started)

    def _routed(self, scope: Scope) -> bool:
        """Whether a route of the app takes this path and method (else the router answers 404 or 405)."""
        if self._routes is None:
            app: Any = self.app
            while app is not None and not hasattr(app, "routes"):  # the exception and exit-stack layers
                app = getattr(app, "app", None)
            self._routes = list(app.routes) if app is not None else []
        if not self._routes:
            return True  # no router found: nothing is refused here
        return any(route.matches(scope)[0] is Match.FULL for route in self._routes)

    async def _guarded(
        self,
        scope: Scope,
        receive: Receive,
        reply: _Reply,
        headers: list[tuple[bytes, bytes]],
        size: int,
        length: bytes | None,
        content_type: bytes | None,
        chunked: bytes | None,
        pending: bool = False,
    ) -> None:
        limits = self.limits
        jsonrpc = reply.jsonrpc
        out = reply.start_and_send
        if len(headers) > limits.max_header_count or size > limits.max_header_bytes:
            await refuse(out, jsonrpc, 431)
            return
        method = scope["method"]
        if jsonrpc and method == "POST" and not is_json_media((content_type or b"").decode("latin-1")):
            await refuse(out, jsonrpc, 415)
            return
        if (length is not None and length != b"0") or chunked is not None:
            if length is not None and length.isdigit() and int(length) > limits.max_body_bytes:
                await too_large(out, jsonrpc)
                return
            if pending:
                scope[BODY_PENDING] = True
                receive = self._on_demand(scope, receive, reply, content_type)
                reply.close = True  # until the body is asked for: an answer before it closes the connection
            else:
                body = await self._take_body(scope, receive, reply, content_type)
                if body is None:
                    return
                receive = replay_body(body, receive)
        try:
            await self.app(scope, receive, reply)
        except Exception as exc:  # never a traceback or exception text in a body; the log has the type
            if reply.answered:  # the app ended on the disconnect it saw after the stack refused its body
                return
            input_guard.log.error("unhandled_error", error_type=type(exc).__name__)
            if not reply.started:
                await refuse(out, jsonrpc, 500)
        finally:
            if pending and (counted := scope.pop(COUNT_ON_BODY, None)) is not None:
                # answered without asking for its body: counted as an eager read's request was
                with contextlib.suppress(RouteQuoteError):
                    await counted()

    def _on_demand(
        self, scope: Scope, receive: Receive, reply: _Reply, content_type: bytes | None
    ) -> Receive:
        """The receive of a pending body: the first call reads it (the invitation, `100 Continue`, leaves now)
        with every bound of an eager read; a refusal is answered here and the app sees a disconnect."""
        asked = False

        async def on_demand() -> Message:
            nonlocal asked
            if asked:
                return await receive()
            asked = True
            scope.pop(BODY_PENDING, None)
            reply.close = False  # invited: the body comes, and is read whole or refused with its own close
            body = await self._take_body(scope, receive, reply, content_type)
            if body is None:
                reply.answered = True
                scope.pop(COUNT_ON_BODY, None)  # refused here: not counted, as before an eager read's app
                return {"type": "http.disconnect"}
            counted = scope.pop(COUNT_ON_BODY, None)
            if counted is not None:  # the rate limiter counts the request now (RateLimited reaches the app)
                await counted()
            return {"type": "http.request", "body": body, "more_body": False}

        return on_demand

    async def _take_body(
        self, scope: Scope, receive: Receive, reply: _Reply, content_type: bytes | None
    ) -> bytes | None:
        """The whole body, bounded in size and time (strict JSON on a JSON-RPC POST), kept in the scope for the
        surfaces' JSON reader; None when it was refused (answered here)."""
        limits = self.limits
        jsonrpc = reply.jsonrpc
        out = reply.start_and_send
        method = scope["method"]
        try:
            if scope.get(TIMED_BY_TRANSPORT):  # the guarded protocol times the body: no timer per request
                body = await read_body(receive, limits.max_body_bytes)
            else:
                async with asyncio.timeout(limits.body_timeout_seconds):
                    body = await read_body(receive, limits.max_body_bytes)
        except ClientGone:
            if scope.get(BODY_TIMED_OUT):  # the protocol answered 408 and closed; the metrics say so too
                input_guard.log.info("request_body_timeout", method=method)
                await refuse(out, jsonrpc, 408)
            else:
                input_guard.log.info("client_disconnected_mid_body", method=method)
                await send_answer(out, CLIENT_CLOSED_REQUEST, rest_error(400, "client_closed_request"))
            return None
        except TooLarge:
            await too_large(out, jsonrpc)
            return None
        except TimeoutError:
            await refuse(out, jsonrpc, 408)
            return None
        if jsonrpc and method == "POST":
            try:
                loads_strict(body)
            except InvalidRequest as exc:
                await refuse(out, jsonrpc, 400, exc.reason_class, exc.message)
                return None
        scope[BODY_READ] = body  # the surfaces' JSON reader takes it from here
        scope[BODY_CONTENT_TYPE] = (content_type or b"").decode("latin-1")
        return body
