"""Issue 14 item 10: header bytes, header count, header time and body time are bounded, over real sockets,
with the uvicorn options `routequote serve` uses (`input_guard.uvicorn_options`) and small limits.

Two servers, so that only a request meant to be late can be late (issue 46): the byte and count limits and
the ordinary requests go to one whose header and body times are generous (a starved client or server once
turned an ordinary request or a 431 case into a 408 against 0.5 s), and the time limits to one with 0.5 s
each. There, a request is late by construction, never by racing the clock: what it does send is handed to the
server while the server's event loop is held, so it is in the socket before the connection's clock starts
(and is read before that clock's sweep can run), and what would finish it is never sent."""

from __future__ import annotations

import asyncio
import contextlib
import select
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import uvicorn
from tests.support.server import free_port

from routequote.app import create_app
from routequote.config import Settings
from routequote.surfaces import input_guard
from routequote.surfaces.input_guard import TransportLimits, uvicorn_options

HANG_BOUND = 60.0  # seconds: bounds a server that never answers (never asserted as a timing)
LIMITS = dict(
    max_header_bytes=4096, max_header_count=40, header_timeout_seconds=0.5, body_timeout_seconds=0.5
)
# the same byte and count limits, with the longest times Settings allows: only a hang outlasts them
GENEROUS = {**LIMITS, "header_timeout_seconds": 300.0, "body_timeout_seconds": 600.0}


@dataclass
class Served:
    port: int
    loop: asyncio.AbstractEventLoop

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """The server's event loop does nothing until the block ends: a connection made and bytes sent inside
        it are in the socket when the server accepts it, before its header clock starts."""
        holding, release = threading.Event(), threading.Event()

        def hold() -> None:
            holding.set()
            release.wait(HANG_BOUND)

        self.loop.call_soon_threadsafe(hold)
        assert holding.wait(HANG_BOUND), "the server's loop never ran"
        try:
            yield
        finally:
            release.set()


def _serve(limits: dict[str, Any]) -> Iterator[Served]:
    port = free_port()
    settings = Settings(rate_limit="off", port=port, **limits)
    protocol = type(
        "LimitedProtocol",
        (input_guard.GuardedHttpToolsProtocol,),
        {"limits": TransportLimits.from_settings(settings)},
    )
    options = {**uvicorn_options(settings), "http": protocol}
    config = uvicorn.Config(create_app(settings), host="127.0.0.1", port=port, log_level="warning", **options)
    server = uvicorn.Server(config)
    loops: list[asyncio.AbstractEventLoop] = []

    def run() -> None:
        with asyncio.Runner(loop_factory=config.get_loop_factory()) as runner:
            loops.append(runner.get_loop())
            runner.run(server.serve())

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 120  # bounds a hang only: a busy machine starts it late
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "server did not start"
        time.sleep(0.02)
    yield Served(port, loops[0])
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    """The server with the small byte and count limits and generous times: nothing sent here can be late."""
    for served in _serve(GENEROUS):
        yield served.port


@pytest.fixture(scope="module")
def timed() -> Iterator[Served]:
    """The server with 0.5 s for a request's headers and 0.5 s for its body."""
    yield from _serve(LIMITS)


def _exchange(port: int, request: bytes, *, chunk: int = 65_536, wait: float = HANG_BOUND) -> bytes:
    """Send `request` (tolerating the server closing early) and read until the server closes."""
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.settimeout(wait)
        with contextlib.suppress(OSError):
            for i in range(0, len(request), chunk):
                s.sendall(request[i : i + chunk])
        return _read_to_close(s)


def _read_to_close(s: socket.socket) -> bytes:
    out = b""
    with contextlib.suppress(OSError):
        while data := s.recv(65_536):
            out += data
    return out


def _status(response: bytes) -> int:
    return int(response.split(b" ", 2)[1]) if response.startswith(b"HTTP/1.1 ") else 0


