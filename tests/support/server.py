"""Run a real uvicorn server for an app on a free loopback port, in a background thread."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import uvicorn

from routequote.surfaces.forwarded import proxy_options


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def running_server(app: Any, port: int | None = None) -> Iterator[str]:
    """Yields the base URL of `app` served by uvicorn (real HTTP over loopback)."""
    port = port or free_port()
    # forwarded headers as `routequote serve` treats them: only from the proxies the app's settings name
    settings = getattr(getattr(app, "state", None), "settings", None)
    proxies = proxy_options(getattr(settings, "trusted_proxies", ""))
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="warning", access_log=False, lifespan="on", **proxies
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 120  # bounds a hang only: a busy machine starts it late
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("test server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
