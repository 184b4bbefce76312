"""The bounds of the batched reads the watcher makes: a batch whose answer passes the size limit is split until
each answer fits (a single call that does not fit still fails, classified), and a node that refuses batches is
sent the calls one by one with a bounded number in flight."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

from routequote.market.jsonrpc import JsonRpcClient, RpcTooLarge

PAD = "0x" + "ab" * 200  # each answer is a little over 400 bytes


def _answers(body: Any) -> Any:
    def one(call: dict[str, Any]) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": call["id"], "result": [call["params"][0], PAD]}

    return [one(c) for c in body] if isinstance(body, list) else one(body)


def test_a_batch_answered_past_the_size_limit_is_split_until_each_answer_fits() -> None:
    sent: list[tuple[int, bool]] = []  # calls per request, and whether its answer fits in 2,000 bytes

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        answer = json.dumps(_answers(body)).encode()
        sent.append((len(body) if isinstance(body, list) else 1, len(answer) <= 2_000))
        return httpx.Response(200, content=answer, headers={"content-type": "application/json"})

    async def run() -> None:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            rpc = JsonRpcClient("http://node.invalid/", client, max_bytes=2_000)
            calls = [("eth_getTransactionReceipt", [f"0x{i:064x}"]) for i in range(16)]
            got = await rpc.batch_within_limit(calls)
            assert [g[0] for g in got] == [c[1][0] for c in calls]  # every answer, in call order
            assert sent[0] == (16, False)  # the whole batch did not fit: split in halves until each fits
            assert sum(n for n, fits in sent if fits) == 16 and all(n <= 4 for n, fits in sent if fits)
            assert rpc.batching  # a too-large answer is not a refusal of batches
            sent.clear()
            small = JsonRpcClient("http://node.invalid/", client, max_bytes=300)
            with pytest.raises(RpcTooLarge):  # one call whose answer alone passes the limit
                await small.batch_within_limit(calls[:3])

    asyncio.run(run())


def test_a_node_that_refuses_batches_gets_single_calls_a_few_at_a_time() -> None:
    in_flight = peak = 0

    async def handler(request: httpx.Request) -> httpx.Response:
        nonlocal in_flight, peak
        body = json.loads(request.content)
        if isinstance(body, list):
            return httpx.Response(400, json={"error": "batches are not supported"})
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0)
        in_flight -= 1
        return httpx.Response(200, json=_answers(body))

    async def run() -> None:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            rpc = JsonRpcClient("http://node.invalid/", client, max_concurrent_singles=4)
            calls = [("eth_getTransactionReceipt", [f"0x{i:064x}"]) for i in range(50)]
            got = await rpc.batch(calls, return_exceptions=True)
            assert [g[0] for g in got] == [c[1][0] for c in calls]
            assert not rpc.batching and 1 <= peak <= 4

    asyncio.run(run())
