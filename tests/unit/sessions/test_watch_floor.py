"""The watcher's cost floor (issue 42): per new block a bounded number of upstream calls per chain, whatever the
number of sessions, with the same decisions as the per-session gatherer, and nothing advanced on a cached fact.

A moving chain (`MovingNode`: the test_batch_gather wire node whose head, mined blocks and block hashes the test
moves) is read through the production JSON-RPC readers; every HTTP request and JSON-RPC method is counted."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from dataclasses import replace
from typing import Any

import httpx
from solders.signature import Signature
from tests.unit.sessions.corpus import TOKEN, Recorder, swap_receipts
from tests.unit.sessions.test_batch_gather import SPOKE, WireNode, norm

from routequote.core.assets import Chain
from routequote.core.chain import CctpMessage
from routequote.core.sessions.document import SessionDocument
from routequote.core.sessions.entries import StepStatus, parse_bridge
from routequote.core.sessions.reads import Attestation, LatestBlock, LogsSince
from routequote.core.sessions.state import Decision
from routequote.observe.evm import JsonRpcEvmReader
from routequote.observe.solana import JsonRpcSolanaReader
from routequote.ports import ObservationUnavailable, SessionRecord
from routequote.sessions.batch_gather import BatchedGatherer, BatchReads
from routequote.sessions.watch import PerSessionGatherer
from routequote.sessions.watch_cache import TickReads, WatchCache

HOSTS = {c: f"http://{c}.rpc.invalid/" for c in ("base", "arbitrum", "robinhood")}


def log_in(lg: dict[str, Any], flt: dict[str, Any], latest: int) -> bool:
    """eth_getLogs' filter: block range, address (one or a list), topics by position (a value or any of a list)."""
    lo = int(flt["fromBlock"], 16)
    hi = latest if flt["toBlock"] == "latest" else int(flt["toBlock"], 16)
    addresses = flt["address"] if isinstance(flt["address"], list) else [flt["address"]]
    if not lo <= int(lg["blockNumber"], 16) <= hi or lg["address"].lower() not in {
        a.lower() for a in addresses
    }:
        return False
    for i, want in enumerate(flt.get("topics") or []):
        if want is None:
            continue
        options = want if isinstance(want, list) else [want]
        if i >= len(lg["topics"]) or lg["topics"][i].lower() not in {o.lower() for o in options}:
            return False
    return True


class MovingNode(WireNode):
    """A chain whose head moves: a transaction is mined at the block the test sets (`mined`), unknown before;
    `fork` changes the hash of every block from `fork_from` on (a reorg); `fault` makes a method fail."""

    def __init__(self, fake: Any) -> None:
        super().__init__(fake)
        self.LATEST = 50_000
        self.mined: dict[str, int] = {}
        self.fork = 0
        self.fork_from = 0
        self.fault: dict[str, str] = {}  # method -> "error" | "garbage"
        self.methods: Counter[str] = Counter()
        self.statuses: dict[str, str] = {}
        self.logs: list[dict[str, Any]] = []

    def _block_of(self, tx_hash: str) -> int:
        return self.mined[tx_hash]

    def block_hash(self, n: int) -> str:
        return f"0x{n:056x}{(self.fork if n >= self.fork_from else 0):08x}"

    def _result(self, chain: str, method: str, params: list[Any]) -> Any:
        self.methods[f"{chain}:{method}"] += 1
        if method in self.fault:
            return "garbage" if self.fault[method] == "garbage" else {"__error__": True}
        h = str(params[0]).lower() if params and isinstance(params[0], str) else ""
        if method in ("eth_getTransactionReceipt", "eth_getTransactionByHash") and h not in self.mined:
            return None
        if method == "eth_getBlockByNumber":
            n = self.LATEST if params[0] == "latest" else int(params[0], 16)
            got = WireNode._result(self, chain, method, params)
            return {**got, "hash": self.block_hash(n), "parentHash": self.block_hash(n - 1)}
        if method == "eth_getBlockReceipts":
            n = int(params[0], 16)
            return [
                {
                    **WireNode._result(self, chain, "eth_getTransactionReceipt", [h]),
                    "blockHash": self.block_hash(n),
                }
                for h in self.mined
                if self.mined[h] == n
            ]
        if method == "eth_getTransactionReceipt":
            got = WireNode._result(self, chain, method, params)
            return {**got, "blockHash": self.block_hash(self.mined[h])}
        if method == "eth_getLogs":
            return [lg for lg in self.logs if log_in(lg, params[0], self.LATEST)]
        if method == "getSignatureStatuses":
            value = [
                None if s not in self.statuses else {"confirmationStatus": self.statuses[s]}
                for s in params[0]
            ]
            return {"context": {"slot": 1}, "value": value}
        return WireNode._result(self, chain, method, params)

    def handler(self, request: httpx.Request) -> httpx.Response:
        chain = request.url.host.split(".")[0]
        self.requests[chain] += 1
        body = json.loads(request.content)

        def one(call: dict[str, Any]) -> dict[str, Any]:
            self.calls[chain] += 1
            result = self._result(chain, call["method"], call.get("params") or [])
            if isinstance(result, dict) and result.get("__error__"):
                return {"jsonrpc": "2.0", "id": call["id"], "error": {"code": -32000, "message": "down"}}
            return {"jsonrpc": "2.0", "id": call["id"], "result": result}

        return httpx.Response(200, json=[one(c) for c in body] if isinstance(body, list) else one(body))

    def per_chain(self, chain: str) -> dict[str, int]:
        return {m.split(":", 1)[1]: n for m, n in self.methods.items() if m.startswith(chain + ":")}

    def clear(self) -> None:
        self.methods.clear()
        self.requests.clear()
        self.calls.clear()


