"""HEAD and `Expect: 100-continue` over raw sockets against `routequote serve` (issue 38, item 6).

- HEAD answers as GET without a body on every GET route of the app (enumerated from the app itself): the same
  status, no body bytes, and the connection stays usable for the next request.
- /mcp, /mcp/v2 and /v2/mcp answer HEAD as they answer GET, with an allowed Host and with any other.
- A request that no route takes (404, 405) is answered before its body is read: no `100 Continue` invites the body.
  A request a route takes is invited, and served.
"""

from __future__ import annotations

import contextlib
import re
import socket
import time
from collections.abc import Iterator

import orjson
import pytest
from tests.support.server_process import ServerProcess, start_server
from tests.unit.actions.support import intent_for

from routequote.app import create_app
from routequote.config import Settings
from routequote.discovery.instance import flat_routes

SESSION_ID = "3f64a8bb-cabf-45ba-a897-123425a97be7"
BOUND = 120.0  # bounds a hang only (the route economics document takes seconds to build the first time)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    started = start_server(tmp_path_factory.mktemp("head"), "head", {})
    try:
        yield started
    finally:
        started.stop()


def port_of(server: ServerProcess) -> int:
    return int(server.url.rsplit(":", 1)[1])


def get_paths() -> list[str]:
    """Every GET route of the app, path parameters filled in."""
    app = create_app(Settings(rate_limit="off"))
    paths = {
        route.path
        for route in flat_routes(app.routes)
        if "GET" in (getattr(route, "methods", None) or ()) and getattr(route, "path", None)
    }
    return sorted(re.sub(r"\{[^}]+\}", SESSION_ID, p) for p in paths)


