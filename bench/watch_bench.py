"""What the watcher costs per new block: upstream calls per chain and CPU, at 100, 1,000 and 10,000 waiting
sessions, from one run, and whether the floor of issue 42 holds.

    .venv/bin/python bench/watch_bench.py [--sizes 100,1000,10000] [--blocks 3] [--gatherer batched|per_session]
        [--lag-sample 100] [--lag-timeout 150]

Sessions, spread over the four chains and every read a step kind makes: each route's first step named through
the real service (the session corpus's fakes) and left `awaiting_source_receipt` (`TxByHash` on base, arbitrum,
robinhood; `SolanaTx` on solana, whose node is bench/_solana_fake.py), and bridges in flight built on created
sessions, `awaiting_destination`: Across deposits to Robinhood (`LatestBlock` + `LogsSince`, the fill search),
CCTP burns to Base waiting on Circle's attestation (`Attestation`), USDG OFT sends to Solana waiting on LayerZero
Scan (`ScanLookup`). Cloned under new ids, each naming its own transaction / deposit / message, into a real SQLite
store until N sessions wait.

The watcher (sessions/watch.py, as the app runs it) ticks over them with the production readers, whose HTTP goes
to a fake JSON-RPC node per chain, a fake Circle Iris and a fake LayerZero Scan (httpx.MockTransport) that count
every HTTP request and JSON-RPC call. Nothing is ever mined, attested or delivered: every session stays pending.
Tick 0 is the first sight of every session (its one-off reads, counted apart, per session); then `--blocks`
ticks each with one new block on every EVM chain (Solana has a new slot every tick); then one tick with no new
block; then one tick after the bridge lookup interval has passed.

Printed per size: JSON-RPC calls and HTTP requests per new block per chain, calls in a tick with no new block,
one-off calls per session at first sight, bridge lookups per interval, CPU per block (process time of a whole
tick: store read, gather, decide, for every chain). The floor: at most 3 JSON-RPC calls per EVM chain per new
block and the same at every size, plus one lookup per pending bridge message per lookup interval; on Solana, at
most 3 calls per new produced slot at every size (getTransaction apart: once per landed signature).

Then, at each size, the event lag (bench/_watch_lag.py): `--lag-sample` more sessions join the waiting ones,
their transactions are mined over new blocks while the watcher's real loop runs at the app's default tick
interval, and each lag is timed (perf_counter) from the publication of the block that makes a sampled session's
transactions final to its event being read by the event stream's `EventFeed`: p50, p99 (nearest rank) and max.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import secrets
import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
import structlog
from solders.pubkey import Pubkey
from solders.signature import Signature

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _solana_fake import SolanaFake, print_solana_floor  # noqa: E402
from _watch_lag import BLOCK_TIME, MinedTxs, SampleShape, measure_lag, percentile, sample_shapes  # noqa: E402
from tests.unit.sessions.corpus import TOKEN, Recorder  # noqa: E402

from routequote.config import Settings  # noqa: E402
from routequote.core.assets import CHAINS, Chain  # noqa: E402
from routequote.core.routes import ROUTES  # noqa: E402
from routequote.core.sessions.document import SessionDocument  # noqa: E402
from routequote.core.sessions.entries import StepStatus, parse_bridge  # noqa: E402
from routequote.observe.evm import JsonRpcEvmReader  # noqa: E402
from routequote.observe.iris import IrisAttestationReader  # noqa: E402
from routequote.observe.layerzero_scan import LayerZeroScanReader  # noqa: E402
from routequote.observe.solana import JsonRpcSolanaReader  # noqa: E402
from routequote.ports import SessionEvent, SessionRecord  # noqa: E402
from routequote.sessions import SessionService  # noqa: E402
from routequote.sessions.batch_gather import BatchedGatherer  # noqa: E402
from routequote.sessions.event_stream import EventFeed  # noqa: E402
from routequote.sessions.watch import Gatherer, PerSessionGatherer, WatchConfig, Watcher, Watching  # noqa: E402
from routequote.storage.sessions_sql import SqlSessionStore  # noqa: E402
from routequote.storage.watch_store import SqlWatchStore  # noqa: E402

HOSTS = {"base": "base.rpc.invalid", "arbitrum": "arbitrum.rpc.invalid", "robinhood": "robinhood.rpc.invalid"}
SOLANA_HOST = "solana.rpc.invalid"
IRIS_HOST, SCAN_HOST = "iris.invalid", "scan.invalid"
CHAINS_SHOWN = ("base", "arbitrum", "robinhood", "solana")
SPOKE = "0x" + "ab" * 20  # an Across SpokePool pinned on Robinhood for the bench (none is by default)
OFT_PROGRAM = str(Pubkey.from_bytes(bytes([7]) * 32))  # a USDG OFT program pin for the bench
FLOOR = 3


class FakeRpc:
    """Every JSON-RPC node, Iris and Scan, where nothing the sessions named is mined, attested or delivered.
    EVM heads move when the bench says (`head`); counts HTTP requests and JSON-RPC methods per host."""

    def __init__(self) -> None:
        self.requests: Counter[str] = Counter()
        self.methods: Counter[str] = Counter()
        self.chain_ids = {host: CHAINS[Chain(c)].chain_id for c, host in HOSTS.items()}
        self.head = 1_000_000
        self.mined = MinedTxs()  # empty but for the lag run's sampled transactions
        self.solana = SolanaFake()  # finalized slots, blocks, landed signatures (bench/_solana_fake.py)

    def _block(self, n: int) -> dict[str, Any]:
        return {
            "number": hex(n),
            "hash": f"0x{n:064x}",
            "parentHash": f"0x{n - 1:064x}",
            "timestamp": hex(BLOCK_TIME),
        }

    def _one(self, host: str, call: dict[str, Any]) -> dict[str, Any]:
        method = call.get("method", "")
        params = call.get("params") or []
        self.methods[f"{host.split('.')[0]}:{method}"] += 1
        result: Any = None
        if method == "eth_chainId":
            result = hex(int(self.chain_ids[host] or 0))
        elif method == "eth_blockNumber":
            result = hex(self.head)
        elif method == "eth_getBlockByNumber":
            result = self._block(self.head if params[0] == "latest" else int(params[0], 16))
        elif method == "eth_getBlockReceipts":
            result = self.mined.at(int(params[0], 16))
        elif method == "eth_getTransactionReceipt":
            result = self.mined.receipt(str(params[0]))
        elif method == "eth_getTransactionByHash":
            result = self.mined.transaction(str(params[0]))
        elif method == "eth_getLogs":
            result = self.mined.logs_matching(params[0], self.head)
        elif host == SOLANA_HOST:
            result = self.solana.answer(method, params)
        return {"jsonrpc": "2.0", "id": call.get("id"), "result": result}

    def handler(self, request: httpx.Request) -> httpx.Response:
        host = request.url.host
        self.requests[host.split(".")[0]] += 1
        if host in (IRIS_HOST, SCAN_HOST):
            self.methods[f"{host.split('.')[0]}:GET"] += 1
            return httpx.Response(404, json={"error": "not found"})  # not indexed yet: pending
        body = json.loads(request.content)
        answer = [self._one(host, c) for c in body] if isinstance(body, list) else self._one(host, body)
        return httpx.Response(200, json=answer)

    def clear(self) -> None:
        self.requests.clear()
        self.methods.clear()


def _named(route_key: str) -> list[str]:
    if CHAINS[ROUTES[route_key].steps[0].source.chain].family == "solana":
        return [str(Signature.from_bytes(secrets.token_bytes(64)))]
    return ["0x" + secrets.token_hex(32)]


def _recorder() -> Recorder:
    r = Recorder()
    rh = r.prepare.deployments[Chain.ROBINHOOD]
    r.prepare.deployments[Chain.ROBINHOOD] = replace(rh, across_spoke_pool=SPOKE)
    r.sessions.facts.config.usdg_oft_solana_program = OFT_PROGRAM
    return r


async def _in_flight(r: Recorder, route: str, bridge: dict[str, Any]) -> SessionRecord | None:
    """A created session of `route` whose first step's bridge is in flight (its source verified)."""
    created = await r.call(f"create {route}", r.sessions.create(await r.create_body(route), TOKEN))
    if created is None:
        return None
    record = await r.sessions.store.get(created["session_id"])
    assert record is not None
    state = SessionDocument.parse(record.state)
    entry = state.step(0).set(status=StepStatus.IN_FLIGHT, bridge=parse_bridge(bridge))
    state = state.with_step(0, entry, phase="destination", current_action=None)
    return replace(record, status="awaiting_destination", state=state.to_json())