async def _world(
    node_for: Any = None,
) -> tuple[Recorder, MovingNode, httpx.AsyncClient]:
    r = Recorder()
    node = MovingNode(r.evm)
    client = httpx.AsyncClient(transport=httpx.MockTransport(node.handler))
    r.sessions.evm = JsonRpcEvmReader(HOSTS, client)
    r.sessions.solana = JsonRpcSolanaReader("http://solana.rpc.invalid/", client)
    return r, node, client


async def _swap(r: Recorder, seed: int) -> tuple[SessionRecord, list[str]]:
    """A base swap session named while its transactions are not mined yet: their hashes."""
    created = await r.sessions.create(await r.create_body("base:ETH->base:USDC"), TOKEN)
    sid = created.body["session_id"]
    action = created.body["current_action"]["unsigned_action"]
    hashes = swap_receipts(r.evm, action, int(action["expectedOutput"]), seed=seed, confirmations=1)
    named = await r.observe(sid, hashes)
    assert named.body["status"] == "awaiting_source_receipt"
    record = await r.sessions.store.get(sid)
    assert record is not None
    return record, hashes


def _clones(record: SessionRecord, n: int, prefix: str) -> list[SessionRecord]:
    """`n` copies of a waiting session, each naming its own (never mined) transactions."""
    text = json.dumps(record.state)
    names = record.state["steps"][0]["claimed_tx_ids"]
    out = []
    for i in range(n):
        t = text
        for j, old in enumerate(names):
            t = t.replace(old, f"0x{prefix}{i:058x}{j:04x}")
        out.append(replace(record, session_id=f"{prefix}-{i}", state=json.loads(t)))
    return out


def _across(r: Recorder, record: SessionRecord, n: int) -> list[SessionRecord]:
    """`n` Across deposits in flight to Robinhood waiting on their fill (searched with eth_getLogs)."""
    r.prepare.deployments[Chain.ROBINHOOD] = replace(
        r.prepare.deployments[Chain.ROBINHOOD], across_spoke_pool=SPOKE
    )
    out = []
    for i in range(n):
        bridge = {
            "kind": "across",
            "origin_chain_id": 8453,
            "deposit_id": 1000 + i,
            "input_amount": 1_000_000,
            "output_amount": 990_000,
            "fill_deadline": 2_000_000_000,
            "recipient": "0x" + "22" * 20,
            "output_token": "0x" + "33" * 20,
            "source_tx": f"0x{i + 1:064x}",
            "search_from_block": 49_000,
        }
        state = SessionDocument.parse(record.state)
        entry = state.step(0).set(status=StepStatus.IN_FLIGHT, bridge=parse_bridge(bridge))
        state = state.with_step(0, entry, phase="destination", current_action=None)
        out.append(
            replace(record, session_id=f"across-{i}", status="awaiting_destination", state=state.to_json())
        )
    return out


