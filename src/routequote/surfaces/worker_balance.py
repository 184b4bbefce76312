"""Several workers on one listening socket: each connection goes to the worker that holds the fewest.

Every worker of `routequote serve --workers N` accepts from the one socket the parent bound. Left alone, the
worker that wakes first accepts every connection waiting, so a burst of keep-alive connections (a connection
pool, a load balancer) can land 16 to 0 on two workers and one of them does all the work for as long as the
connections live. Here each worker accepts one connection at a time, and only while it holds no more open
connections than the least loaded of its peers. The counts sit in one small shared file in the per-serve
directory: one cell per worker (open connections, connections ever accepted, and of those the ones taken ahead of a
peer by the stall rule below), written only by its owner.

A worker that is ahead stops watching the socket, and looks again after `HOLD_SECONDS` (or at once when one of
its connections ends), so that a peer takes the connection. If a connection has waited `STALL_SECONDS` while no
peer accepted anything (they are busy, stopped or gone), the worker takes one connection without holding, then
two after the next such stall, then four, and so on, until a peer is seen accepting again. So a peer that is off
the CPU for a moment (a garbage collection, say) costs the balance a connection or two, not a whole burst; and
with a peer that cannot take connections at all, a connection waits at most about `STALL_SECONDS`, and ever
more rarely.

Only public event-loop calls are used: the loop is uvloop, as uvicorn's default for one worker (asyncio's selector
loop where uvloop is not installed), and the listening socket is served by `add_reader`, `accept` and
`connect_accepted_socket` instead of the loop's own accept loop. One worker, a Unix socket or TLS: unchanged.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import mmap
import os
import select
import socket
import struct
from collections.abc import Callable, Sequence
from typing import Any

from routequote.storage.peer_quotes import CLAIM_TIMEOUT_SECONDS, PEER_DIR_ENV, claim_index

HOLD_SECONDS = 0.001  # a worker that is ahead looks again after this long
STALL_SECONDS = 0.02  # peers that accept nothing for this long while a connection waits cannot take it
MAX_ALONE_BUDGET = 1024  # connections taken without holding after one stall, at most
ACCEPT_RETRY_SECONDS = 1.0  # after a failed accept (out of descriptors, say), as the loop's own accept loop
MAX_ACCEPTS_PER_WAKEUP = 100
BOARD_FILE = "connections"
MAX_WORKERS = 64
# open connections; connections accepted; of those, taken while ahead of a peer by the stall rule (both wrap at
# 2**32): the last is what a burst's imbalance can come from, beyond one connection
_CELL = struct.Struct("<III")

log = logging.getLogger("routequote.worker_balance")


def make_board(folder: str) -> None:
    """The shared file of cells, all zero, created by `routequote serve` before its workers start."""
    with open(os.path.join(folder, BOARD_FILE), "wb") as f:
        f.write(bytes(_CELL.size * MAX_WORKERS))


def should_wait(mine: int, peers_open: Sequence[int]) -> bool:
    """A worker leaves a connection to its peers while it holds more open connections than one of them."""
    return bool(peers_open) and mine > min(peers_open)


class Board:
    """This worker's cell (claimed with a lock that goes with the process) and its peers' cells."""

    def __init__(self, folder: str, workers: int, claim_timeout: float = CLAIM_TIMEOUT_SECONDS) -> None:
        self.workers = min(workers, MAX_WORKERS)
        self.index, self._lock_fd = claim_index(folder, "balance", self.workers, claim_timeout)
        fd = os.open(os.path.join(folder, BOARD_FILE), os.O_RDWR)
        try:
            self._map = mmap.mmap(fd, _CELL.size * MAX_WORKERS)
        finally:
            os.close(fd)
        self._peers = [i for i in range(self.workers) if i != self.index]
        self.publish(0, 0)  # a restarted worker starts from nothing

    def publish(self, open_connections: int, accepted: int, taken_ahead: int = 0) -> None:
        _CELL.pack_into(
            self._map,
            self.index * _CELL.size,
            open_connections,
            accepted & 0xFFFFFFFF,
            taken_ahead & 0xFFFFFFFF,
        )

    def peers(self) -> list[tuple[int, int]]:
        """The peers' (open connections, connections accepted)."""
        return [_CELL.unpack_from(self._map, i * _CELL.size)[:2] for i in self._peers]


def read_board(folder: str, workers: int) -> list[tuple[int, int, int]]:
    """Every worker's cell as it stands (open, accepted, taken ahead by the stall rule), without claiming one:
    for tests and diagnostics (the folder is the serve's `ROUTEQUOTE_SERVE_PEER_DIR`)."""
    with open(os.path.join(folder, BOARD_FILE), "rb") as f:
        raw = f.read(_CELL.size * MAX_WORKERS)
    return [_CELL.unpack_from(raw, i * _CELL.size) for i in range(min(workers, MAX_WORKERS))]


