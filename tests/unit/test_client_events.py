"""routequote.client's event iterators against a scripted transport (httpx.MockTransport: the bytes a server would
send): a stream that ends before the session rests is resumed with Last-Event-ID; a gap, a reordering or another
session's event is refused, never passed on; too many drops in a row give up."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from routequote.client import AsyncRouteQuoteClient, RouteQuoteClient, SessionHandle, SessionToken
from routequote.client.errors import ResponseInvalid, ServiceUnreachable
from routequote.core.quote import SESSION_HEADER

SID = "072447e9-69d5-545a-b648-b067cce0e49a"
TOKEN = "q7Xv0dN3kR9sLb2WmYc8EuTfH1jZpG5aKxQ4oVnDi6B"
HANDLE = SessionHandle(SID, SessionToken(TOKEN), {})


def event(sequence: int, status: str = "action_ready", session_id: str = SID) -> str:
    body = {
        "id": f"{session_id}:{sequence}",
        "session_id": session_id,
        "sequence": sequence,
        "type": "cancel" if status == "cancelled" else "submitted_pending",
        "status": status,
        "previous_status": None,
        "step_index": 0,
        "next_operation": "none",
        "transactions": [],
        "funds": None,
        "outcome": None,
        "terminal": status == "cancelled",
        "final_on_chain": None,
        "at": "2026-11-22T05:00:00.000Z",
    }
    return f"id: {session_id}:{sequence}\ndata: {json.dumps(body)}\n\n"


def scripted(answers: list[str]) -> tuple[Callable[[httpx.Request], httpx.Response], list[str | None]]:
    """Each request gets the next scripted stream; the Last-Event-ID of each request is recorded."""
    asked: list[str | None] = []

    def handle(request: httpx.Request) -> httpx.Response:
        assert request.headers[SESSION_HEADER] == TOKEN and request.url.path == f"/v2/session/{SID}/events"
        asked.append(request.headers.get("last-event-id"))
        body = answers[len(asked) - 1]
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body.encode())

    return handle, asked


def sync_events(handle: Any, **kw: Any) -> list[int]:
    with RouteQuoteClient("http://rq.test", transport=httpx.MockTransport(handle)) as client:
        return [e.sequence for e in client.events(HANDLE, retry_seconds=0, **kw)]


def test_a_stream_that_ends_before_rest_is_resumed_after_the_last_event() -> None:
    handle, asked = scripted([event(1) + event(2), event(3) + event(4, "cancelled")])
    assert sync_events(handle) == [1, 2, 3, 4]
    assert asked == [None, f"{SID}:2"]


def test_the_async_iterator_resumes_the_same_way() -> None:
    handle, asked = scripted([event(3), ": heartbeat\n\n" + event(4, "cancelled")])

    async def read() -> list[int]:
        async with AsyncRouteQuoteClient("http://rq.test", transport=httpx.MockTransport(handle)) as client:
            return [
                e.sequence async for e in client.events(HANDLE, last_event_id=f"{SID}:2", retry_seconds=0)
            ]

    assert asyncio.run(read()) == [3, 4]
    assert asked == [f"{SID}:2", f"{SID}:3"]


@pytest.mark.parametrize(
    "stream",
    [event(1) + event(3), event(2) + event(1), event(1, session_id="11111111-2222-4333-8444-555555555555")],
    ids=["gap", "reordered", "another session"],
)
def test_a_gap_a_reordering_or_another_sessions_event_is_refused(stream: str) -> None:
    handle, _ = scripted([stream])
    with pytest.raises(ResponseInvalid):
        sync_events(handle)


def test_too_many_drops_in_a_row_give_up() -> None:
    handle, asked = scripted([event(1)] + [""] * 3)
    with pytest.raises(ServiceUnreachable):
        sync_events(handle, max_reconnects=2)
    assert asked == [
        None,
        f"{SID}:1",
        f"{SID}:1",
    ]  # two reconnects in a row without a new event, then no more