BRIDGES = {
    # route: the first step's bridge record in flight (identifiers are replaced per clone)
    "arbitrum:USDC->robinhood:USDG": {
        "kind": "across",
        "origin_chain_id": 42161,
        "deposit_id": 1,
        "input_amount": 1_000_000,
        "output_amount": 990_000,
        "fill_deadline": 4_000_000_000,
        "recipient": "0x" + "22" * 20,
        "output_token": "0x" + "33" * 20,
        "source_tx": "0x" + "01" * 32,
        "search_from_block": 999_000,
    },
    "arbitrum:USDC->base:USDC": {
        "kind": "cctp",
        "source_domain": 3,
        "source_tx": "0x" + "02" * 32,
        "burn_amount": 1,
    },
    "robinhood:USDG->solana:USDG": {"kind": "oft", "guid": "0x" + "03" * 32, "source_tx": "0x" + "04" * 32},
}


async def templates() -> list[SessionRecord]:
    """One waiting session per route whose first step can be built (named, through the real create and
    observe), and one per bridge in flight."""
    r = _recorder()
    out: list[SessionRecord] = []
    for route in sorted(ROUTES):
        created = await r.call(f"create {route}", r.sessions.create(await r.create_body(route), TOKEN))
        if created is None:
            continue
        sid = created["session_id"]
        named = _named(route)
        await r.call(f"observe {route}", r.observe(sid, named))
        record = await r.sessions.store.get(sid)
        if record is not None and record.status == "awaiting_source_receipt":
            assert named[0] in json.dumps(record.state)
            out.append(record)
    for route, bridge in BRIDGES.items():
        made = await _in_flight(r, route, bridge)
        assert made is not None, route
        # as many bridges in flight as sessions waiting on a source receipt of one chain, spread over the three
        out.extend([made] * 8)
    return out


