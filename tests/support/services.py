"""Local services the suite uses for real when they run (Redis), and a clear skip when they do not."""

from __future__ import annotations

import socket

import pytest


def redis_up(host: str = "127.0.0.1", port: int = 6379) -> bool:
    try:
        with socket.create_connection(
            (host, port), timeout=5
        ) as s:  # a hang bound: a busy Redis is late, not down
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def require_redis() -> None:
    if not redis_up():
        pytest.skip("SKIPPED: Redis is not reachable on 127.0.0.1:6379 (.ci/run starts it on CI machines)")
