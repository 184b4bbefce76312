"""Following a session's event log: what `GET /v2/session/{id}/events` streams (and what webhooks will send).

The log is the store's (`SessionStore.events_after`), written in each commit's own transaction, so whatever
worker or replica committed an event, every stream reads the same events in the same order. A stream
reads the log page by page from the caller's `Last-Event-ID`: it never misses nor reorders an event, and
it holds at most one page in memory. Between reads it waits for a commit of this process (`SessionBase.on_event`
wakes it at once) or the poll interval, whichever comes first (other processes' commits are seen at the next
read).

`encode_event` is the one serialisation of an event: the stream's `data:` and a webhook's body are these bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import structlog

from routequote.core.sessions.event_log import ends_stream, event_json, parse_event_id
from routequote.errors import InvalidRequest, RateLimited, RouteQuoteError
from routequote.ports import SessionEvent
from routequote.sessions.base import SessionBase
from routequote.storage.sessions_common import json_dumps, stored

log = structlog.get_logger("routequote.sessions.events")
PAGE = 100  # events read from the store at a time


def render_event(event: SessionEvent) -> dict[str, Any]:
    """The event's JSON object (`core.sessions.event_log` documents the shape)."""
    return event_json(
        session_id=event.session_id,
        sequence=event.seq,
        type_=event.event,
        status=event.to_status,
        previous_status=event.from_status,
        step_index=event.step_index,
        next_operation=event.next_operation,
        transactions=event.transactions,
        funds=event.funds,
        at=event.at,
    )


def encode_event(event: SessionEvent) -> str:
    """The event as compact JSON text: the same bytes on the stream and in a webhook."""
    return json_dumps(render_event(event))


@dataclass(frozen=True, slots=True)
class StreamStart:
    session_id: str
    after: int  # the last sequence the caller holds (0: none)
    finished: bool  # the caller already holds the event the session came to rest with: nothing will follow


class StreamSlots:
    """Open streams per client, in this process: past `limit`, 429 (a slot is held until its stream ends)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._open: dict[str, int] = {}

    def acquire(self, client: str) -> None:
        held = self._open.get(client, 0)
        if held >= self.limit:
            raise RateLimited(
                "event_streams_limit_reached",
                f"this client already has {self.limit} open event streams: close one first",
                retry_after_seconds=5,
                details={"max_event_streams": self.limit},
            )
        self._open[client] = held + 1

    def release(self, client: str) -> None:
        held = self._open.get(client, 0) - 1
        if held > 0:
            self._open[client] = held
        else:
            self._open.pop(client, None)

    def open_streams(self) -> int:
        return sum(self._open.values())


class EventFeed:
    """Reads and follows sessions' event logs for the streams of this process."""

    def __init__(self, sessions: SessionBase, *, poll_seconds: float = 1.0, page: int = PAGE) -> None:
        self.sessions = sessions
        self.poll_seconds = poll_seconds
        self.page = page
        self._waiters: dict[str, set[asyncio.Event]] = {}
        sessions.on_event.append(self._wake)

    def _wake(self, event: SessionEvent) -> None:
        for waiter in self._waiters.get(event.session_id, ()):
            waiter.set()

    async def start(self, session_id: Any, token: str | None, last_event_id: str | None) -> StreamStart:
        """Authorise the stream (the session's token, as every session call: a wrong one is 404) and read where
        it resumes. A `Last-Event-ID` that names no event of this session's log is 400."""
        record = await self.sessions._load(session_id, token)
        after = 0
        if last_event_id is not None and last_event_id.strip():
            parsed = parse_event_id(record.session_id, last_event_id)
            if parsed is None or parsed > record.version:
                raise InvalidRequest(
                    "last_event_id_unknown",
                    "Last-Event-ID names no event of this session: send the id of an event this stream sent, "
                    "or none to start from the first event",
                )
            after = parsed
        finished = after >= record.version and ends_stream(record.status)
        return StreamStart(record.session_id, after, finished)

    async def follow(self, start: StreamStart) -> AsyncIterator[SessionEvent]:
        """Every event after `start.after`, in order, as they are committed; returns after the event that brings
        the session to rest, or when the store cannot be read (the caller resumes with `Last-Event-ID`)."""
        after = start.after
        waiter = asyncio.Event()
        self._waiters.setdefault(start.session_id, set()).add(waiter)
        try:
            while True:
                waiter.clear()
                try:
                    events = await stored(
                        self.sessions.store.events_after(start.session_id, after, self.page)
                    )
                except RouteQuoteError:
                    log.warning("event_stream_store_unavailable", session_id=start.session_id, after=after)
                    return
                for event in events:
                    yield event
                    after = event.seq
                    if ends_stream(event.to_status):
                        return
                if len(events) == self.page:
                    continue  # more are stored: read on without waiting
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(waiter.wait(), self.poll_seconds)
        finally:
            waiters = self._waiters.get(start.session_id)
            if waiters is not None:
                waiters.discard(waiter)
                if not waiters:
                    self._waiters.pop(start.session_id, None)


__all__ = ["EventFeed", "StreamSlots", "StreamStart", "encode_event", "render_event"]
