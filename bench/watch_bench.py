"""What the watcher costs per tick: upstream calls per chain and CPU, at 100, 1,000 and 10,000 waiting sessions,
for both gatherers from one run.

    .venv/bin/python bench/watch_bench.py [--sizes 100,1000,10000] [--ticks 3] [--gatherers per_session,batched]

Sessions: one session per route is created and named a transaction through the real service (the session corpus's
fakes: embedded market, fixed clock), which leaves it `awaiting_source_receipt` on its first step's chain (base,
arbitrum, robinhood, solana). Those documents are cloned under new ids into a real SQLite session store until
N sessions wait. The watcher (sessions/watch.py, the same object the app runs) then ticks over them, once with
`PerSessionGatherer` and once with `BatchedGatherer` (the default), with the production readers
(`observe.evm.JsonRpcEvmReader`, `observe.solana.JsonRpcSolanaReader`) whose HTTP goes to a fake JSON-RPC
(httpx.MockTransport) that counts every HTTP request and every JSON-RPC method, per chain: the transactions are
never mined, so every session stays pending and nothing is written.

Printed per size and gatherer: HTTP requests and JSON-RPC calls per tick per chain, and CPU seconds per tick
(process time, the whole tick: store read, gather, decide). The per-session gatherer reads per session, so both
grow with the sessions; the batched one sends two JSON-RPC batches per EVM chain and one per Solana per tick
(each one HTTP request per 1,000 calls: the JSON-RPC client's batch size), so its HTTP requests grow only past
that, while its JSON-RPC calls are one receipt / `getTransaction` per pending transaction plus a fixed two.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
from solders.signature import Signature

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.unit.sessions.corpus import TOKEN, Recorder  # noqa: E402

from routequote.core.assets import CHAINS, Chain  # noqa: E402
from routequote.core.routes import ROUTES  # noqa: E402
from routequote.observe.evm import JsonRpcEvmReader  # noqa: E402
from routequote.observe.solana import JsonRpcSolanaReader  # noqa: E402
from routequote.ports import SessionEvent, SessionRecord  # noqa: E402
from routequote.sessions import SessionService  # noqa: E402
from routequote.sessions.batch_gather import BatchedGatherer  # noqa: E402
from routequote.sessions.watch import Gatherer, PerSessionGatherer, WatchConfig, Watcher, Watching  # noqa: E402
from routequote.storage.sessions_sql import SqlSessionStore  # noqa: E402
from routequote.storage.watch_store import SqlWatchStore  # noqa: E402

HOSTS = {"base": "base.rpc.invalid", "arbitrum": "arbitrum.rpc.invalid", "robinhood": "robinhood.rpc.invalid"}
SOLANA_HOST = "solana.rpc.invalid"


class FakeRpc:
    """Answers every JSON-RPC call as a chain where nothing the sessions named is mined yet; counts per host."""

    def __init__(self) -> None:
        self.requests: Counter[str] = Counter()
        self.methods: Counter[str] = Counter()
        self.chain_ids = {host: CHAINS[Chain(c)].chain_id for c, host in HOSTS.items()}

    def _one(self, host: str, call: dict[str, Any]) -> dict[str, Any]:
        method = call.get("method", "")
        self.methods[f"{host.split('.')[0]}:{method}"] += 1
        result: Any = None
        if method == "eth_chainId":
            result = hex(int(self.chain_ids[host] or 0))
        elif method == "eth_blockNumber":
            result = hex(1_000_000)
        elif method == "eth_getLogs":
            result = []
        return {"jsonrpc": "2.0", "id": call.get("id"), "result": result}

    def handler(self, request: httpx.Request) -> httpx.Response:
        host = request.url.host
        self.requests[host.split(".")[0]] += 1
        body = json.loads(request.content)
        answer = [self._one(host, c) for c in body] if isinstance(body, list) else self._one(host, body)
        return httpx.Response(200, json=answer)


def _named(route_key: str) -> list[str]:
    if CHAINS[ROUTES[route_key].steps[0].source.chain].family == "solana":
        return [str(Signature.from_bytes(secrets.token_bytes(64)))]
    return ["0x" + secrets.token_hex(32)]


async def templates() -> list[SessionRecord]:
    """One waiting session per route whose first step can be built, through the real create and observe."""
    r = Recorder()
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
    return out


def _names_in(record: SessionRecord) -> list[str]:
    """The transaction names a waiting template's current step holds."""
    step = record.state["steps"][int(record.state.get("current_step", 0))]
    return [str(x) for x in step.get("claimed_tx_ids") or []]


async def seed(store: SqlSessionStore, shapes: list[SessionRecord], n: int) -> None:
    for i in range(n):
        t = shapes[i % len(shapes)]
        sid = str(uuid.uuid4())
        # each clone names its own transaction, as every real session does (else the batched gatherer would
        # read one transaction for all clones of a route)
        text = json.dumps(t.state)
        names = _names_in(t)
        assert names, "a waiting template names its transaction"
        for old in names:
            text = text.replace(old, _named(t.route)[0])
        rec = replace(t, session_id=sid, version=1, state=json.loads(text))
        event = SessionEvent(sid, 1, None, "create", t.status, t.created_at)
        await store.create(rec, event, f"bench:{sid}", "k", "h", {})