def test_settings_reach_uvicorn() -> None:
    s = Settings(keep_alive_timeout_seconds=7)
    options = uvicorn_options(s)
    assert options["timeout_keep_alive"] == 7
    assert options["http"] == "routequote.surfaces.input_guard:GuardedHttpToolsProtocol"
    assert TransportLimits.from_settings(Settings(**LIMITS)) == TransportLimits(**LIMITS)  # type: ignore[arg-type]


def test_ordinary_request_passes(port: int) -> None:
    r = httpx.get(f"http://127.0.0.1:{port}/v2/status", timeout=HANG_BOUND)
    assert r.status_code == 200


def test_too_many_headers_is_431(port: int) -> None:
    headers = b"".join(b"x-h%d: v\r\n" % i for i in range(50_000))
    answer = _exchange(port, b"GET /v2/status HTTP/1.1\r\nhost: a\r\n" + headers + b"\r\n")
    assert _status(answer) == 431 and b"request_header_fields_too_large" in answer


def test_huge_header_is_431_without_buffering_it(port: int) -> None:
    answer = _exchange(
        port, b"GET /v2/status HTTP/1.1\r\nhost: a\r\nx-big: " + b"a" * (8 * 1024 * 1024) + b"\r\n\r\n"
    )
    assert _status(answer) == 431


def test_headers_just_under_the_limit_pass(port: int) -> None:
    r = httpx.get(f"http://127.0.0.1:{port}/v2/status", headers={"x-pad": "a" * 3000}, timeout=HANG_BOUND)
    assert r.status_code == 200


def test_idle_socket_is_closed(timed: Served) -> None:
    assert _exchange(timed.port, b"") == b""  # closed by the server (no request, no answer)


def test_trickling_headers_are_refused(timed: Served) -> None:
    with socket.create_connection(("127.0.0.1", timed.port)) as s:
        s.settimeout(HANG_BOUND)
        with timed.held():  # the request line is there when the header clock starts
            s.sendall(b"GET /v2/status HTTP/1.1\r\n")
        deadline = time.monotonic() + HANG_BOUND
        with contextlib.suppress(OSError):
            # one byte at a time until the server answers: the header block is never finished
            while not select.select([s], [], [], 0.1)[0] and time.monotonic() < deadline:
                s.sendall(b"x")
        out = _read_to_close(s)
    assert _status(out) == 408 and b"request_timeout" in out


def test_slow_body_is_408(timed: Served) -> None:
    head = (
        b"POST /v2/quote HTTP/1.1\r\nhost: a\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", timed.port)) as s:
        s.settimeout(HANG_BOUND)
        with timed.held():  # the whole head is there when the header clock starts: only the body can be late
            s.sendall(head + b'{"amount_usd"')  # and nothing more
        out = _read_to_close(s)
    assert _status(out) == 408 and b"request_timeout" in out and b"connection: close" in out.lower()


def test_asgi_guard_bounds_headers_under_any_server(served: tuple[str, Any]) -> None:
    """Without the protocol (any ASGI server), the guard itself answers 431 for too many or too large headers."""
    url, _ = served
    many = {f"x-h{i}": "v" for i in range(150)}
    assert httpx.get(f"{url}/v2/status", headers=many, timeout=HANG_BOUND).status_code == 431
    assert (
        httpx.get(f"{url}/v2/status", headers={"x-big": "a" * 20_000}, timeout=HANG_BOUND).status_code == 431
    )


def test_asgi_guard_times_the_body_under_any_server() -> None:
    """Without the protocol, the guard's own timer answers a late body with 408 and closes."""
    from tests.support.server import running_server

    port = free_port()
    app = create_app(Settings(rate_limit="off", port=port, body_timeout_seconds=0.3))
    with running_server(app, port):
        head = b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n"
        with socket.create_connection(("127.0.0.1", port)) as s:
            s.settimeout(HANG_BOUND)
            s.sendall(head + b'{"jsonrpc"')  # and nothing more: the guard's timer starts once the app runs
            out = _read_to_close(s)
    assert _status(out) == 408 and b'"code":-32600' in out and b"connection: close" in out.lower()
