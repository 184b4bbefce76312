"""What the watcher costs per tick: upstream calls per chain and CPU, at 100, 1,000 and 10,000 waiting sessions.

    .venv/bin/python bench/watch_bench.py [--sizes 100,1000,10000] [--ticks 3]

Sessions: one session per route is created and named a transaction through the real service (the session corpus's
fakes: embedded market, fixed clock), which leaves it `awaiting_source_receipt` on its first step's chain (base,
arbitrum, robinhood, solana). Those documents are cloned under new ids into a real SQLite session store until
N sessions wait. The watcher (sessions/watch.py, the same object the app runs, `PerSessionGatherer`) then ticks
over them with the production readers (`observe.evm.JsonRpcEvmReader`, `observe.solana.JsonRpcSolanaReader`)
whose HTTP goes to a fake JSON-RPC (httpx.MockTransport) that counts every HTTP request and every JSON-RPC
method, per chain: the transactions are never mined, so every session stays pending and nothing is written.

Printed per size: HTTP requests and JSON-RPC methods per tick per chain, and CPU seconds per tick (process time,
the whole tick: store read, gather, decide). Today's gatherer reads per session, so calls grow with sessions;
the floor the issue sets (a bounded number per chain per block) needs the batched gatherer at the seam
(`Gatherer.outcomes(chain, records)`).
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
from routequote.sessions.watch import WatchConfig, Watcher, Watching  # noqa: E402
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
        await r.call(f"observe {route}", r.observe(sid, _named(route)))
        record = await r.sessions.store.get(sid)
        if record is not None and record.status == "awaiting_source_receipt":
            out.append(record)
    return out


async def seed(store: SqlSessionStore, shapes: list[SessionRecord], n: int) -> None:
    for i in range(n):
        t = shapes[i % len(shapes)]
        sid = str(uuid.uuid4())
        rec = replace(t, session_id=sid, version=1)
        event = SessionEvent(sid, 1, None, "create", t.status, t.created_at)
        await store.create(rec, event, f"bench:{sid}", "k", "h", {})


async def run_size(n: int, ticks: int, shapes: list[SessionRecord], tmp: Path) -> dict[str, Any]:
    store = SqlSessionStore(f"sqlite+aiosqlite:///{tmp / f'watch-{n}.sqlite3'}")
    await store.start()
    await seed(store, shapes, n)
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
    watcher = Watcher(sessions, SqlWatchStore(store), Watching(config, None))
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
    await client.aclose()
    await store.aclose()
    return {"n": n, "ticks": per_tick}


def _print(result: dict[str, Any]) -> None:
    last = result["ticks"][-1]
    cpu = sorted(t["cpu"] for t in result["ticks"])[len(result["ticks"]) // 2]
    wall = sorted(t["wall"] for t in result["ticks"])[len(result["ticks"]) // 2]
    print(
        f"\n== {result['n']:>6} sessions waiting: looked at {last['looked_at']}, advanced {last['advanced']}"
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
    args = parser.parse_args()
    shapes = await templates()
    chains = Counter(str(ROUTES[s.route].steps[0].source.chain.value) for s in shapes)
    print(f"session shapes: {len(shapes)} routes waiting on their first step's receipt ({dict(chains)})")
    with tempfile.TemporaryDirectory(prefix="watch-bench-") as tmp:
        for n in (int(x) for x in args.sizes.split(",")):
            _print(await run_size(n, args.ticks, shapes, Path(tmp)))


if __name__ == "__main__":
    asyncio.run(main())
