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
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Any

import structlog

from routequote.core.sessions.event_log import ends_stream, event_json, parse_event_id
from routequote.errors import InvalidRequest, RateLimited, RouteQuoteError
from routequote.jsontext import json_dumps
from routequote.ports import SessionEvent
from routequote.sessions.base import SessionBase
from routequote.store_errors import stored

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
    """Reads and follows sessions' event logs for the streams of this process.

    A stream waits, between reads of its log, until it is woken: at once by a commit of this process
    (`SessionBase.on_event`), or by the feed's one poller, which reads the versions of every followed session in one
    query per `poll_seconds` (however many streams are open) and wakes the streams of each session whose version
    moved (a commit of another worker or replica). A stream also reads on its own every `FALLBACK_POLLS` polls,
    should the poller fail."""

    FALLBACK_POLLS = 30

    def __init__(self, sessions: SessionBase, *, poll_seconds: float = 1.0, page: int = PAGE) -> None:
        self.sessions = sessions
        self.poll_seconds = poll_seconds
        self.page = page
        self._waiters: dict[str, set[asyncio.Event]] = {}
        self._seen: dict[str, int] = {}  # the version the poller last read, per followed session
        self._poller: asyncio.Task[None] | None = None
        self.polls = 0  # version reads the poller made (one per interval while any stream is open)
        sessions.on_event.append(self._wake)

    def _wake(self, event: SessionEvent) -> None:
        for waiter in self._waiters.get(event.session_id, ()):
            waiter.set()

    async def _poll(self) -> None:
        """While any stream is open: every `poll_seconds`, one read of the followed sessions' versions."""
        while self._waiters:
            await asyncio.sleep(self.poll_seconds)
            followed = list(self._waiters)
            if not followed:
                break
            try:
                versions = await self.sessions.store.versions(followed)
            except Exception as exc:  # noqa: BLE001 - the store's fault: the streams' fallback reads cover it
                log.warning("event_stream_poll_failed", error_type=type(exc).__name__)
                continue
            self.polls += 1
            for session_id, version in versions.items():
                if version != self._seen.get(session_id):
                    self._seen[session_id] = version
                    for waiter in self._waiters.get(session_id, ()):
                        waiter.set()
        self._poller = None

    def _follow_from(self, session_id: str, waiter: asyncio.Event) -> None:
        self._waiters.setdefault(session_id, set()).add(waiter)
        if self._poller is None or self._poller.done():
            self._poller = asyncio.get_running_loop().create_task(self._poll())

    def _unfollow(self, session_id: str, waiter: asyncio.Event) -> None:
        waiters = self._waiters.get(session_id)
        if waiters is not None:
            waiters.discard(waiter)
            if not waiters:
                self._waiters.pop(session_id, None)
                self._seen.pop(session_id, None)
        if not self._waiters and self._poller is not None:  # the last stream ended: no poller left behind
            self._poller.cancel()
            self._poller = None

    async def start(self, session_id: Any, token: str | None, last_event_id: str | None) -> StreamStart:
        """Authorise the stream (the session's token, as every session call: a wrong one is 404) and read where
        it resumes. A `Last-Event-ID` that names no event of this session's log is 400."""
        record = await self.sessions.authorized(session_id, token)
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

    async def start_now(self, session_id: Any, token: str | None) -> StreamStart:
        """Authorise as `start` does, and follow only the events committed from now on."""
        record = await self.sessions.authorized(session_id, token)
        return StreamStart(record.session_id, record.version, ends_stream(record.status))

    async def follow(self, start: StreamStart) -> AsyncGenerator[SessionEvent, None]:
        """Every event after `start.after`, in order, as they are committed; returns after the event that brings
        the session to rest, or when the store cannot be read (the caller resumes with `Last-Event-ID`)."""
        after = start.after
        waiter = asyncio.Event()
        self._follow_from(start.session_id, waiter)
        try:
            while True:
                waiter.clear()  # before the read: a wake-up during the read is kept for the wait below
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
                    await asyncio.wait_for(waiter.wait(), self.poll_seconds * self.FALLBACK_POLLS)
        finally:
            self._unfollow(start.session_id, waiter)


__all__ = ["EventFeed", "StreamSlots", "StreamStart", "encode_event", "render_event"]
