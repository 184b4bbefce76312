"""Recorded wire answers served through httpx.MockTransport to the production observers."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import httpx

RECORDINGS = Path(__file__).resolve().parents[2] / "recordings" / "observe"
T = TypeVar("T")


def load(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((RECORDINGS / f"{name}.json").read_text())
    return doc


def run(make: Callable[[httpx.AsyncClient], Awaitable[T]], transport: httpx.MockTransport) -> T:
    async def go() -> T:
        async with httpx.AsyncClient(transport=transport) as client:
            return await make(client)

    return asyncio.run(go())


class FakeEvmNode:
    """Answers the reader's JSON-RPC calls (single or batched) from one recording; counts HTTP requests."""

    def __init__(
        self, recording: dict[str, Any], *, latest: int | None = None, chain_id: str | None = None
    ) -> None:
        self.rpc = copy.deepcopy(recording["rpc"])
        self.latest = latest
        self.chain_id = chain_id
        self.requests = 0
        self.fail_with: Exception | None = None

    def answer(self, method: str, params: list[Any]) -> Any:
        txs = self.rpc["transactions"]
        if method == "eth_chainId":
            return self.chain_id or self.rpc["eth_chainId"]
        if method == "eth_blockNumber":
            return hex(self.latest) if self.latest is not None else self.rpc["eth_blockNumber"]
        if method in ("eth_getTransactionByHash", "eth_getTransactionReceipt"):
            rec = txs.get(params[0]) or txs.get(params[0].lower())
            return None if rec is None else rec[method]
        if method == "eth_getBlockByNumber":
            return next(
                (
                    r["eth_getBlockByNumber"]
                    for r in txs.values()
                    if r["eth_getBlockByNumber"]["number"] == params[0]
                ),
                None,
            )
        if method == "eth_getLogs":
            flt = params[0]
            out = []
            for r in txs.values():
                for lg in r["eth_getTransactionReceipt"]["logs"]:
                    if lg["address"].lower() != flt["address"].lower():
                        continue
                    if all(
                        t is None or (i < len(lg["topics"]) and lg["topics"][i] == t)
                        for i, t in enumerate(flt["topics"])
                    ):
                        out.append(lg)
            return out
        raise AssertionError(f"unexpected call {method}")

    def handler(self, request: httpx.Request) -> httpx.Response:
        self.requests += 1
        if self.fail_with is not None:
            raise self.fail_with
        body = json.loads(request.content)
        if isinstance(body, list):
            return httpx.Response(
                200,
                json=[
                    {"jsonrpc": "2.0", "id": c["id"], "result": self.answer(c["method"], c["params"])}
                    for c in body
                ],
            )
        return httpx.Response(
            200,
            json={"jsonrpc": "2.0", "id": body["id"], "result": self.answer(body["method"], body["params"])},
        )

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handler)
