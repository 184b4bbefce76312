"""Upstream answers held at arm's length: bounded reads, big JSON parsed off the event loop, classified errors.

Every upstream (chain RPCs, Circle Iris, Across, the LayerZero OFT, price feeds) is read through
`fetch_bounded`: the body is streamed and abandoned past `max_bytes` (a 30 MB answer is never held whole),
and a body large enough to cost the event loop is parsed in a worker thread (`loads`).

What an upstream wrote never reaches a caller. An answer says which dependency failed, in which method, and
one short classified reason (`public_reason`); the upstream's own text goes to the log, redacted, with URLs
cut to their host, and bounded (`log_failure`).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx
import structlog

DEFAULT_MAX_BYTES = (
    8 * 1024 * 1024
)  # a real receipt or market answer is far smaller; ROUTEQUOTE_UPSTREAM_MAX_BYTES
OFF_LOOP_BYTES = 1024 * 1024  # from here on a parse (several ms) is worth a worker-thread hop
LOG_DETAIL_CHARS = 500
# every answer text an upstream failure can produce, by kind (the kinds of market.jsonrpc.RpcError)
CLASSIFIED = {
    "timeout": "no answer in time",
    "transport_error": "unreachable, or answered an HTTP error status",
    "rate_limited": "rate-limited the request",
    "invalid_response": "answered something that is not a valid response",
    "call_error": "answered with an error",
    "invalid_data": "answered data that failed validation",
    "stale_data": "answered data older than allowed",
    "too_large": "answered more than the size limit",
    "source_error": "could not be read",
}
_URL = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)([^/\s'\"<>]+)[^\s'\"<>]*")
_METHOD = re.compile(r"[A-Za-z0-9_./:-]{1,64}")
_WORD_RUN = re.compile(r"(?<![A-Za-z])[a-z]{3,8}(?: [a-z]{3,8}){11,23}(?![A-Za-z])")  # a BIP-39-like mnemonic

T = TypeVar("T")
log = structlog.get_logger("routequote.upstream")


class ResponseTooLarge(Exception):
    """The upstream's body passed the size limit; reading stopped there."""


@dataclass(frozen=True, slots=True)
class Answer:
    status_code: int
    body: bytes
    headers: httpx.Headers


async def fetch_bounded(
    client: httpx.AsyncClient, method: str, url: str, *, max_bytes: int = DEFAULT_MAX_BYTES, **kwargs: Any
) -> Answer:
    """One request whose body is read up to `max_bytes` (a larger declared or streamed body raises
    ResponseTooLarge, and the connection is dropped). httpx errors propagate unchanged."""
    async with client.stream(method, url, **kwargs) as resp:
        declared = resp.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > max_bytes:
            raise ResponseTooLarge(f"declared {declared} bytes, limit {max_bytes}")
        body = bytearray()
        async for chunk in resp.aiter_bytes():  # decoded bytes are counted: a compressed bomb stops too
            body += chunk
            if len(body) > max_bytes:
                raise ResponseTooLarge(f"more than {max_bytes} bytes")
        return Answer(resp.status_code, bytes(body), resp.headers)


async def loads(body: bytes, **kwargs: Any) -> Any:
    """`json.loads`, in a worker thread when the body is big enough to stall other requests."""
    if len(body) < OFF_LOOP_BYTES:
        return json.loads(body, **kwargs)
    return await asyncio.to_thread(json.loads, body, **kwargs)


async def off_loop(work: Callable[..., T], *args: Any, heavy: bool) -> T:
    """Run `work(*args)` in a worker thread when `heavy`, else inline (a thread hop costs more than a small parse)."""
    if not heavy:
        return work(*args)
    return await asyncio.to_thread(work, *args)


def failure_kind(exc: BaseException) -> str:
    """The class of an upstream failure: an RpcError's own kind, a decoding error's `invalid_data`."""
    kind = getattr(exc, "kind", None)
    if isinstance(kind, str) and kind in CLASSIFIED:
        return kind
    return (
        "invalid_data"
        if isinstance(exc, ValueError | KeyError | TypeError | AssertionError)
        else "source_error"
    )


def classified(kind: str, method: str | None = None) -> str:
    """The classified reason, after the method when one is known (a method is our own name for the call)."""
    text = CLASSIFIED.get(kind, CLASSIFIED["source_error"])
    return f"{method}: {text}" if method and _METHOD.fullmatch(method) else text


def public_reason(dependency: str, method: str | None, kind: str) -> str:
    """What an answer says about an upstream failure: dependency, method, classified reason; nothing else."""
    return f"{dependency}: {classified(kind, method)}"


def log_detail(text: str) -> str:
    """An upstream's own text as the log keeps it: URLs cut to scheme and host, secrets redacted, bounded."""
    from routequote.observability import redact_text

    cut = _URL.sub(
        lambda m: f"{m.group(1)}{m.group(2).rpartition('@')[2]}/<redacted>", text[: LOG_DETAIL_CHARS * 4]
    )
    out = redact_text(cut)
    return out if len(out) <= LOG_DETAIL_CHARS else out[:LOG_DETAIL_CHARS] + "...<cut>"


def log_failure(dependency: str, method: str | None, kind: str, exc: BaseException) -> None:
    """The failure for the operator: our own account of it and what the upstream wrote (`exc.upstream`)."""
    upstream = getattr(exc, "upstream", "")
    said = _WORD_RUN.sub("<redacted>", str(upstream)[: LOG_DETAIL_CHARS * 4])  # only the upstream's words
    text = f"{exc} | upstream said: {said}" if upstream else str(exc)
    log.warning(
        "upstream_failed",
        dependency=dependency,
        method=method if method and _METHOD.fullmatch(method) else None,
        kind=kind,
        error_type=type(exc).__name__,
        detail=log_detail(text),
    )