async def run_size(
    n: int, ticks: int, shapes: list[SessionRecord], tmp: Path, gatherers: list[str]
) -> list[dict[str, Any]]:
    store = SqlSessionStore(f"sqlite+aiosqlite:///{tmp / f'watch-{n}.sqlite3'}")
    await store.start()
    await seed(store, shapes, n)
    out = [await run_gatherer(store, n, ticks, name) for name in gatherers]
    await store.aclose()
    return out


async def run_gatherer(store: SqlSessionStore, n: int, ticks: int, name: str) -> dict[str, Any]:
    fake = FakeRpc()
    client = httpx.AsyncClient(transport=httpx.MockTransport(fake.handler))
    r = Recorder()
    sessions = SessionService(
        r.prepare,
        store,
        evm=JsonRpcEvmReader({c: f"http://{h}/" for c, h in HOSTS.items()}, client),
        solana=JsonRpcSolanaReader(f"http://{SOLANA_HOST}/", client),
    )
    config = WatchConfig(interval_seconds=1.0, batch=n)
    gatherer: Gatherer = PerSessionGatherer(sessions) if name == "per_session" else BatchedGatherer(sessions)
    watcher = Watcher(sessions, SqlWatchStore(store), Watching(config, None), gatherer=gatherer)
    per_tick: list[dict[str, Any]] = []
    for _ in range(ticks):
        fake.requests.clear()
        fake.methods.clear()
        cpu0, wall0 = time.process_time(), time.perf_counter()
        report = await watcher.tick()
        per_tick.append(
            {
                "cpu": time.process_time() - cpu0,
                "wall": time.perf_counter() - wall0,
                "requests": dict(fake.requests),
                "methods": dict(fake.methods),
                "looked_at": report.looked_at,
                "advanced": report.advanced,
                "per_chain_sessions": dict(report.per_chain),
            }
        )
    await watcher.store.release(watcher.holder)  # the next gatherer's watcher leads at once
    await client.aclose()
    return {"n": n, "gatherer": name, "ticks": per_tick}


def _print(result: dict[str, Any]) -> None:
    last = result["ticks"][-1]
    cpu = sorted(t["cpu"] for t in result["ticks"])[len(result["ticks"]) // 2]
    wall = sorted(t["wall"] for t in result["ticks"])[len(result["ticks"]) // 2]
    print(
        f"\n== {result['n']:>6} sessions waiting, {result['gatherer']} gatherer: looked at {last['looked_at']}, "
        f"advanced {last['advanced']}"
    )
    print(f"   CPU per tick (median): {cpu:.3f} s   wall per tick: {wall:.3f} s")
    for chain in ("base", "arbitrum", "robinhood", "solana"):
        methods = {m.split(":", 1)[1]: c for m, c in last["methods"].items() if m.startswith(chain + ":")}
        print(
            f"   {chain:<10} sessions {last['per_chain_sessions'].get(chain, 0):>6}  "
            f"HTTP requests/tick {last['requests'].get(chain, 0):>6}  JSON-RPC calls/tick {sum(methods.values()):>6}  "
            + " ".join(f"{m}={c}" for m, c in sorted(methods.items()))
        )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,10000")
    parser.add_argument("--ticks", type=int, default=3)
    parser.add_argument("--gatherers", default="per_session,batched")
    args = parser.parse_args()
    gatherers = [g for g in args.gatherers.split(",") if g]
    if not set(gatherers) <= {"per_session", "batched"}:
        parser.error("--gatherers: per_session and/or batched")
    shapes = await templates()
    chains = Counter(str(ROUTES[s.route].steps[0].source.chain.value) for s in shapes)
    print(f"session shapes: {len(shapes)} routes waiting on their first step's receipt ({dict(chains)})")
    with tempfile.TemporaryDirectory(prefix="watch-bench-") as tmp:
        results = []
        for n in (int(x) for x in args.sizes.split(",")):
            for result in await run_size(n, args.ticks, shapes, Path(tmp), gatherers):
                _print(result)
                results.append(result)
    _summary(results)


def _summary(results: list[dict[str, Any]]) -> None:
    """One table: per size and gatherer, HTTP requests / JSON-RPC calls per tick per chain, CPU per tick."""
    chains = ("base", "arbitrum", "robinhood", "solana")
    print(
        "\n== summary: HTTP requests / JSON-RPC calls per chain per tick (last tick), CPU per tick (median)"
    )
    print(f"   {'sessions':>8} {'gatherer':<12}" + "".join(f" {c:>17}" for c in chains) + f" {'CPU s':>8}")
    for result in results:
        last = result["ticks"][-1]
        cpu = sorted(t["cpu"] for t in result["ticks"])[len(result["ticks"]) // 2]
        cells = []
        for chain in chains:
            calls = sum(c for m, c in last["methods"].items() if m.startswith(chain + ":"))
            cells.append(f" {last['requests'].get(chain, 0):>8} / {calls:>6}")
        print(f"   {result['n']:>8} {result['gatherer']:<12}" + "".join(cells) + f" {cpu:>8.3f}")


if __name__ == "__main__":
    asyncio.run(main())
