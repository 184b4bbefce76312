"""One multiplexed Redis connection per process, for the quote and idempotency stores' few commands.

Every concurrent request puts its command(s) on the one connection and waits for its reply; the commands of one
turn of the event loop go out in one write at its end. One reader task parses replies in order (Redis answers each connection's commands in order) and hands each to its
waiter. A lookup that needs two commands writes both in one write: one round trip. Compared with a client that
checks a connection out of a pool for every command, this costs a few microseconds of Python per command and no
pool contention under load.

Replies are RESP2: simple strings, errors, integers, bulk strings and arrays. A reply that does not come within
`timeout_seconds` (checked by one timer per connection, not one per command), a refused connection or a lost one
fails every waiting command with `RedisUnavailable`; the next command connects again. An error reply fails only
its own command. URLs: redis://, rediss:// (TLS) and unix://, with user, password and database number.
"""

from __future__ import annotations

import asyncio
import collections
import ssl
from typing import Any

from redis.asyncio.connection import SSLConnection, UnixDomainSocketConnection, parse_url

Reply = bytes | int | None | list[Any]  # an error reply is handed to its waiter as a RedisReplyError value


class RedisUnavailable(ConnectionError):
    pass


class RedisReplyError(Exception):
    pass


def pack(args: tuple[bytes | str | int, ...]) -> bytes:
    out = [b"*%d\r\n" % len(args)]
    for arg in args:
        raw = arg if isinstance(arg, bytes) else str(arg).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(raw), raw))
    return b"".join(out)


class RedisWire:
    def __init__(self, url: str, timeout_seconds: float = 1.0) -> None:
        self.options: dict[str, Any] = dict(parse_url(url))
        self.timeout = timeout_seconds
        self._writer: asyncio.StreamWriter | None = None
        self._reader_task: asyncio.Task[None] | None = None
        self._waiting: collections.deque[tuple[asyncio.Future[Any], float]] = collections.deque()
        self._connecting: asyncio.Future[None] | None = None
        self._watchdog: asyncio.TimerHandle | None = None
        self._pending: list[bytes] = []  # commands of this turn of the loop, written together at its end

    async def command(self, *args: bytes | str | int) -> Reply:
        (reply,) = await self.commands(args)
        return reply

    async def commands(self, *commands: tuple[bytes | str | int, ...]) -> list[Reply]:
        """Every command in one write, every reply in order (one round trip)."""
        writer = self._writer if self._writer is not None else await self._connect()
        loop = asyncio.get_running_loop()
        now = loop.time()
        futures: list[asyncio.Future[Any]] = [loop.create_future() for _ in commands]
        if not self._pending:
            loop.call_soon(self._flush, writer)
        self._pending.extend(pack(c) for c in commands)
        self._waiting.extend((f, now) for f in futures)
        if self._watchdog is None:
            self._watchdog = loop.call_later(self.timeout, self._check_timeout)
        if len(futures) == 1:
            replies: list[Any] = [await futures[0]]
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
            replies = [f.result() for f in futures]
        for reply in replies:  # an error reply comes as a RedisReplyError value: it fails its command
            if isinstance(reply, BaseException):
                raise reply
        return replies

    def _flush(self, writer: asyncio.StreamWriter) -> None:
        """One write (one system call) for every command of this turn of the loop."""
        pending, self._pending = self._pending, []
        if pending and writer is self._writer:  # else the connection was dropped, failing their waiters
            writer.write(b"".join(pending))

    async def _connect(self) -> asyncio.StreamWriter:
        if self._connecting is not None:  # another command is connecting: share it
            await asyncio.shield(self._connecting)
            if self._writer is None:
                raise RedisUnavailable("redis connection failed")
            return self._writer
        self._connecting = asyncio.get_running_loop().create_future()
        try:
            o = self.options
            cls = o.get("connection_class")
            if cls is UnixDomainSocketConnection:
                opening = asyncio.open_unix_connection(o["path"])
            else:
                tls = ssl.create_default_context() if cls is SSLConnection else None
                opening = asyncio.open_connection(o.get("host", "localhost"), o.get("port", 6379), ssl=tls)
            reader, writer = await asyncio.wait_for(opening, self.timeout)
            self._writer = writer
            self._reader_task = asyncio.get_running_loop().create_task(self._read(reader, writer))
            hello: list[tuple[bytes | str | int, ...]] = []
            if o.get("password"):
                hello.append(
                    ("AUTH", o["username"], o["password"]) if o.get("username") else ("AUTH", o["password"])
                )
            if o.get("db"):
                hello.append(("SELECT", o["db"]))
            if hello:
                await self.commands(*hello)
            return writer
        except (OSError, TimeoutError, RedisReplyError) as exc:
            self._drop(RedisUnavailable(f"redis connection failed: {type(exc).__name__}"))
            raise RedisUnavailable(f"redis connection failed: {type(exc).__name__}") from exc
        finally:
            connecting, self._connecting = self._connecting, None
            connecting.set_result(None)

    async def _read(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                reply = await _reply(reader)
                if not self._waiting:
                    raise RedisUnavailable("a reply nobody asked for")
                future, _ = self._waiting.popleft()
                if not future.done():  # a waiter that was cancelled still had its reply read
                    future.set_result(reply)
        except (OSError, EOFError, asyncio.IncompleteReadError, ValueError, RedisUnavailable) as exc:
            if self._writer is writer:
                self._drop(RedisUnavailable(f"redis connection lost: {type(exc).__name__}"))

    def _check_timeout(self) -> None:
        self._watchdog = None
        if not self._waiting:
            return
        loop = asyncio.get_running_loop()
        oldest = self._waiting[0][1]
        if loop.time() - oldest >= self.timeout:
            self._drop(RedisUnavailable(f"no reply within {self.timeout:g} s"))
        else:
            self._watchdog = loop.call_later(oldest + self.timeout - loop.time(), self._check_timeout)

    def _drop(self, error: Exception) -> None:
        """Close the connection and fail every command waiting on it."""
        writer, self._writer = self._writer, None
        self._pending = []
        task, self._reader_task = self._reader_task, None
        if writer is not None:
            writer.close()
        if task is not None and task is not asyncio.current_task():
            task.cancel()
        waiting, self._waiting = self._waiting, collections.deque()
        for future, _ in waiting:
            if not future.done():
                future.set_exception(error)
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None

    async def aclose(self) -> None:
        task = self._reader_task
        self._drop(RedisUnavailable("closed"))
        if task is not None:
            await asyncio.gather(task, return_exceptions=True)


async def _reply(reader: asyncio.StreamReader) -> Reply | RedisReplyError:
    line = await reader.readuntil(b"\r\n")
    kind, rest = line[:1], line[1:-2]
    if kind == b"$":
        n = int(rest)
        return None if n < 0 else (await reader.readexactly(n + 2))[:-2]
    if kind == b"+":
        return rest
    if kind == b":":
        return int(rest)
    if kind == b"-":
        return RedisReplyError(rest.decode("utf-8", "replace").split(" ", 1)[0])  # the error class only
    if kind == b"*":
        n = int(rest)
        if n < 0:
            return None
        items = [await _reply(reader) for _ in range(n)]
        return items
    raise ValueError("not a RESP reply")
