"""A private redis-server for one test (its own loopback port and directory), which the test may stop and start
again without touching the shared Redis on 6379. Its data is saved on shutdown and loaded on start (an RDB
file in its directory), as a persistent production Redis would."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.server import free_port


class PrivateRedis:
    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        exe = shutil.which("redis-server")
        assert exe
        self.process = subprocess.Popen(
            [
                exe,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(self.dir),
                "--save",
                "3600 1",
                "--appendonly",
                "no",
                "--protected-mode",
                "yes",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 15
        while not self.up():
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise RuntimeError("private redis-server did not start")
            time.sleep(0.05)

    def stop(self) -> None:
        """SIGTERM: redis saves its data and exits; the port is closed."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(15)
        self.process = None

    def up(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False


@contextlib.contextmanager
def private_redis(directory: Path) -> Iterator[PrivateRedis]:
    if shutil.which("redis-server") is None:
        pytest.skip("SKIPPED: redis-server is not installed (a private instance is started for this test)")
    r = PrivateRedis(directory)
    r.start()
    try:
        yield r
    finally:
        r.stop()
