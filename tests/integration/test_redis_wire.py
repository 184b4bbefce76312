"""The multiplexed Redis connection of the shared stores, against the real Redis on 127.0.0.1:6379 and against
servers that refuse, stay silent or hang up."""

from __future__ import annotations

import asyncio
import secrets
import socket
import time

import pytest

from routequote.storage.redis_wire import RedisReplyError, RedisUnavailable, RedisWire, pack

URL = "redis://127.0.0.1:6379/0"
# the wire's timeout where it is not under test: it bounds a hang, and a busy machine's Redis (or this loop's
# scripted server) answers late, not never
HANG = 30.0
# keys live long enough that a busy machine reads them back before they expire
TTL_MS = 600_000


def redis_up() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 6379), timeout=5):
            return True
    except OSError:
        return False


needs_redis = pytest.mark.skipif(not redis_up(), reason="no Redis on 127.0.0.1:6379")


@needs_redis
async def test_concurrent_commands_share_one_connection_and_each_gets_its_own_reply() -> None:
    wire = RedisWire(URL, timeout_seconds=HANG)
    prefix = f"routequote:test:wire:{secrets.token_hex(6)}:"
    try:

        async def one(i: int) -> tuple[bytes | None, int]:
            value = secrets.token_bytes(i * 37 % 9000 + 1)
            assert await wire.command(b"SET", f"{prefix}{i}", value, b"PX", TTL_MS) == b"OK"
            got, ttl = await wire.commands((b"GET", f"{prefix}{i}"), (b"PTTL", f"{prefix}{i}"))
            assert got == value
            return got, ttl  # type: ignore[return-value]

        results = await asyncio.gather(*(one(i) for i in range(200)))
        assert all(0 < ttl <= TTL_MS for _, ttl in results)
        assert await wire.command(b"GET", f"{prefix}missing") is None
        # an error reply fails its own command only; the connection goes on
        # (a value that is never an integer: a random 1-byte value is a digit 10 times in 256)
        assert await wire.command(b"SET", f"{prefix}text", b"not a number", b"PX", TTL_MS) == b"OK"
        with pytest.raises(RedisReplyError):
            await wire.command(b"INCR", f"{prefix}text")
        assert await wire.command(b"PTTL", f"{prefix}missing") == -2
        assert await wire.command(b"SET", f"{prefix}nx", b"a", b"PX", TTL_MS, b"NX") == b"OK"
        assert await wire.command(b"SET", f"{prefix}nx", b"b", b"PX", TTL_MS, b"NX") is None
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


