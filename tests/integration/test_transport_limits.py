"""Issue 14 item 10: header bytes, header count, header time and body time are bounded, over real sockets,
with the uvicorn options `routequote serve` uses (`input_guard.uvicorn_options`) and small limits."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import uvicorn
from tests.support.server import free_port

from routequote.app import create_app
from routequote.config import Settings
from routequote.surfaces import input_guard
from routequote.surfaces.input_guard import TransportLimits, uvicorn_options

LIMITS = dict(
    max_header_bytes=4096, max_header_count=40, header_timeout_seconds=0.5, body_timeout_seconds=0.5
)


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    port = free_port()
    settings = Settings(rate_limit="off", port=port, **LIMITS)
    protocol = type(
        "LimitedProtocol",
        (input_guard.GuardedHttpToolsProtocol,),
        {"limits": TransportLimits.from_settings(settings)},
    )
    options = {**uvicorn_options(settings), "http": protocol}
    config = uvicorn.Config(create_app(settings), host="127.0.0.1", port=port, log_level="warning", **options)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "server did not start"
        time.sleep(0.02)
    yield port
    server.should_exit = True
    thread.join(timeout=10)


def _exchange(port: int, request: bytes, *, chunk: int = 65_536, wait: float = 10.0) -> bytes:
    """Send `request` (tolerating the server closing early) and read until the server closes."""
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.settimeout(wait)
        with contextlib.suppress(OSError):
            for i in range(0, len(request), chunk):
                s.sendall(request[i : i + chunk])
        out = b""
        with contextlib.suppress(OSError):
            while True:
                data = s.recv(65_536)
                if not data:
                    break
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
    r = httpx.get(f"http://127.0.0.1:{port}/v2/status", timeout=10)
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
    r = httpx.get(f"http://127.0.0.1:{port}/v2/status", headers={"x-pad": "a" * 3000}, timeout=10)
    assert r.status_code == 200


def test_idle_socket_is_closed(port: int) -> None:
    assert _exchange(port, b"", wait=30) == b""  # closed by the server (no request, no answer)


def test_trickling_headers_are_refused(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.settimeout(30)
        s.sendall(b"GET /v2/status HTTP/1.1\r\n")
        out = b""
        with contextlib.suppress(OSError):
            for _ in range(60):  # one byte at a time, slower than the header timeout allows
                s.sendall(b"x")
                time.sleep(0.1)
        with contextlib.suppress(OSError):
            while data := s.recv(65_536):
                out += data
    assert _status(out) == 408


def test_slow_body_is_408(port: int) -> None:
    head = (
        b"POST /v2/quote HTTP/1.1\r\nhost: a\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.settimeout(30)
        s.sendall(head + b'{"amount_usd"')  # and nothing more
        out = b""
        with contextlib.suppress(OSError):
            while data := s.recv(65_536):
                out += data
    assert _status(out) == 408 and b"request_timeout" in out and b"connection: close" in out.lower()


def test_asgi_guard_bounds_headers_under_any_server(served: tuple[str, Any]) -> None:
    """Without the protocol (any ASGI server), the guard itself answers 431 for too many or too large headers."""
    url, _ = served
    many = {f"x-h{i}": "v" for i in range(150)}
    assert httpx.get(f"{url}/v2/status", headers=many, timeout=10).status_code == 431
    assert httpx.get(f"{url}/v2/status", headers={"x-big": "a" * 20_000}, timeout=10).status_code == 431


def test_asgi_guard_times_the_body_under_any_server() -> None:
    """Without the protocol, the guard's own timer answers a late body with 408 and closes."""
    from tests.support.server import running_server

    port = free_port()
    app = create_app(Settings(rate_limit="off", port=port, body_timeout_seconds=0.3))
    with running_server(app, port):
        head = b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n"
        with socket.create_connection(("127.0.0.1", port)) as s:
            s.settimeout(30)
            s.sendall(head + b'{"jsonrpc"')
            out = b""
            with contextlib.suppress(OSError):
                while data := s.recv(65_536):
                    out += data
    assert _status(out) == 408 and b'"code":-32600' in out and b"connection: close" in out.lower()
