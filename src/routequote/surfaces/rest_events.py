"""REST `GET /v2/session/{id}/events`: the session's event log as Server-Sent Events (sse-starlette).

- Authorised by the session token in `X-RouteQuote-Session-Token`, as every session call: a wrong token, or
  another session's, is 404 `session_not_found`.
- Each SSE message is one event: `id:` the event's id, `data:` its JSON (`sessions.event_stream.encode_event`).
  A reconnect sends `Last-Event-ID` and gets every event after it, in order; the stream ends after the event
  that brings the session to rest (`core.sessions.lifecycle`), and a reconnect after that is 204 (an
  EventSource stops reconnecting on 204).
- A heartbeat comment (`: heartbeat`) on an idle stream every `event_stream_heartbeat_seconds`.
- Bounded: at most `event_stream_max_per_client` open streams per client in each process (429 past it), and a
  client that reads nothing for `event_stream_send_timeout_seconds` is dropped; a stream holds one page of
  events in memory, never a backlog.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import structlog
from fastapi import APIRouter, Request
from sse_starlette import EventSourceResponse, ServerSentEvent
from sse_starlette.sse import SendTimeoutError
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from routequote.contract.v2 import ErrorResponse
from routequote.core.quote import SESSION_HEADER
from routequote.core.sessions.event_log import event_id
from routequote.errors import RouteQuoteError
from routequote.observability import ASKED_METHOD
from routequote.ratelimit import RateLimiter
from routequote.sessions.event_stream import EventFeed, StreamSlots, StreamStart, encode_event
from routequote.surfaces.errors import error_response
from routequote.surfaces.http import client_key
from routequote.surfaces.rest_session import TOKEN_PARAM

log = structlog.get_logger("routequote.sessions.events")
_ERR = {"model": ErrorResponse}
RETRY_MS = 2000  # the reconnection delay a client is told (SSE `retry:`)

EVENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "One entry of the session's event log (the `data:` of each SSE message; its `id:` is `id`).",
    "required": [
        "id",
        "session_id",
        "sequence",
        "type",
        "status",
        "previous_status",
        "step_index",
        "next_operation",
        "transactions",
        "funds",
        "outcome",
        "terminal",
        "final_on_chain",
        "at",
    ],
    "properties": {
        "id": {
            "type": "string",
            "description": "`<session_id>:<sequence>`: stable, the Last-Event-ID to resume",
        },
        "session_id": {"type": "string"},
        "sequence": {"type": "integer", "minimum": 1, "description": "per session, from 1, without gaps"},
        "type": {"type": "string", "description": "the session machine's event (docs/sessions.md)"},
        "status": {"type": "string", "description": "the session's status after the event"},
        "previous_status": {"type": ["string", "null"]},
        "step_index": {"type": ["integer", "null"], "description": "the current step after the event"},
        "next_operation": {"type": "string"},
        "transactions": {
            "type": "array",
            "description": "chain evidence the event recorded: transactions named, then verified",
            "items": {
                "type": "object",
                "required": ["step_index", "side", "chain", "tx_id", "verified"],
                "properties": {
                    "step_index": {"type": "integer"},
                    "side": {"type": "string", "enum": ["source", "destination"]},
                    "chain": {"type": "string"},
                    "tx_id": {"type": "string"},
                    "verified": {"type": "boolean"},
                },
            },
        },
        "funds": {
            "type": ["object", "null"],
            "description": "where the caller's value sits now, from the verified state",
            "properties": {
                "chain": {"type": "string"},
                "token": {"type": "string"},
                "amount_base": {
                    "type": ["string", "null"],
                    "pattern": "^[0-9]+$",
                    "description": "base units as a decimal string; null while a bridge message is in flight",
                },
                "owner": {
                    "type": ["string", "null"],
                    "description": "the wallet holding it, or `bridge:<provider>` while a bridge holds it",
                },
                "wallet": {"type": ["string", "null"]},
                "state": {"type": ["string", "null"]},
            },
        },
        "outcome": {
            "type": ["string", "null"],
            "enum": ["complete", "cancelled", "failed", "refund_on_origin", "reapproval_required", None],
            "description": "where the session rests after the event (docs/sessions.md, terminal states)",
        },
        "terminal": {"type": "boolean", "description": "no event can follow (compare Across isTerminal)"},
        "final_on_chain": {
            "type": ["boolean", "null"],
            "description": "the outcome's chain facts are final (compare Across finalized); null while moving",
        },
        "at": {"type": "string", "format": "date-time"},
    },
}


class _EventStream(EventSourceResponse):
    """The SSE response that gives back its client's slot when it ends, however it ends; a client that reads
    nothing for the send timeout is dropped (its connection is closed) and logged."""

    def __init__(self, content: AsyncIterator[ServerSentEvent], *, release: Any, session_id: str, **kw: Any):
        super().__init__(content, **kw)
        self._release = release
        self._session_id = session_id

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        except SendTimeoutError:
            # the server closes the connection (the response is left incomplete): the client resumes with
            # Last-Event-ID when it reads again
            log.info("event_stream_slow_reader_dropped", session_id=self._session_id)
        finally:
            self._release()


def router(feed: EventFeed, limiter: RateLimiter, slots: StreamSlots, settings: Any) -> APIRouter:
    api = APIRouter(prefix="/v2")

    @api.get(
        "/session/{session_id}/events",
        operation_id="streamSessionEvents",
        responses={
            200: {
                "description": "text/event-stream: one SSE message per event (`id:` the event id, `data:` the "
                "event JSON, components.schemas.SessionEvent); heartbeat comments while idle; ends after the "
                "event that brings the session to rest",
                "content": {"text/event-stream": {"schema": {"type": "string"}}},
            },
            204: {"description": "the caller already holds the event the session came to rest with"},
            400: _ERR,
            404: _ERR,
            429: _ERR,
            503: _ERR,
        },
        summary="Follow a session: its event log as Server-Sent Events, resumable with Last-Event-ID",
        openapi_extra={
            "parameters": [
                TOKEN_PARAM,
                {
                    "name": "Last-Event-ID",
                    "in": "header",
                    "required": False,
                    "description": "the id of the last event received: the stream resumes after it",
                    "schema": {"type": "string", "maxLength": 120},
                },
            ]
        },
    )
    async def events(request: Request, session_id: str) -> Response:
        client = client_key(request)
        headers: dict[str, str] = {}
        try:
            headers = await limiter.check(client, "session_api")
            start = await feed.start(
                session_id, request.headers.get(SESSION_HEADER), request.headers.get("last-event-id")
            )
            if start.finished:
                return Response(status_code=204, headers=headers)
            if request.scope.get(ASKED_METHOD) == "HEAD":  # the stream's headers, no stream (no slot held)
                return Response(status_code=200, media_type="text/event-stream", headers=headers)
            slots.acquire(client)
        except RouteQuoteError as exc:
            return error_response(exc, headers)
        return _EventStream(
            _messages(feed, start),
            release=lambda: slots.release(client),
            session_id=start.session_id,
            headers=headers,
            ping=settings.event_stream_heartbeat_seconds,
            ping_message_factory=lambda: ServerSentEvent(comment="heartbeat"),
            send_timeout=settings.event_stream_send_timeout_seconds,
        )

    return api


async def _messages(feed: EventFeed, start: StreamStart) -> AsyncIterator[ServerSentEvent]:
    first = True
    async for event in feed.follow(start):
        yield ServerSentEvent(
            data=encode_event(event),
            id=event_id(event.session_id, event.seq),
            retry=RETRY_MS if first else None,
        )
        first = False