class _Counted(asyncio.Protocol):
    """The server's protocol, with its end counted. Every other event goes straight to the protocol's own
    methods (bound here once), so reading and writing cost nothing more."""

    def __init__(self, inner: asyncio.BaseProtocol, on_lost: Callable[[], None]) -> None:
        self.inner = inner
        self._on_lost: Callable[[], None] | None = on_lost
        self.connection_made = inner.connection_made  # type: ignore[method-assign]
        self.pause_writing = inner.pause_writing  # type: ignore[method-assign]
        self.resume_writing = inner.resume_writing  # type: ignore[method-assign]
        self.data_received = inner.data_received  # type: ignore[attr-defined,method-assign]
        self.eof_received = inner.eof_received  # type: ignore[attr-defined,method-assign]

    def connection_lost(self, exc: Exception | None) -> None:
        self.release()
        self.inner.connection_lost(exc)

    def release(self) -> None:
        on_lost, self._on_lost = self._on_lost, None
        if on_lost is not None:
            on_lost()


class Acceptor:
    """Accepts from one listening socket in one worker, by the rule above."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        listener: socket.socket,
        protocol_factory: Callable[[], asyncio.BaseProtocol],
        board: Board,
    ) -> None:
        self.loop = loop
        self.listener = listener
        self.protocol_factory = protocol_factory
        self.board = board
        self.open = 0
        self.accepted = 0
        self.taken_ahead = 0  # accepted while holding more than a peer: the stall rule's takes
        self._ahead = False  # the connection about to be accepted is one of those
        self._seen: list[int] | None = None  # the peers' accepted counts, as last looked at
        self._quiet_since = 0.0  # loop time since which they have not changed
        self._alone_budget = 0  # connections this worker may still take without holding, peers being stalled
        self._next_budget = 1  # the budget the next stall grants (doubles while the peers stay stalled)
        self._hold: asyncio.TimerHandle | None = None
        self._waiting = select.poll()  # is a connection waiting on the listening socket?
        self._waiting.register(listener.fileno(), select.POLLIN)
        self._fd = listener.fileno()

    def start(self) -> None:
        self.loop.add_reader(self._fd, self._on_readable)

    def stop(self) -> None:
        """No more accepting: the socket is about to close."""
        if self._hold is not None:
            self._hold.cancel()
            self._hold = None
        if self.listener.fileno() != -1:
            self.loop.remove_reader(self._fd)

    def _peers_took(self, accepted: list[int]) -> None:
        if accepted != self._seen:
            self._seen, self._quiet_since = accepted, self.loop.time()
            self._alone_budget, self._next_budget = 0, 1

    def _leave_to_peers(self) -> bool:
        self._ahead = False
        peers = self.board.peers()
        if not should_wait(self.open, [o for o, _ in peers]):
            return False
        accepted = [a for _, a in peers]
        if accepted == self._seen and self._alone_budget > 0:
            self._alone_budget -= 1  # the peers have taken nothing since they were found stalled
            self._ahead = True
            return False
        self._peers_took(accepted)
        self.loop.remove_reader(self._fd)
        self._hold = self.loop.call_later(HOLD_SECONDS, self._resume)
        return True

    def _resume(self) -> None:
        self._hold = None
        if self.listener.fileno() == -1:  # the server closed meanwhile
            return
        peers = self.board.peers()
        self._peers_took([a for _, a in peers])
        now = self.loop.time()
        if (
            now - self._quiet_since >= STALL_SECONDS
            and should_wait(self.open, [o for o, _ in peers])
            and self._waiting.poll(0)  # a connection still waits: nobody could take it
        ):
            self._alone_budget = self._next_budget
            self._next_budget = min(2 * self._next_budget, MAX_ALONE_BUDGET)
            self._quiet_since = now  # the next grant takes another stall
        self.loop.add_reader(self._fd, self._on_readable)

    def _on_readable(self) -> None:
        for _ in range(MAX_ACCEPTS_PER_WAKEUP):
            if self._leave_to_peers():
                return
            try:
                conn, _ = self.listener.accept()
            except (BlockingIOError, InterruptedError, ConnectionAbortedError):
                return  # nothing waiting, or a peer took it
            except OSError as exc:  # out of descriptors or buffers, say: retry later rather than spin
                log.error(
                    "accept failed (%s): retrying in %g s",
                    errno.errorcode.get(exc.errno or 0),
                    ACCEPT_RETRY_SECONDS,
                )
                self.loop.remove_reader(self._fd)
                self.loop.call_later(ACCEPT_RETRY_SECONDS, self._resume)
                return
            conn.setblocking(False)
            # no Nagle delay, as on the loop's own connections: it sets that only on a socket whose `proto`
            # reads IPPROTO_TCP, and one accepted from the socket the supervisor hands over reads 0
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.open += 1
            self.accepted += 1
            self.taken_ahead += self._ahead
            self.board.publish(self.open, self.accepted, self.taken_ahead)
            self.loop.create_task(self._serve(conn))

    async def _serve(self, conn: socket.socket) -> None:
        made: list[_Counted] = []

        def counted() -> asyncio.BaseProtocol:
            made.append(_Counted(self.protocol_factory(), self._lost))
            return made[-1]

        try:
            await self.loop.connect_accepted_socket(counted, conn)
        except (OSError, RuntimeError) as exc:  # the peer left at once, or the loop is closing
            log.debug("accepted connection not served: %s", type(exc).__name__)
            conn.close()
            for protocol in made:
                protocol.release()
            if not made:
                self._lost()

    def _lost(self) -> None:
        self.open -= 1
        self.board.publish(self.open, self.accepted, self.taken_ahead)
        if self._hold is not None and not should_wait(self.open, [o for o, _ in self.board.peers()]):
            self._hold.cancel()  # no longer ahead: take connections again now
            self._resume()


class _Balancing(asyncio.AbstractEventLoop):
    """An event loop that serves a TCP listening socket through an `Acceptor` when `routequote serve` runs
    several workers (it names `balanced_loop` as uvicorn's loop then, and hands the serve directory over)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        folder = os.environ.get(PEER_DIR_ENV, "")
        workers = int(os.environ.get("ROUTEQUOTE_WORKERS", "1") or "1")
        self._board = Board(folder, workers) if folder and workers > 1 else None

    async def create_server(  # type: ignore[override]
        self,
        protocol_factory: Callable[[], asyncio.BaseProtocol],
        host: Any = None,
        port: Any = None,
        *,
        sock: socket.socket | None = None,
        ssl: Any = None,
        start_serving: bool = True,
        backlog: int = 100,
        **kwargs: Any,
    ) -> asyncio.AbstractServer:
        balanced = (
            self._board is not None
            and sock is not None
            and sock.family in (socket.AF_INET, socket.AF_INET6)
            and ssl is None
            and start_serving
        )
        server = await super().create_server(
            protocol_factory,
            host,
            port,
            sock=sock,
            ssl=ssl,
            start_serving=start_serving and not balanced,
            backlog=backlog,
            **kwargs,
        )
        if not balanced:
            return server
        assert sock is not None and self._board is not None
        sock.listen(backlog)  # what the loop's own serving would have done first
        acceptor = Acceptor(self, sock, protocol_factory, self._board)
        acceptor.start()
        return _StopsAcceptor(server, acceptor)


class _StopsAcceptor(asyncio.AbstractServer):
    """The loop's server, whose `close` first stops the acceptor watching its socket: uvloop closes the
    listening descriptor itself, and libuv must not close a descriptor that one of its polls still watches."""

    def __init__(self, server: asyncio.AbstractServer, acceptor: Acceptor) -> None:
        self._server = server
        self._acceptor = acceptor

    def __getattr__(self, name: str) -> Any:  # `sockets`, `serve_forever`, ...: the server's own
        return getattr(self._server, name)

    def close(self) -> None:
        self._acceptor.stop()
        self._server.close()

    def get_loop(self) -> asyncio.AbstractEventLoop:
        return self._server.get_loop()

    def is_serving(self) -> bool:
        return self._server.is_serving()

    async def start_serving(self) -> None:
        await self._server.start_serving()

    async def serve_forever(self) -> None:
        await self._server.serve_forever()

    async def wait_closed(self) -> None:
        await self._server.wait_closed()


class BalancedEventLoop(_Balancing, asyncio.SelectorEventLoop):  # type: ignore[misc]
    """asyncio's selector loop, balanced: where uvloop is not installed."""


try:
    import uvloop
except ImportError:  # pragma: no cover - uvicorn[standard] installs it
    uvloop = None  # type: ignore[assignment]

if uvloop is not None:

    class BalancedUvLoop(_Balancing, uvloop.Loop):  # type: ignore[misc]
        """uvloop, balanced."""


def balanced_loop() -> asyncio.AbstractEventLoop:
    """The loop of each of several workers: uvloop (as one worker runs by uvicorn's default) when it is
    installed, else asyncio's selector loop; either balanced."""
    return BalancedUvLoop() if uvloop is not None else BalancedEventLoop()
