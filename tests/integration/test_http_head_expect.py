"""HEAD and `Expect: 100-continue` over raw sockets against `routequote serve` (issue 38, item 6).

- HEAD answers as GET without a body on every GET route of the app (enumerated from the app itself): the same
  status, no body bytes, and the connection stays usable for the next request.
- /mcp, /mcp/v2 and /v2/mcp answer HEAD as they answer GET, with an allowed Host and with any other.
- A request that no route takes (404, 405) is answered before its body is read: no `100 Continue` invites the body.
  A request a route takes is invited, and served.
"""

from __future__ import annotations

import base64
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


def raw_expect(port: int, head: str, body: bytes, expect: bool = True) -> tuple[bytes, bytes]:
    """`head` (request line and headers, without the blank line) with `Expect: 100-continue`, then wait: the first
    answer, and (when invited) the final answer after `body` is sent. Without `expect`, head and body go at once
    and the answer is the first."""
    with socket.create_connection(("127.0.0.1", port), timeout=BOUND) as sock:
        if not expect:
            with contextlib.suppress(OSError):  # refused from its headers: the server may close on the body
                sock.sendall(f"{head}\r\nConnection: close\r\n\r\n".encode() + body)
        else:
            sock.sendall(f"{head}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n".encode())
        first = b""
        with contextlib.suppress(ConnectionResetError):
            while b"\r\n\r\n" not in first and (chunk := sock.recv(65536)):
                first += chunk
        if not first.startswith(b"HTTP/1.1 100 "):
            with contextlib.suppress(ConnectionResetError):
                while chunk := sock.recv(65536):
                    first += chunk
            return first, b""
        rest = first.partition(b"\r\n\r\n")[2]
        with contextlib.suppress(OSError):  # a server that refuses a body may reset
            sock.sendall(body)
            while chunk := sock.recv(65536):
                rest += chunk
        return first, rest


# a well-formed session token (32 bytes, base64url: 43 characters); it opens no session here
TOKEN = base64.urlsafe_b64encode(bytes(range(7, 39))).rstrip(b"=").decode()
ACCESS = "Authorization: Bearer rq_at_" + "0" * 43  # an access token no login issued (or of no valid shape)


def header_refusals(port: int) -> list[tuple[str, str, int, str]]:
    """(name, request head, status, reason_class) of requests a route takes but refuses from their headers (the
    store too, for a token): none needs the body, so none may be invited to send it."""
    host = f"Host: 127.0.0.1:{port}"
    json = "Content-Type: application/json\r\nContent-Length: 19"
    session = f"/v2/session/{SESSION_ID}"
    many = "".join(f"\r\nX-H{i}: 1" for i in range(120))
    return [
        ("jsonrpc content type", f"POST /mcp HTTP/1.1\r\n{host}\r\n{MCP_ACCEPT}Content-Length: 19", 415, ""),
        ("a2a content type", f"POST /a2a HTTP/1.1\r\n{host}\r\nContent-Type: text/plain\r\nContent-Length: 19", 415, ""),
        ("mcp accept", f"POST /mcp HTTP/1.1\r\n{host}\r\n{json}", 406, ""),
        ("mcp/v2 accept", f"POST /mcp/v2 HTTP/1.1\r\n{host}\r\nAccept: text/html\r\n{json}", 406, ""),
        ("mcp declared length", f"POST /mcp/v2 HTTP/1.1\r\n{host}\r\n{MCP_ACCEPT}{json}00000", 413, ""),
        ("rest content type", f"POST /v2/quote HTTP/1.1\r\n{host}\r\nContent-Type: text/plain\r\nContent-Length: 19", 400, "unsupported_content_type"),
        ("rest declared length", f"POST /v2/prepare HTTP/1.1\r\n{host}\r\n{json}00000", 400, "body_too_large"),
        ("header count", f"POST /v2/quote HTTP/1.1\r\n{host}\r\n{json}{many}", 431, ""),
        ("create without token", f"POST /v2/session HTTP/1.1\r\n{host}\r\n{json}", 400, "session_token_required"),
        ("create with a malformed token", f"POST /v2/session HTTP/1.1\r\n{host}\r\n{json}\r\nX-RouteQuote-Session-Token: short", 400, "session_token_invalid"),
        ("session op without token", f"POST {session}/observe HTTP/1.1\r\n{host}\r\n{json}", 404, "session_not_found"),
        ("session op, token of no session", f"POST {session}/cancel HTTP/1.1\r\n{host}\r\n{json}\r\nX-RouteQuote-Session-Token: {TOKEN}", 404, "session_not_found"),
        ("session op, content type first", f"POST {session}/refresh HTTP/1.1\r\n{host}\r\nContent-Type: text/plain\r\nContent-Length: 19", 400, "unsupported_content_type"),
        ("v1 without access token", f"POST /v1/session/{SESSION_ID}/verify-source HTTP/1.1\r\n{host}\r\n{json}", 401, "access_token_invalid"),
        ("v1 unknown access token", f"POST /v1/session HTTP/1.1\r\n{host}\r\n{json}\r\n{ACCESS}", 401, "access_token_invalid"),
    ]  # fmt: skip


