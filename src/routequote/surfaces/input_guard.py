"""The transport guard: every HTTP request passes it before any surface (REST, MCP, A2A) sees it.

The request stack (`routequote.surfaces.request_stack`, the one ASGI layer) applies these rules; it is the one
place that
- bounds the request headers (count and total bytes: 431) for every server the app runs under;
- reads the whole body before the app runs, bounded in size (REST 400 `body_too_large`, JSON-RPC 413) and in
  time (408): a surface sees a complete body or nothing. A client that hangs up mid-body is its own doing:
  one quiet log line, status 499 in the metrics (never a 5xx), no traceback, the app never runs;
- on the JSON-RPC endpoints (/mcp, /a2a) requires `application/json` (415: a browser cannot POST a
  "simple" cross-site request) and reads the body with the same strict JSON reader as REST
  (`routequote.input_rules.loads_strict`: duplicate keys, lone surrogates, NaN, inexact numbers, depth), so
  the SDKs only ever parse bodies that passed it;
- answers every error of the JSON-RPC endpoints that the JSON-RPC guard did not already answer (its own
  refusals here, a GET's 405) as a JSON-RPC error object with a short generic message chosen by status: never
  SDK text, validator text, documentation URLs or fragments of the input;
- turns an exception that escaped a surface into a JSON 500, and marks every 5xx `Connection: close`.

`GuardedHttpToolsProtocol` is uvicorn's httptools protocol with the limits an ASGI app cannot enforce
itself: header bytes counted while they arrive (a 32 MiB header or 50,000 headers are refused past the
limit, never buffered whole), and the time allowed for a request's headers (idle or trickling sockets are
closed) and body (408), checked by one sweep per event loop rather than a timer per request.
`uvicorn_options(settings)` is what `routequote serve` passes to uvicorn.

`a2a_jsonrpc_routes` mounts the A2A JSON-RPC dispatcher with every error reduced to its code and the SDK's
fixed message for that code (no raw exception text, no parse details); the JSON-RPC guard in front of it
(surfaces/jsonrpc_guard.py) adds the code's fixed `google.rpc.ErrorInfo`.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import weakref
from dataclasses import dataclass
from typing import Any, ClassVar

import orjson
import structlog
from starlette.types import Message, Receive, Send

from routequote.config import Settings
from routequote.surfaces.http import MAX_BODY_BYTES
from routequote.surfaces.response_write import OneWrite

JSONRPC_PATHS = frozenset({"/mcp", "/mcp/v2", "/v2/mcp", "/a2a"})
CLIENT_CLOSED_REQUEST = 499  # nginx's code: the client hung up before the answer; never sent to anyone
# set on an answer's `http.response.start` by the JSON-RPC guard (surfaces/jsonrpc_guard.py): its error objects are
# already rebuilt from their codes, with the request's id and the SDK's status, so the stack sends it as it is
JSONRPC_ANSWERED = "routequote.jsonrpc_answered"

log = structlog.get_logger("routequote.guard")


@dataclass(frozen=True, slots=True)
class TransportLimits:
    max_header_bytes: int = 16_384
    max_header_count: int = 100
    header_timeout_seconds: float = 10.0
    body_timeout_seconds: float = 30.0
    max_body_bytes: int = MAX_BODY_BYTES

    @classmethod
    def from_settings(cls, settings: Settings) -> TransportLimits:
        return cls(
            max_header_bytes=settings.max_header_bytes,
            max_header_count=settings.max_header_count,
            header_timeout_seconds=settings.header_timeout_seconds,
            body_timeout_seconds=settings.body_timeout_seconds,
        )


# ---- error bodies -------------------------------------------------------------------------------------

_REASONS = {
    400: ("invalid_request", "Invalid Request"),
    403: ("forbidden", "Forbidden: Origin not allowed"),
    404: ("not_found", "Not Found"),
    405: ("method_not_allowed", "Method Not Allowed: use POST"),
    406: ("not_acceptable", "Not Acceptable: Accept must list application/json and text/event-stream"),
    408: ("request_timeout", "Request Timeout: the request was not received in time"),
    413: ("body_too_large", f"Request body exceeds {MAX_BODY_BYTES} bytes"),
    415: ("unsupported_content_type", "Unsupported Media Type: Content-Type must be application/json"),
    421: ("misdirected_request", "Misdirected Request: Host not allowed"),
    429: ("rate_limited", "Too Many Requests"),
    431: ("request_header_fields_too_large", "Request header fields too large or too many"),
}
KEPT_HEADERS = (b"allow", b"retry-after", b"mcp-session-id")


def jsonrpc_error(status: int, reason_class: str | None = None, message: str | None = None) -> dict[str, Any]:
    """A JSON-RPC 2.0 error object for an HTTP-level refusal (id null: the request was not read as one)."""
    if status >= 500:
        code, error, text = -32603, "internal_error", "Internal error"
    else:
        error, text = _REASONS.get(status, ("request_rejected", "Request rejected"))
        code = -32700 if reason_class == "malformed_json" else -32600
        if reason_class == "malformed_json":
            text = "Parse error"
    data = {"error": "invalid_request" if reason_class else error, "reason_class": reason_class or error}
    return {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message or text, "data": data}}


def rest_error(status: int, reason_class: str | None = None, message: str | None = None) -> dict[str, Any]:
    if status >= 500:
        return {"error": "internal_error", "reason_class": "internal_error"}
    error, text = _REASONS.get(status, ("request_rejected", "Request rejected"))
    return {
        "error": "invalid_request" if reason_class else error,
        "reason_class": reason_class or error,
        "message": message or text,
    }


async def send_answer(
    send: Send, status: int, payload: dict[str, Any], extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    body = orjson.dumps(payload)
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *(extra or []),
    ]
    if status >= 500 or status in (408, 413, 431):  # the connection's state is unknown: do not reuse it
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


# ---- what the request stack uses --------------------------------------------------------------------


class ClientGone(Exception):
    pass


class TooLarge(Exception):
    pass


async def refuse(
    send: Send, jsonrpc: bool, status: int, reason_class: str | None = None, message: str | None = None
) -> None:
    payload = (
        jsonrpc_error(status, reason_class, message) if jsonrpc else rest_error(status, reason_class, message)
    )
    await send_answer(send, status, payload)


async def too_large(send: Send, jsonrpc: bool) -> None:
    if jsonrpc:
        await refuse(send, jsonrpc, 413)
    else:  # the REST contract: 400 body_too_large (an ErrorResponse naming the rule); the rest of the body is
        # not read: close, or the server would go on draining whatever the client still sends
        payload = rest_error(400, "body_too_large", f"body exceeds {MAX_BODY_BYTES} bytes")
        await send_answer(send, 400, payload, [(b"connection", b"close")])


async def read_body(receive: Receive, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientGone
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise TooLarge
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def replay_body(body: bytes, receive: Receive) -> Receive:
    delivered = False

    async def replay() -> Message:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # later reads see the real connection (a disconnect, typically)

    return replay


# ---- uvicorn: header bytes, header count, header time --------------------------------------------------


@functools.lru_cache(maxsize=1)
def _process_limits() -> TransportLimits:
    return TransportLimits.from_settings(Settings())


def _reject_bytes(status: int) -> bytes:
    body = orjson.dumps(rest_error(status))
    return (
        f"HTTP/1.1 {status} {'Request Timeout' if status == 408 else 'Request Header Fields Too Large'}\r\n"
        f"content-type: application/json\r\ncontent-length: {len(body)}\r\nconnection: close\r\n\r\n"
    ).encode() + body


try:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
except ImportError:  # pragma: no cover - uvicorn[standard] brings httptools
    HttpToolsProtocol = None  # type: ignore[assignment,misc]


LINGER_SECONDS = 5.0  # how long a refused connection is read on for its client's close (then closed)
TIMED_BY_TRANSPORT = "routequote.transport_timeouts"  # scope key: the protocol times headers and body
BODY_TIMED_OUT = "routequote.body_timed_out"  # scope key: the protocol closed a request whose body was late
_live_by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, set[Any]] = weakref.WeakKeyDictionary()


def _sweep(loop: asyncio.AbstractEventLoop, interval: float) -> None:
    """One timer per event loop (not one per request): close connections past their deadline."""
    live = _live_by_loop.get(loop)
    if not live:
        _live_by_loop.pop(loop, None)
        return
    now = loop.time()
    for protocol in list(live):
        protocol._expire(now)
    loop.call_later(interval, _sweep, loop, interval)


if HttpToolsProtocol is not None:

    class GuardedHttpToolsProtocol(HttpToolsProtocol):
        """uvicorn's httptools protocol plus: the bytes of a request's head counted as they arrive (past the
        header limit plus one read, 431 and close: a huge header or a header flood is never buffered whole;
        the exact count and size are the ASGI guard's 431); a request's headers must arrive within the header timeout
        of its first byte (or of the connection: an idle socket is closed), and its body within the body
        timeout of its headers (408, then close). Deadlines are plain numbers checked by one sweep per
        event loop, so a request costs no timer."""

        limits: ClassVar[TransportLimits | None] = None

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._limits = type(self).limits or _process_limits()
            self._phase = "headers"  # headers -> body -> idle (keep-alive: uvicorn's own timer) -> headers
            self._deadline: float | None = None
            self._pending = 0  # raw bytes received while a request's headers are incomplete
            self._rejected = False

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._deadline = self.loop.time() + self._limits.header_timeout_seconds
            live = _live_by_loop.get(self.loop)
            if live is None:
                live = _live_by_loop[self.loop] = set()
                interval = min(
                    1.0,
                    max(
                        0.05, min(self._limits.header_timeout_seconds, self._limits.body_timeout_seconds) / 4
                    ),
                )
                self.loop.call_later(interval, _sweep, self.loop, interval)
            live.add(self)

        def connection_lost(self, exc: Exception | None) -> None:
            live = _live_by_loop.get(self.loop)
            if live is not None:
                live.discard(self)
            super().connection_lost(exc)

        def _expire(self, now: float) -> None:
            if self._deadline is None or now < self._deadline or self.transport.is_closing():
                return
            self._deadline = None
            if self._phase == "headers":
                if self._pending:
                    self._reject(408)
                else:
                    self.transport.close()  # an idle socket that never sent a request
            elif self._phase == "body":
                if self.cycle is not None and not self.cycle.response_started:
                    self.scope[BODY_TIMED_OUT] = True  # type: ignore[literal-required]
                    self._reject(408)  # the app's receive() now answers http.disconnect
                else:
                    self.transport.close()

        def _reject(self, status: int) -> None:
            if self._rejected:
                return
            self._rejected = True
            cycle = self.cycle
            if cycle is not None:  # the app sees a disconnect and writes nothing after this answer
                cycle.disconnected = True
                cycle.waiting_for_100_continue = False
                cycle.message_event.set()
            self.transport.write(_reject_bytes(status))
            self._linger()

        def _linger(self) -> None:
            """RFC 9112 section 9.6: half-close and read on (discarding) until the client closes, for at most
            LINGER_SECONDS. Closing outright while the client is still sending resets the connection, and a
            reset can destroy the answer before the client reads it (asyncio's reader drops it)."""
            transport = self.transport
            if transport.is_closing() or not transport.can_write_eof():
                transport.close()
                return
            try:
                transport.write_eof()
            except (OSError, RuntimeError):
                transport.close()
                return
            self.flow.resume_reading()  # the client's bytes keep being read, so none is left unread at close
            self.loop.call_later(LINGER_SECONDS, transport.close)

        def data_received(self, data: bytes) -> None:
            if self._rejected:
                return
            if self._phase != "body":
                self._pending += len(data)
            super().data_received(data)
            if self._phase == "headers" and self._pending > self._limits.max_header_bytes + 65_536:
                self._reject(431)  # a header still arriving past the limit: refused, never buffered whole

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self.scope[TIMED_BY_TRANSPORT] = True  # type: ignore[literal-required]
            if self._phase != "headers" or self._deadline is None:
                self._phase = "headers"
                self._deadline = self.loop.time() + self._limits.header_timeout_seconds

        def on_headers_complete(self) -> None:
            self._phase = "body"
            self._pending = 0
            self._deadline = self.loop.time() + self._limits.body_timeout_seconds
            super().on_headers_complete()
            # its head and body leave in one write (see response_write); the answer to HEAD has no body write
            if self.cycle is not None and self.scope["method"] != "HEAD":
                self.cycle.transport = OneWrite(self.transport)  # type: ignore[assignment]

        def on_message_complete(self) -> None:
            super().on_message_complete()
            self._phase = "idle"
            self._deadline = None
            self._pending = 0


def uvicorn_options(settings: Settings) -> dict[str, Any]:
    """The transport options `routequote serve` hands to uvicorn (see docs/operations.md)."""
    options: dict[str, Any] = {"timeout_keep_alive": settings.keep_alive_timeout_seconds}
    if settings.workers > 1:  # they accept from one socket: each new connection goes to the least loaded one
        options["loop"] = "routequote.surfaces.worker_balance:balanced_loop"
    if HttpToolsProtocol is not None:
        options["http"] = "routequote.surfaces.input_guard:GuardedHttpToolsProtocol"
    else:  # pragma: no cover - h11 bounds the header block (400) but has no header timer
        options["http"] = "h11"
        options["h11_max_incomplete_event_size"] = settings.max_header_bytes
    return options


# ---- A2A: JSON-RPC errors without SDK text ------------------------------------------------------------


class _QuietTracebacks(logging.Filter):
    """The A2A dispatcher logs caller-triggered parse failures with a traceback quoting the input: keep the
    line, drop the traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.exc_info = None
        record.exc_text = None
        return True


def a2a_jsonrpc_routes(handler: Any, path: str, context_builder: Any) -> list[Any]:
    """The A2A JSON-RPC route whose every error is `{code, message}` with the SDK's fixed message for the
    code (`Invalid params`, `Internal error`, ...): never the exception text or parse details. (The guard
    mounted around it adds the ErrorInfo detail.)"""
    from a2a.server.request_handlers.response_helpers import build_error_response
    from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
    from a2a.utils.errors import (
        JSON_RPC_ERROR_CODE_MAP,
        InvalidParamsError,
        InvalidRequestError,
        MethodNotFoundError,
    )
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    messages = {code: cls.message for cls, code in JSON_RPC_ERROR_CODE_MAP.items()}
    messages.update(
        {
            -32700: "Parse error",
            -32600: InvalidRequestError.message,
            -32601: MethodNotFoundError.message,
            -32602: InvalidParamsError.message,
            -32603: "Internal error",
        }
    )

    def generic(error: Any) -> dict[str, Any]:
        code = error.get("code") if isinstance(error, dict) else None
        code = code if isinstance(code, int) and not isinstance(code, bool) else -32603
        return {"code": code, "message": messages.get(code, "Request failed")}

    class Dispatcher(JsonRpcDispatcher):
        def _generate_error_response(self, request_id: Any, error: Any) -> JSONResponse:
            built = build_error_response(request_id, error)
            return JSONResponse({**built, "error": generic(built.get("error"))}, status_code=200)

        def _create_response(self, context: Any, handler_result: Any) -> Any:
            if isinstance(handler_result, dict) and "error" in handler_result:
                handler_result = {**handler_result, "error": generic(handler_result["error"])}
            return super()._create_response(context, handler_result)

    dispatcher_log = logging.getLogger("a2a.server.routes.jsonrpc_dispatcher")
    if not any(isinstance(f, _QuietTracebacks) for f in dispatcher_log.filters):
        dispatcher_log.addFilter(_QuietTracebacks())
    dispatcher = Dispatcher(request_handler=handler, context_builder=context_builder)
    return [Route(path, endpoint=dispatcher.handle_requests, methods=["POST"])]