async def _scripted(answers: list[bytes], *, byte_by_byte: bool) -> tuple[asyncio.Server, int]:
    """A server that answers each connection's commands, read as lines, with `answers` in turn."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for reply in answers:
            head = await reader.readuntil(b"\r\n")  # *<n>: n arguments, each a $<len> line and its bytes
            for _ in range(int(head[1:-2])):
                size = int((await reader.readuntil(b"\r\n"))[1:-2])
                await reader.readexactly(size + 2)
            chunks = [reply[i : i + 1] for i in range(len(reply))] if byte_by_byte else [reply]
            for chunk in chunks:
                writer.write(chunk)
                await writer.drain()
                if byte_by_byte:
                    await asyncio.sleep(0)
        await reader.read()  # then hold the connection until the client goes
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


async def test_every_kind_of_reply_is_read_whole_however_the_bytes_are_split() -> None:
    bulk = bytes(range(256)) * 40  # CR, LF and every other byte inside a bulk string
    answers = [
        b"+OK\r\n",
        b"$%d\r\n%s\r\n" % (len(bulk), bulk),
        b"$-1\r\n",
        b":-42\r\n",
        b"*3\r\n$1\r\na\r\n*2\r\n:7\r\n$-1\r\n*0\r\n",
        b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
        b"*-1\r\n",
    ]
    expected = [b"OK", bulk, None, -42, [b"a", [7, None], []], "WRONGTYPE", None]
    for byte_by_byte in (True, False):
        server, port = await _scripted(answers, byte_by_byte=byte_by_byte)
        wire = RedisWire(f"redis://127.0.0.1:{port}/0", timeout_seconds=HANG)
        try:
            got: list[object] = []
            for i in range(len(answers)):
                try:
                    got.append(await wire.command(b"GET", f"k{i}"))
                except RedisReplyError as exc:
                    got.append(str(exc))
            assert got == expected
            # and several commands in one write get their replies in order
            server2, port2 = await _scripted(answers[:5], byte_by_byte=byte_by_byte)
            wire2 = RedisWire(f"redis://127.0.0.1:{port2}/0", timeout_seconds=HANG)
            try:
                assert await wire2.commands(*((b"GET", f"k{i}") for i in range(5))) == expected[:5]
            finally:
                await wire2.aclose()
                server2.close()
        finally:
            await wire.aclose()
            server.close()


async def test_bytes_that_are_not_resp_fail_every_waiter_and_the_next_command_connects_again() -> None:
    server, port = await _scripted([b":1\r\n?what\r\n"], byte_by_byte=False)
    wire = RedisWire(f"redis://127.0.0.1:{port}/0", timeout_seconds=HANG)
    try:
        first, second = await asyncio.gather(
            wire.command(b"GET", b"a"), wire.command(b"GET", b"b"), return_exceptions=True
        )
        assert first == 1  # the whole reply before the garbage still reaches its waiter
        assert isinstance(second, RedisUnavailable)
        assert "lost" in str(second), second  # failed by the parse, not by waiting out the timeout
        assert await wire.command(b"GET", b"c") == 1  # a fresh connection, a fresh script
    finally:
        await wire.aclose()
        server.close()


@needs_redis
async def test_commands_of_two_turns_of_the_loop_go_out_in_one_write_and_a_later_one_in_the_next() -> None:
    wire = RedisWire(URL, timeout_seconds=HANG)
    try:
        assert await wire.command(b"PING") == b"PONG"  # connected
        connection = wire._connection
        assert connection is not None
        writes: list[bytes] = []
        write = connection.write
        connection.write = lambda data: (writes.append(data), write(data))[1]  # type: ignore[method-assign]
        first = asyncio.ensure_future(wire.command(b"ECHO", b"1"))
        await asyncio.sleep(0)  # the first is put on the wire in this turn
        second = asyncio.ensure_future(wire.command(b"ECHO", b"2"))  # and the second in the next
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        third = asyncio.ensure_future(wire.command(b"ECHO", b"3"))  # two turns after the write
        assert await asyncio.gather(first, second, third) == [b"1", b"2", b"3"]
        assert writes == [
            b"*2\r\n$4\r\nECHO\r\n$1\r\n1\r\n*2\r\n$4\r\nECHO\r\n$1\r\n2\r\n",
            b"*2\r\n$4\r\nECHO\r\n$1\r\n3\r\n",
        ]
    finally:
        await wire.aclose()


@needs_redis
async def test_each_write_is_timed_once_its_last_reply_is_read() -> None:
    wire = RedisWire(URL, timeout_seconds=HANG)
    timed: list[tuple[float, int]] = []
    wire.on_write = lambda seconds, commands: timed.append((seconds, commands))
    try:
        began = time.perf_counter()
        assert await wire.command(b"PING") == b"PONG"
        first = asyncio.ensure_future(wire.commands((b"ECHO", b"1"), (b"ECHO", b"2")))
        await asyncio.sleep(0)
        second = asyncio.ensure_future(wire.command(b"ECHO", b"3"))  # the same write as the first two
        assert await asyncio.gather(first, second) == [[b"1", b"2"], b"3"]
        assert await wire.command(b"ECHO", b"4") == b"4"  # a write of its own
        ended = time.perf_counter()
        assert [commands for _, commands in timed] == [1, 3, 1]
        # each a time inside the span the test saw (how long is the machine's business, not this test's)
        assert all(0 < seconds <= ended - began for seconds, _ in timed), (timed, ended - began)
    finally:
        await wire.aclose()


async def test_a_write_answered_byte_by_byte_is_timed_once() -> None:
    server, port = await _scripted([b":1\r\n", b"$3\r\nabc\r\n"], byte_by_byte=True)
    wire = RedisWire(f"redis://127.0.0.1:{port}/0", timeout_seconds=HANG)
    timed: list[int] = []
    wire.on_write = lambda _, commands: timed.append(commands)
    try:
        assert await wire.commands((b"GET", b"a"), (b"GET", b"b")) == [1, b"abc"]
        assert timed == [2]
    finally:
        await wire.aclose()
        server.close()


async def test_a_write_that_fails_is_not_timed_and_the_next_connection_starts_clean() -> None:
    accepted: list[asyncio.StreamWriter] = []

    async def hang_up_on_the_first(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(writer)
        if len(accepted) == 1:
            await reader.readuntil(b"\r\n")
            writer.close()  # the first connection: hung up with its command unanswered
            return
        while True:  # later ones: each command (one line, no arguments read) answered +OK
            await reader.readuntil(b"\r\n")
            for _ in range(2):
                await reader.readuntil(b"\r\n")
            writer.write(b"+OK\r\n")
            await writer.drain()

    server = await asyncio.start_server(hang_up_on_the_first, "127.0.0.1", 0)
    wire = RedisWire(f"redis://127.0.0.1:{server.sockets[0].getsockname()[1]}/0", timeout_seconds=HANG)
    timed: list[int] = []
    wire.on_write = lambda _, commands: timed.append(commands)
    try:
        with pytest.raises(RedisUnavailable):
            await wire.command(b"GET", b"k")
        assert timed == [] and not wire._writes
        assert await wire.command(b"GET", b"k") == b"OK"  # a fresh connection
        assert timed == [1]
    finally:
        await wire.aclose()
        server.close()


@needs_redis
async def test_a_dropped_connections_late_flush_leaves_the_next_connections_commands_alone() -> None:
    wire = RedisWire(URL, timeout_seconds=HANG)
    try:
        assert await wire.command(b"PING") == b"PONG"
        dropped = wire._connection
        assert dropped is not None
        wire._drop(RedisUnavailable("dropped for the test"))

        class Pending(list[bytes]):
            def append(self, data: bytes) -> None:  # the dropped connection's flush runs before the new one's
                super().append(data)
                asyncio.get_running_loop().call_soon(wire._flush, dropped)

        wire._pending = Pending()
        waiting = asyncio.ensure_future(wire.command(b"ECHO", b"after"))
        assert await waiting == b"after"  # written by its own connection's flush, not lost to a timeout
    finally:
        await wire.aclose()


@needs_redis
async def test_a_database_the_server_refuses_fails_every_command_and_none_runs_on_database_0() -> None:
    # 400 commands put on the wire while the connection's SELECT 99 is pending (16 databases here): before, the
    # ones sent behind the SELECT ran on database 0 and succeeded
    refused = RedisWire("redis://127.0.0.1:6379/99", timeout_seconds=2)
    probe = RedisWire(URL)
    prefix = f"routequote:test:wire:db99:{secrets.token_hex(6)}:"
    keys = [f"{prefix}{i}" for i in range(400)]
    try:
        for _ in range(2):  # and the next command tries again, and is refused again
            sent = []
            for key in keys:  # one command a turn of the loop: some arrive while the SELECT is pending
                sent.append(asyncio.ensure_future(refused.command(b"SET", key, b"x", b"PX", 60_000)))
                await asyncio.sleep(0)
            results = await asyncio.gather(*sent, return_exceptions=True)
            assert await probe.command(b"EXISTS", *keys) == 0  # none ran on database 0
            # refused (or, on a loaded machine, timed out before the refusal came): never answered
            faults = {r.fault if isinstance(r, RedisUnavailable) else repr(r) for r in results}
            assert "database_refused" in faults and faults <= {"database_refused", "timed_out"}, faults
    finally:
        await probe.command(b"DEL", *keys)
        await refused.aclose()
        await probe.aclose()


async def test_no_command_is_written_before_auth_and_select_are_answered() -> None:
    received: list[bytes] = []
    answered = asyncio.Event()

    async def slow_hello(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        unanswered = 0

        async def answer_hello() -> None:  # late: every command sent meanwhile arrives before it
            nonlocal unanswered
            await asyncio.sleep(0.2)
            received.append(b"|answered|")
            writer.write(b"+OK\r\n+OK\r\n" + b"$2\r\nv7\r\n" * unanswered)  # AUTH, SELECT, then the GETs
            unanswered = 0
            answered.set()

        hello: asyncio.Task[None] | None = None
        while chunk := await reader.read(65536):  # read as it arrives, while the hello's answer waits
            received.append(chunk)
            if hello is None and b"SELECT" in chunk:
                hello = asyncio.ensure_future(answer_hello())
            if answered.is_set():
                writer.write(b"$2\r\nv7\r\n" * chunk.count(b"GET"))
            else:
                unanswered += chunk.count(b"GET")

    server = await asyncio.start_server(slow_hello, "127.0.0.1", 0)
    wire = RedisWire(f"redis://:secret@127.0.0.1:{server.sockets[0].getsockname()[1]}/7", timeout_seconds=5)
    try:
        first = asyncio.ensure_future(wire.command(b"GET", b"k"))
        while not received:  # connected, AUTH and SELECT written: commands from now on must wait for them
            await asyncio.sleep(0.01)
        later = [asyncio.ensure_future(wire.command(b"GET", f"k{i}")) for i in range(20)]
        assert await asyncio.gather(first, *later) == [b"v7"] * 21
        before = b"".join(received).split(b"|answered|")[0]
        assert before == pack((b"AUTH", b"secret")) + pack((b"SELECT", 7))
    finally:
        await wire.aclose()
        server.close()


async def test_refused_credentials_and_a_refused_database_are_told_apart() -> None:
    for reply, fault in (
        (b"-WRONGPASS invalid password\r\n+OK\r\n", "credentials_refused"),
        (b"+OK\r\n-ERR DB index is out of range\r\n", "database_refused"),
    ):
        server, port = await _scripted([reply], byte_by_byte=False)
        wire = RedisWire(f"redis://:pw@127.0.0.1:{port}/3", timeout_seconds=2)
        try:
            results = await asyncio.gather(
                *(wire.command(b"GET", b"k") for _ in range(5)), return_exceptions=True
            )
            assert all(isinstance(r, RedisUnavailable) and r.fault == fault for r in results), results
            assert "pw" not in str(results[0]) and "invalid password" not in str(results[0])
        finally:
            await wire.aclose()
            server.close()