def _ids_in(record: SessionRecord) -> list[str]:
    """What a clone must name afresh: the transactions its step names, or its bridge's identifiers."""
    step = record.state["steps"][int(record.state.get("current_step", 0))]
    bridge = step.get("bridge") or {}
    if bridge:
        return [str(bridge[k]) for k in ("source_tx", "guid") if bridge.get(k)]
    return [str(x) for x in step.get("claimed_tx_ids") or []]


async def seed(store: SqlSessionStore, shapes: list[SessionRecord], n: int) -> None:
    for i in range(n):
        t = shapes[i % len(shapes)]
        sid = str(uuid.uuid4())
        text = json.dumps(t.state)
        names = _ids_in(t)
        assert names, "a waiting template names its transaction or message"
        for old in names:  # each clone its own transaction, deposit or message, as every real session
            fresh = _named(t.route)[0] if not old.startswith("0x") else "0x" + secrets.token_hex(32)
            text = text.replace(old, fresh)
        text = text.replace('"deposit_id": 1,', f'"deposit_id": {i + 10},')
        rec = replace(t, session_id=sid, version=1, state=json.loads(text))
        event = SessionEvent(sid, 1, None, "create", t.status, t.created_at)
        await store.create(rec, event, f"bench:{sid}", "k", "h", {})


def _sample(fake: FakeRpc, cpu: float, report: Any) -> dict[str, Any]:
    return {
        "cpu": cpu,
        "requests": dict(fake.requests),
        "methods": dict(fake.methods),
        "looked_at": report.looked_at,
        "advanced": report.advanced,
        "per_chain": dict(report.per_chain),
    }


