"""`routequote serve --workers 2` spreads a burst of keep-alive connections evenly over its workers, and a worker
that cannot accept (stopped here with SIGSTOP) does not keep connections from the other.

Which worker holds a connection is read from /proc: the established sockets on the server's port, matched by
inode against each worker's open descriptors. Before the balancing, a burst of 16 split 16/0, 13/3 or 12/4 in
most runs."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.server_process import ServerProcess, start_server

from routequote.storage.peer_quotes import PEER_DIR_ENV
from routequote.surfaces.worker_balance import read_board

pytestmark = pytest.mark.skipif(
    not Path("/proc/net/tcp").exists(), reason="reads connections from Linux /proc"
)


@pytest.fixture()
def two_workers(tmp_path: Path) -> Iterator[ServerProcess]:
    server = start_server(
        tmp_path,
        "balance",
        {"database_url": f"sqlite+aiosqlite:///{tmp_path}/s.sqlite3"},
        workers=2,
    )
    try:
        # the server answers once one worker is up; the other may still start (the bound is a hang's: two
        # workers importing at once on a busy machine took over a minute)
        deadline = time.monotonic() + 180
        while server.log_tail(200_000).count("Application startup complete") < 2:
            assert time.monotonic() < deadline, server.log_tail()
            time.sleep(0.1)
        # and both watch the listening socket (a worker started up before it serves the socket)
        while not all(watches_listener(pid, server) for pid in workers_of(server)):
            assert time.monotonic() < deadline, server.log_tail()
            time.sleep(0.05)
        yield server
    finally:
        server.stop()


def workers_of(server: ServerProcess) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            stat = (entry / "stat").read_text()
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            if parent == server.process.pid and b"spawn_main" in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
    assert len(found) == 2, found
    return sorted(found)


def watches_listener(pid: int, server: ServerProcess) -> bool:
    """Whether worker `pid`'s event loop polls the server's listening socket: one of its epoll descriptors lists
    the descriptor of that socket (/proc/<pid>/fdinfo), so the worker accepts from it."""
    port = int(server.url.rsplit(":", 1)[1])
    listening = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "0A":  # LISTEN
                    listening.add(f"socket:[{fields[9]}]")
    listener_fds, polled = set(), set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            link = os.readlink(fd)
            if link in listening:
                listener_fds.add(int(fd.name))
            elif link == "anon_inode:[eventpoll]":
                for line in Path(f"/proc/{pid}/fdinfo/{fd.name}").read_text().splitlines():
                    if line.startswith("tfd:"):
                        polled.add(int(line.split()[1]))
    return bool(listener_fds & polled)


def connections_per_worker(server: ServerProcess) -> dict[int, int]:
    port = int(server.url.rsplit(":", 1)[1])
    established = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                # local port, ESTABLISHED
                if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "01":
                    established.add(fields[9])  # inode
    counts = {}
    for pid in workers_of(server):
        inodes = set()
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                m = re.fullmatch(r"socket:\[(\d+)\]", os.readlink(fd))
                if m:
                    inodes.add(m.group(1))
        counts[pid] = len(inodes & established)
    return counts


def livez(conn: socket.socket) -> None:
    """One keep-alive GET /livez on `conn`, its whole answer read."""
    conn.sendall(b"GET /livez HTTP/1.1\r\nHost: balance\r\n\r\n")
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        assert chunk, "closed before answering"
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    assert head.startswith(b"HTTP/1.1 200"), head
    length = int(re.search(rb"(?i)content-length: (\d+)", head).group(1))  # type: ignore[union-attr]
    while len(body) < length:
        body += conn.recv(65536)


def open_connections(server: ServerProcess, n: int) -> list[socket.socket]:
    port = int(server.url.rsplit(":", 1)[1])
    conns = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(n)]  # one burst
    for conn in conns:
        livez(conn)
    return conns


def board_of(server: ServerProcess) -> list[tuple[int, int, int]]:
    """The workers' shared cells (open, accepted, taken ahead), from the folder their environment names."""
    pid = workers_of(server)[0]
    environ = dict(
        item.split(b"=", 1) for item in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0") if b"=" in item
    )
    return read_board(environ[PEER_DIR_ENV.encode()].decode(), 2)


