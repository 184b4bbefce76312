"""The multiplexed Redis connection of the shared stores, against the real Redis on 127.0.0.1:6379 and against
servers that refuse, stay silent or hang up."""

from __future__ import annotations

import asyncio
import secrets
import socket

import pytest

from routequote.storage.redis_wire import RedisReplyError, RedisUnavailable, RedisWire

URL = "redis://127.0.0.1:6379/0"


def redis_up() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 6379), timeout=0.5):
            return True
    except OSError:
        return False


needs_redis = pytest.mark.skipif(not redis_up(), reason="no Redis on 127.0.0.1:6379")


@needs_redis
async def test_concurrent_commands_share_one_connection_and_each_gets_its_own_reply() -> None:
    wire = RedisWire(URL)
    prefix = f"routequote:test:wire:{secrets.token_hex(6)}:"
    try:

        async def one(i: int) -> tuple[bytes | None, int]:
            value = secrets.token_bytes(i * 37 % 9000 + 1)
            assert await wire.command(b"SET", f"{prefix}{i}", value, b"PX", 5000) == b"OK"
            got, ttl = await wire.commands((b"GET", f"{prefix}{i}"), (b"PTTL", f"{prefix}{i}"))
            assert got == value
            return got, ttl  # type: ignore[return-value]

        results = await asyncio.gather(*(one(i) for i in range(200)))
        assert all(0 < ttl <= 5000 for _, ttl in results)
        assert await wire.command(b"GET", f"{prefix}missing") is None
        # an error reply fails its own command only; the connection goes on
        # (a value that is never an integer: a random 1-byte value is a digit 10 times in 256)
        assert await wire.command(b"SET", f"{prefix}text", b"not a number", b"PX", 5000) == b"OK"
        with pytest.raises(RedisReplyError):
            await wire.command(b"INCR", f"{prefix}text")
        assert await wire.command(b"PTTL", f"{prefix}missing") == -2
        assert await wire.command(b"SET", f"{prefix}nx", b"a", b"PX", 5000, b"NX") == b"OK"
        assert await wire.command(b"SET", f"{prefix}nx", b"b", b"PX", 5000, b"NX") is None
        assert await wire.command(b"GET", f"{prefix}nx") == b"a"
    finally:
        await wire.command(b"DEL", *(f"{prefix}{i}" for i in range(200)), f"{prefix}nx", f"{prefix}text")
        await wire.aclose()


async def test_a_refused_connection_fails_closed_and_the_next_command_tries_again() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    wire = RedisWire(f"redis://127.0.0.1:{port}/0", timeout_seconds=0.5)
    for _ in range(2):
        with pytest.raises(RedisUnavailable):
            await wire.command(b"GET", b"k")
    await wire.aclose()


async def test_a_silent_server_times_out_and_a_hang_up_fails_every_waiter() -> None:
    accepted: list[asyncio.StreamWriter] = []

    async def silent(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(writer)

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    wire = RedisWire(f"redis://127.0.0.1:{port}/0", timeout_seconds=0.3)
    try:
        results = await asyncio.gather(
            *(wire.command(b"GET", b"k") for _ in range(5)), return_exceptions=True
        )
        assert all(isinstance(r, RedisUnavailable) for r in results), results
        waiting = asyncio.gather(*(wire.command(b"GET", b"k") for _ in range(3)), return_exceptions=True)
        await asyncio.sleep(0.05)
        accepted[-1].close()  # the server hangs up
        results = await waiting
        assert all(isinstance(r, RedisUnavailable) for r in results), results
    finally:
        await wire.aclose()
        server.close()
        await server.wait_closed()
