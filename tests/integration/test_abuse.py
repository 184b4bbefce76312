"""Abuse against a real `routequote serve` process (configured by ROUTEQUOTE_* only), over real sockets.

* A flood from one client (127.0.0.1) is answered 429 with a Retry-After and RateLimit-* headers that are
  right: waiting Retry-After seconds really frees a slot; meanwhile another client (a socket bound to
  127.0.0.2) keeps its own budget and is served.
* 500 idle connections, slowloris bodies, 10 MiB bodies and 64 KiB headers at once: each is cut off (idle
  and trickling sockets closed by the server, a late body 408, a 10 MiB body refused before it is read, a
  64 KiB header 431) while a normal client keeps being served. Bounds are generous (never timings).

The transport limits are made short here (header 2 s, body 3 s) so the cut-offs happen within the test;
the defaults are in docs/operations.md."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from tests.support.server_process import ServerProcess, start_server

QUOTE = {
    "from_chain": "solana",
    "from_token": "SOL",
    "to_chain": "base",
    "to_token": "USDC",
    "amount_usd": 50,
}
OTHER_CLIENT = "127.0.0.2"  # loopback 127.0.0.0/8: a second source address on this machine
LIMIT, WINDOW = 10, 6
GENEROUS = (
    10.0  # seconds to wait for the flood to be under way, and for a status read (bounds, never asserted)
)


def loopback_alias_usable() -> bool:
    try:
        with socket.socket() as s:
            s.bind((OTHER_CLIENT, 0))
        return True
    except OSError:
        return False


def client(url: str, source: str | None = None) -> httpx.Client:
    transport = httpx.HTTPTransport(local_address=source) if source else None
    return httpx.Client(base_url=url, timeout=30, transport=transport)


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    tmp = tmp_path_factory.mktemp("abuse-rate")
    s = start_server(
        tmp,
        "rate",
        {"rate_limit": f"{LIMIT}/{WINDOW} seconds", "database_url": f"sqlite+aiosqlite:///{tmp}/s.sqlite3"},
    )
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    tmp = tmp_path_factory.mktemp("abuse-conn")
    s = start_server(
        tmp,
        "conn",
        {
            "header_timeout_seconds": "2",
            "body_timeout_seconds": "3",
            "database_url": f"sqlite+aiosqlite:///{tmp}/s.sqlite3",
        },
    )
    try:
        yield s
    finally:
        s.stop()


def test_flood_gets_429_with_right_headers_and_another_client_is_served(limited: ServerProcess) -> None:
    if not loopback_alias_usable():
        pytest.skip(f"SKIPPED: cannot bind a socket to {OTHER_CLIENT} on this machine")
    with client(limited.url) as a, client(limited.url, OTHER_CLIENT) as b:
        # a sequential flood: the budget counts down, then 429
        answers = []
        start = time.monotonic()
        for _ in range(LIMIT + 5):
            answers.append(a.post("/v2/quote", json=QUOTE))
        elapsed = time.monotonic() - start
        ok = [r for r in answers if r.status_code == 200]
        refused = [r for r in answers if r.status_code == 429]
        assert len(ok) + len(refused) == len(answers), [r.status_code for r in answers]
        budget = (
            int(answers[0].headers["RateLimit-Remaining"]) + 1
        )  # the start-up probe used one (same group)
        if elapsed < WINDOW:  # the whole flood inside one window: exactly the budget passed
            assert len(ok) == budget and answers[budget].status_code == 429, [r.status_code for r in answers]
        remaining = [int(r.headers["RateLimit-Remaining"]) for r in ok]
        assert remaining == sorted(remaining, reverse=True) and remaining[-1] == 0
        for r in ok + refused:
            assert r.headers["RateLimit-Limit"] == str(LIMIT)
            assert r.headers["RateLimit-Policy"] == f"{LIMIT};w={WINDOW}"
            assert 0 <= int(r.headers["RateLimit-Reset"]) <= WINDOW
        last = refused[-1]
        body = last.json()
        assert body["reason_class"] == "rate_limit_exceeded" and body["retry_after_seconds"] >= 1
        retry_after = int(last.headers["Retry-After"])
        assert 1 <= retry_after <= WINDOW and last.headers["RateLimit-Remaining"] == "0"
        assert retry_after == body["retry_after_seconds"] == max(1, int(last.headers["RateLimit-Reset"]))

        # the flood goes on from A (threads) while B, from another address, is served on its own budget
        stop = threading.Event()
        flood_codes: list[int] = []

        def flood() -> None:
            with client(limited.url) as c:
                while not stop.is_set():
                    with contextlib.suppress(httpx.HTTPError):
                        flood_codes.append(c.post("/v2/quote", json=QUOTE).status_code)

        threads = [threading.Thread(target=flood) for _ in range(4)]
        for t in threads:
            t.start()
        try:
            deadline = time.monotonic() + GENEROUS
            while len(flood_codes) < 40 and time.monotonic() < deadline:
                time.sleep(0.05)  # the flood is under way
            for i in range(3):  # (the client's 30 s timeout bounds a B starved by the flood)
                r = b.post("/v2/quote", json=QUOTE)
                assert r.status_code == 200, r.text
                assert r.headers["RateLimit-Remaining"] == str(LIMIT - 1 - i)  # B's own bucket
            assert b.get("/v2/status").status_code == 200
        finally:
            stop.set()
            for t in threads:
                t.join(30)
        assert flood_codes and set(flood_codes) <= {200, 429} and 429 in flood_codes

        # Retry-After is true: once it has passed (the flood stopped), A is served again
        probe = a.post("/v2/quote", json=QUOTE)
        if probe.status_code == 429:
            time.sleep(int(probe.headers["Retry-After"]) + 0.5)
            probe = a.post("/v2/quote", json=QUOTE)
        assert probe.status_code == 200, probe.text


# ---- connection abuse ------------------------------------------------------------------------------------


async def _read_all(reader: asyncio.StreamReader, limit: float) -> bytes:
    out = b""
    with contextlib.suppress(OSError, asyncio.IncompleteReadError, TimeoutError):
        async with asyncio.timeout(limit):
            while chunk := await reader.read(65_536):
                out += chunk
    return out


async def _idle(host: str, port: int, limit: float) -> tuple[bytes, bool]:
    """Open a connection, send nothing; (what came back, whether the server closed it within `limit`)."""
    reader, writer = await asyncio.open_connection(host, port)
    try:
        out = b""
        closed = False
        with contextlib.suppress(OSError, TimeoutError):
            async with asyncio.timeout(limit):
                while chunk := await reader.read(65_536):
                    out += chunk
                closed = True
        return out, closed
    finally:
        writer.close()


async def _slowloris(host: str, port: int, limit: float) -> bytes:
    """Headers, then a body announced at 1000 bytes trickled a byte every 0.5 s."""
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(
            b"POST /v2/quote HTTP/1.1\r\nhost: a\r\ncontent-type: application/json\r\n"
            b"content-length: 1000\r\n\r\n{"
        )
        answer = asyncio.ensure_future(_read_all(reader, limit))
        while not answer.done():
            with contextlib.suppress(OSError):
                writer.write(b" ")
                await writer.drain()
            await asyncio.sleep(0.5)
        return answer.result()
    finally:
        writer.close()


async def _huge_body(host: str, port: int, path: str, limit: float) -> tuple[bytes, bool]:
    """Announce a 10 MiB body and wait for the answer before sending any of it; (the answer, whether the
    server then closed the connection). An answer to the headers alone is a refusal before the body is read,
    whatever the machine's speed: streaming the body meanwhile made that a race between the server and the
    kernel's socket buffers (which hold most of 10 MiB), and the server's close could reset the connection
    before its answer was read."""
    size = 10 * 1024 * 1024
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(
            f"POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
            f"accept: application/json, text/event-stream\r\ncontent-length: {size}\r\n\r\n".encode()
        )
        await writer.drain()
        out, closed = b"", False
        with contextlib.suppress(OSError, TimeoutError):
            async with asyncio.timeout(limit):  # bounds a server that waits for the body
                while chunk := await reader.read(65_536):
                    out += chunk
                closed = True
        return out, closed
    finally:
        writer.close()


async def _big_header(host: str, port: int, limit: float) -> bytes:
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(b"GET /v2/status HTTP/1.1\r\nhost: a\r\nx-pad: " + b"a" * (64 * 1024) + b"\r\n\r\n")
        return await _read_all(reader, limit)
    finally:
        writer.close()


def _status(raw: bytes) -> int:
    return int(raw.split(b" ", 2)[1]) if raw.startswith(b"HTTP/1.1 ") else 0


def _normal_client(url: str, stop: threading.Event, seen: list[tuple[int, float, float]]) -> None:
    """Quotes one after another until told to stop: (status, sent at, answered at) each; the client's 30 s
    timeout (status 0) bounds a request the server never answers."""
    source = OTHER_CLIENT if loopback_alias_usable() else None
    with client(url, source) as c:
        while not stop.is_set():
            t0 = time.monotonic()
            try:
                code = c.post("/v2/quote", json=QUOTE).status_code
            except httpx.HTTPError:
                code = 0
            seen.append((code, t0, time.monotonic()))
            time.sleep(0.05)


def _wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 120  # bounds a hang only
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_idle_slowloris_huge_bodies_and_headers_are_cut_off_and_others_served(guarded: ServerProcess) -> None:
    port = int(guarded.url.rsplit(":", 1)[1])
    host = "127.0.0.1"
    stop = threading.Event()
    seen: list[tuple[int, float, float]] = []
    normal = threading.Thread(target=_normal_client, args=(guarded.url, stop, seen))

    async def attack() -> tuple[list[tuple[bytes, bool]], list[bytes], list[tuple[bytes, int]], list[bytes]]:
        idle = [asyncio.ensure_future(_idle(host, port, 30)) for _ in range(500)]
        slow = [asyncio.ensure_future(_slowloris(host, port, 30)) for _ in range(100)]
        huge = [asyncio.ensure_future(_huge_body(host, port, path, 30)) for path in ("/v2/quote", "/mcp") * 3]
        heads = [asyncio.ensure_future(_big_header(host, port, 30)) for _ in range(20)]
        return (
            await asyncio.gather(*idle),
            await asyncio.gather(*slow),
            await asyncio.gather(*huge),
            await asyncio.gather(*heads),
        )

    normal.start()
    try:
        _wait_until(lambda: len(seen) >= 1, "the normal client was never answered before the attack")
        attack_began = time.monotonic()
        idle, slow, huge, heads = asyncio.run(attack())
        attack_ended = time.monotonic()
        _wait_until(
            lambda: seen[-1][1] > attack_ended, "the normal client was never answered after the attack"
        )
    finally:
        stop.set()
        normal.join(60)
    # every idle socket was closed by the server (the header timeout), none got an answer
    assert all(closed and out == b"" for out, closed in idle), sum(1 for _, c in idle if not c)
    # every slowloris body got 408 and its connection closed
    assert {_status(a) for a in slow} == {408}, {_status(a) for a in slow}
    assert all(b"connection: close" in a.lower() for a in slow)
    # 10 MiB bodies: refused (REST 400 body_too_large, JSON-RPC 413) before any of the body was sent, and the
    # connection closed by the server (it does not go on draining the body)
    for (answer, closed), path in zip(huge, ("/v2/quote", "/mcp") * 3):
        assert _status(answer) == (400 if path == "/v2/quote" else 413), answer[:300]
        assert b"body_too_large" in answer and b"connection: close" in answer.lower(), answer[:300]
        assert closed, answer[:300]
    # 64 KiB headers: 431
    assert {_status(a) for a in heads} == {431}
    # the normal client was served all along: before, during (one request after another, so some were in
    # flight while the attack was) and after it, every answer a 200
    assert len(seen) >= 3, seen
    assert any(sent < attack_ended and answered > attack_began for _, sent, answered in seen), seen
    assert all(code == 200 for code, _, _ in seen), seen
    # and after the attack the server is healthy and holds no leftovers
    r = httpx.get(f"{guarded.url}/v2/status", timeout=GENEROUS)
    assert r.status_code == 200
    assert "Traceback" not in Path(guarded.log).read_text(errors="replace")
