"""Following a session's events (`GET /v2/session/{id}/events`, Server-Sent Events read with httpx-sse).

`RouteQuoteClient.events(handle)` and `AsyncRouteQuoteClient.events(handle)` iterate the session's events in
order, from the first (or after `last_event_id`), and stop after the event that brings the session to rest.
A dropped connection is resumed with `Last-Event-ID` (at most `max_reconnects` times in a row without a new
event); each event's `sequence` is checked to follow the one before, so a gap or a reordering is refused
(`ResponseInvalid`), never passed on.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
from httpx_sse import SSEError, aconnect_sse, connect_sse

from routequote.client.errors import ResponseInvalid, ServiceUnreachable
from routequote.client.token import SessionHandle
from routequote.core.quote import SESSION_HEADER

WHAT = "session events"
RESTING = ("complete", "cancelled", "failed", "reapproval_required")


@dataclass(frozen=True)
class SessionEvent:
    """One entry of a session's event log (docs/sessions.md, "Event log"); `raw` is the JSON as received."""

    id: str
    session_id: str
    sequence: int
    type: str
    status: str
    previous_status: str | None
    step_index: int | None
    next_operation: str
    transactions: list[dict[str, Any]]
    funds: dict[str, Any] | None
    outcome: str | None
    terminal: bool
    final_on_chain: bool | None
    at: str
    raw: dict[str, Any] = field(repr=False, compare=False)

    @property
    def at_rest(self) -> bool:
        """The session rests after this event: the stream ends here."""
        return self.status in RESTING


def parse_event(data: str, session_id: str, expected: int) -> SessionEvent:
    """An SSE message's data as an event of `session_id` with sequence `expected` (ResponseInvalid otherwise)."""
    try:
        raw = json.loads(data)
    except ValueError:
        raise ResponseInvalid(WHAT, ["an event that is not JSON"]) from None
    if not isinstance(raw, dict):
        raise ResponseInvalid(WHAT, ["an event that is not a JSON object"])
    problems = []
    if raw.get("session_id") != session_id:
        problems.append("an event of another session")
    if raw.get("sequence") != expected:
        problems.append(f"event sequence {raw.get('sequence')!r} where {expected} follows")
    if not isinstance(raw.get("status"), str) or not isinstance(raw.get("type"), str):
        problems.append("an event without its type and status")
    if problems:
        raise ResponseInvalid(WHAT, problems)
    try:
        return SessionEvent(
            id=str(raw["id"]),
            session_id=session_id,
            sequence=expected,
            type=raw["type"],
            status=raw["status"],
            previous_status=raw.get("previous_status"),
            step_index=raw.get("step_index"),
            next_operation=str(raw.get("next_operation")),
            transactions=list(raw.get("transactions") or []),
            funds=raw.get("funds"),
            outcome=raw.get("outcome"),
            terminal=bool(raw.get("terminal")),
            final_on_chain=raw.get("final_on_chain"),
            at=str(raw.get("at")),
            raw=raw,
        )
    except (KeyError, TypeError):
        raise ResponseInvalid(WHAT, ["an event missing its id"]) from None


def _sequence_of(last_event_id: str | None) -> int:
    if not last_event_id:
        return 0
    tail = last_event_id.rsplit(":", 1)[-1]
    if not tail.isdigit():
        raise ValueError("last_event_id is an event id this stream sent (`<session_id>:<sequence>`)")
    return int(tail)


def _headers(handle: SessionHandle, last_id: str | None) -> dict[str, str]:
    headers = {"accept": "text/event-stream", SESSION_HEADER: handle.token.reveal()}
    if last_id:
        headers["last-event-id"] = last_id
    return headers


class _Follow:
    """What both iterators share: where the stream is, and what its next answer means."""

    def __init__(self, handle: SessionHandle, last_event_id: str | None, max_reconnects: int) -> None:
        self.handle = handle
        self.last_id = last_event_id
        self.sequence = _sequence_of(last_event_id)
        self.max_reconnects = max_reconnects
        self.failures = 0
        self.done = False
        self.path = f"/v2/session/{handle.session_id}/events"

    def opened(self, response: httpx.Response, raise_error: Any) -> bool:
        """False when there is nothing to read (204: the caller holds the resting event); raises on errors."""
        if response.status_code == 204:
            self.done = True
            return False
        if response.status_code != 200:
            raise_error(WHAT, response, _json_or_none(response))
        return True

    def take(self, data: str) -> SessionEvent:
        event = parse_event(data, self.handle.session_id, self.sequence + 1)
        self.sequence, self.last_id, self.failures = event.sequence, event.id, 0
        if event.at_rest:
            self.done = True
        return event

    def dropped(self, exc: Exception | None) -> None:
        """The connection ended before the session rested: resume, or give up after too many in a row."""
        self.failures += 1
        if self.failures > self.max_reconnects:
            detail = type(exc).__name__ if exc is not None else "the stream ended before the session rested"
            raise ServiceUnreachable(f"{WHAT}: {detail}")


def _json_or_none(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def follow_events(
    http: httpx.Client,
    handle: SessionHandle,
    raise_error: Any,
    *,
    last_event_id: str | None = None,
    max_reconnects: int = 5,
    retry_seconds: float = 1.0,
) -> Iterator[SessionEvent]:
    state = _Follow(handle, last_event_id, max_reconnects)
    while not state.done:
        failure: Exception | None = None
        try:
            with connect_sse(http, "GET", state.path, headers=_headers(handle, state.last_id)) as source:
                if source.response.status_code not in (200, 204):
                    source.response.read()
                if not state.opened(source.response, raise_error):
                    return
                for message in source.iter_sse():
                    if message.data:
                        yield state.take(message.data)
                        if state.done:
                            return
        except (httpx.TransportError, SSEError) as exc:
            failure = exc
        state.dropped(failure)
        time.sleep(retry_seconds)


async def afollow_events(
    http: httpx.AsyncClient,
    handle: SessionHandle,
    raise_error: Any,
    *,
    last_event_id: str | None = None,
    max_reconnects: int = 5,
    retry_seconds: float = 1.0,
) -> AsyncIterator[SessionEvent]:
    state = _Follow(handle, last_event_id, max_reconnects)
    while not state.done:
        failure: Exception | None = None
        try:
            async with aconnect_sse(
                http, "GET", state.path, headers=_headers(handle, state.last_id)
            ) as source:
                if source.response.status_code not in (200, 204):
                    await source.response.aread()
                if not state.opened(source.response, raise_error):
                    return
                async for message in source.aiter_sse():
                    if message.data:
                        yield state.take(message.data)
                        if state.done:
                            return
        except (httpx.TransportError, SSEError) as exc:
            failure = exc
        state.dropped(failure)
        await asyncio.sleep(retry_seconds)


__all__ = ["SessionEvent", "afollow_events", "follow_events", "parse_event"]
