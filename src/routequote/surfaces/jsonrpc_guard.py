"""One guard for every JSON-RPC endpoint: an ASGI layer on /mcp, /mcp/v2, /v2/mcp and /a2a, and
`guarded_streams` around MCP over stdio (both profiles).

What it is for: nothing the caller sent comes back, sizes are bounded, and protocol errors are rate-limited.
An SDK's protocol error may quote the request (the MCP SDK answers an unknown method with the method itself in
`error.data`: a 500 KB method got a 500 KB answer, a mnemonic came back). So every JSON-RPC error object of an
answer is rebuilt from its code alone: the fixed message for the code and, where a protocol requires `data`,
data chosen by the server (A2A 1.0 §9.5: a `google.rpc.ErrorInfo` with a fixed reason and domain per code;
MCP 2026-07-28: the served versions of an unsupported-version error). A request whose `id` is longer than
`MAX_ID_CHARS` is refused (an id must be echoed, so it is bounded instead), and every protocol error spends the
client's budget (the bucket tool calls use): past it, the answer is 429.

A request whose body is still pending (`Expect: 100-continue`, see `request_stack`) first passes the SDK's own
header checks (Content-Type, Host, Origin: `TransportSecurityMiddleware`, when the endpoint has them; Accept on
the MCP endpoints, which answer JSON): a refusal needs no body, so it is answered (as the SDK's refusal after a read, id null) before the body is asked for.

An answer sent as a stream (`text/event-stream`: only a `subscriptions/listen` of MCP 2026-07-28, on /mcp/v2)
passes frame by frame as it is written: its frames are the server's own notifications and the listen's result.

What it leaves to the SDK: the code and the HTTP status it chose (MCP 2026-07-28 answers -32601 with 404,
-32602 and -32020 with 400), and the id, which an error to a request with an id always carries (restored when
an SDK answered a well-formed request with `id: null`). Tool results (`isError` results) pass unchanged.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import orjson
from a2a.utils.errors import A2A_ERROR_MAPPING, JSON_RPC_ERROR_CODE_MAP
from mcp.server.streamable_http import check_accept_headers
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp.shared.message import SessionMessage
from mcp_types import ErrorData, JSONRPCError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, KNOWN_PROTOCOL_VERSIONS
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from routequote.errors import RateLimited, RouteQuoteError
from routequote.ratelimit import RateLimiter
from routequote.surfaces.http import BODY_PENDING, MAX_BODY_BYTES
from routequote.surfaces.input_guard import JSONRPC_ANSWERED, jsonrpc_error

MAX_ID_CHARS = 128
RATE_LIMITED_CODE = -32029  # server-defined range (-32000..-32099)
FIXED_MESSAGES = {
    -32700: "Parse error",
    -32600: "Invalid Request",
    -32601: "Method not found",
    -32602: "Invalid params",
    -32603: "Internal error",
    RATE_LIMITED_CODE: "Rate limited",
}
MCP_MESSAGES = {
    **FIXED_MESSAGES,
    -32000: "Connection closed",
    -32001: "Request timed out",
    -32020: "Header mismatch",
    -32021: "Missing required client capability",
    -32022: "Unsupported protocol version",
    -32042: "URL elicitation required",
}
UNSUPPORTED_VERSION = -32022
MISSING_CAPABILITY = -32021
# what a MissingRequiredClientCapabilityError's data may name: capabilities and extensions this server knows
CLIENT_CAPABILITY_NAMES = frozenset({"sampling", "elicitation", "roots"})
KNOWN_EXTENSIONS = frozenset({"io.modelcontextprotocol/tasks"})
# an echoed `requested` version: only the shape of a version (digits, dots, dashes), never free caller text
_VERSION_SHAPE = re.compile(r"v?[0-9]{1,4}(?:[.-][0-9]{1,4}){0,3}")

ERROR_INFO_TYPE = "type.googleapis.com/google.rpc.ErrorInfo"
A2A_DOMAIN = "a2a-protocol.org"  # the domain of every reason the A2A specification defines
SERVICE_DOMAIN = "routequote"  # the domain of this service's own codes (rate limiting)
A2A_REASONS: dict[int, tuple[str, str]] = {
    -32700: ("PARSE_ERROR", A2A_DOMAIN),
    **{JSON_RPC_ERROR_CODE_MAP[cls]: (m.reason, A2A_DOMAIN) for cls, m in A2A_ERROR_MAPPING.items()},
    RATE_LIMITED_CODE: ("RATE_LIMITED", SERVICE_DOMAIN),
}
A2A_MESSAGES = {
    **FIXED_MESSAGES,
    **{JSON_RPC_ERROR_CODE_MAP[cls]: cls.message for cls in A2A_ERROR_MAPPING if cls.message},
}

Cleaner = Callable[[Any], dict[str, Any]]


def _code(error: Any) -> int:
    code = error.get("code") if isinstance(error, dict) else None
    return code if isinstance(code, int) and not isinstance(code, bool) else -32603


def _version_data(data: Any) -> dict[str, Any] | None:
    """MCP 2026-07-28's UnsupportedProtocolVersionError data: the versions this server serves (the SDK's list,
    kept only where it names a known revision) and the requested one when it has the shape of a version."""
    if not isinstance(data, dict):
        return None
    supported = data.get("supported")
    out: dict[str, Any] = {
        "supported": [v for v in supported if v in KNOWN_PROTOCOL_VERSIONS]
        if isinstance(supported, list)
        else []
    }
    requested = data.get("requested")
    if isinstance(requested, str) and _VERSION_SHAPE.fullmatch(requested):
        out["requested"] = requested
    return out


def clean_mcp_error(error: Any) -> dict[str, Any]:
    """An MCP error object rebuilt from its code: the fixed message, and data only where the revision needs it."""
    code = _code(error)
    out: dict[str, Any] = {"code": code, "message": MCP_MESSAGES.get(code, "Server error")}
    if code == UNSUPPORTED_VERSION and (data := _version_data(error.get("data"))) is not None:
        out["data"] = data
    if code == MISSING_CAPABILITY:
        out["data"] = _capability_data(error.get("data"))
    return out


def _capability_data(data: Any) -> dict[str, Any]:
    """MCP 2026-07-28's MissingRequiredClientCapabilityError data (required): only the names of capabilities and
    extensions this server knows, each with empty settings."""
    wanted = data.get("requiredCapabilities") if isinstance(data, dict) else None
    wanted = wanted if isinstance(wanted, dict) else {}
    required: dict[str, Any] = {name: {} for name in sorted(CLIENT_CAPABILITY_NAMES & set(wanted))}
    extensions = wanted.get("extensions")
    if isinstance(extensions, dict) and (known := sorted(KNOWN_EXTENSIONS & set(extensions))):
        required["extensions"] = {name: {} for name in known}
    return {"requiredCapabilities": required}


def error_info(code: int) -> dict[str, Any]:
    """The `google.rpc.ErrorInfo` detail of an A2A error with this code: fixed reason, domain and metadata."""
    reason, domain = A2A_REASONS.get(code, ("UNKNOWN_ERROR", SERVICE_DOMAIN))
    return {"@type": ERROR_INFO_TYPE, "reason": reason, "domain": domain, "metadata": {"code": str(code)}}


def clean_a2a_error(error: Any) -> dict[str, Any]:
    """An A2A error object rebuilt from its code, with its ErrorInfo detail (A2A 1.0 §9.5)."""
    code = _code(error)
    return {"code": code, "message": A2A_MESSAGES.get(code, "Server error"), "data": [error_info(code)]}


def sanitize(
    payload: Any, clean: Cleaner = clean_mcp_error, rid: Any = None, request_object: bool = True
) -> tuple[Any, int]:
    """The answer with every error object rebuilt by `clean`, and how many errors it holds. `rid` is the id of
    a single request: its error carries it even where the SDK wrote null. A body that is no request object at
    all (`request_object` false) is JSON-RPC's -32600, where an SDK may say -32602."""
    items = payload if isinstance(payload, list) else [payload]
    errors = 0
    for item in items:
        if isinstance(item, dict) and "error" in item:
            error = item["error"]
            if not request_object and isinstance(error, dict) and error.get("code") == -32602:
                error = {"code": -32600}
            item["error"] = clean(error)
            if item.get("id") is None and rid is not None:
                item["id"] = rid
            errors += 1
    return payload, errors