async def _across_template(r: Recorder) -> SessionRecord:
    created = await r.sessions.create(await r.create_body("base:USDC->robinhood:USDG"), TOKEN)
    record = await r.sessions.store.get(created.body["session_id"])
    assert record is not None
    return record


def test_calls_per_new_block_are_the_same_for_100_and_1000_sessions() -> None:
    async def per_block(n: int) -> tuple[dict[str, int], dict[str, int], dict[str, int], int]:
        r, node, client = await _world()
        template, _ = await _swap(r, seed=7)
        swaps = _clones(template, n, "aa")
        fills = _across(r, await _across_template(r), n)
        gatherer = BatchedGatherer(r.sessions)
        first = await gatherer.outcomes(Chain.BASE, swaps)  # first sight: each hash read once
        assert all(isinstance(o, Decision) for o in first), first[:3]
        fills = _committed(fills, await gatherer.outcomes(Chain.ROBINHOOD, fills))  # its search start kept
        one_off = node.calls["base"] + node.calls["robinhood"]
        node.LATEST += 1
        node.clear()
        for chain, group in ((Chain.BASE, swaps), (Chain.ROBINHOOD, fills)):
            outcomes = await gatherer.outcomes(chain, group)
            assert {norm(o)[1] for o in outcomes} <= {"submitted_pending", "destination_pending"}
        base, robinhood = node.per_chain("base"), node.per_chain("robinhood")
        node.clear()
        for chain, group in ((Chain.BASE, swaps), (Chain.ROBINHOOD, fills)):  # no new block
            await gatherer.outcomes(chain, group)
        quiet = node.per_chain("base")
        await client.aclose()
        return base, robinhood, quiet, one_off

    async def run() -> None:
        small, large = await per_block(100), await per_block(1000)
        # one head, one getBlockReceipts for the pending swaps; one head, one eth_getLogs for every fill
        assert small[0] == large[0] == {"eth_getBlockByNumber": 1, "eth_getBlockReceipts": 1}, small[0]
        assert small[1] == large[1] == {"eth_getBlockByNumber": 1, "eth_getLogs": 1}, small[1]
        assert small[2] == large[2] == {"eth_getBlockByNumber": 1}  # no new block: no receipt, no log call
        assert large[3] > small[3]  # what grows is the first sight of each session (one-off reads)

    asyncio.run(run())


def _committed(records: list[SessionRecord], outcomes: list[Any]) -> list[SessionRecord]:
    """The records as the watcher's commit leaves them (same status: a pending decision)."""
    assert all(isinstance(o, Decision) for o in outcomes), outcomes[:3]
    return [
        replace(r, state=json.loads(json.dumps(o.state.to_json())))
        for r, o in zip(records, outcomes, strict=True)
    ]


def _same(one: list[Any], two: list[Any]) -> None:
    assert [norm(o) for o in one] == [norm(o) for o in two]


def test_a_receipt_found_in_a_new_block_decides_what_a_direct_read_decides() -> None:
    async def run() -> None:
        worlds = [await _world() for _ in range(2)]
        made = [await _swap(r, seed=9) for r, _, _ in worlds]
        (r1, n1, c1), (r2, n2, c2) = worlds
        per_session, batched = PerSessionGatherer(r1.sessions), BatchedGatherer(r2.sessions)
        rec1, rec2 = made[0][0], made[1][0]
        _same(await per_session.outcomes(Chain.BASE, [rec1]), await batched.outcomes(Chain.BASE, [rec2]))
        for node, (_, hashes) in ((n1, made[0]), (n2, made[1])):
            node.LATEST += 1
            node.mined.update(dict.fromkeys(hashes, node.LATEST))  # mined in the new block: one deep
        n2.clear()
        shallow = await batched.outcomes(Chain.BASE, [rec2])
        _same(await per_session.outcomes(Chain.BASE, [rec1]), shallow)
        assert n2.per_chain("base")["eth_getBlockReceipts"] == 1  # found there, then read once directly
        for node in (n1, n2):
            node.LATEST += 63  # final (past the scan gap: nothing pending, so no receipts are read)
        n2.clear()
        final = await batched.outcomes(Chain.BASE, [rec2])
        _same(await per_session.outcomes(Chain.BASE, [rec1]), final)
        assert norm(final[0])[1] == "step_verified_final"
        # the change was decided again on a direct receipt read before it was returned
        assert n2.per_chain("base").get("eth_getTransactionReceipt", 0) == len(made[1][1])
        for c in (c1, c2):
            await c.aclose()

    asyncio.run(run())


