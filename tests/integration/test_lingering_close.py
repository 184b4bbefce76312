"""A refusal the transport sends on its own (408 for a late body or head, 431 for a head past the limit) must
reach a client that is still sending when it is refused (RFC 9112 section 9.6): the server half-closes and
reads on until the client closes, rather than closing outright. A socket closed with the client's bytes
still arriving is reset, and a reset can destroy the answer before the client reads it:
under load every slowloris client of `test_abuse` read nothing at all in one run.

Each case waits for the refusal to be in the client's receive queue (poll, nothing read), then sends one
more byte, as a trickling client does, and only then reads: the answer, then the server's close, and no
reset. Against an outright close that byte draws a reset (asyncio's stream reader, for one, then raises
at once and drops the answer it holds); the two head cases caught it on every run before the fix, the
late-body case not (its outright close happened to come after the extra byte was read)."""

from __future__ import annotations

import select
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tests.support.server_process import ServerProcess, start_server

HANG_BOUND = 60.0  # seconds: bounds a server that never answers (never asserted as a timing)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    tmp = tmp_path_factory.mktemp("linger")
    s = start_server(
        tmp,
        "linger",
        {
            "header_timeout_seconds": "0.5",
            "body_timeout_seconds": "0.5",
            "database_url": f"sqlite+aiosqlite:///{tmp}/s.sqlite3",
        },
    )
    try:
        yield s
    finally:
        s.stop()


def _connect(server: ServerProcess) -> socket.socket:
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=HANG_BOUND)


def _wait_readable(sock: socket.socket) -> None:
    readable, _, _ = select.select([sock], [], [], HANG_BOUND)
    assert readable, "the server never answered"


def _send_one_more_byte_then_read(sock: socket.socket) -> bytes:
    """The client goes on sending (its write races the refusal, as a trickling client's does), then reads
    to the server's close; a reset fails the test."""
    sock.sendall(b" ")
    time.sleep(0.1)  # lets a reset, if the server sends one, land first (a chance to fail, never a bound)
    out = b""
    try:
        while chunk := sock.recv(65_536):
            out += chunk
    except ConnectionResetError:
        pytest.fail(f"the server reset the connection after {out[:40]!r}: a client still sending loses it")
    return out


def _refused(server: ServerProcess, request: bytes) -> bytes:
    with _connect(server) as sock:
        sock.sendall(request)
        _wait_readable(sock)
        return _send_one_more_byte_then_read(sock)


TRIES = 5  # each try is a chance for an outright close to be caught resetting (on loopback most are)


def test_a_late_body_gets_its_408_although_the_client_is_still_sending(server: ServerProcess) -> None:
    request = (
        b"POST /v2/quote HTTP/1.1\r\nhost: a\r\ncontent-type: application/json\r\n"
        b"content-length: 1000\r\n\r\n{"
    )
    for _ in range(TRIES):
        out = _refused(server, request)
        assert out.startswith(b"HTTP/1.1 408 "), out[:200]
        assert b"connection: close" in out.lower() and b"request_timeout" in out


def test_a_late_head_gets_its_408_although_the_client_is_still_sending(server: ServerProcess) -> None:
    for _ in range(TRIES):
        out = _refused(server, b"GET /v2/status HTTP/1.1\r\nhost: a\r\n")
        assert out.startswith(b"HTTP/1.1 408 "), out[:200]


def test_a_head_past_the_limit_gets_its_431_although_the_client_is_still_sending(
    server: ServerProcess,
) -> None:
    for _ in range(TRIES):
        out = _refused(server, b"GET /v2/status HTTP/1.1\r\nhost: a\r\nx-pad: " + b"a" * (256 * 1024))
        assert out.startswith(b"HTTP/1.1 431 "), out[:200]


def test_the_server_closes_a_refused_connection_once_the_client_does(server: ServerProcess) -> None:
    """The half-closed socket is not kept: after its refusal the server reads to the client's close and
    then closes too, so no lingering connection outlives its client (the log holds no error either)."""
    request = (
        b"POST /v2/quote HTTP/1.1\r\nhost: a\r\ncontent-type: application/json\r\ncontent-length: 10\r\n\r\n{"
    )
    for _ in range(10):
        assert _refused(server, request).startswith(b"HTTP/1.1 408 ")
    assert httpx.get(f"{server.url}/v2/status", timeout=HANG_BOUND).status_code == 200
    log = Path(server.log).read_text(errors="replace")
    assert "Traceback" not in log and "Cannot call write()" not in log
