"""Generated hostile JSON-RPC traffic on every JSON-RPC endpoint (/mcp, /mcp/v2, /v2/mcp, /a2a; the one guard in
surfaces/jsonrpc_guard.py) of a real `routequote serve` process, MCP requests also at 2026-07-28: batches, unknown and
hostile methods and ids, hostile params and tool arguments, deep nesting, 1 MB strings, huge numbers,
duplicate keys, lone surrogates, invalid UTF-8 and bodies that are not JSON at all.

Whatever is sent: never a 5xx, never internals in the answer (tests/support/hostile.py LEAK_MARKERS), an
error is a JSON-RPC error object whose id is null or the request's own (at most 128 characters), and the
server's log holds no traceback at the end. The strict-reader
rules per field are tests/integration/test_hostile_*.py; this suite is about the JSON-RPC envelope.
`make fuzz` (RQ_FUZZ_EXAMPLES set) runs five times as many examples."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.support.hostile import JSONRPC_HEADERS, LEAK_MARKERS
from tests.support.server_process import ServerProcess, start_server

SCALE = 5 if os.environ.get("RQ_FUZZ_EXAMPLES") else 1
PATHS = ("/mcp", "/mcp/v2", "/v2/mcp", "/a2a")
MODERN = "2026-07-28"
MCP_METHODS = [
    "initialize",
    "tools/list",
    "tools/call",
    "ping",
    "resources/list",
    "prompts/list",
    "notifications/initialized",
    "completion/complete",
    "logging/setLevel",
]
A2A_METHODS = [
    "SendMessage",
    "SendStreamingMessage",
    "GetTask",
    "CancelTask",
    "ListTasks",
    "GetExtendedAgentCard",
    "message/send",
    "tasks/get",
    "TaskResubscription",
]
TOOLS = [
    "service_status",
    "service_v2_capabilities",
    "service_v2_quote",
    "service_quote",
    "service_manifest",
    "service_create_session",
    "service_read_session",
    "service_prepare_source_action",
    "no_such_tool",
]

surrogate = st.integers(0xD800, 0xDFFF).map(chr)
text = st.one_of(
    st.text(max_size=16), st.lists(st.one_of(surrogate, st.characters()), max_size=6).map("".join)
)
huge_int = st.one_of(
    st.integers(-(10**40), 10**40), st.sampled_from([2**64, -(2**63) - 1, 10**300, -(10**4000)])
)
scalar = st.one_of(text, huge_int, st.floats(allow_nan=True, allow_infinity=True), st.booleans(), st.none())
value = st.recursive(
    scalar, lambda c: st.lists(c, max_size=3) | st.dictionaries(text, c, max_size=3), max_leaves=10
)
ident = st.one_of(
    st.none(), huge_int, text, st.floats(allow_nan=True, allow_infinity=True), st.lists(scalar, max_size=2)
)
method = st.one_of(st.sampled_from(MCP_METHODS + A2A_METHODS), text)
QUOTE_ARGS = {
    "from_chain": "solana",
    "from_token": "SOL",
    "to_chain": "base",
    "to_token": "USDC",
    "amount_usd": 50,
}


@st.composite
def params(draw: st.DrawFn) -> Any:
    kind = draw(st.sampled_from(["any", "tool", "message"]))
    if kind == "tool":
        args = draw(st.one_of(value, st.fixed_dictionaries({}, optional={**{k: value for k in QUOTE_ARGS}})))
        return {"name": draw(st.one_of(st.sampled_from(TOOLS), text)), "arguments": args}
    if kind == "message":
        part = draw(
            st.one_of(st.fixed_dictionaries({"data": value}), st.fixed_dictionaries({"text": text}), value)
        )
        return {
            "message": {
                "role": draw(st.sampled_from(["ROLE_USER", "ROLE_AGENT", "user", ""])),
                "messageId": draw(text),
                "parts": [part],
            }
        }
    return draw(value)


@st.composite
def message(draw: st.DrawFn) -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": draw(st.sampled_from(["2.0", "2.0", "1.0", 2, None]))}
    if draw(st.booleans()):
        msg["id"] = draw(ident)
    msg["method"] = draw(method)
    if draw(st.booleans()):
        msg["params"] = draw(params())
    return msg


def encode(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=True, allow_nan=True).encode()  # lone surrogates travel as \\udXXX


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    tmp = tmp_path_factory.mktemp("jsonrpc")
    s = start_server(tmp, "jsonrpc", {"database_url": f"sqlite+aiosqlite:///{tmp}/s.sqlite3"})
    try:
        yield s
    finally:
        s.stop()
        assert "Traceback" not in Path(s.log).read_text(errors="replace"), s.log_tail(4000)


@pytest.fixture(scope="module")
def http(server: ServerProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=60) as client:
        yield client


def check(r: httpx.Response, sent: Any = None) -> None:
    assert r.status_code < 500, r.text[:500]
    assert len(r.content) < 64 * 1024, len(
        r.content
    )  # bounded, whatever came in (a 500 KB id came back once)
    for marker in LEAK_MARKERS:
        assert marker not in r.text, (marker, r.text[:500])
    if not r.content:
        assert r.status_code in (200, 202, 204), r.status_code  # a notification's empty answer
        return
    assert r.headers["content-type"].startswith(("application/json", "text/event-stream")), r.headers
    if r.headers["content-type"].startswith("text/event-stream"):
        return
    body = r.json()
    for item in body if isinstance(body, list) else [body]:
        assert isinstance(item, dict) and item.get("jsonrpc") == "2.0", body
        if "error" in item:
            assert isinstance(item["error"]["code"], int) and isinstance(item["error"]["message"], str), item
            assert len(item["error"]["message"]) < 200, item
            rid = item.get("id")
            assert rid is None or (isinstance(rid, (str, int, float)) and len(str(rid)) <= 128), item
            if isinstance(sent, dict) and rid is not None:
                # the id as the server reads the JSON text sent: a surrogate pair written as two escapes
                # (a Python string can hold "\ud800\udc00") is one character there, U+10000
                expected = json.loads(encode(sent.get("id")))
                assert rid == expected, (rid, sent.get("id"))
    if r.status_code >= 400:
        assert isinstance(body, dict) and "error" in body, body


def post(
    http: httpx.Client, path: str, content: bytes, extra: dict[str, str] | None = None
) -> httpx.Response:
    return http.post(path, content=content, headers={**JSONRPC_HEADERS, **(extra or {})})


@pytest.mark.parametrize("path", PATHS)
@settings(max_examples=60 * SCALE, deadline=None, suppress_health_check=list(HealthCheck))
@given(msg=message(), modern=st.booleans())
# found by a random run: an id holding a surrogate pair is one character once read (the expected id is too)
@example(msg={"jsonrpc": "2.0", "id": "\ud800\udc00", "method": "initialize"}, modern=False)
def test_single_messages(http: httpx.Client, path: str, msg: dict[str, Any], modern: bool) -> None:
    extra = None
    if modern and path != "/a2a":  # the 2026-07-28 envelope: no initialize, `_meta` and routing headers
        meta = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        params = msg.get("params")
        msg["params"] = {**params, "_meta": meta} if isinstance(params, dict) else {"_meta": meta}
        extra = {"MCP-Protocol-Version": MODERN}
        if isinstance(msg["method"], str) and msg["method"].isascii() and msg["method"].isprintable():
            extra["Mcp-Method"] = msg["method"]
    check(post(http, path, encode(msg), extra), msg)


@pytest.mark.parametrize("path", PATHS)
@settings(max_examples=30 * SCALE, deadline=None, suppress_health_check=list(HealthCheck))
@given(batch=st.lists(st.one_of(message(), value), max_size=6))
def test_batches(http: httpx.Client, path: str, batch: list[Any]) -> None:
    check(post(http, path, encode(batch)))


@pytest.mark.parametrize("path", PATHS)
@settings(max_examples=20 * SCALE, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    depth=st.integers(20, 100_000),
    opener=st.sampled_from(["[", '{"a":']),
    where=st.sampled_from(["params", "id", "top"]),
)
def test_deep_nesting(http: httpx.Client, path: str, depth: int, opener: str, where: str) -> None:
    closer = "]" if opener == "[" else "}"
    nested = opener * depth + "1" + closer * depth
    if where == "top":
        raw = nested
    else:
        raw = '{"jsonrpc":"2.0","method":"tools/call","id":' + ("1" if where == "params" else nested)
        raw += ',"params":' + (nested if where == "params" else "{}") + "}"
    r = post(http, path, raw.encode())
    check(r)
    if depth > 40:
        assert r.status_code in (400, 413), (
            r.status_code
        )  # the strict reader's depth limit, or the body limit


@pytest.mark.parametrize("path", PATHS)
@settings(max_examples=6 * SCALE, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    size=st.sampled_from([1_000_000, 1_048_000, 1_048_576, 1_100_000]),
    where=st.sampled_from(["method", "id", "arg"]),
    char=st.sampled_from(["a", "\u00e9", "\\u0000", "\\ud800"]),
)
def test_megabyte_strings(http: httpx.Client, path: str, size: int, where: str, char: str) -> None:
    big = char * (size // len(char.encode()))
    fields = {"method": json.dumps("tools/call"), "id": "1", "arg": '"x"'}
    fields[where] = '"' + big + '"'
    raw = (
        '{"jsonrpc":"2.0","id":'
        + fields["id"]
        + ',"method":'
        + fields["method"]
        + ',"params":{"name":"service_v2_quote","arguments":{"from_chain":'
        + fields["arg"]
        + "}}}"
    ).encode()
    r = post(http, path, raw)
    check(r)
    assert r.status_code != 200 or "error" in r.text, r.text[:300]
    if len(raw) > 1_048_576:
        assert r.status_code == 413, r.status_code


@pytest.mark.parametrize("path", PATHS)
@settings(max_examples=25 * SCALE, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    literal=st.one_of(
        st.integers(1, 50_000).map(lambda n: "9" * n),
        st.integers(-400_000, 400_000).map(lambda e: f"1e{e}"),
        st.sampled_from(
            [
                "-0",
                "0.99999999999999999999",
                "1000.0000000000000000001",
                "1E400",
                "-1e-400",
                "NaN",
                "Infinity",
                "-Infinity",
                "0x10",
                "01",
                "1.",
                ".5",
                "+1",
            ]
        ),
    ),
    where=st.sampled_from(["id", "amount"]),
)
def test_huge_and_odd_numbers(http: httpx.Client, path: str, literal: str, where: str) -> None:
    if path != "/a2a":
        args = (
            '{"from_chain":"solana","from_token":"SOL","to_chain":"base","to_token":"USDC","amount_usd":'
            + (literal if where == "amount" else "50")
            + "}"
        )
        raw = (
            '{"jsonrpc":"2.0","id":'
            + (literal if where == "id" else "1")
            + ',"method":"tools/call","params":{"name":"service_v2_quote","arguments":'
            + args
            + "}}"
        )
    else:
        data = (
            '{"fromChain":"solana","fromToken":"SOL","toChain":"base","toToken":"USDC","amountUsd":'
            + (literal if where == "amount" else "50")
            + "}"
        )
        raw = (
            '{"jsonrpc":"2.0","id":'
            + (literal if where == "id" else "1")
            + ',"method":"SendMessage","params":'
            '{"message":{"role":"ROLE_USER","messageId":"m1","parts":[{"data":' + data + "}]}}}"
        )
    check(post(http, path, raw.encode()))


INVALID_UTF8 = [
    b"\xff",
    b"\xfe\xff",
    b"\xc3\x28",
    b"\xa0\xa1",
    b"\xe2\x28\xa1",
    b"\xf0\x28\x8c\x28",
    b"\xc0\xaf",
    b"\xed\xa0\x80",
    b"\xf4\x90\x80\x80",
    b"\xf8\x88\x80\x80\x80",
    b"\x00",
    b"\xef\xbb\xbf",
]


@pytest.mark.parametrize("path", PATHS)
@settings(max_examples=30 * SCALE, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    bad=st.sampled_from(INVALID_UTF8),
    where=st.sampled_from(["method", "key", "arg", "outside", "prefix"]),
    tail=st.binary(max_size=8),
)
def test_invalid_utf8(http: httpx.Client, path: str, bad: bytes, where: str, tail: bytes) -> None:
    method_ = b"tools/call" + (bad if where == "method" else b"")
    key = b"name" + (bad if where == "key" else b"")
    arg = b"SOL" + (bad if where == "arg" else b"")
    raw = (
        b'{"jsonrpc":"2.0","id":1,"method":"' + method_ + b'","params":{"' + key + b'":"service_v2_quote",'
        b'"arguments":{"from_chain":"solana","from_token":"' + arg + b'"}}}'
    )
    if where == "outside":
        raw += bad + tail
    elif where == "prefix":
        raw = bad + raw
    check(post(http, path, raw))


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(
    "raw",
    [
        b'{"jsonrpc":"2.0","jsonrpc":"2.0","id":1,"method":"tools/list"}',
        b'{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/list"}',
        b'[{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"ping"}]',
        b'{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"role":"ROLE_USER","role":"ROLE_AGENT"}}}',
        b'{"jsonrpc":"2.0","id":"\\ud800","method":"tools/list"}',
        b'{"jsonrpc":"2.0","id":1,"method":"\\udfff"}',
        b"",
        b" ",
        b"null",
        b"true",
        b"1",
        b'"x"',
        b"[]",
        b"[[]]",
        b"{}",
        b"[{}]",
        b"[1,2,3]",
        b'{"jsonrpc":"2.0","id":1,"method":"tools/list"} {"x":1}',
        b'{"jsonrpc":"2.0","id":1,"method":"tools/list"',
        b"[" + b'{"jsonrpc":"2.0","id":1,"method":"tools/list"},' * 2000 + b"{}]",
    ],
)
def test_fixed_envelopes(http: httpx.Client, path: str, raw: bytes) -> None:
    r = post(http, path, raw)
    check(r)
    if b'"id":1,"id"' in raw or b'"jsonrpc":"2.0","jsonrpc"' in raw or b"\\ud800" in raw or b"\\udfff" in raw:
        assert r.status_code == 400, r.text  # duplicate keys and lone surrogates never reach the SDKs