async def run_size(
    n: int, blocks: int, shapes: list[SessionRecord], tmp: Path, gatherer: str, lag: LagRun
) -> dict[str, Any]:
    store = SqlSessionStore(f"sqlite+aiosqlite:///{tmp / f'watch-{n}.sqlite3'}")
    await store.start()
    await seed(store, shapes, n)
    fake = FakeRpc()
    client = httpx.AsyncClient(transport=httpx.MockTransport(fake.handler))
    r = _recorder()
    sessions = SessionService(
        r.prepare,
        store,
        evm=JsonRpcEvmReader({c: f"http://{h}/" for c, h in HOSTS.items()}, client),
        solana=JsonRpcSolanaReader(f"http://{SOLANA_HOST}/", client),
        attestations=IrisAttestationReader(f"http://{IRIS_HOST}", client),
        layerzero=LayerZeroScanReader(f"http://{SCAN_HOST}", client),
    )
    sessions.facts.config.usdg_oft_solana_program = OFT_PROGRAM
    config = WatchConfig(interval_seconds=1.0, batch=n + 100)
    g: Gatherer = PerSessionGatherer(sessions) if gatherer == "per_session" else BatchedGatherer(sessions)
    now = [0.0]
    if isinstance(g, BatchedGatherer):
        g.cache.clock = lambda: now[0]
    watcher = Watcher(sessions, SqlWatchStore(store), Watching(config, None), gatherer=g)

    async def tick(new_block: bool) -> dict[str, Any]:
        fake.head += 1 if new_block else 0
        fake.solana.advance(new_block)
        fake.clear()
        cpu0 = time.process_time()
        report = await watcher.tick()
        return _sample(fake, time.process_time() - cpu0, report)

    first = await tick(True)
    per_block = [await tick(True) for _ in range(blocks)]
    quiet = await tick(False)
    now[0] += config.bridge_lookup_seconds
    later = await tick(True)
    await watcher.store.release(watcher.holder)
    lagged: dict[str, Any] | None = None
    if lag.sample:
        if isinstance(g, BatchedGatherer):
            g.cache.clock = time.monotonic  # bridge lookups every interval of real time, as the app's
        real = WatchConfig(interval_seconds=lag.interval, batch=n + lag.sample + 100)
        feed = EventFeed(sessions, poll_seconds=lag.poll)
        lagged = await measure_lag(
            Watcher(sessions, SqlWatchStore(store), Watching(real, None), gatherer=g),
            feed,
            store,
            fake,
            lag.shapes,
            lag.sample,
            sessions.facts.config.confirmations,
            lag.timeout,
        )
    await client.aclose()
    await store.aclose()
    return {
        "n": n,
        "first": first,
        "blocks": per_block,
        "quiet": quiet,
        "later": later,
        "solana": fake.solana.summary(),
        "lag": lagged,
    }


@dataclass(frozen=True)
class LagRun:
    """The event-lag run (bench/_watch_lag.py) at each size: `sample` sessions (0: none), the app's defaults."""

    shapes: list[SampleShape]
    sample: int
    interval: float  # watch_interval_seconds
    poll: float  # event_stream_poll_seconds
    timeout: float


def _calls(sample: dict[str, Any], chain: str) -> dict[str, int]:
    return {m.split(":", 1)[1]: c for m, c in sample["methods"].items() if m.startswith(chain + ":")}


