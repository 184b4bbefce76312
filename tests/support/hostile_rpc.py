"""A hostile upstream on 127.0.0.1: a real HTTP server (stdlib, its own thread) that speaks JSON-RPC (EVM and
Solana) and Circle Iris's REST, and answers the way a broken or malicious node would (issue 22 items 4, 9).

Modes (`server.mode = ...`, switchable between requests):

* `secret_error`: every call fails with a JSON-RPC error (Iris: HTTP 400) whose text is 200 KB of secret-shaped
  material: an API-key-shaped RPC URL, a private-key-shaped hex string, a mnemonic, a base58 secret key.
* `bad_value`: a transaction whose `value` is `[1]` and whose hash fields are secret-shaped (the wire parser
  must refuse it without repeating the values).
* `huge`: a 30 MB body (no Content-Length: the client must stop reading by itself).
* `many_logs`: a well-formed mined transaction on Base whose receipt carries `LOG_COUNT` logs (about 25 MB).

`requests` counts what arrived, `bytes_sent` what the server managed to write (a client that stops reading
early leaves most of a huge body unsent); `huge_started` and `huge_ended` count the huge answers begun and
those whose writing has ended.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SECRET_URL = "https://base-mainnet.example-rpc.invalid/v2/sk_live_9f8e7d6c5b4a39281706f5e4d3c2b1a0"
SECRET_HEX = "0x" + "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"
SECRET_MNEMONIC = "abandon ability able about above absent absorb abstract absurd abuse access accident"
SECRET_B58 = "5MaiiCavjCmn9Hs1o3eznqDEhRwxo7pXiAYez7keQUviUkauRiTMD8DrESdrNjN8zd9mTmVhRvBJeg5vhyvgrAhG"
SECRET_TEXT = f"upstream {SECRET_URL} key={SECRET_HEX} seed '{SECRET_MNEMONIC}' sk {SECRET_B58} "
SECRETS = (SECRET_URL, SECRET_HEX[2:], SECRET_MNEMONIC, SECRET_B58, "sk_live_", "abandon ability")
LOG_COUNT = 100_000
HUGE_BYTES = 30 * 1024 * 1024
BASE_CHAIN_ID = 8453
TX_HASH = "0x" + "ab" * 32
BLOCK_HASH = "0x" + "cd" * 32
ADDRESS = "0x" + "11" * 20


def _log(i: int) -> dict[str, Any]:
    return {
        "address": ADDRESS,
        "topics": [],
        "data": "0x",
        "logIndex": hex(i),
        "transactionHash": TX_HASH,
        "blockNumber": "0x64",
        "removed": False,
    }


def _mined(method: str, logs: int, value: Any = "0x0") -> Any:
    if method == "eth_getTransactionByHash":
        return {
            "hash": TX_HASH,
            "from": ADDRESS,
            "to": ADDRESS,
            "value": value,
            "input": "0x",
            "chainId": hex(BASE_CHAIN_ID),
            "blockNumber": "0x64",
            "gasPrice": "0x1",
        }
    if method == "eth_getTransactionReceipt":
        return {
            "transactionHash": TX_HASH,
            "blockNumber": "0x64",
            "blockHash": BLOCK_HASH,
            "status": "0x1",
            "gasUsed": "0x5208",
            "effectiveGasPrice": "0x1",
            "to": ADDRESS,
            "logs": [_log(i) for i in range(logs)],
        }
    if method == "eth_blockNumber":
        return "0x70"
    if method == "eth_chainId":
        return hex(BASE_CHAIN_ID)
    if method == "eth_getBlockByNumber":
        return {"hash": BLOCK_HASH, "number": "0x64", "timestamp": "0x6740a000"}
    return None


class HostileRpc(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.mode = "secret_error"
        self.requests = 0
        self.bytes_sent = 0
        self.huge_started = (
            0  # huge answers begun, and those whose writing ended (whole, or cut by the client)
        )
        self.huge_ended = 0
        self.counting = threading.Lock()  # handlers run on threads of their own
        self._cache: dict[str, bytes] = {}

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def body_for(self, payload: Any) -> bytes:
        calls = payload if isinstance(payload, list) else [payload]
        out = []
        for call in calls:
            method = str(call.get("method")) if isinstance(call, dict) else ""
            rid = call.get("id") if isinstance(call, dict) else None
            if self.mode == "secret_error":
                msg = (SECRET_TEXT * (200_000 // len(SECRET_TEXT) + 1))[:200_000]
                out.append(
                    {"jsonrpc": "2.0", "id": rid, "error": {"code": -32000, "message": msg, "data": msg}}
                )
            elif self.mode == "bad_value":
                out.append({"jsonrpc": "2.0", "id": rid, "result": _mined(method, 1, value=[1])})
            else:
                out.append({"jsonrpc": "2.0", "id": rid, "result": _mined(method, LOG_COUNT)})
        body = json.dumps(out if isinstance(payload, list) else out[0]).encode()
        return body


class _Handler(BaseHTTPRequestHandler):
    server: HostileRpc
    protocol_version = "HTTP/1.1"

    def log_message(self, *_: Any) -> None:  # quiet
        pass

    def _send(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self._write(body)

    def _write(self, body: bytes) -> None:
        try:
            for i in range(0, len(body), 65536):
                self.wfile.write(body[i : i + 65536])
                self.server.bytes_sent += min(65536, len(body) - i)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _huge(self) -> None:
        """30 MB of a JSON string, chunked (no Content-Length): only reading stops it."""
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        chunk = b"A" * 65536
        with self.server.counting:
            self.server.huge_started += 1
        try:
            self.wfile.write(b'1\r\n"\r\n')
            for _ in range(HUGE_BYTES // len(chunk)):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.server.bytes_sent += len(chunk)
            self.wfile.write(b'1\r\n"\r\n0\r\n\r\n')
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        finally:
            with self.server.counting:
                self.server.huge_ended += 1

    def do_POST(self) -> None:
        self.server.requests += 1
        payload = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))
        if self.server.mode == "huge":
            self._huge()
            return
        self._send(200, self.server.body_for(payload))

    def do_GET(self) -> None:  # Circle Iris: GET /v2/messages/{domain}?transactionHash=...
        self.server.requests += 1
        if self.server.mode == "huge":
            self._huge()
            return
        self._send(400, json.dumps({"error": SECRET_TEXT * 50, "message": SECRET_TEXT}).encode())


@contextlib.contextmanager
def hostile_rpc() -> Iterator[HostileRpc]:
    server = HostileRpc()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def leaked(text: str) -> list[str]:
    """The secret-shaped strings of this fixture found in `text` (an answer, a log line)."""
    return [s for s in SECRETS if s in text]