def reason_of(answer: bytes) -> str:
    body = orjson.loads(answer.partition(b"\r\n\r\n")[2] or b"{}")
    reason = body.get("reason_class") or (body.get("error") or {}).get("data", {}).get("reason_class", "")
    return str(reason)


def test_a_request_a_route_refuses_from_its_headers_is_never_invited_to_send_its_body(
    server: ServerProcess,
) -> None:
    """Each refusal that needs no body comes first, without `100 Continue`, closing the connection, and it is the
    answer the same request gets without `Expect` (body sent at once)."""
    port = port_of(server)
    body = b'{"amount_usd": 100}'
    wrong = []
    for name, head, status, reason in header_refusals(port):
        first, rest = raw_expect(port, head, body)
        plain, _ = raw_expect(port, head, body, expect=False)
        line = first.split(b"\r\n", 1)[0]
        if (
            not first.startswith(b"HTTP/1.1 %d " % status)
            or b"\r\nconnection: close\r\n" not in first.lower()
            or (reason and reason_of(first) != reason)
            or plain.split(b"\r\n", 1)[0] != line
            or first.partition(b"\r\n\r\n")[2] != plain.partition(b"\r\n\r\n")[2]
        ):
            wrong.append((name, line, rest.split(b"\r\n", 1)[0], plain.split(b"\r\n", 1)[0]))
    assert wrong == []


def test_a_request_whose_headers_pass_is_still_invited_and_answered(server: ServerProcess) -> None:
    """The checks above refuse only what they must: the login operations take no access token, a create with a
    well-formed token is invited (its body decides), and so is an A2A request."""
    port = port_of(server)
    host = f"Host: 127.0.0.1:{port}"
    a2a = b'{"jsonrpc":"2.0","id":3,"method":"GetTask","params":{"id":"nope"}}'
    for head, body in (
        (f"POST /v1/auth/challenge HTTP/1.1\r\n{host}\r\nContent-Type: application/json\r\nContent-Length: 2", b"{}"),
        (f"POST /v2/session HTTP/1.1\r\n{host}\r\nContent-Type: application/json\r\nContent-Length: 2\r\nX-RouteQuote-Session-Token: {TOKEN}", b"{}"),
        (f"POST /a2a HTTP/1.1\r\n{host}\r\nContent-Type: application/json\r\nA2A-Version: 1.0\r\nContent-Length: {len(a2a)}", a2a),
    ):  # fmt: skip
        first, rest = raw_expect(port, head, body)
        assert first.startswith(b"HTTP/1.1 100 Continue\r\n"), (head, first[:200])
        plain, _ = raw_expect(port, head, body, expect=False)
        assert rest.split(b"\r\n", 1)[0] == plain.split(b"\r\n", 1)[0], (head, rest[:300], plain[:300])
        assert rest.partition(b"\r\n\r\n")[2] == plain.partition(b"\r\n\r\n")[2], head


