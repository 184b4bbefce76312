"""One multiplexed Redis connection per process, for the quote and idempotency stores' few commands.

Every concurrent request puts its command(s) on the one connection and waits for its reply; the commands of two
turns of the event loop go out in one write at the end of the second. The connection's protocol parses replies
as they are received, in order (Redis answers each connection's commands in order), and hands each to its
waiter there: no reader task wakes up in between. A lookup that needs two commands writes both in one write:
one round trip. Compared with a client that checks a connection out of a pool for every command, this costs a
few microseconds of Python per command and no pool contention under load.

Replies are RESP2: simple strings, errors, integers, bulk strings and arrays. A reply that does not come within
`timeout_seconds` (checked by one timer per connection, not one per command), a refused connection or a lost one
fails every waiting command with `RedisUnavailable`; the next command connects again. An error reply fails only
its own command. URLs: redis://, rediss:// (TLS) and unix://, with user, password and database number.

A connection is used only once its AUTH and SELECT succeeded: they are written alone, before the connection is
handed to any command, so no command can run on database 0 (or unauthenticated) while they are pending. A refused
AUTH or SELECT fails the commands that waited for the connection with `RedisUnavailable` whose `fault` says which
(`credentials_refused`, `database_refused`); the next command tries again.

`on_write`, when set, is told each write's round trip (from the write to its last reply) and its number of
commands: what a quote waits on Redis, and how many commands share each of redis-server's wake-ups.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import ssl
import time
from collections.abc import Callable
from typing import Any, cast

from redis.asyncio.connection import SSLConnection, UnixDomainSocketConnection, parse_url

Reply = bytes | int | None | list[Any]  # an error reply is handed to its waiter as a RedisReplyError value


class RedisUnavailable(ConnectionError):
    """Redis cannot serve this command; `fault` classifies why (`routequote.storage.redis_faults`)."""

    def __init__(self, message: str, fault: str = "unreachable") -> None:
        super().__init__(message)
        self.fault = fault


class RedisReplyError(Exception):
    pass


def pack(args: tuple[bytes | str | int, ...]) -> bytes:
    """One command in RESP: an array of bulk strings."""
    return b"*%d\r\n%s" % (len(args), pack_arguments(args))


def pack_arguments(args: tuple[bytes | str | int, ...]) -> bytes:
    """Arguments as RESP bulk strings, without the array's header: a command's constant tail, packed once."""
    out = []
    for arg in args:
        raw = arg if isinstance(arg, bytes) else str(arg).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(raw), raw))
    return b"".join(out)


class _Write:
    """One write on the wire: when it went (perf_counter), its commands, and the replies still to come."""

    __slots__ = ("at", "commands", "left")

    def __init__(self, at: float, commands: int) -> None:
        self.at, self.commands, self.left = at, commands, commands


class RedisWire:
    def __init__(self, url: str, timeout_seconds: float = 1.0) -> None:
        self.options: dict[str, Any] = dict(parse_url(url))
        self.timeout = timeout_seconds
        self._connection: _Connection | None = None
        self._waiting: collections.deque[tuple[asyncio.Future[Any], float]] = collections.deque()
        self._connecting: asyncio.Future[RedisUnavailable | None] | None = None
        self._watchdog: asyncio.TimerHandle | None = None
        self._pending: list[bytes] = []  # commands of this turn of the loop and the next, written together
        self._pending_replies = 0  # the replies `_pending` asks for
        self._writes: collections.deque[_Write] = collections.deque()  # written, not yet answered whole
        # told (round trip in seconds, commands) when a write's last reply is read
        self.on_write: Callable[[float, int], None] | None = None

    async def command(self, *args: bytes | str | int) -> Reply:
        (reply,) = await self.commands(args)
        return reply

    async def commands(self, *commands: tuple[bytes | str | int, ...]) -> list[Reply]:
        """Every command in one write, every reply in order (one round trip)."""
        return await self.packed(b"".join([pack(c) for c in commands]), len(commands))

    async def packed(self, data: bytes, replies: int) -> list[Reply]:
        """`data`, commands packed already (a caller that sends the same commands often packs their constant
        parts once), in one write; their `replies` replies in order."""
        connection = self._connection if self._connection is not None else await self._connect()
        # not asyncio.get_running_loop(): on Linux that is a getpid() system call each time
        loop = connection.loop
        now = loop.time()
        futures: list[asyncio.Future[Any]] = [loop.create_future() for _ in range(replies)]
        if not self._pending:
            # written at the end of the next turn, not this one: the requests whose bytes the next turn's poll
            # reads join the same write (with quotes on two cores: redis-server's CPU per quote 11.7 -> 9.7 us)
            loop.call_soon(loop.call_soon, self._flush, connection)
        self._pending.append(data)
        self._pending_replies += replies
        self._waiting.extend([(f, now) for f in futures])
        if self._watchdog is None:
            self._watchdog = loop.call_later(self.timeout, self._check_timeout)
        if replies == 1:
            got: list[Any] = [await futures[0]]
        else:
            # replies are read in order and a lost connection fails every waiter, so once the last is settled
            # every one is: one wake-up, not one per command (nor a gather)
            try:
                await futures[-1]
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: S110 - read below with the others, so none is left unretrieved
                pass
            failures = [f.exception() for f in futures]
            for failure in failures:
                if failure is not None:
                    raise failure
            got = [f.result() for f in futures]
        for reply in got:  # an error reply comes as a RedisReplyError value: it fails its command
            if isinstance(reply, BaseException):
                raise reply
        return got

    def _flush(self, connection: _Connection) -> None:
        """One write (one system call) for every command of two turns of the loop."""
        if connection is not self._connection:
            # dropped (its waiters have failed): what is pending now is a newer connection's, written by its own
            return
        pending, self._pending = self._pending, []
        if pending:
            # timed by perf_counter: uvloop's loop.time() counts whole milliseconds, more than a round trip
            self._writes.append(_Write(time.perf_counter(), self._pending_replies))
            self._pending_replies = 0
            connection.write(b"".join(pending))

    async def _connect(self) -> _Connection:
        if self._connecting is not None:  # another command is connecting: share it, and its failure
            failure = await asyncio.shield(self._connecting)
            if self._connection is None:
                if failure is not None:
                    raise RedisUnavailable(str(failure), failure.fault)
                raise RedisUnavailable("redis connection failed")
            return self._connection
        loop = asyncio.get_running_loop()
        self._connecting = loop.create_future()
        failure = None
        try:
            o = self.options
            cls = o.get("connection_class")
            if cls is UnixDomainSocketConnection:
                opening = loop.create_unix_connection(lambda: _Connection(self), o["path"])
            else:
                tls = ssl.create_default_context() if cls is SSLConnection else None
                host = o.get("host", "localhost")
                opening = loop.create_connection(
                    lambda: _Connection(self), host, o.get("port", 6379), ssl=tls
                )
            _, connection = await asyncio.wait_for(opening, self.timeout)
            try:
                await self._greet(connection)
            except BaseException:
                connection.close()
                raise
            self._connection = connection  # usable from here on: AUTH and SELECT succeeded
            return connection
        except RedisUnavailable as exc:
            failure = exc
            self._drop(exc)
            raise
        except (OSError, TimeoutError) as exc:
            fault = "timed_out" if isinstance(exc, TimeoutError) else "unreachable"
            failure = RedisUnavailable(f"redis connection failed: {type(exc).__name__}", fault)
            self._drop(failure)
            raise failure from exc
        finally:
            connecting, self._connecting = self._connecting, None
            connecting.set_result(failure)

    async def _greet(self, connection: _Connection) -> None:
        """AUTH and SELECT, alone on the new connection and answered, before any command may use it."""
        o = self.options
        hello: list[tuple[tuple[bytes | str | int, ...], str, str]] = []  # (command, its name, its fault)
        if o.get("password"):
            auth = ("AUTH", o["username"], o["password"]) if o.get("username") else ("AUTH", o["password"])
            hello.append((auth, "AUTH", "credentials_refused"))
        if o.get("db"):
            hello.append((("SELECT", o["db"]), "SELECT", "database_refused"))
        if not hello:
            return
        try:
            replies = await asyncio.wait_for(
                connection.greet(b"".join(pack(c) for c, _, _ in hello), len(hello)), self.timeout
            )
        except TimeoutError:
            raise RedisUnavailable(
                f"no reply to AUTH / SELECT within {self.timeout:g} s", "timed_out"
            ) from None
        for reply, (_, name, fault) in zip(replies, hello, strict=True):
            if isinstance(reply, RedisReplyError):  # its error class only (`_parse`): never the password
                raise RedisUnavailable(f"redis refused {name}: {reply}", fault)

    def _received(self, connection: _Connection, replies: list[Reply | RedisReplyError]) -> None:
        """Each reply to the oldest waiting command (a waiter that was cancelled still had its reply read)."""
        if connection is not self._connection:
            return
        waiting = self._waiting
        for reply in replies:
            if not waiting:
                self._drop(RedisUnavailable("redis connection lost: a reply nobody asked for"))
                return
            future = waiting.popleft()[0]
            if not future.done():
                future.set_result(reply)
        self._answered(len(replies))

    def _answered(self, replies: int) -> None:
        """`replies` more replies were read: each write they complete is timed."""
        writes, now = self._writes, 0.0
        while replies and writes:
            write = writes[0]
            taken = min(replies, write.left)
            write.left -= taken
            replies -= taken
            if write.left:
                return
            writes.popleft()
            if self.on_write is not None:
                now = now or time.perf_counter()
                self.on_write(now - write.at, write.commands)

    def _lost(self, connection: _Connection, reason: str, fault: str = "unreachable") -> None:
        if connection is self._connection:
            self._drop(RedisUnavailable(f"redis connection lost: {reason}", fault))

    def _check_timeout(self) -> None:
        self._watchdog = None
        if not self._waiting:
            return
        loop = asyncio.get_running_loop()
        oldest = self._waiting[0][1]
        if loop.time() - oldest >= self.timeout:
            self._drop(RedisUnavailable(f"no reply within {self.timeout:g} s", "timed_out"))
        else:
            self._watchdog = loop.call_later(oldest + self.timeout - loop.time(), self._check_timeout)

    def _drop(self, error: Exception) -> None:
        """Close the connection and fail every command waiting on it."""
        connection, self._connection = self._connection, None
        self._pending, self._pending_replies = [], 0
        self._writes.clear()
        if connection is not None:
            connection.close()
        waiting, self._waiting = self._waiting, collections.deque()
        for future, _ in waiting:
            if not future.done():
                future.set_exception(error)
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None

    async def aclose(self) -> None:
        connection = self._connection
        self._drop(RedisUnavailable("closed"))
        if connection is not None:
            with contextlib.suppress(TimeoutError):  # a TLS close may wait on its peer: not for long
                await asyncio.wait_for(asyncio.shield(connection.closed), self.timeout)


class _Connection(asyncio.Protocol):
    """One connection to Redis: replies are parsed in `data_received` and handed to the wire there."""

    def __init__(self, wire: RedisWire) -> None:
        self.wire = wire
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.loop = asyncio.get_running_loop()  # the loop it was opened in: its waiters' loop
        self.closed: asyncio.Future[None] = self.loop.create_future()
        # the replies to AUTH / SELECT, collected before the connection is handed to the wire
        self._greeting: asyncio.Future[list[Reply | RedisReplyError]] | None = None
        self._greeting_replies: list[Reply | RedisReplyError] = []
        self._greeting_wanted = 0

    def greet(self, data: bytes, replies: int) -> asyncio.Future[list[Reply | RedisReplyError]]:
        """Write `data` and settle with its `replies` replies (or fail when the connection is lost first)."""
        self._greeting = self.loop.create_future()
        self._greeting_wanted = replies
        self.write(data)
        return self._greeting

    def _greeting_failed(self, reason: str) -> None:
        greeting = self._greeting
        if greeting is not None and not greeting.done():
            greeting.set_exception(RedisUnavailable(f"redis connection lost during AUTH / SELECT: {reason}"))

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's transports do not subclass asyncio's

    def write(self, data: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()
        elif not self.closed.done():
            self.closed.set_result(None)

    def data_received(self, data: bytes) -> None:
        buffer = self.buffer
        buffer += data
        replies: list[Reply | RedisReplyError] = []
        at = 0
        try:
            while at < len(buffer):
                parsed = _parse(buffer, at)
                if parsed is None:  # the rest of this reply is still on its way
                    break
                reply, at = parsed
                replies.append(reply)
        except (ValueError, RecursionError) as exc:
            # not Redis: what was whole goes to its waiters, then the rest fail
            del buffer[:at]
            self._deliver(replies)
            self._greeting_failed(type(exc).__name__)
            self.wire._lost(self, type(exc).__name__, "protocol_error")
            return
        del buffer[:at]
        if replies:
            self._deliver(replies)

    def _deliver(self, replies: list[Reply | RedisReplyError]) -> None:
        greeting = self._greeting
        if greeting is not None:  # AUTH / SELECT first (the wire does not know this connection yet)
            wanted = self._greeting_wanted - len(self._greeting_replies)
            self._greeting_replies += replies[:wanted]
            replies = replies[wanted:]
            if len(self._greeting_replies) == self._greeting_wanted:
                self._greeting = None
                if not greeting.done():
                    greeting.set_result(self._greeting_replies)
        if replies:
            self.wire._received(self, replies)

    def eof_received(self) -> bool:
        self._greeting_failed("EOFError")
        self.wire._lost(self, "EOFError")
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._greeting_failed(type(exc).__name__ if exc is not None else "EOFError")
        self.wire._lost(self, type(exc).__name__ if exc is not None else "EOFError")
        if not self.closed.done():
            self.closed.set_result(None)


def _parse(buffer: bytearray, at: int) -> tuple[Reply | RedisReplyError, int] | None:
    """The reply that starts at `at` and where the next one starts, or None when it is not all here yet.
    Raises ValueError on bytes that are not RESP2."""
    end = buffer.find(b"\r\n", at)
    if end < 0:
        if len(buffer) - at > _MAX_LINE:
            raise ValueError("a RESP line too long")
        return None
    kind, rest, after = buffer[at], bytes(buffer[at + 1 : end]), end + 2
    if kind == 36:  # $ bulk string
        n = int(rest)
        if n < 0:
            return None, after
        if len(buffer) < after + n + 2:
            return None
        if buffer[after + n : after + n + 2] != b"\r\n":
            raise ValueError("a bulk string without its CRLF")
        return bytes(buffer[after : after + n]), after + n + 2
    if kind == 43:  # + simple string
        return rest, after
    if kind == 58:  # : integer
        return int(rest), after
    if kind == 45:  # - error: its class only (the first word)
        return RedisReplyError(rest.decode("utf-8", "replace").split(" ", 1)[0]), after
    if kind == 42:  # * array
        n = int(rest)
        if n < 0:
            return None, after
        items: list[Any] = []
        for _ in range(n):
            parsed = _parse(buffer, after)
            if parsed is None:
                return None
            item, after = parsed
            items.append(item)
        return items, after
    raise ValueError("not a RESP reply")


_MAX_LINE = 64 * 1024  # a header line (type, length or simple string) longer than this is not Redis