def is_request_object(request: Any) -> bool:
    """A JSON-RPC 2.0 request or notification object (MCP since 2025-06-18 and A2A take no batches)."""
    return (
        isinstance(request, dict)
        and request.get("jsonrpc") == "2.0"
        and isinstance(request.get("method"), str)
    )


def _bad_id(message: Any) -> bool:
    rid = message.get("id") if isinstance(message, dict) else None
    if isinstance(rid, str):
        return len(rid) > MAX_ID_CHARS
    return isinstance(rid, int) and not isinstance(rid, bool) and not -(2**63) <= rid < 2**63


def _loads(body: bytes) -> Any:
    """The request as JSON, or None. Python's reader, not orjson: orjson reads an integer past 64 bits as a
    float, and an id such as -2**63 - 1 must be seen (and refused), not handed on as -9.2e18."""
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return None


def request_id(request: Any) -> str | int | None:
    """The id of a single request (a string or an integer, as MCP and A2A allow), else None."""
    if isinstance(request, dict) and "method" in request:
        rid = request.get("id")
        if isinstance(rid, str) or (isinstance(rid, int) and not isinstance(rid, bool)):
            return rid
    return None


# the SDK's 406 as the guard passes it on (rebuilt from its code: `sanitize`)
_NOT_ACCEPTABLE = orjson.dumps(
    {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Not Acceptable"}}
)


async def _unread() -> Message:
    """The receive of an answer given before the body was asked for: never the connection's."""
    return {"type": "http.disconnect"}


def _error(rid: Any, code: int, clean: Cleaner = clean_mcp_error) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "error": clean({"code": code})}


