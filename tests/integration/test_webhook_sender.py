"""One delivery attempt against real loopback receivers that behave badly: redirect, hang, fail, flood."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import pytest
from standardwebhooks import Webhook

from routequote.core.webhook_rules import parse_webhook_url
from routequote.webhooks.sender import MAX_ANSWER_BYTES, deliver_once
from routequote.webhooks.signing import signed_headers, webhook_secret

pytestmark = pytest.mark.asyncio

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter, "Receiver"], Awaitable[None]]


@dataclass
class Receiver:
    port: int = 0
    requests: list[tuple[bytes, dict[str, str], bytes]] = field(default_factory=list)
    connections: int = 0
    sent: int = 0
    broken: asyncio.Event = field(default_factory=asyncio.Event)


async def _read_request(reader: asyncio.StreamReader) -> tuple[bytes, dict[str, str], bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    headers = {}
    for line in lines[1:]:
        if b":" in line:
            k, v = line.split(b":", 1)
            headers[k.decode().strip().lower()] = v.decode().strip()
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return lines[0], headers, body


@asynccontextmanager
async def receiver(answer: Handler) -> AsyncIterator[Receiver]:
    state = Receiver()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        state.connections += 1
        try:
            state.requests.append(await _read_request(reader))
            await answer(reader, writer, state)
        except (ConnectionError, asyncio.IncompleteReadError):
            state.broken.set()
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    state.port = server.sockets[0].getsockname()[1]
    try:
        yield state
    finally:
        server.close()


def respond(status: str, extra: bytes = b"", body: bytes = b"ok") -> Handler:
    async def handler(_r: asyncio.StreamReader, writer: asyncio.StreamWriter, _s: Receiver) -> None:
        writer.write(
            f"HTTP/1.1 {status}\r\ncontent-length: {len(body)}\r\n".encode() + extra + b"\r\n" + body
        )
        await writer.drain()

    return handler


BODY = json.dumps({"type": "session.advanced", "sequence": 2}).encode()
SECRET = webhook_secret(b"\x01" * 32, "0f7c2c2e-8a4b-4f53-9e58-3d4f0f6c2a11")


def url_for(port: int, host: str = "127.0.0.1", allow: tuple[str, ...] = ("127.0.0.1",), path: str = "/in"):
    return parse_webhook_url(f"http://{host}:{port}{path}", allow)


async def test_a_signed_event_is_delivered_and_verifies_with_the_standard_library() -> None:
    async with receiver(respond("204 No Content", body=b"")) as rx:
        headers = signed_headers(SECRET, "evt_1", 1_800_000_000, BODY)
        attempt = await deliver_once(url_for(rx.port), BODY, headers)
    assert (attempt.delivered, attempt.status) == (True, 204)
    (line, got, body) = rx.requests[0]
    assert line.startswith(b"POST /in ") and body == BODY
    assert got["host"] == f"127.0.0.1:{rx.port}"
    # an independent check: the Standard Webhooks library's own signature over what was received
    expected = Webhook(SECRET).sign(got["webhook-id"], _when(got["webhook-timestamp"]), body.decode())
    assert got["webhook-signature"] == expected
    assert Webhook(SECRET).sign("evt_1", _when("1800000000"), body.decode()) != Webhook(
        webhook_secret(b"\x01" * 32, "another-session")
    ).sign("evt_1", _when("1800000000"), body.decode())


def _when(ts: str):  # type: ignore[no-untyped-def]
    from datetime import UTC, datetime

    return datetime.fromtimestamp(int(ts), tz=UTC)


async def test_a_redirect_is_not_followed() -> None:
    async with receiver(respond("200 OK")) as target:
        location = f"location: http://127.0.0.1:{target.port}/stolen\r\n".encode()
        async with receiver(respond("307 Temporary Redirect", location)) as rx:
            attempt = await deliver_once(url_for(rx.port), BODY, {})
        assert (attempt.delivered, attempt.status, attempt.reason) == (False, 307, "redirect (not followed)")
        assert target.connections == 0


async def test_a_5xx_is_a_failed_attempt() -> None:
    async with receiver(respond("503 Service Unavailable")) as rx:
        attempt = await deliver_once(url_for(rx.port), BODY, {})
    assert (attempt.delivered, attempt.status, attempt.reason) == (False, 503, "http 503")


async def test_a_receiver_that_hangs_costs_one_bounded_attempt() -> None:
    release = asyncio.Event()

    async def hang(_r: asyncio.StreamReader, _w: asyncio.StreamWriter, _s: Receiver) -> None:
        await release.wait()

    async with receiver(hang) as rx:
        attempt = await deliver_once(url_for(rx.port), BODY, {}, total_timeout=0.5, connect_timeout=0.5)
        release.set()
    assert (attempt.delivered, attempt.status, attempt.reason) == (False, None, "timeout")
    assert len(rx.requests) == 1


async def test_a_ten_megabyte_answer_is_read_to_a_few_kilobytes_then_dropped() -> None:
    total = 10 * 1024 * 1024

    async def flood(_r: asyncio.StreamReader, writer: asyncio.StreamWriter, state: Receiver) -> None:
        writer.write(f"HTTP/1.1 200 OK\r\ncontent-length: {total}\r\n\r\n".encode())
        chunk = b"x" * 65536
        while state.sent < total:
            writer.write(chunk)
            await writer.drain()
            state.sent += len(chunk)

    async with receiver(flood) as rx:
        attempt = await deliver_once(url_for(rx.port), BODY, {})
        await asyncio.wait_for(rx.broken.wait(), 30)  # the client hung up: the flood was cut off
    assert (attempt.delivered, attempt.status) == (True, 200)
    assert rx.sent < total
    assert MAX_ANSWER_BYTES <= 4096


async def test_a_loopback_url_is_refused_without_a_connection_unless_allowed() -> None:
    async with receiver(respond("200 OK")) as rx:
        attempt = await deliver_once(parse_webhook_url(f"https://127.0.0.1:{rx.port}/in", ()), BODY, {})
    assert (
        attempt.delivered is False
        and attempt.reason == "refused: webhook.url resolves to a loopback address, which is refused"
    )
    assert rx.connections == 0


@pytest.mark.parametrize(
    "answer", [["127.0.0.1"], ["169.254.169.254"], ["::1"], ["10.0.0.7"], ["93.184.215.14", "127.0.0.1"]]
)
async def test_a_name_that_resolves_to_a_refused_address_is_refused(answer: list[str]) -> None:
    async def resolver(host: str, port: int) -> list[str]:
        return answer

    url = parse_webhook_url("https://hooks.example.test/in", ())
    attempt = await deliver_once(url, BODY, {}, resolver=resolver)
    assert attempt.delivered is False and attempt.reason.startswith("refused: webhook.url resolves to")


async def test_the_address_checked_is_the_address_connected_to() -> None:
    """One lookup per attempt, and the connection goes to its answer: a second lookup (rebinding) never
    happens. The request still names the host."""
    calls: list[str] = []

    async with receiver(respond("200 OK")) as rx:

        async def resolver(host: str, port: int) -> list[str]:
            calls.append(host)
            return ["127.0.0.1"] if len(calls) == 1 else ["10.9.9.9"]

        url = url_for(rx.port, host="hooks.local.test", allow=("hooks.local.test",))
        attempt = await deliver_once(url, BODY, {}, resolver=resolver)
    assert attempt.delivered and calls == ["hooks.local.test"]
    assert rx.requests[0][1]["host"] == f"hooks.local.test:{rx.port}"


async def test_a_receiver_that_refuses_connections_is_a_transport_failure() -> None:
    async with receiver(respond("200 OK")) as rx:
        port = rx.port
    attempt = await deliver_once(url_for(port), BODY, {})
    assert attempt.delivered is False and attempt.reason.startswith("transport")
