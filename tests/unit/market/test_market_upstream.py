"""market.upstream: bounded reads, classified answers, the log's redacted and bounded account (issue 22 items 4, 9)."""

from __future__ import annotations

import httpx
import pytest

from routequote.market.jsonrpc import JsonRpcClient, RpcCallError, RpcTooLarge
from routequote.market.upstream import (
    LOG_DETAIL_CHARS,
    ResponseTooLarge,
    failure_kind,
    fetch_bounded,
    log_detail,
    public_reason,
)

KEY = "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"


def test_public_reason_names_dependency_method_and_class_only() -> None:
    assert public_reason("base RPC", "eth_call", "call_error") == "base RPC: eth_call: answered with an error"
    # a "method" that is not one of our own names (spaces, a URL, secrets) is left out, never repeated
    assert (
        public_reason("base RPC", f"https://x.invalid/{KEY} seed words", "timeout")
        == "base RPC: no answer in time"
    )
    assert public_reason("x", None, "no_such_kind") == "x: could not be read"


def test_log_detail_cuts_urls_redacts_and_bounds() -> None:
    text = f"node https://user:pw@rpc.example.invalid/v2/{KEY}?apikey=abc said key={KEY} " * 200
    out = log_detail(text)
    assert KEY not in out and "pw@" not in out and "apikey" not in out
    assert "https://rpc.example.invalid/<redacted>" in out
    assert len(out) <= LOG_DETAIL_CHARS + len("...<cut>")


def test_failure_kind() -> None:
    assert failure_kind(RpcCallError("eth_call", 3, "reverted")) == "call_error"
    assert failure_kind(KeyError("x")) == "invalid_data"
    assert failure_kind(RuntimeError("x")) == "source_error"


async def test_a_body_past_the_limit_is_not_read_on() -> None:
    sent = 0

    async def body() -> object:
        nonlocal sent
        for _ in range(1000):
            sent += 65536
            yield b"x" * 65536

    transport = httpx.MockTransport(lambda r: httpx.Response(200, content=body()))
    async with httpx.AsyncClient(transport=transport) as http:
        with pytest.raises(ResponseTooLarge):
            await fetch_bounded(http, "GET", "http://up.test/", max_bytes=1_000_000)
        assert sent <= 1_000_000 + 65536  # reading stopped at the limit
        with pytest.raises(RpcTooLarge):
            await JsonRpcClient("http://up.test/", http, max_bytes=1_000_000).call("eth_blockNumber")