class JsonRpcGuard:
    """Wraps one JSON-RPC endpoint (stateless JSON answers). `limiter` is the app's per-client limiter;
    `clean` rebuilds an error object for the endpoint's protocol (`clean_mcp_error`, `clean_a2a_error`)."""

    def __init__(
        self,
        app: ASGIApp,
        limiter: RateLimiter | None = None,
        group: str = "quote_api",
        clean: Cleaner = clean_mcp_error,
        security: TransportSecuritySettings | None = None,
        accept_json: bool = False,
    ) -> None:
        self.app = app
        self.limiter = limiter
        self.group = group
        self.clean = clean
        # the SDK's header checks, run here only while a body is pending (the SDK runs them again after the read)
        self.security = None if security is None else TransportSecurityMiddleware(security)
        self.accept_json = (
            accept_json  # the SDK answers JSON (json_response): Accept must admit application/json
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        client = scope.get("client")
        key = str(client[0]) if client else "local"
        if scope.get(BODY_PENDING):
            refused = await self._refused_from_headers(Request(scope))
            if refused is not None:  # answered as the SDK's refusal after a read is: no id is known yet
                await refused(scope, _unread, self._capture(send, key, None, False))
                return
        # RFC 9110 §5.5: a field value excludes the whitespace around it (the SDK compares `Mcp-Name` with the
        # body's tool name byte for byte)
        scope = {**scope, "headers": [(k, v.strip(b" \t")) for k, v in scope["headers"]]}
        body = bytearray()
        while True:  # the body is already bounded (1 MiB) by the transport guard in front of every route
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if len(body) > MAX_BODY_BYTES:  # normally refused before: the input guard reads bodies first
                await self._send(send, 413, _error(None, -32600, self.clean), {})
                return
            if not message.get("more_body", False):
                break
        request = _loads(bytes(body))
        if any(_bad_id(m) for m in (request if isinstance(request, list) else [request])):
            await self._answer(send, 400, _error(None, -32600, self.clean), key)
            return
        rid = request_id(request)
        well_formed = is_request_object(request)

        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()

        await self.app(scope, replay, self._capture(send, key, rid, well_formed))

    async def _refused_from_headers(self, request: Request) -> Response | None:
        """The SDK's refusals that need no body, in its order: Content-Type, Host and Origin
        (`TransportSecurityMiddleware`), then Accept (406)."""
        if self.security is not None and (refused := await self.security.validate_request(request, True)):
            return refused
        if self.accept_json and not check_accept_headers(request)[0]:
            version = request.headers.get(MCP_PROTOCOL_VERSION_HEADER)
            if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
                return Response(status_code=406)  # the modern entry's 406 has no body
            return Response(_NOT_ACCEPTABLE, 406, media_type="application/json")
        return None

    def _capture(self, send: Send, key: str, rid: str | int | None, well_formed: bool) -> Send:
        """The send of the wrapped endpoint: its answer is held whole, then finished (`_finish`)."""
        start: Message | None = None
        chunks: list[bytes] = []

        streaming = False

        async def capture(message: Message) -> None:
            nonlocal start, streaming
            if message["type"] == "http.response.start":
                start = message
                # a `subscriptions/listen` stream (MCP 2026-07-28) is sent as it comes, frame by frame: its
                # frames are notifications the server wrote and the listen's own result or error
                streaming = any(
                    k.lower() == b"content-type" and v.startswith(b"text/event-stream")
                    for k, v in message.get("headers", [])
                )
                if streaming:
                    await send({**message, JSONRPC_ANSWERED: True})
                return
            if streaming:
                await send(message)
                return
            if message["type"] != "http.response.body" or start is None:
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                await self._finish(send, start, b"".join(chunks), key, rid, well_formed)

        return capture

    async def _finish(
        self, send: Send, start: Message, raw: bytes, key: str, rid: str | int | None, well_formed: bool
    ) -> None:
        status: int = start["status"]
        headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
        ctype = next((v for k, v in headers if k.lower() == b"content-type"), b"")
        errors = 0
        if raw and ctype.startswith(b"application/json"):
            try:
                payload, errors = sanitize(orjson.loads(raw), self.clean, rid, well_formed)
                raw = orjson.dumps(payload)
            except orjson.JSONDecodeError:
                raw, errors = orjson.dumps(_error(rid, -32603, self.clean)), 1
        elif status >= 400:  # an SDK's plain-text refusal (421 Host, 403 Origin, 406): the status says it
            payload = jsonrpc_error(status)
            payload["id"] = rid
            headers = [(k, v) for k, v in headers if k.lower() != b"content-type"]
            headers.append((b"content-type", b"application/json"))
            raw, errors = orjson.dumps(payload), 1
        if errors and await self._limited(send, key):
            return
        headers.append((b"content-length", str(len(raw)).encode()))
        await send({**start, "headers": headers, JSONRPC_ANSWERED: True})
        await send({"type": "http.response.body", "body": raw, "more_body": False})

    async def _limited(self, send: Send, key: str) -> bool:
        """Count one protocol error against the client's budget; True when this answer became the 429."""
        if self.limiter is None:
            return False
        try:
            await self.limiter.check(key, self.group)
        except RateLimited as exc:
            payload = _error(None, RATE_LIMITED_CODE, self.clean)
            if self.clean is clean_mcp_error:  # MCP has no detail format: the REST ErrorResponse of the limit
                payload["error"]["data"] = exc.body()
            extra = dict(exc.headers)
            if exc.retry_after_seconds is not None:
                extra["retry-after"] = str(exc.retry_after_seconds)
            await self._send(send, 429, payload, extra)
            return True
        except RouteQuoteError:  # the limit store is away: the (clean) error answer stands
            return False
        return False

    async def _answer(self, send: Send, status: int, payload: dict[str, Any], key: str) -> None:
        if not await self._limited(send, key):
            await self._send(send, status, payload, {})

    @staticmethod
    async def _send(send: Send, status: int, payload: dict[str, Any], extra: dict[str, str]) -> None:
        raw = orjson.dumps(payload)
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(raw)).encode())]
        headers += [(k.lower().encode(), v.encode()) for k, v in extra.items()]
        await send(
            {"type": "http.response.start", "status": status, "headers": headers, JSONRPC_ANSWERED: True}
        )
        await send({"type": "http.response.body", "body": raw, "more_body": False})


