"""The JSON-RPC client: batching, id matching, refusal fallback and typed failures (httpx MockTransport)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from routequote.market.jsonrpc import (
    JsonRpcClient,
    RpcCallError,
    RpcProtocolError,
    RpcRateLimited,
    RpcTimeout,
    RpcTransportError,
)


def client(handler: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.MockTransport(handler))


def echo(req: dict[str, Any]) -> dict[str, Any]:
    if req["method"] == "fail":
        return {"jsonrpc": "2.0", "id": req["id"], "error": {"code": 3, "message": "execution reverted"}}
    return {"jsonrpc": "2.0", "id": req["id"], "result": [req["method"], req["params"]]}


async def test_batch_is_one_post_and_results_follow_call_order_whatever_the_response_order() -> None:
    posts: list[Any] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        posts.append(body)
        return httpx.Response(200, json=[echo(r) for r in reversed(body)])

    async with client(handler) as http:
        rpc = JsonRpcClient("http://node.test", http)
        out = await rpc.batch([("a", [1]), ("b", [2]), ("c", [3])])
    assert out == [["a", [1]], ["b", [2]], ["c", [3]]]
    assert len(posts) == 1 and rpc.round_trips == 1 and len(posts[0]) == 3


async def test_per_call_error_returned_in_place_or_raised() -> None:
    async with client(lambda r: httpx.Response(200, json=[echo(x) for x in json.loads(r.content)])) as http:
        rpc = JsonRpcClient("http://node.test", http)
        out = await rpc.batch([("ok", []), ("fail", [])], return_exceptions=True)
        assert out[0] == ["ok", []] and isinstance(out[1], RpcCallError) and out[1].code == 3
        with pytest.raises(RpcCallError, match="JSON-RPC error 3") as raised:
            await rpc.batch([("ok", []), ("fail", [])])
        # the node's words are kept apart (for the log), never in the error's own text
        assert raised.value.upstream == "execution reverted" and "reverted" not in str(raised.value)


async def test_node_refusing_batches_is_served_by_single_calls() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        if isinstance(body, list):
            return httpx.Response(
                200,
                json={
                    "jsonrpc": "2.0",
                    "id": None,
                    "error": {"code": -32600, "message": "batch requests are not supported"},
                },
            )
        return httpx.Response(200, json=echo(body))

    async with client(handler) as http:
        rpc = JsonRpcClient("http://node.test", http)
        assert await rpc.batch([("a", []), ("b", [])]) == [["a", []], ["b", []]]
        assert rpc.batching is False
        before = rpc.round_trips
        await rpc.batch([("c", []), ("d", [])])
        assert rpc.round_trips - before == 2  # no second batch attempt


@pytest.mark.parametrize(
    ("response", "error"),
    [
        (httpx.Response(200, content=b"<html>bad gateway</html>"), RpcProtocolError),
        (httpx.Response(200, json={"jsonrpc": "2.0", "id": 99, "result": 1}), RpcProtocolError),  # wrong id
        (httpx.Response(200, json=[{"jsonrpc": "2.0", "id": 12345, "result": 1}]), RpcProtocolError),
        (httpx.Response(200, json=[{"id": 1, "result": 1}]), RpcProtocolError),
        (httpx.Response(429, json={"message": "slow down"}), RpcRateLimited),
        (
            httpx.Response(
                200, json={"jsonrpc": "2.0", "id": 1, "error": {"code": -32005, "message": "limit exceeded"}}
            ),
            RpcRateLimited,
        ),
        (httpx.Response(503), RpcTransportError),
    ],
)
async def test_typed_failures(response: httpx.Response, error: type[Exception]) -> None:
    async with client(lambda r: response) as http:
        rpc = JsonRpcClient("http://node.test", http)
        with pytest.raises(error):
            await rpc.call("eth_blockNumber")
        if error is not RpcTransportError:
            with pytest.raises(error):
                await rpc.batch([("eth_blockNumber", [])])


async def test_timeout_and_connection_errors() -> None:
    def timeout(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("slow", request=request)

    def refused(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    async with client(timeout) as http:
        with pytest.raises(RpcTimeout):
            await JsonRpcClient("http://node.test", http, timeout=0.2).call("eth_chainId")
    async with client(refused) as http:
        with pytest.raises(RpcTransportError):
            await JsonRpcClient("http://node.test", http).call("eth_chainId")
