"""The batched gatherer (sessions/batch_gather.py) decides exactly what the per-session gatherer decides.

Two identical worlds (the session corpus's fakes: fixed clock, sequential ids, in-memory store) carry the same
sessions to the same point: swaps on base named while one block deep and then made final, left shallow, or
reverted; a two-step route whose final swap re-quotes its next step; sessions on arbitrum, robinhood and solana
whose named transactions are never mined. One world's sessions are gathered by `PerSessionGatherer`, the
other's by `BatchedGatherer`, chain by chain as the watcher groups them, and the outcomes are compared: the
same decisions (event, document, next action), the same refusals. Then the same over the production JSON-RPC
readers against a fake node that serves those receipts as wire JSON and counts HTTP requests: the same outcomes,
with the batched gatherer's requests per chain bounded (two batches) while the per-session ones grow."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from dataclasses import replace
from typing import Any

import httpx
from solders.signature import Signature
from tests.unit.actions.support import START
from tests.unit.sessions.corpus import TOKEN, FakeEvm, Recorder, swap_receipts

from routequote.core.assets import CHAINS, Chain
from routequote.core.sessions.document import SessionDocument
from routequote.core.sessions.entries import StepStatus, parse_bridge
from routequote.core.sessions.reads import LatestBlock, TxByHash
from routequote.core.sessions.state import Decision
from routequote.observe.evm import JsonRpcEvmReader
from routequote.observe.solana import JsonRpcSolanaReader
from routequote.ports import ObservationUnavailable, SessionRecord
from routequote.sessions.batch_gather import BatchedGatherer
from routequote.sessions.watch import (
    Gatherer,
    PerSessionGatherer,
    WatchConfig,
    Watcher,
    Watching,
    waiting_chain,
)
from routequote.storage.watch_store import watch_store

# (route, confirmations once named, reverted): named while one block deep, then moved to this
SWAPS = [
    ("base:ETH->base:USDC", 1, False),  # still not final: pending
    ("base:ETH->base:USDC", 64, False),  # final: complete
    ("base:ETH->base:USDC", 64, True),  # reverted: refused (that session only)
    ("base:ETH->arbitrum:USDC", 64, False),  # final: the CCTP burn step re-quoted from the verified output
    ("base:ETH->base:USDC", 64, False),
]
NEVER_MINED = ["arbitrum:ETH->arbitrum:USDC", "robinhood:ETH->robinhood:USDG", "solana:SOL->solana:USDC"]


def _name(route: str, n: int) -> str:
    if route.startswith("solana:"):
        return str(Signature.from_bytes(bytes([n]) * 64))
    return f"0x{n:064x}"


async def _world() -> tuple[Recorder, list[SessionRecord]]:
    r = Recorder()
    sids: list[str] = []
    for n, (route, confirmations, reverted) in enumerate(SWAPS):
        created = await r.sessions.create(await r.create_body(route), TOKEN)
        sid = created.body["session_id"]
        action = created.body["current_action"]["unsigned_action"]
        hashes = swap_receipts(r.evm, action, int(action["expectedOutput"]), seed=100 + n, confirmations=1)
        named = await r.observe(sid, hashes)
        assert named.body["status"] == "awaiting_source_receipt"
        swap_receipts(r.evm, action, int(action["expectedOutput"]), seed=100 + n, confirmations=confirmations)
        if reverted:
            for h in hashes:
                r.evm.txs[h] = replace(r.evm.txs[h], status=0)
        sids.append(sid)
    for n, route in enumerate(NEVER_MINED, start=200):
        created = await r.sessions.create(await r.create_body(route), TOKEN)
        sid = created.body["session_id"]
        named = await r.observe(sid, [_name(route, n)])
        assert named.body["status"] == "awaiting_source_receipt", named.body
        sids.append(sid)
    records = [await r.sessions.store.get(sid) for sid in sids]
    return r, [rec for rec in records if rec is not None]


def _by_chain(records: list[SessionRecord]) -> dict[Chain, list[SessionRecord]]:
    groups: dict[Chain, list[SessionRecord]] = {}
    for record in records:
        s = record.state
        chain = waiting_chain(record.route, int(s["current_step"]), str(s["phase"]))
        assert chain is not None
        groups.setdefault(chain, []).append(record)
    return groups


def norm(outcome: Decision | BaseException | None) -> Any:
    if outcome is None:
        return None
    if isinstance(outcome, Decision):
        return (
            "decision",
            outcome.event.value,
            json.dumps(outcome.state.to_json(), sort_keys=True, default=str),
            outcome.note,
            None if outcome.error is None else outcome.error.body(),
            repr(outcome.next_action),
            outcome.receive_action,
        )
    if isinstance(outcome, ObservationUnavailable):
        return ("unavailable", outcome.reason)
    return (type(outcome).__name__, getattr(outcome, "code", None), str(outcome))


async def _outcomes(gatherer: Gatherer, records: list[SessionRecord]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for chain, group in _by_chain(records).items():
        for record, outcome in zip(group, await gatherer.outcomes(chain, group), strict=True):
            out[record.session_id] = norm(outcome)
    return out


def test_the_batched_gatherer_decides_what_the_per_session_gatherer_decides() -> None:
    async def run() -> None:
        one, records_one = await _world()
        two, records_two = await _world()
        assert [r.session_id for r in records_one] == [r.session_id for r in records_two]
        per_session = await _outcomes(PerSessionGatherer(one.sessions), records_one)
        batched = await _outcomes(BatchedGatherer(two.sessions), records_two)
        assert batched == per_session
        # the comparison covers every kind of outcome: pending, complete, a re-quoted next step, a refusal
        kinds = Counter(o[1] if o[0] == "decision" else o[0] for o in per_session.values())
        assert kinds == {
            "submitted_pending": 4,  # shallow, and never mined on arbitrum, robinhood, solana
            "step_verified_final": 2,
            "step_verified_next_ready": 1,  # the next step's action re-quoted from the verified output
            "ObservationRejected": 1,  # reverted
        }, kinds
        # and the watcher runs the batched gatherer by default
        watcher = Watcher(two.sessions, watch_store(two.sessions.store), Watching(WatchConfig(), None))
        assert isinstance(watcher.gatherer, BatchedGatherer)

    asyncio.run(run())


class WireNode:
    """A JSON-RPC node per chain (host = chain name) serving a FakeEvm's transactions as wire JSON at a height
    that gives each its confirmations; Solana answers every `getTransaction` with null. Counts HTTP requests
    and JSON-RPC calls per chain; `garbage` receipts are answered with a string."""

    LATEST = 50_000

    def __init__(self, fake: FakeEvm) -> None:
        self.fake = fake
        self.requests: Counter[str] = Counter()
        self.calls: Counter[str] = Counter()
        self.garbage: set[str] = set()

    def _block_of(self, tx_hash: str) -> int:
        return self.LATEST - self.fake.txs[tx_hash].confirmations + 1

    def _result(self, chain: str, method: str, params: list[Any]) -> Any:
        if method == "eth_chainId":
            return hex(CHAINS[Chain(chain)].chain_id or 0)
        if method == "eth_blockNumber":
            return hex(self.LATEST)
        if method == "eth_getBlockByNumber":
            n = self.LATEST if params[0] == "latest" else int(params[0], 16)
            return {
                "hash": f"0x{n:064x}",
                "parentHash": f"0x{n - 1:064x}",
                "timestamp": hex(int(START.timestamp())),
                "number": hex(n),
            }
        if method == "eth_getBlockReceipts":
            n = int(params[0], 16)
            return [
                self._result(chain, "eth_getTransactionReceipt", [h])
                for h in self.fake.txs
                if self._block_of(h) == n
            ]
        if method == "getSignatureStatuses":
            return {"context": {"slot": 1}, "value": [None] * len(params[0])}
        h = str(params[0]).lower() if params else ""
        tx = self.fake.txs.get(h)
        if method == "eth_getTransactionReceipt":
            if h in self.garbage:
                return "not a receipt"
            if tx is None:
                return None
            n = self._block_of(h)
            logs = [
                {
                    "address": lg.address,
                    "topics": list(lg.topics),
                    "data": "0x" + lg.data.hex(),
                    "logIndex": hex(lg.log_index),
                    "transactionHash": h,
                    "blockNumber": hex(n),
                }
                for lg in tx.logs
            ]
            return {
                "transactionHash": h,
                "blockNumber": hex(n),
                "blockHash": f"0x{n:064x}",
                "status": hex(tx.status),
                "gasUsed": hex(tx.gas_used),
                "effectiveGasPrice": hex(tx.effective_gas_price),
                "to": tx.to,
                "logs": logs,
            }
        if method == "eth_getTransactionByHash":
            if tx is None:
                return None
            return {
                "hash": h,
                "from": tx.sender,
                "to": tx.to,
                "value": hex(tx.value),
                "input": "0x" + tx.input.hex(),
            }
        return None  # eth_getLogs would be [], getTransaction: never finalized

    def handler(self, request: httpx.Request) -> httpx.Response:
        chain = request.url.host.split(".")[0]
        self.requests[chain] += 1
        body = json.loads(request.content)

        def one(call: dict[str, Any]) -> dict[str, Any]:
            self.calls[chain] += 1
            result = self._result(chain, call["method"], call.get("params") or [])
            if call["method"] == "eth_getLogs":
                result = []
            return {"jsonrpc": "2.0", "id": call["id"], "result": result}

        return httpx.Response(200, json=[one(c) for c in body] if isinstance(body, list) else one(body))


async def _wired(garbage: bool = False) -> tuple[Recorder, list[SessionRecord], WireNode, httpx.AsyncClient]:
    r, records = await _world()
    node = WireNode(r.evm)
    if garbage:  # the fourth base session's receipt is garbage: that session fails, the chain stops there
        node.garbage.add(f"0x{103:032x}{0:032x}")
    client = httpx.AsyncClient(transport=httpx.MockTransport(node.handler))
    hosts = {c: f"http://{c}.rpc.invalid/" for c in ("base", "arbitrum", "robinhood")}
    r.sessions.evm = JsonRpcEvmReader(hosts, client)
    r.sessions.solana = JsonRpcSolanaReader("http://solana.rpc.invalid/", client)
    return r, records, node, client


def test_over_json_rpc_the_same_outcomes_in_two_batches_per_chain() -> None:
    async def run() -> None:
        for garbage in (False, True):
            one, records_one, node_one, c1 = await _wired(garbage)
            two, records_two, node_two, c2 = await _wired(garbage)
            per_session = await _outcomes(PerSessionGatherer(one.sessions), records_one)
            batched = await _outcomes(BatchedGatherer(two.sessions), records_two)
            assert batched == per_session
            assert ("unavailable", "rpc_invalid_response:base") in batched.values() if garbage else True
            assert sum(1 for o in batched.values() if o is None) == (1 if garbage else 0)
            # base: 5 sessions; the per-session path sends two requests each, the batched one the head, then (all
            # first seen) two batches in all; Solana one status request (none finalized, so no getTransaction)
            assert node_two.requests["base"] == 3 and node_one.requests["base"] >= 8
            assert node_two.requests["solana"] == 1 and node_two.requests["arbitrum"] == 2
            assert node_two.calls["base"] < node_one.calls["base"]
            await c1.aclose()
            await c2.aclose()

    asyncio.run(run())


def test_a_batch_read_answers_what_the_single_reads_answer() -> None:
    async def run() -> None:
        r, _records, node, client = await _wired()
        reader = r.sessions.evm
        assert isinstance(reader, JsonRpcEvmReader)
        hashes = sorted(h for h in r.evm.txs)
        reads = [TxByHash("base", h) for h in hashes] + [TxByHash("base", f"0x{7:064x}"), LatestBlock("base")]
        facts, failed = await reader.batch_read("base", [*reads, TxByHash("base", "0x12")])
        assert list(failed) == [TxByHash("base", "0x12")]
        assert facts.blocks == {LatestBlock("base"): WireNode.LATEST}
        for read in reads[:-1]:
            assert isinstance(read, TxByHash)
            assert facts.txs[read] == await reader.transaction("base", read.tx_hash)
        assert sum(1 for t in facts.txs.values() if t is not None) == len(hashes) > 0
        await client.aclose()

    asyncio.run(run())


SPOKE = "0x" + "ab" * 20  # a SpokePool pinned on Robinhood for this test (none is by default)


class CountingEvm(FakeEvm):
    def __init__(self) -> None:
        super().__init__()
        self.heads = 0
        self.searches = 0

    async def block_number(self, chain: str) -> int:
        self.heads += 1
        return await super().block_number(chain)

    async def logs(
        self, chain: str, address: str, topics: list[str | None], from_block: int, to_block: int | None = None
    ) -> list[Any]:
        self.searches += 1
        return []


async def _across_world() -> tuple[Recorder, CountingEvm, list[SessionRecord]]:
    """Across deposits in flight to Robinhood, waiting on the relayer's fill (never found): one past its fill
    deadline (refunded on the origin), the others pending; one never searched before, two searched from a block."""
    r = Recorder()
    r.prepare.deployments[Chain.ROBINHOOD] = replace(
        r.prepare.deployments[Chain.ROBINHOOD], across_spoke_pool=SPOKE
    )
    evm = CountingEvm()
    r.sessions.evm = evm
    records: list[SessionRecord] = []
    for n, (deadline, search_from) in enumerate([(2_000_000_000, None), (2_000_000_000, 900), (1, 900)]):
        created = await r.sessions.create(await r.create_body("base:USDC->robinhood:USDG"), TOKEN)
        record = await r.sessions.store.get(created.body["session_id"])
        assert record is not None
        bridge = {
            "kind": "across",
            "origin_chain_id": 8453,
            "deposit_id": 7 + n,
            "input_amount": 1_000_000,
            "output_amount": 990_000,
            "fill_deadline": deadline,
            "recipient": "0x" + "22" * 20,
            "output_token": "0x" + "33" * 20,
            "source_tx": f"0x{n + 1:064x}",
            **({} if search_from is None else {"search_from_block": search_from}),
        }
        state = SessionDocument.parse(record.state)
        entry = state.step(0).set(status=StepStatus.IN_FLIGHT, bridge=parse_bridge(bridge))
        state = state.with_step(0, entry, phase="destination", current_action=None)
        records.append(replace(record, status="awaiting_destination", state=state.to_json()))
    return r, evm, records


def test_across_fills_are_searched_from_one_block_height_per_chain_with_the_same_decisions() -> None:
    async def run() -> None:
        one, evm_one, records_one = await _across_world()
        two, evm_two, records_two = await _across_world()
        per_session = await _outcomes(PerSessionGatherer(one.sessions), records_one)
        batched = await _outcomes(BatchedGatherer(two.sessions), records_two)
        assert batched == per_session
        events = sorted(o[1] for o in batched.values())
        # the one past its fill deadline is refunded on the origin (bridge_failed), the others wait
        assert events == ["bridge_failed", "destination_pending", "destination_pending"], events
        assert (evm_one.heads, evm_one.searches) == (3, 3)
        assert (evm_two.heads, evm_two.searches) == (1, 3)  # one block height for the chain, a search each

    asyncio.run(run())