# ---- stdio ------------------------------------------------------------------------------------------------


def _clean_message(message: SessionMessage) -> SessionMessage:
    error = message.message
    if not isinstance(error, JSONRPCError):
        return message
    cleaned = ErrorData.model_validate(clean_mcp_error(error.error.model_dump()))
    return SessionMessage(JSONRPCError(jsonrpc="2.0", id=error.id, error=cleaned), message.metadata)


@contextlib.asynccontextmanager
async def guarded_streams(read_stream: Any, write_stream: Any) -> AsyncIterator[tuple[Any, Any]]:
    """The guard on stdio: the streams to hand the MCP server in place of stdio's own. Every error it writes
    is rebuilt by `clean_mcp_error`; a request whose id is longer than `MAX_ID_CHARS` is answered -32600
    (id null) and never reaches the server. (One local caller: no rate limit.)"""
    out_send, out_receive = anyio.create_memory_object_stream[SessionMessage](0)
    in_send, in_receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)

    async def outgoing() -> None:
        async with out_receive:
            async for message in out_receive:
                await write_stream.send(_clean_message(message))

    async def incoming() -> None:
        async with in_send:
            async for message in read_stream:
                if isinstance(message, SessionMessage) and _bad_id(
                    {"id": getattr(message.message, "id", None)}
                ):
                    refusal = JSONRPCError(
                        jsonrpc="2.0", id=None, error=ErrorData(code=-32600, message="Invalid Request")
                    )
                    await write_stream.send(SessionMessage(refusal))
                    continue
                await in_send.send(message)

    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(outgoing)
            tasks.start_soon(incoming)
            try:
                yield in_receive, out_send
            finally:
                tasks.cancel_scope.cancel()
    finally:
        await write_stream.aclose()  # as the server would have: stdio's writer ends, and the process with it