@pytest.fixture(scope="module")
def budget(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A server whose per-client budget the test reads back (per hour: nothing frees while it runs)."""
    started = start_server(tmp_path_factory.mktemp("budget"), "budget", {"rate_limit": "500/hour"})
    try:
        yield started
    finally:
        started.stop()


def send_raw(port: int, head: bytes, body: bytes, expect: bool, chunks: int = 0) -> bytes:
    """One request: with `expect`, the headers first and the body (or `chunks` chunks of 600 KB, more than the
    limit) only once invited; without, all at once. Everything the server answered."""
    part = b"%x\r\n" % 600_000 + b"x" * 600_000 + b"\r\n"
    payload = part * chunks if chunks else body
    end = b"Connection: close\r\n\r\n"
    answer = b""
    with (
        socket.create_connection(("127.0.0.1", port), timeout=BOUND) as sock,
        contextlib.suppress(OSError),  # a server that refused the body may reset: its answer came first
    ):
        sock.sendall(head + (b"Expect: 100-continue\r\n" + end if expect else end + payload))
        while b"\r\n\r\n" not in answer and (chunk := sock.recv(65536)):
            answer += chunk
        if expect and answer.startswith(b"HTTP/1.1 100 "):
            sock.sendall(payload)
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


def remaining(port: int, path: str) -> int:
    _, headers, _ = ask(port, "GET", path)
    return int(headers[b"ratelimit-remaining"])


def test_expect_changes_nothing_the_rate_limiter_counts(budget: ServerProcess) -> None:
    """The same requests spend the same budget with `Expect: 100-continue` as without (the body sent at once):
    the limiter counts what reaches the app, whether it is refused from its headers or after its body, and
    not a body the transport guard refuses (too large, read after the invitation or at once) or a path no
    route takes. Read back from RateLimit-Remaining, per operation group."""
    port = port_of(budget)
    quote = orjson.dumps(intent_for("base:USDC->base:ETH", 100))

    def post(path: str, length: int, extra: str = "", ctype: str = "application/json") -> bytes:
        return (
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {ctype}\r\n{extra}"
            f"Content-Length: {length}\r\n"
        ).encode()

    chunked = b"POST /v2/quote HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    chunked += b"Transfer-Encoding: chunked\r\n"
    duplicate = b'{"a":1,"a":2}'
    session = f"/v2/session/{SESSION_ID}"
    sequence = [  # (request head, body, chunks, first status line)
        (post("/v2/quote", len(quote)), quote, 0, 200),
        (post("/v2/quote", len(quote), ctype="text/plain"), quote, 0, 400),
        (post("/v2/prepare", 5_000_000), quote, 0, 400),
        (post("/v2/quote", len(duplicate)), duplicate, 0, 400),
        (chunked, b"", 2, 400),
        (post("/no/such/path", len(quote)), quote, 0, 404),
        (post("/v2/session", 2), b"{}", 0, 400),
        (post(f"{session}/observe", 2), b"{}", 0, 404),
        (post(f"{session}/cancel", 2, f"X-RouteQuote-Session-Token: {TOKEN}\r\n"), b"{}", 0, 404),
    ]
    groups = {"quote_api": "/v2/status", "session_api": session}
    spent: dict[bool, dict[str, int]] = {}
    for expect in (True, False):
        before = {group: remaining(port, path) for group, path in groups.items()}
        for head, body, chunks, status in sequence:
            answer = send_raw(port, head, body, expect, chunks)
            final = answer.partition(b"HTTP/1.1 100 Continue\r\n\r\n")[2] or answer
            assert final.startswith(b"HTTP/1.1 %d " % status), (expect, head, final[:300])
        after = {group: remaining(port, path) for group, path in groups.items()}
        spent[expect] = {group: before[group] - after[group] for group in groups}
    assert spent[True] == spent[False]
    assert spent[False] == {"quote_api": 1 + 3, "session_api": 1 + 3}  # the probe, then what reached the app