def read_answer(sock: socket.socket) -> tuple[bytes, dict[bytes, bytes], bytes]:
    """One answer's status line, headers and whatever body its Content-Length says (none is read for HEAD by the
    caller passing `sock` with the length ignored)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    status, *lines = head.split(b"\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(b":") for line in lines)}
    return status, headers, rest


def exchange(port: int, request: bytes) -> tuple[bytes, dict[bytes, bytes], bytes]:
    """Send `request` (it asks the server to close), read until the server closes: status, headers, body bytes."""
    with socket.create_connection(("127.0.0.1", port), timeout=BOUND) as sock:
        sock.sendall(request)
        status, headers, rest = read_answer(sock)
        while chunk := sock.recv(65536):
            rest += chunk
    return status, headers, rest


def ask(
    port: int, method: str, path: str, host: str = "127.0.0.1"
) -> tuple[bytes, dict[bytes, bytes], bytes]:
    return exchange(port, f"{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())


def code(status: bytes) -> int:
    return int(status.split()[1])


def test_head_answers_as_get_without_a_body_on_every_get_route(server: ServerProcess) -> None:
    port = port_of(server)
    paths = get_paths()
    assert len(paths) >= 30  # the enumeration found the app's routes (33 when written)
    refused = []
    for path in paths:
        got_status, got_headers, got_body = ask(port, "GET", path)
        head_status, head_headers, head_body = ask(port, "HEAD", path)
        if code(head_status) != code(got_status) or head_body:
            refused.append((path, head_status, code(got_status), len(head_body)))
            continue
        assert head_headers.get(b"content-type") == got_headers.get(b"content-type"), path
        if code(got_status) == 200 and path not in (
            "/metrics",
            "/readyz",
            "/livez",
            "/v2/status",
            "/v1/status",
        ):
            # a document that does not change between two requests: the length GET would send
            assert head_headers.get(b"content-length") == str(len(got_body)).encode(), path
    assert refused == []


def test_a_head_answer_leaves_the_connection_ready_for_the_next_request(server: ServerProcess) -> None:
    with socket.create_connection(("127.0.0.1", port_of(server)), timeout=BOUND) as sock:
        sock.sendall(b"HEAD /v2/capabilities HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        status, headers, rest = read_answer(sock)
        assert code(status) == 200 and int(headers[b"content-length"]) > 0 and rest == b""
        sock.sendall(b"GET /livez HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        status, _, body = read_answer(sock)
        while chunk := sock.recv(65536):
            body += chunk
        assert code(status) == 200 and body == b'{"status":"ok"}'  # no HEAD body bytes in front of it


@pytest.mark.parametrize("path", ["/mcp", "/mcp/v2", "/v2/mcp"])
def test_the_mcp_endpoints_answer_head_as_they_answer_get(server: ServerProcess, path: str) -> None:
    port = port_of(server)
    for host in ("127.0.0.1", "evil.example"):
        got_status, _, _ = ask(port, "GET", path, host)
        head_status, _, head_body = ask(port, "HEAD", path, host)
        assert code(head_status) == code(got_status), (path, host, head_status, got_status)
        assert head_body == b""


def expect_continue(
    port: int, method: str, path: str, body: bytes, host: str = "127.0.0.1", extra: str = ""
) -> tuple[bytes, bytes]:
    """Headers with `Expect: 100-continue`, then wait: the first answer line, and (when invited) the final answer
    after the body is sent."""
    with socket.create_connection(("127.0.0.1", port), timeout=BOUND) as sock:
        sock.sendall(
            f"{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n{extra}"
            f"Content-Length: {len(body)}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n".encode()
        )
        first = b""
        deadline = time.monotonic() + BOUND
        while b"\r\n\r\n" not in first and time.monotonic() < deadline:
            chunk = sock.recv(65536)
            if not chunk:
                break
            first += chunk
        if not first.startswith(b"HTTP/1.1 100 "):
            return first, b""
        sock.sendall(body)
        rest = first.partition(b"\r\n\r\n")[2]
        while chunk := sock.recv(65536):
            rest += chunk
        return first, rest


def test_a_request_no_route_takes_is_refused_without_an_invitation_to_send_its_body(
    server: ServerProcess,
) -> None:
    port = port_of(server)
    body = b'{"amount_usd": 100}'
    for method, path, status in (
        ("POST", "/no/such/path", 404),
        ("PUT", "/v2/quote", 405),
        ("POST", "/livez", 405),
    ):
        first, _ = expect_continue(port, method, path, body)
        assert first.startswith(b"HTTP/1.1 %d " % status), (method, path, first[:200])
        assert (
            b"\r\nconnection: close\r\n" in first.lower()
        )  # the body may still come: never read as a request
    # a route that takes the request invites the body, then answers it
    quote = orjson.dumps(intent_for("base:USDC->base:ETH", 100))
    first, rest = expect_continue(port, "POST", "/v2/quote", quote)
    assert first.startswith(b"HTTP/1.1 100 Continue\r\n"), first[:200]
    assert rest.startswith(b"HTTP/1.1 200 "), rest[:200]


MCP_ACCEPT = "Accept: application/json, text/event-stream\r\n"
TOOLS_LIST = b'{"jsonrpc":"2.0","id":7,"method":"tools/list"}'


@pytest.mark.parametrize("path", ["/mcp", "/mcp/v2", "/v2/mcp"])
def test_an_mcp_request_its_host_or_origin_refuses_is_never_invited_to_send_its_body(
    server: ServerProcess, path: str
) -> None:
    """The Host and Origin checks need no body: a refused request is answered first, without `100 Continue`."""
    port = port_of(server)
    for host, extra, status in (
        ("evil.example", MCP_ACCEPT, 421),
        (f"127.0.0.1:{port}", MCP_ACCEPT + "Origin: http://evil.example\r\n", 403),
    ):
        first, _ = expect_continue(port, "POST", path, TOOLS_LIST, host, extra)
        assert first.startswith(b"HTTP/1.1 %d " % status), (path, host, first[:300])
        assert (
            b"\r\nconnection: close\r\n" in first.lower()
        )  # the body may still come: never read as a request
        answer = orjson.loads(first.partition(b"\r\n\r\n")[2])
        assert answer["jsonrpc"] == "2.0" and answer["id"] is None and answer["error"]["code"] == -32600


@pytest.mark.parametrize("path", ["/mcp", "/mcp/v2", "/v2/mcp"])
def test_an_mcp_request_it_serves_is_invited_and_its_body_still_passes_the_guard(
    server: ServerProcess, path: str
) -> None:
    port = port_of(server)
    host = f"127.0.0.1:{port}"
    first, rest = expect_continue(port, "POST", path, TOOLS_LIST, host, MCP_ACCEPT)
    assert first.startswith(b"HTTP/1.1 100 Continue\r\n"), first[:200]
    assert rest.startswith(b"HTTP/1.1 200 "), rest[:300]
    answer = orjson.loads(rest.partition(b"\r\n\r\n")[2])
    assert answer["id"] == 7 and answer["result"]["tools"]
    # the body read on demand is still read strictly: a duplicate key is refused, as without Expect
    bad = b'{"jsonrpc":"2.0","id":7,"id":8,"method":"tools/list"}'
    first, rest = expect_continue(port, "POST", path, bad, host, MCP_ACCEPT)
    assert first.startswith(b"HTTP/1.1 100 Continue\r\n"), first[:200]
    assert rest.startswith(b"HTTP/1.1 400 "), rest[:300]
    assert orjson.loads(rest.partition(b"\r\n\r\n")[2])["error"]["data"]["reason_class"] == "duplicate_key"


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A server with a small per-client budget (per hour: the window never frees while the test runs)."""
    started = start_server(tmp_path_factory.mktemp("limited"), "limited", {"rate_limit": "12/hour"})
    try:
        yield started
    finally:
        started.stop()