def test_a_cached_receipt_whose_block_was_replaced_advances_nothing() -> None:
    async def run() -> None:
        r, node, client = await _world()
        record, hashes = await _swap(r, seed=11)
        gatherer = BatchedGatherer(r.sessions)
        await gatherer.outcomes(Chain.BASE, [record])
        node.LATEST += 1
        node.mined.update(dict.fromkeys(hashes, node.LATEST))
        await gatherer.outcomes(Chain.BASE, [record])  # cached as mined, one deep
        # the block is replaced and the transactions are gone; the cache cannot see it (same hashes kept)
        node.mined.clear()
        node.LATEST += 70
        out = await gatherer.outcomes(Chain.BASE, [record])
        assert norm(out[0])[1] == "submitted_pending", norm(out[0])
        assert norm(out[0]) == norm((await PerSessionGatherer(r.sessions).outcomes(Chain.BASE, [record]))[0])
        # and a reorg the head shows (a new parent) rewinds the cache: the moved transaction is found again
        node.mined.update(dict.fromkeys(hashes, node.LATEST - 2))
        node.fork, node.fork_from = 1, node.LATEST - 3
        node.LATEST += 1
        node.clear()
        out = await gatherer.outcomes(Chain.BASE, [record])
        assert norm(out[0])[1] == "submitted_pending"  # mined again, three deep: not final
        assert node.per_chain("base").get("eth_getTransactionReceipt", 0) >= 1
        await client.aclose()

    asyncio.run(run())


def test_a_failed_or_garbage_scan_advances_nothing_and_the_next_tick_recovers() -> None:
    async def run() -> None:
        for method, fault in (
            ("eth_getBlockReceipts", "error"),
            ("eth_getBlockReceipts", "garbage"),
            ("eth_getLogs", "error"),
            ("eth_getLogs", "garbage"),
        ):
            r, node, client = await _world()
            record, hashes = await _swap(r, seed=13)
            fills = _across(r, await _across_template(r), 2)
            gatherer = BatchedGatherer(r.sessions)
            await gatherer.outcomes(Chain.BASE, [record])
            await gatherer.outcomes(Chain.ROBINHOOD, fills)
            node.LATEST += 20  # twenty new blocks; the swap is mined in the first: final (10 needed)
            node.mined.update(dict.fromkeys(hashes, node.LATEST - 19))
            node.fault[method] = fault
            chain, group = (Chain.BASE, [record]) if "Receipts" in method else (Chain.ROBINHOOD, fills)
            out = await gatherer.outcomes(chain, group)
            assert not any(isinstance(o, Decision) for o in out), (method, fault, out)
            assert any(isinstance(o, ObservationUnavailable) for o in out)
            node.fault.clear()
            out = await gatherer.outcomes(chain, group)
            assert all(isinstance(o, Decision) for o in out), (method, fault, out)
            if chain is Chain.BASE:
                assert norm(out[0])[1] == "step_verified_final"
            await client.aclose()

    asyncio.run(run())


def test_solana_reads_statuses_in_one_request_and_transactions_only_once_finalized() -> None:
    async def run() -> None:
        r, node, client = await _world()
        created = await r.sessions.create(await r.create_body("solana:SOL->solana:USDC"), TOKEN)
        sid = created.body["session_id"]
        await r.observe(sid, [str(Signature.from_bytes(bytes([5]) * 64))])
        record = await r.sessions.store.get(sid)
        assert record is not None
        name = record.state["steps"][0]["claimed_tx_ids"][0]
        text = json.dumps(record.state)
        sigs = [str(Signature.from_bytes(i.to_bytes(2, "big") * 32)) for i in range(250)]
        records = [
            replace(record, session_id=f"s{i}", state=json.loads(text.replace(name, s)))
            for i, s in enumerate(sigs)
        ]
        gatherer = BatchedGatherer(r.sessions)
        node.clear()  # observe read the named signature with getTransaction
        out = await gatherer.outcomes(Chain.SOLANA, records)
        assert {norm(o)[1] for o in out} == {"submitted_pending"}
        assert node.requests["solana"] == 1
        assert node.per_chain("solana") == {"getSignatureStatuses": 1}  # up to 256: one call (then: blocks)
        node.clear()
        node.statuses[sigs[0]] = "finalized"
        node.statuses[sigs[1]] = "confirmed"
        await gatherer.outcomes(Chain.SOLANA, records)
        assert node.per_chain("solana") == {"getSignatureStatuses": 1, "getTransaction": 1}
        await client.aclose()

    asyncio.run(run())


