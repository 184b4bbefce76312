"""Real `routequote serve` processes for the multi-process tests: each on its own loopback port, configured only
through ROUTEQUOTE_* environment variables (as an operator would), its log captured to a file, and killable
with SIGKILL."""

from __future__ import annotations

import base64
import contextlib
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.support.observable import OBSERVABLE_ENV
from tests.support.server import free_port


def shared_signing_key() -> str:
    """A manifest signing key for every replica of one deployment (base64 of a 32-byte Ed25519 seed)."""
    return base64.b64encode(secrets.token_bytes(32)).decode()


@dataclass
class ServerProcess:
    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def log_tail(self, chars: int = 2000) -> str:
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def kill(self) -> None:
        """SIGKILL: no shutdown hook runs, nothing is flushed or closed by the server."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()


def start_server(
    log_dir: Path, name: str, settings: dict[str, str], timeout: float = 120.0, workers: int = 1
) -> ServerProcess:
    """Start `routequote serve` with ROUTEQUOTE_<NAME> settings (rate limits off; every route session-ready:
    OBSERVABLE, unless `settings` says otherwise) and wait until /v2/status answers."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROUTEQUOTE_")}
    env.update(
        {
            "ROUTEQUOTE_RATE_LIMIT": "off",
            "ROUTEQUOTE_HOST": "127.0.0.1",
            "ROUTEQUOTE_PORT": str(port),
            "ROUTEQUOTE_LOG_LEVEL": "info",
            "ROUTEQUOTE_DEV_SIGNING_KEY_PATH": "",
            **OBSERVABLE_ENV,
        }
    )
    env.update({f"ROUTEQUOTE_{k.upper()}": v for k, v in settings.items()})
    exe = Path(sys.executable).with_name("routequote")
    log = log_dir / f"{name}.log"
    with log.open("ab") as out:
        process = subprocess.Popen(
            [str(exe), "serve", "--workers", str(workers)], env=env, stdout=out, stderr=out
        )
    server = ServerProcess(f"http://127.0.0.1:{port}", process, log)
    deadline = time.monotonic() + timeout
    while True:
        try:
            if httpx.get(f"{server.url}/v2/status", timeout=30).status_code == 200:  # bounds a hang only
                return server
        except httpx.HTTPError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            server.kill()
            raise RuntimeError(f"server {name} did not start:\n{server.log_tail()}")
        time.sleep(0.1)


@contextlib.contextmanager
def server_processes(
    log_dir: Path, names: list[str], settings: dict[str, str]
) -> Iterator[list[ServerProcess]]:
    """Several replicas of one deployment, started one after the other (the first runs the migrations)."""
    started: list[ServerProcess] = []
    try:
        for name in names:
            started.append(start_server(log_dir, name, settings))
        yield started
    finally:
        for s in started:
            s.stop()


def _sockets_of(pid: int) -> set[str]:
    """The socket inodes process `pid` (or a child of it) holds."""
    children = Path(f"/proc/{pid}/task/{pid}/children")
    pids = [pid, *(int(p) for p in children.read_text().split())] if children.exists() else [pid]
    inodes = set()
    for each in pids:
        with contextlib.suppress(OSError):
            for fd in Path(f"/proc/{each}/fd").iterdir():
                with contextlib.suppress(OSError):
                    link = os.readlink(fd)
                    if link.startswith("socket:["):
                        inodes.add(link[8:-1])
    return inodes


def _tcp_sockets(pid: int) -> list[tuple[int, int, str, int]]:
    """The loopback TCP sockets of process `pid`: (local port, remote port, state, bytes unread)."""
    inodes = _sockets_of(pid)
    rows = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if fields[9] in inodes:
                    local, remote = (int(f.rsplit(":", 1)[1], 16) for f in fields[1:3])
                    rows.append((local, remote, fields[3], int(fields[4].split(":")[1], 16)))
    return rows


def holds_connections(pid: int, client_ports: set[int]) -> bool:
    """Whether process `pid` (or a child of it) holds a connection from each of `client_ports` on loopback: the
    server accepted them, so they are its requests in flight, not sockets still waiting in the listener's
    backlog (on a busy machine a client's writes are done long before the server accepts)."""
    return client_ports <= {remote for _, remote, _, _ in _tcp_sockets(pid)}


def read_connections(pid: int, client_ports: set[int]) -> set[int]:
    """Those of `client_ports` whose connection process `pid` holds with nothing unread: the server accepted
    it and read every byte the client has sent so far (uvicorn parses what it reads in the same step, so a
    request head sent before is a request in flight)."""
    return {remote for _, remote, _, unread in _tcp_sockets(pid) if remote in client_ports and unread == 0}


def listens(pid: int, port: int) -> bool:
    """Whether process `pid` still has its listening socket on `port` (a server shutting down closes it first)."""
    return any(local == port and state == "0A" for local, _, state, _ in _tcp_sockets(pid))
