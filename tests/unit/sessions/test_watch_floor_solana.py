"""The watcher's cost floor on Solana (issue 42): past 256 pending signatures, finalized blocks are scanned
(sessions/solana_scan.py), so the calls per new slot are the same for 300 and 3,000 pending signatures; a
signature found in a scanned block decides what the statuses path and observe decide; a failed, garbage or
too-large answer advances nothing and the next tick recovers.

`SlotNode` is a Solana JSON-RPC node (httpx.MockTransport behind the production JsonRpcSolanaReader) with produced
and skipped slots, blocks of 1,500 signatures, a finalized root the test moves, and transactions the test lands.
It counts every HTTP request and JSON-RPC method."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from dataclasses import replace
from typing import Any

import httpx
from solders.pubkey import Pubkey
from solders.signature import Signature
from tests.unit.sessions.corpus import TOKEN, Recorder
from tests.unit.sessions.test_batch_gather import norm

from routequote.core.assets import Chain
from routequote.core.sessions.state import Decision
from routequote.observe.solana import JsonRpcSolanaReader
from routequote.ports import ObservationUnavailable, SessionRecord
from routequote.sessions.batch_gather import BatchedGatherer
from routequote.sessions.solana_scan import MAX_SLOT_GAP
from routequote.sessions.watch import PerSessionGatherer

URL = "http://solana.rpc.invalid/"
FILLER = 1_500  # signatures per block (mainnet blocks hold one to a few thousand, votes included)
PAYER = str(Pubkey.from_bytes(bytes([9]) * 32))


def sig(n: int, tag: int = 0) -> str:
    return str(Signature.from_bytes(tag.to_bytes(2, "big") + n.to_bytes(8, "big") * 7 + bytes(6)))


class SlotNode:
    """Produced slots hold FILLER signatures each, plus the transactions the test lands there; every third
    slot is skipped. `root` is the finalized slot (getBlocks and getBlock at finalized see nothing past it);
    a landed transaction is `finalized` at or below the root, `confirmed` above it, and failed on chain."""

    def __init__(self) -> None:
        self.root = 10_000
        self.landed: dict[str, int] = {}
        self.fault: dict[str, str] = {}  # method -> "error" | "garbage"
        self.methods: Counter[str] = Counter()
        self.requests = 0

    @staticmethod
    def produced(slot: int) -> bool:
        return slot % 3 != 0

    def land(self, signature: str, slot: int) -> None:
        assert self.produced(slot)
        self.landed[signature] = slot

    def block(self, slot: int) -> list[str]:
        return [sig(slot * FILLER + i, 1) for i in range(FILLER)] + [
            s for s, at in self.landed.items() if at == slot
        ]

    def transaction(self, signature: str) -> dict[str, Any]:
        return {
            "slot": self.landed[signature],
            "blockTime": 1_700_000_000,
            "transaction": {
                "signatures": [signature],
                "message": {
                    "accountKeys": [PAYER],
                    "header": {"numRequiredSignatures": 1},
                    "instructions": [],
                },
            },
            "meta": {"err": {"InstructionError": [0, {"Custom": 1}]}, "fee": 5000, "preBalances": [10_000],
                     "postBalances": [5_000]},
        }  # fmt: skip

    def result(self, method: str, params: list[Any]) -> Any:
        self.methods[method] += 1
        if method in self.fault:
            return "garbage" if self.fault[method] == "garbage" else {"__error__": True}
        if method == "getSlot":
            return self.root
        if method == "getBlocks":
            lo, hi = params[0], min(params[1], self.root)
            return [s for s in range(lo, hi + 1) if self.produced(s)]
        if method == "getBlock":
            assert params[1]["transactionDetails"] == "signatures" and params[1]["commitment"] == "finalized"
            slot = params[0]
            if slot > self.root or not self.produced(slot):
                return {"__error__": True}
            return {"blockhash": "x", "parentSlot": slot - 1, "signatures": self.block(slot)}
        if method == "getSignatureStatuses":
            value = [
                None
                if s not in self.landed
                else {"confirmationStatus": "finalized" if self.landed[s] <= self.root else "confirmed"}
                for s in params[0]
            ]
            return {"context": {"slot": self.root}, "value": value}
        if method == "getTransaction":
            s = params[0]
            return self.transaction(s) if self.landed.get(s, self.root + 1) <= self.root else None
        raise AssertionError(method)

    def handler(self, request: httpx.Request) -> httpx.Response:
        self.requests += 1
        body = json.loads(request.content)

        def one(call: dict[str, Any]) -> dict[str, Any]:
            got = self.result(call["method"], call.get("params") or [])
            if isinstance(got, dict) and got.get("__error__"):
                return {"jsonrpc": "2.0", "id": call["id"], "error": {"code": -32004, "message": "no block"}}
            return {"jsonrpc": "2.0", "id": call["id"], "result": got}

        return httpx.Response(200, json=[one(c) for c in body] if isinstance(body, list) else one(body))

    def new_slots(self, n: int) -> int:
        """Finalize `n` more slots; how many of them were produced."""
        before = self.root
        self.root += n
        return sum(1 for s in range(before + 1, self.root + 1) if self.produced(s))

    def clear(self) -> None:
        self.methods.clear()
        self.requests = 0


async def _world(n: int, max_bytes: int | None = None) -> tuple[Recorder, SlotNode, list[SessionRecord]]:
    """`n` sessions waiting on their own (not landed) Solana signature, read through a SlotNode."""
    r = Recorder()
    node = SlotNode()
    client = httpx.AsyncClient(transport=httpx.MockTransport(node.handler))
    extra = {} if max_bytes is None else {"max_bytes": max_bytes}
    r.sessions.solana = JsonRpcSolanaReader(URL, client, **extra)
    created = await r.sessions.create(await r.create_body("solana:SOL->solana:USDC"), TOKEN)
    sid = created.body["session_id"]
    await r.observe(sid, [sig(0, 2)])
    record = await r.sessions.store.get(sid)
    assert record is not None and record.status == "awaiting_source_receipt"
    text = json.dumps(record.state)
    records = [
        replace(record, session_id=f"s{i}", state=json.loads(text.replace(sig(0, 2), sig(i, 3))))
        for i in range(n)
    ]
    return r, node, records


def _pending(out: list[Any]) -> bool:
    return {norm(o)[1] for o in out} == {"submitted_pending"}


def test_300_and_3000_pending_signatures_cost_the_same_calls_per_new_slot() -> None:
    async def run(n: int) -> list[tuple[int, dict[str, int], int]]:
        r, node, records = await _world(n)
        g = BatchedGatherer(r.sessions)
        node.clear()
        assert _pending(await g.outcomes(Chain.SOLANA, records))  # first sight: getSlot, then every status
        assert node.methods == {"getSlot": 1, "getSignatureStatuses": -(-n // 256)}
        seen = []
        for step in (5, 3, 0, 7):
            produced = node.new_slots(step)
            node.clear()
            assert _pending(await g.outcomes(Chain.SOLANA, records))
            seen.append((produced, dict(node.methods), node.requests))
            # "not in a scanned block yet" is a cached answer: a change decided on it is decided again directly
            assert g.last is not None and len(g.last.stale) == n
        return seen

    small, large = asyncio.run(run(300)), asyncio.run(run(3000))
    assert small == large
    for produced, methods, requests in small:
        assert methods == ({"getBlocks": 1, "getBlock": produced} if produced else {"getBlocks": 1})
        assert requests == (2 if produced else 1)
        assert sum(methods.values()) <= 3 * max(produced, 1)  # the floor: at most 3 per new slot


def test_at_most_256_pending_signatures_stay_on_one_status_call() -> None:
    async def run() -> None:
        r, node, records = await _world(256)
        g = BatchedGatherer(r.sessions)
        for step in (0, 4):
            node.new_slots(step)
            node.clear()
            assert _pending(await g.outcomes(Chain.SOLANA, records))
            assert node.methods == {"getSignatureStatuses": 1}
            assert g.last is not None and not g.last.stale  # statuses read now

    asyncio.run(run())


def _outcome_after_landing(
    n: int, index: int, *, before_first_sight: bool = False
) -> tuple[Any, Counter[str]]:
    """The decision on session `index` once its signature lands in a finalized block (`n` sessions waiting)."""

    async def run() -> tuple[Any, Counter[str]]:
        r, node, records = await _world(n)
        g = BatchedGatherer(r.sessions)
        target = sig(index, 3)
        if before_first_sight:
            node.land(target, node.root - 5)
        else:
            assert _pending(await g.outcomes(Chain.SOLANA, records))
            node.land(target, node.root + 4)  # confirmed first, not finalized
            node.new_slots(1)
            node.clear()
            assert _pending(await g.outcomes(Chain.SOLANA, records))  # not finalized: nothing read
            assert "getTransaction" not in node.methods
            node.new_slots(4)
        node.clear()
        out = await g.outcomes(Chain.SOLANA, records)
        methods = node.methods.copy()
        assert [i for i, o in enumerate(out) if norm(o)[1] != "submitted_pending"] == [index]
        direct = await PerSessionGatherer(r.sessions).outcomes(Chain.SOLANA, [records[index]])
        assert norm(out[index]) == norm(direct[0])  # what observe decides now, reading directly
        return norm(out[index]), methods

    return asyncio.run(run())


def test_a_signature_found_in_a_scanned_block_advances_as_the_statuses_path_would() -> None:
    scanned, by_blocks = _outcome_after_landing(300, 7)
    statuses, by_status = _outcome_after_landing(200, 7)
    assert scanned == statuses and scanned[1] != "submitted_pending"
    assert by_blocks["getTransaction"] == 1 and "getSignatureStatuses" not in by_blocks
    assert by_blocks["getBlocks"] == 1 and by_blocks["getBlock"] >= 1
    assert by_status == {"getSignatureStatuses": 1, "getTransaction": 1}
    # landed before the watcher first saw it: its first status says finalized
    early, first = _outcome_after_landing(300, 9, before_first_sight=True)
    assert early[1] == scanned[1] and first["getTransaction"] == 1


def test_a_failed_or_garbage_scan_advances_nothing_and_the_next_tick_recovers() -> None:
    async def run(method: str, fault: str) -> None:
        r, node, records = await _world(300)
        g = BatchedGatherer(r.sessions)
        assert _pending(await g.outcomes(Chain.SOLANA, records))
        scanned_to = g.cache.solana.scanned_to
        node.land(sig(4, 3), node.root + 1)
        node.new_slots(6)
        node.fault[method] = fault
        out = await g.outcomes(Chain.SOLANA, records)
        assert isinstance(out[0], ObservationUnavailable), (method, fault)
        assert not any(isinstance(o, Decision) for o in out)
        assert g.cache.solana.scanned_to == scanned_to and not g.cache.solana.due
        node.fault.clear()
        out = await g.outcomes(Chain.SOLANA, records)
        assert norm(out[4])[1] != "submitted_pending", (method, fault)
        assert all(norm(o)[1] == "submitted_pending" for i, o in enumerate(out) if i != 4)

    for method in ("getBlocks", "getBlock"):
        for fault in ("error", "garbage"):
            asyncio.run(run(method, fault))


def test_a_block_past_the_size_limit_falls_back_to_statuses_for_that_tick() -> None:
    async def run() -> None:
        # 1,500 signatures of ~90 bytes: a block answer of ~135 KB, past a 100 KB limit
        r, node, records = await _world(300, max_bytes=100_000)
        g = BatchedGatherer(r.sessions)
        assert _pending(await g.outcomes(Chain.SOLANA, records))
        node.land(sig(11, 3), node.root + 1)
        node.new_slots(4)
        node.clear()
        out = await g.outcomes(Chain.SOLANA, records)
        assert [i for i, o in enumerate(out) if norm(o)[1] != "submitted_pending"] == [11]
        assert node.methods["getSlot"] == 1 and node.methods["getSignatureStatuses"] == 2
        assert node.methods["getTransaction"] == 1
        assert g.cache.solana.resyncs == 2 and g.cache.solana.scanned_to == node.root
        node.new_slots(2)
        node.clear()
        assert _pending(await g.outcomes(Chain.SOLANA, records[:11] + records[12:]))
        assert node.methods["getBlocks"] == 1 and node.methods["getSignatureStatuses"] == 2  # again

    asyncio.run(run())


def test_more_new_slots_than_the_gap_resync_through_statuses() -> None:
    async def run() -> None:
        r, node, records = await _world(300)
        g = BatchedGatherer(r.sessions)
        assert _pending(await g.outcomes(Chain.SOLANA, records))
        node.land(sig(2, 3), node.root + 4)
        node.new_slots(MAX_SLOT_GAP * 2)
        node.clear()
        out = await g.outcomes(Chain.SOLANA, records)
        assert [i for i, o in enumerate(out) if norm(o)[1] != "submitted_pending"] == [2]
        assert "getBlock" not in node.methods and node.methods["getSlot"] == 1
        assert node.methods["getSignatureStatuses"] == 2 and g.cache.solana.scanned_to == node.root

    asyncio.run(run())


def test_a_failed_resync_or_first_status_read_keeps_nothing_and_the_next_tick_recovers() -> None:
    async def run(method: str, fault: str) -> None:
        r, node, records = await _world(300)
        g = BatchedGatherer(r.sessions)
        node.land(sig(5, 3), node.root - 2)  # landed before the watcher saw it
        node.fault[method] = fault
        out = await g.outcomes(Chain.SOLANA, records)
        assert isinstance(out[0], ObservationUnavailable) and not any(isinstance(o, Decision) for o in out)
        assert not g.cache.solana.pending and not g.cache.solana.due
        node.fault.clear()
        out = await g.outcomes(Chain.SOLANA, records)
        assert [i for i, o in enumerate(out) if norm(o)[1] != "submitted_pending"] == [5], (method, fault)

    for method in ("getSlot", "getSignatureStatuses"):
        for fault in ("error", "garbage"):
            asyncio.run(run(method, fault))
