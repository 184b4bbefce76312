"""A JSON answering HTTP server on loopback, in a thread: the one stand-in server shape the fakes share
(Circle Iris, Solana JSON-RPC). `answer(method, path, body)` returns (HTTP status, JSON payload)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = Callable[[str, str, bytes], tuple[int, Any]]


@contextmanager
def json_server(answer: Answer) -> Iterator[str]:
    """Serve `answer` for GET and POST on 127.0.0.1 (a free port); yields the base URL."""

    class Handler(BaseHTTPRequestHandler):
        def _reply(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0") or 0))
            code, payload = answer(self.command, self.path, body)
            raw = json.dumps(payload).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        do_GET = do_POST = _reply  # noqa: N815 - http.server's names

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
