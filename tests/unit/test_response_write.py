"""Each answer's head and body leave in one write: uvicorn's httptools protocol, as `routequote serve` runs it,
driven with a transport that records every call."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import uvicorn
from uvicorn.server import ServerState

from routequote.surfaces import input_guard
from routequote.surfaces.response_write import CONTINUE, OneWrite

pytestmark = pytest.mark.skipif(input_guard.HttpToolsProtocol is None, reason="httptools is not installed")


class Recording(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, bytes]] = []
        self.closed = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.calls.append(("write", bytes(data)))

    def writelines(self, list_of_data: Any) -> None:
        self.calls.append(("writelines", b"".join(list_of_data)))

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 50000), "sockname": ("127.0.0.1", 8080)}.get(name, default)

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def sent(self) -> bytes:
        return b"".join(data for _, data in self.calls)


def connect(app: Any) -> tuple[Any, Recording]:
    config = uvicorn.Config(app, log_level="warning", http=input_guard.GuardedHttpToolsProtocol)
    protocol = input_guard.GuardedHttpToolsProtocol(config, ServerState(), {}, asyncio.get_running_loop())
    transport = Recording()
    protocol.connection_made(transport)
    return protocol, transport


async def turns(n: int = 20) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


async def exchange(app: Any, request: bytes) -> Recording:
    protocol, transport = connect(app)
    protocol.data_received(request)
    await turns()
    protocol.connection_lost(None)
    return transport


def answering(body: bytes) -> Any:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        start = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
        await send({"type": "http.response.start", "status": 200, "headers": start})
        await send({"type": "http.response.body", "body": body})

    return app


GET = b"GET /x HTTP/1.1\r\nhost: t\r\n\r\n"


async def test_an_answer_of_known_length_is_one_write_of_its_head_and_body() -> None:
    body = b'{"quote": "%s"}' % (b"x" * 10_000)
    transport = await exchange(answering(body), GET)
    assert [kind for kind, _ in transport.calls] == ["writelines"]
    head, _, sent_body = transport.sent().partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK\r\n") and b"\r\ncontent-length: %d" % len(body) in head
    assert sent_body == body


async def test_two_answers_on_one_connection_are_one_write_each() -> None:
    transport = await exchange(answering(b"{}"), GET + GET)
    assert [kind for kind, _ in transport.calls] == ["writelines", "writelines"]
    assert transport.sent().count(b"HTTP/1.1 200 OK\r\n") == 2


async def test_the_answer_to_head_and_an_empty_answer_write_their_head_at_once() -> None:
    transport = await exchange(answering(b""), b"HEAD /x HTTP/1.1\r\nhost: t\r\n\r\n")
    assert transport.sent().startswith(b"HTTP/1.1 200 OK\r\n") and transport.sent().endswith(b"\r\n\r\n")
    transport = await exchange(answering(b""), GET)
    assert transport.calls[0][0] == "write" and transport.calls[0][1].endswith(b"\r\n\r\n")
    assert transport.sent().endswith(b"content-length: 0\r\n\r\n")


async def test_a_streamed_answer_sends_its_head_before_its_first_event() -> None:
    first_event = asyncio.Event()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        start = {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"text/event-stream")],
        }
        await send(start)
        await first_event.wait()
        await send({"type": "http.response.body", "body": b"data: 1\n\n", "more_body": False})

    protocol, transport = connect(app)
    protocol.data_received(GET)
    await turns()
    before_event = transport.sent()
    assert before_event.startswith(b"HTTP/1.1 200 OK\r\n") and b"transfer-encoding: chunked" in before_event
    assert b"data: 1" not in before_event
    first_event.set()
    await turns()
    protocol.connection_lost(None)
    assert b"data: 1" in transport.sent()


async def test_100_continue_goes_at_once_and_the_answer_after_it_is_one_write() -> None:
    body = b'{"a": 1}'
    request = (
        b"POST /x HTTP/1.1\r\nhost: t\r\nexpect: 100-continue\r\ncontent-type: application/json\r\n"
        b"content-length: %d\r\n\r\n" % len(body)
    )
    protocol, transport = connect(answering(b"{}"))
    protocol.data_received(request)
    await turns()
    assert transport.calls == [("write", CONTINUE)]  # the app waits for the body; the client, for this
    protocol.data_received(body)
    await turns()
    protocol.connection_lost(None)
    assert [kind for kind, _ in transport.calls] == ["write", "writelines"]


def test_closing_writes_a_head_still_held_first() -> None:
    transport = Recording()
    wrapped = OneWrite(transport)
    wrapped.write(b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n")
    assert transport.calls == []
    wrapped.close()
    assert (
        transport.calls == [("write", b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n")] and transport.closed
    )
    assert wrapped.is_closing()  # everything else is the transport's own