def _per_chain(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    blocks = result["blocks"]
    for chain in CHAINS_SHOWN:
        rpc = max(sum(_calls(b, chain).values()) for b in blocks)
        http = max(b["requests"].get(chain, 0) for b in blocks)
        first = sum(_calls(result["first"], chain).values())
        sessions = result["first"]["per_chain"].get(chain, 0)
        out[chain] = {
            "sessions": sessions,
            "rpc": rpc,
            "http": http,
            "methods": _calls(blocks[-1], chain),
            "quiet": sum(_calls(result["quiet"], chain).values()),
            "one_off_per_session": first / sessions if sessions else 0.0,
        }
    return out


def _print(result: dict[str, Any]) -> None:
    cpu = sorted(b["cpu"] for b in result["blocks"])[len(result["blocks"]) // 2]
    lookups = {h: result["later"]["requests"].get(h, 0) for h in ("iris", "scan")}
    print(f"\n== {result['n']:>6} sessions waiting: looked at {result['blocks'][-1]['looked_at']} per tick")
    print(f"   CPU per block (median tick, every chain): {cpu:.3f} s")
    for chain, row in _per_chain(result).items():
        print(
            f"   {chain:<10} sessions {row['sessions']:>6}  per new block: JSON-RPC {row['rpc']:>4}  HTTP "
            f"{row['http']:>3}  ({' '.join(f'{m}={c}' for m, c in sorted(row['methods'].items()))});  "
            f"no new block: {row['quiet']};  first sight: {row['one_off_per_session']:.2f} calls/session"
        )
    print(
        f"   bridge lookups after one lookup interval: Iris {lookups['iris']}, LayerZero Scan {lookups['scan']} "
        f"(pending messages: one each); within the interval: "
        f"{sum(result['blocks'][-1]['requests'].get(h, 0) for h in ('iris', 'scan'))}"
    )
    lag = result["lag"]
    if lag is not None:
        print(
            f"   event lag ({lag['k']} sampled sessions more in flight, {len(lag['lags'])} measured, "
            f"{lag['missed']} not advanced in time): {_lag_cells(lag)};  events: "
            + ", ".join(f"{t} x{c}" for t, c in sorted(lag["events"].items()))
        )
        print("   sampled facts: " + ", ".join(f"{t} x{c}" for t, c in sorted(lag["facts"].items())))


def _lag_cells(lag: dict[str, Any]) -> str:
    v = lag["lags"]
    if not v:
        return "p50 - p99 - max -"
    return f"p50 {percentile(v, 50):.3f} s  p99 {percentile(v, 99):.3f} s  max {v[-1]:.3f} s"


def _summary(results: list[dict[str, Any]]) -> None:
    print("\n== summary: JSON-RPC calls / HTTP requests per new block per chain, CPU per block (median)")
    print(f"   {'sessions':>8}" + "".join(f" {c:>13}" for c in CHAINS_SHOWN) + f" {'CPU s':>7}  event lag")
    rows = {r["n"]: _per_chain(r) for r in results}
    for result in results:
        cpu = sorted(b["cpu"] for b in result["blocks"])[len(result["blocks"]) // 2]
        cells = "".join(
            f" {rows[result['n']][c]['rpc']:>7} / {rows[result['n']][c]['http']:>3}" for c in CHAINS_SHOWN
        )
        lag = _lag_cells(result["lag"]) if result["lag"] else "not measured"
        print(f"   {result['n']:>8}{cells} {cpu:>7.3f}  {lag}")
    evm = ("base", "arbitrum", "robinhood")
    same = all(len({rows[n][c]["rpc"] for n in rows}) == 1 for c in evm)
    bounded = all(rows[n][c]["rpc"] <= FLOOR for n in rows for c in evm)
    print(
        f"   floor (EVM: <= {FLOOR} JSON-RPC calls per chain per new block, the same at every size): "
        f"{'HOLDS' if same and bounded else 'NOT MET'}"
    )
    print_solana_floor(results, len(results[0]["blocks"]), FLOOR)


async def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,10000")
    parser.add_argument("--blocks", type=int, default=3)
    parser.add_argument("--gatherer", default="batched", choices=["batched", "per_session"])
    parser.add_argument(
        "--lag-sample", type=int, default=100, help="sessions whose event lag is measured (0: none)"
    )
    parser.add_argument("--lag-timeout", type=float, default=150.0, help="seconds the lag run waits at most")
    args = parser.parse_args()
    # the lag run's ticks log what they advance (info): keep the printed figures readable
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    shapes = await templates()
    defaults = Settings.model_fields
    r = _recorder()
    across = "arbitrum:USDC->robinhood:USDG"
    # a fill that delivers at least the step's minimum (the session quoted 100 USDC): it completes
    delivering = {**BRIDGES[across], "input_amount": 100_000_000, "output_amount": 100_000_000}
    fills = await _in_flight(r, across, delivering)
    assert fills is not None
    lag = LagRun(
        [*await sample_shapes(r), SampleShape(fills, spoke_pool=SPOKE)],
        args.lag_sample,
        float(defaults["watch_interval_seconds"].default),
        float(defaults["event_stream_poll_seconds"].default),
        args.lag_timeout,
    )
    print(
        f"event lag: the watcher's loop every {lag.interval:g} s (watch_interval_seconds' default), streams "
        f"polling every {lag.poll:g} s (event_stream_poll_seconds'); sampled routes: {len(lag.shapes)}; "
        f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs"
    )
    kinds = Counter((str(s.state["phase"]), str(ROUTES[s.route].steps[0].source.chain.value)) for s in shapes)
    print(f"session shapes: {len(shapes)} ({dict(kinds)})")
    with tempfile.TemporaryDirectory(prefix="watch-bench-") as tmp:
        results = []
        for n in (int(x) for x in args.sizes.split(",")):
            result = await run_size(n, args.blocks, shapes, Path(tmp), args.gatherer, lag)
            _print(result)
            results.append(result)
    _summary(results)


if __name__ == "__main__":
    asyncio.run(main())
