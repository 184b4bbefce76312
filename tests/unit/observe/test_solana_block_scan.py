"""JsonRpcSolanaReader as a ports.SolanaBlockScanner: the wire it sends (`getSlot`, `getBlocks`, `getBlock` with
signatures only, all at finalized), what it accepts back, and a block past the size limit (SolanaScanTooLarge,
not a breaker failure)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from solders.signature import Signature

from routequote.observe.solana import JsonRpcSolanaReader
from routequote.ports import ObservationUnavailable, SolanaBlockScanner, SolanaScanTooLarge

from .support import run

SIGS = [str(Signature.from_bytes(bytes([i]) * 64)) for i in range(1, 4)]


def node(answers: dict[str, Any], seen: list[Any]) -> Callable[[httpx.Request], httpx.Response]:
    def one(call: dict[str, Any]) -> dict[str, Any]:
        seen.append((call["method"], call["params"]))
        got = answers[call["method"]]
        got = got(call["params"]) if callable(got) else got
        if isinstance(got, dict) and "__error__" in got:
            return {"jsonrpc": "2.0", "id": call["id"], "error": {"code": -32009, "message": "skipped"}}
        return {"jsonrpc": "2.0", "id": call["id"], "result": got}

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        return httpx.Response(200, json=[one(c) for c in body] if isinstance(body, list) else one(body))

    return handler


def scan(
    answers: dict[str, Any], work: Callable[[JsonRpcSolanaReader], Any], max_bytes: int = 1 << 20
) -> Any:
    seen: list[Any] = []

    async def go(client: httpx.AsyncClient) -> Any:
        reader = JsonRpcSolanaReader("http://sol.invalid", client, max_bytes=max_bytes)
        assert isinstance(reader, SolanaBlockScanner)
        return await work(reader), reader.breaker.failures, seen

    return run(go, httpx.MockTransport(node(answers, seen)))


def test_the_wire_of_a_block_scan() -> None:
    slot, fails, seen = scan({"getSlot": 400}, lambda r: r.finalized_slot())
    assert (slot, fails, seen) == (400, 0, [("getSlot", [{"commitment": "finalized"}])])
    slots, _, seen = scan({"getBlocks": [401, 402, 405]}, lambda r: r.finalized_blocks(401))
    assert slots == [401, 402, 405]
    assert seen == [("getBlocks", [401, 500_401, {"commitment": "finalized"}])]  # getBlocks' 500,000 range
    blocks = {401: SIGS[:2], 402: [], 405: SIGS[2:]}
    got, _, seen = scan(
        {"getBlock": lambda p: {"blockhash": "x", "parentSlot": p[0] - 1, "signatures": blocks[p[0]]}},
        lambda r: r.block_signatures([401, 402, 405]),
    )
    assert got == {401: frozenset(SIGS[:2]), 402: frozenset(), 405: frozenset(SIGS[2:])}
    config = {
        "commitment": "finalized",
        "transactionDetails": "signatures",
        "rewards": False,
        "maxSupportedTransactionVersion": 0,
    }
    assert seen == [("getBlock", [s, config]) for s in (401, 402, 405)]


@pytest.mark.parametrize(
    ("answers", "work"),
    [
        ({"getSlot": "400"}, lambda r: r.finalized_slot()),
        ({"getBlocks": {"slots": [401]}}, lambda r: r.finalized_blocks(401)),
        ({"getBlocks": [402, 401]}, lambda r: r.finalized_blocks(401)),  # not ascending
        ({"getBlocks": [400, 401]}, lambda r: r.finalized_blocks(401)),  # before the start asked
        ({"getBlocks": [401, 401]}, lambda r: r.finalized_blocks(401)),
        ({"getBlock": {"blockhash": "x", "transactions": []}}, lambda r: r.block_signatures([401])),
        ({"getBlock": {"signatures": [1, 2]}}, lambda r: r.block_signatures([401])),
        ({"getBlock": {"__error__": 1}}, lambda r: r.block_signatures([401])),  # skipped or missing
    ],
)
def test_garbage_or_an_error_is_unavailable_and_counts_against_the_breaker(answers: Any, work: Any) -> None:
    def go(r: JsonRpcSolanaReader) -> Any:
        async def inner() -> Any:
            try:
                await work(r)
            except ObservationUnavailable as exc:
                return exc
            return None

        return inner()

    exc, fails, _ = scan(answers, go)
    assert isinstance(exc, ObservationUnavailable) and not isinstance(exc, SolanaScanTooLarge)
    assert fails == 1


def test_a_block_past_the_size_limit_is_too_large_not_a_failure() -> None:
    big = {
        "blockhash": "x",
        "signatures": [str(Signature.from_bytes(i.to_bytes(2, "big") * 32)) for i in range(1500)],
    }

    def go(r: JsonRpcSolanaReader) -> Any:
        async def inner() -> Any:
            try:
                await r.block_signatures([401, 402])
            except SolanaScanTooLarge as exc:
                return exc
            return None

        return inner()

    exc, fails, seen = scan({"getBlock": big}, go, max_bytes=100_000)  # ~135 KB a block
    assert isinstance(exc, SolanaScanTooLarge) and exc.reason == "rpc_too_large:solana"
    assert fails == 0
    assert [m for m, _ in seen] == ["getBlock", "getBlock", "getBlock"]  # the batch, then split to one
    got, _, _ = scan({"getBlock": big}, lambda r: r.block_signatures([401]), max_bytes=1 << 20)
    assert len(got[401]) == 1500