class CountingIris:
    def __init__(self) -> None:
        self.lookups = 0

    async def messages(self, source_domain: int, tx_hash: str) -> list[CctpMessage]:
        self.lookups += 1
        return []


def test_a_pending_message_is_looked_up_once_per_lookup_interval() -> None:
    async def run() -> None:
        r = Recorder()
        iris = CountingIris()
        r.sessions.attestations = iris
        now = [100.0]
        cache = WatchCache(lookup_seconds=10.0, clock=lambda: now[0])
        read = Attestation(6, "0x" + "ab" * 32)
        for t in (100.0, 105.0, 109.9):
            now[0] = t
            tick = TickReads(cache, BatchReads(r.sessions.facts))
            facts, failed = await tick.run([read, read])
            assert facts.attestations == {read: ()} and failed == {}
        assert iris.lookups == 1
        now[0] = 110.0
        await TickReads(cache, BatchReads(r.sessions.facts)).run([read])
        assert iris.lookups == 2
        # observe itself always looks up now
        await r.sessions.facts.read([read])
        await r.sessions.facts.read([read])
        assert iris.lookups == 4

    asyncio.run(run())


def _log(n: int, block: int, address: str, *topics: str) -> dict[str, Any]:
    return {
        "address": address,
        "topics": list(topics),
        "data": "0x" + f"{n:064x}",
        "logIndex": hex(n % 7),
        "transactionHash": f"0x{n:064x}",
        "blockNumber": hex(block),
    }


def test_log_searches_from_the_cache_answer_what_direct_searches_answer() -> None:
    """Logs of two contracts and several topics over moving blocks: each search answered by the watcher's cache
    (one eth_getLogs per new block for all) equals the same search sent to the node, whenever it is asked."""

    async def run() -> None:
        r, node, client = await _world()
        reader = r.sessions.evm
        assert isinstance(reader, JsonRpcEvmReader)
        a, b = "0x" + "a1" * 20, "0x" + "b2" * 20
        t0, t1, x, y = ("0x" + f"{i:064x}" for i in (0xE0, 0xE1, 0xF0, 0xF1))
        start = node.LATEST
        n = 0

        def emit(block: int) -> None:
            nonlocal n
            for address, topics in ((a, (t0, x)), (a, (t0, y)), (a, (t1, x)), (b, (t0, x)), (b, (t1, y))):
                n += 1
                node.logs.append(_log(n, block, address, *topics))

        for block in range(start - 50, start + 1, 5):
            emit(block)
        searches = [
            LogsSince("base", a, (t0, x), start - 40),
            LogsSince("base", a, (t0, None), start - 20),
            LogsSince("base", b, (t1,), start - 60),
            LogsSince("base", a, (t1, x), start - 5),
        ]
        cache = WatchCache()
        for tick in range(6):
            asked = searches[: 2 + tick // 2]  # searches join over the ticks
            reads = [replace(s, to_block=node.LATEST) for s in asked]
            facts, failed = await TickReads(cache, BatchReads(r.sessions.facts)).run(
                [LatestBlock("base"), *reads]
            )
            assert failed == {}
            for read in reads:
                direct = await reader.logs(
                    "base", read.address, list(read.topics), read.from_block, read.to_block
                )
                assert list(facts.logs[read]) == sorted(
                    direct, key=lambda lg: (lg.block_number, lg.log_index)
                )
            node.LATEST += 1
            emit(node.LATEST)
        node.clear()
        node.LATEST += 1
        reads = [replace(s, to_block=node.LATEST) for s in searches]
        await TickReads(cache, BatchReads(r.sessions.facts)).run([LatestBlock("base"), *reads])
        assert node.per_chain("base") == {"eth_getBlockByNumber": 1, "eth_getLogs": 1}  # all in one filter
        await client.aclose()

    asyncio.run(run())
