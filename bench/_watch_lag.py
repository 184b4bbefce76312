"""Event lag for bench/watch_bench.py: from the block that holds a session's deciding fact to its event being
readable through the event stream's own reader.

Sampled sessions are real swap sessions (created and named through the service, the session corpus's fakes),
cloned under new ids into the bench's store, each naming its own transactions: stand-in receipts carrying the
prepared transactions (`swap_receipts`), served by the bench's fake JSON-RPC node only once `MinedTxs` says they
are mined; and Across deposits in flight to Robinhood (watch_bench's), whose relayer's `FilledRelay` the node
logs on the pinned SpokePool. The sample covers the EVM source-receipt kind on base, arbitrum and robinhood
(single-step swaps, which complete, and multi-step routes whose first step is a swap, which make the next action
ready) and the Across fill search. Solana signatures, CCTP attestations and LayerZero deliveries stay pending in
the background: their lag is not measured here.

How it runs, with the watcher's real loop (`Watcher.loop`, its tick interval `watch_interval_seconds`) and an
`EventFeed` (`event_stream_poll_seconds`) as the app builds them:
1. the sampled sessions join the waiting ones;
2. their transactions are mined (their fills logged) `confirmations - 1` deep, and a whole tick looks at them:
   first sight and mined, not final (the bench does not spend a tick on seeing them unmined first);
3. every sampled session is followed from now (`EventFeed.start_now` / `follow`, what `GET .../events` streams);
   `BLOCKS` new blocks follow, one at a time at random pauses, each making a twentieth of the sample final: the
   publication of a session's block is the start of its lag;
4. the lag of a session ends when `follow` yields its next event (read from the store's event log).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import secrets
import time
from dataclasses import dataclass, field, replace
from typing import Any

from eth_abi.abi import encode
from tests.unit.actions.support import START
from tests.unit.sessions.corpus import TOKEN, Recorder, swap_receipts

from routequote.core.sessions.evidence_common import address_topic
from routequote.core.sessions.kinds.across import FILLED_RELAY_DATA, across_fill_topics
from routequote.ports import EvmTransaction, SessionEvent, SessionRecord
from routequote.sessions.event_stream import EventFeed, StreamStart, encode_event
from routequote.sessions.watch import Watcher, waiting_chain
from routequote.storage.sessions_sql import SqlSessionStore

# first step a Uniswap swap from ETH on each EVM chain: single-step (to complete) and multi-step (to the next
# action). A token-in swap also pays its fee by an ERC-20 transfer the stand-in receipts do not carry.
SAMPLE_ROUTES = (
    "base:ETH->base:USDC",
    "base:ETH->arbitrum:USDC",
    "arbitrum:ETH->arbitrum:USDC",
    "arbitrum:ETH->base:USDC",
    "robinhood:ETH->robinhood:USDG",
    "robinhood:ETH->solana:USDG",
)
BLOCKS = 20  # new blocks the sample is made final over, one at a time
BLOCK_TIME = int(START.timestamp()) + 60  # every fake block's timestamp: after the sessions were created


@dataclass
class MinedTxs:
    """Transactions the fake node knows as mined, by hash: each at its block (its receipt's and its block's
    JSON as `eth_getTransactionReceipt`, `eth_getTransactionByHash` and `eth_getBlockReceipts` answer)."""

    txs: dict[str, tuple[int, EvmTransaction]] = field(default_factory=dict)
    logs: list[dict[str, Any]] = field(default_factory=list)  # as eth_getLogs answers them

    def logs_matching(self, flt: dict[str, Any], latest: int) -> list[dict[str, Any]]:
        """eth_getLogs' filter: block range, address (one or a list), topics by position (one or any of a list)."""
        lo = int(flt["fromBlock"], 16)
        hi = latest if flt.get("toBlock", "latest") == "latest" else int(flt["toBlock"], 16)
        addresses = flt["address"] if isinstance(flt["address"], list) else [flt["address"]]
        wanted = {a.lower() for a in addresses}

        def matches(lg: dict[str, Any]) -> bool:
            if not lo <= int(lg["blockNumber"], 16) <= min(hi, latest) or lg["address"].lower() not in wanted:
                return False
            for i, want in enumerate(flt.get("topics") or []):
                options = {o.lower() for o in (want if isinstance(want, list) else [want])} if want else None
                if options is not None and (i >= len(lg["topics"]) or lg["topics"][i].lower() not in options):
                    return False
            return True

        return [lg for lg in self.logs if matches(lg)]

    def at(self, block: int) -> list[dict[str, Any] | None]:
        return [self.receipt(h) for h, (n, _) in self.txs.items() if n == block]

    def receipt(self, tx_hash: str) -> dict[str, Any] | None:
        if tx_hash.lower() not in self.txs:
            return None
        n, tx = self.txs[tx_hash.lower()]
        logs = [
            {
                "address": lg.address,
                "topics": list(lg.topics),
                "data": "0x" + lg.data.hex(),
                "logIndex": hex(lg.log_index),
                "transactionHash": tx.tx_hash,
                "blockNumber": hex(n),
            }
            for lg in tx.logs
        ]
        return {
            "transactionHash": tx.tx_hash,
            "blockNumber": hex(n),
            "blockHash": f"0x{n:064x}",
            "status": hex(tx.status),
            "gasUsed": hex(tx.gas_used),
            "effectiveGasPrice": hex(tx.effective_gas_price),
            "to": tx.to,
            "logs": logs,
        }

    def transaction(self, tx_hash: str) -> dict[str, Any] | None:
        if tx_hash.lower() not in self.txs:
            return None
        _, tx = self.txs[tx_hash.lower()]
        return {
            "hash": tx.tx_hash,
            "from": tx.sender,
            "to": tx.to,
            "value": hex(tx.value),
            "input": "0x" + tx.input.hex(),
        }