def test_a_rate_limited_request_is_refused_without_an_invitation_to_send_its_body(
    limited: ServerProcess,
) -> None:
    port = port_of(limited)
    quote = orjson.dumps(intent_for("base:USDC->base:ETH", 100))
    first, rest = expect_continue(port, "POST", "/v2/quote", quote)  # within the budget: invited, then served
    assert first.startswith(b"HTTP/1.1 100 Continue\r\n"), first[:200]
    assert rest.startswith(b"HTTP/1.1 200 "), rest[:200]
    request = (
        f"POST /v2/quote HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(quote)}\r\nConnection: close\r\n\r\n"
    ).encode() + quote
    statuses = []
    while not statuses or code(statuses[-1]) != 429:  # spend the budget (12 at most: it is 12 an hour)
        assert len(statuses) <= 12, statuses
        statuses.append(exchange(port, request)[0])
    first, _ = expect_continue(port, "POST", "/v2/quote", quote)
    assert first.startswith(b"HTTP/1.1 429 "), first[:300]
    head = first.lower()
    assert b"\r\nretry-after: " in head and b"\r\nconnection: close\r\n" in head
    assert orjson.loads(first.partition(b"\r\n\r\n")[2])["reason_class"] == "rate_limit_exceeded"


def test_a_body_read_on_demand_keeps_its_bound(server: ServerProcess) -> None:
    """Invited, then refused past the limit (a chunked body announces no length): the REST answer, and the
    server logs no unhandled error for the app that saw the body refused under it."""
    with socket.create_connection(("127.0.0.1", port_of(server)), timeout=BOUND) as sock:
        sock.sendall(
            b"POST /v2/quote HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n"
        )
        first = b""
        while b"\r\n\r\n" not in first and (chunk := sock.recv(65536)):
            first += chunk
        assert first == b"HTTP/1.1 100 Continue\r\n\r\n", first[:200]
        rest = b""
        part = b"x" * 600_000
        # the server may answer and close while bytes of ours are still unread (a reset): its answer came first
        with contextlib.suppress(OSError):
            for _ in range(2):
                sock.sendall(b"%x\r\n" % len(part) + part + b"\r\n")
        with contextlib.suppress(ConnectionResetError):
            while chunk := sock.recv(65536):
                rest += chunk
    assert rest.startswith(b"HTTP/1.1 400 "), rest[:300]
    assert orjson.loads(rest.partition(b"\r\n\r\n")[2])["reason_class"] == "body_too_large"
    assert "unhandled_error" not in server.log_tail(1_000_000)