def test_a_burst_of_keep_alive_connections_is_split_evenly(two_workers: ServerProcess) -> None:
    """A worker takes a connection only while it holds no more than its peer (whose published count may lag, never
    lead), so a burst splits 8/8, except for connections a worker took ahead because its peer accepted nothing for
    a stall's length (off the CPU: on a loaded machine, any number): each of those, and only those, may widen the
    split by one. They are counted by the worker that took them, so the split is checked against its cause."""
    conns = open_connections(two_workers, 16)
    try:
        counts = connections_per_worker(two_workers)
        assert sum(counts.values()) == 16, counts
        board = board_of(two_workers)
        assert sorted(o for o, _, _ in board) == sorted(counts.values()), (board, counts)  # /proc agrees
        for i, (held, _, ahead) in enumerate(board):
            peer = board[1 - i][0]
            assert held - peer <= 1 + ahead, (board, counts)
    finally:
        for conn in conns:
            conn.close()


def test_a_stopped_worker_does_not_keep_connections_from_the_other(two_workers: ServerProcess) -> None:
    conns = open_connections(two_workers, 16)
    counts = connections_per_worker(two_workers)
    stopped = max(counts, key=lambda pid: counts[pid])
    os.kill(stopped, signal.SIGSTOP)
    try:
        # the live worker soon holds more than the stopped one: every next connection is still answered, by it
        # (one the stopped worker took would never be: its socket's 30 s timeout fails the test)
        for _ in range(12):
            conns += open_connections(two_workers, 1)
        live = next(pid for pid in counts if pid != stopped)
        assert connections_per_worker(two_workers)[live] == counts[live] + 12
    finally:
        os.kill(stopped, signal.SIGCONT)
        for conn in conns:
            conn.close()


def test_every_worker_runs_uvloop_as_one_worker_does(two_workers: ServerProcess) -> None:
    for pid in workers_of(two_workers):
        assert "uvloop" in Path(f"/proc/{pid}/maps").read_text(), pid


class _Hello(asyncio.Protocol):
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.transport.write(b"hello " + data)  # type: ignore[attr-defined]


@pytest.mark.parametrize("kind", ["uvloop", "asyncio"])
def test_a_balanced_server_serves_and_closes_its_socket_on_either_loop(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The acceptor watches the listening socket; closing the server stops it first, then the socket closes
    (uvloop closes the descriptor itself). A duplicate that another worker would hold keeps listening."""
    from routequote.storage.peer_quotes import PEER_DIR_ENV
    from routequote.surfaces.worker_balance import BalancedEventLoop, balanced_loop, make_board

    monkeypatch.setenv(PEER_DIR_ENV, str(tmp_path))
    monkeypatch.setenv("ROUTEQUOTE_WORKERS", "2")
    make_board(str(tmp_path))
    loop = balanced_loop() if kind == "uvloop" else BalancedEventLoop()
    import uvloop

    assert isinstance(loop, uvloop.Loop) is (kind == "uvloop")
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    peer = listener.dup()  # the other worker's copy of the supervisor's socket

    async def scenario() -> None:
        server = await loop.create_server(_Hello, sock=listener)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"there")
        assert await reader.readexactly(11) == b"hello there"
        writer.close()
        server.close()
        await server.wait_closed()
        await asyncio.sleep(0.05)

    try:
        loop.run_until_complete(scenario())
        assert listener.fileno() == -1  # closed with the server
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            pass  # the peer's copy still listens (its backlog takes the connection)
    finally:
        loop.close()
        peer.close()