@dataclass(frozen=True)
class SampleShape:
    record: SessionRecord  # named, awaiting_source_receipt; or an Across deposit in flight
    txs: tuple[EvmTransaction, ...] = ()  # the stand-in receipts of what it names
    spoke_pool: str | None = None  # an Across deposit's: the relayer's FilledRelay is logged there


def fill_log(bridge: dict[str, Any], spoke_pool: str, block: int, tx_hash: str) -> dict[str, Any]:
    """The relayer's `FilledRelay` of exactly this deposit's relay data, as eth_getLogs answers it."""

    def word(address: str) -> bytes:
        return bytes(12) + bytes.fromhex(address.removeprefix("0x"))

    recipient, output = word(str(bridge["recipient"])), int(bridge["output_amount"])
    fields = [
        bytes(32),
        word(str(bridge["output_token"])),
        int(bridge["input_amount"]),
        output,
        1,
        int(bridge["fill_deadline"]),
        0,
        bytes(32),
        bytes(32),
        recipient,
        bytes(32),
        (recipient, bytes(32), output, 0),
    ]
    topics = [str(t) for t in across_fill_topics(bridge)] + [address_topic("0x" + "44" * 20)]
    return {
        "address": spoke_pool,
        "topics": topics,
        "data": "0x" + encode(FILLED_RELAY_DATA, fields).hex(),
        "logIndex": "0x0",
        "transactionHash": tx_hash,
        "blockNumber": hex(block),
    }


async def sample_shapes(r: Recorder) -> list[SampleShape]:
    """One named swap session per `SAMPLE_ROUTES` route, waiting on its source receipt, with its receipts."""
    out = []
    for n, route in enumerate(SAMPLE_ROUTES):
        created = await r.call(f"create {route}", r.sessions.create(await r.create_body(route), TOKEN))
        assert created is not None, route
        action = created["current_action"]["unsigned_action"]
        hashes = swap_receipts(r.evm, action, int(action["expectedOutput"]), seed=500 + n, confirmations=1)
        await r.call(f"observe {route}", r.observe(created["session_id"], hashes))
        record = await r.sessions.store.get(created["session_id"])
        assert record is not None and record.status == "awaiting_source_receipt", route
        out.append(SampleShape(record, tuple(r.evm.txs[h] for h in hashes)))
    return out


@dataclass(frozen=True)
class Sampled:
    record: SessionRecord
    txs: list[EvmTransaction]  # to mine
    spoke_pool: str | None  # an Across deposit's fill to log there

    def chain(self) -> str:
        state = self.record.state
        chain = waiting_chain(self.record.route, int(state.get("current_step", 0)), str(state.get("phase")))
        assert chain is not None
        return chain.value

    def publish(self, mined: MinedTxs, block: int) -> None:
        """Its fact at `block`: its transactions mined there, or the relayer's fill logged there."""
        for tx in self.txs:
            mined.txs[tx.tx_hash.lower()] = (block, tx)
        if self.spoke_pool is not None:
            step = self.record.state["steps"][int(self.record.state.get("current_step", 0))]
            mined.logs.append(fill_log(step["bridge"], self.spoke_pool, block, "0x" + secrets.token_hex(32)))


async def seed_sample(store: SqlSessionStore, shapes: list[SampleShape], k: int) -> list[Sampled]:
    """`k` clones spread over the shapes, each naming fresh transaction hashes, each deposit its own id."""
    out = []
    for i in range(k):
        shape = shapes[i % len(shapes)]
        text, txs = json.dumps(shape.record.state), []
        for tx in shape.txs:
            fresh = "0x" + secrets.token_hex(32)
            text = text.replace(tx.tx_hash, fresh)
            txs.append(replace(tx, tx_hash=fresh))
        state = json.loads(text)
        bridge = state["steps"][int(state.get("current_step", 0))].get("bridge")
        if bridge:
            bridge.update(deposit_id=7_000_000 + i, source_tx="0x" + secrets.token_hex(32))
        sid = f"{i:08x}-0000-4000-8000-{secrets.token_hex(6)}"
        record = replace(shape.record, session_id=sid, version=1, state=state)
        event = SessionEvent(sid, 1, None, "create", record.status, record.created_at)
        await store.create(record, event, f"bench-lag:{sid}", "k", "h", {})
        out.append(Sampled(record, txs, shape.spoke_pool))
    return out


async def _after_a_whole_tick(watcher: Watcher, deadline: float) -> None:
    """Until a tick that started after now has finished (the loop started the one after it)."""
    start = watcher.ticks
    while watcher.ticks < start + 2 and time.perf_counter() < deadline:
        await asyncio.sleep(0.02)


async def measure_lag(
    watcher: Watcher,
    feed: EventFeed,
    store: SqlSessionStore,
    fake: Any,
    shapes: list[SampleShape],
    k: int,
    confirmations: dict[str, int],
    timeout: float,
) -> dict[str, Any]:
    """Steps 1-4 of the module docstring; the lag of each sampled session, in seconds (perf_counter). The
    sample is made final over `BLOCKS` new blocks, one at a time, each after a random pause of up to one
    tick interval, so the blocks fall at every point of the watcher's tick."""
    sample = await seed_sample(store, shapes, k)
    loop = asyncio.get_running_loop().create_task(watcher.loop(), name="bench-watch-loop")
    deadline = time.perf_counter() + timeout
    readable: dict[str, float] = {}
    published: dict[str, float] = {}
    types: dict[str, str] = {}
    try:
        before = fake.head + max(confirmations.values())  # the head before the first deciding block
        final_at: dict[str, int] = {}  # the block that makes a session's transactions final
        for i, one in enumerate(sample):
            sid = one.record.session_id
            final_at[sid] = before + 1 + i % BLOCKS
            one.publish(fake.mined, final_at[sid] - confirmations[one.chain()] + 1)
        fake.head = before  # 2: every sampled transaction mined, none final yet
        await _after_a_whole_tick(watcher, deadline)
        starts = [await feed.start_now(one.record.session_id, TOKEN) for one in sample]  # 3

        async def follow(start: StreamStart) -> None:
            async with contextlib.aclosing(feed.follow(start)) as events:
                async for event in events:
                    encode_event(event)  # the bytes the stream sends
                    readable[start.session_id] = time.perf_counter()
                    types[start.session_id] = f"{event.event} -> {event.to_status}"
                    return

        followers = [asyncio.create_task(follow(s)) for s in starts]
        await asyncio.sleep(1.0)  # each follower has read the log once and waits to be woken
        pause = random.Random(k)  # noqa: S311 - when blocks arrive, not a secret
        for block in range(before + 1, before + BLOCKS + 1):
            await asyncio.sleep(pause.uniform(0, watcher.config.interval_seconds))
            fake.head = block
            now = time.perf_counter()
            published.update({sid: now for sid, n in final_at.items() if n == block})
        _, pending = await asyncio.wait(followers, timeout=max(1.0, deadline - time.perf_counter()))
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
    finally:
        loop.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await loop
        await watcher.store.release(watcher.holder)
    # an event read before its session's deciding block was published would not be this lag: none is expected
    lags = sorted(readable[sid] - published[sid] for sid in readable if sid in published)
    kinds: dict[str, int] = {}
    for t in types.values():
        kinds[t] = kinds.get(t, 0) + 1
    facts: dict[str, int] = {}
    for one in sample:
        what = f"{'Across fill' if one.spoke_pool else 'receipt'} on {one.chain()}"
        facts[what] = facts.get(what, 0) + 1
    return {"k": k, "lags": lags, "missed": len(sample) - len(lags), "events": kinds, "facts": facts}


def percentile(values: list[float], p: float) -> float:
    """The nearest-rank percentile of sorted `values` (p in 0..100)."""
    if not values:
        return float("nan")
    rank = max(1, -(-len(values) * p // 100))
    return values[int(rank) - 1]


__all__ = [
    "MinedTxs",
    "SampleShape",
    "Sampled",
    "fill_log",
    "measure_lag",
    "percentile",
    "sample_shapes",
    "seed_sample",
]
