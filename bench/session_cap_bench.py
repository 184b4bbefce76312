"""What the exact per-client cap on open sessions costs a session create, at the store (issue 38 item 2).

In one process, on an SQLite file and on a temporary PostgreSQL database (skipped, with the reason, when
127.0.0.1:5432 does not answer), pairs interleaved A B / B A over --rounds rounds:

* capped:  `SqlSessionStore.create(..., client=, max_open=)`, the count and the insert in one transaction
           (SQLite: BEGIN IMMEDIATE; PostgreSQL: a per-client advisory lock, then one statement, then COMMIT);
* counted: `create(..., client=, max_open=0)`, as with ROUTEQUOTE_MAX_OPEN_SESSIONS_PER_CLIENT=0: no count,
           the client row written with the session (one statement on PostgreSQL);
* bare:    `create(...)` with no client (no request client, as on stdio): the single statement (PostgreSQL) or
           transaction (SQLite) every create was before.

Each phase is --creates creates from --clients clients, --concurrency at a time (one client's creates
serialise on its lock under a cap; different clients do not). Every client's open sessions stay under the cap
(--cap), so every capped create counts them. Prints creates per second and the ratios capped / bare and counted /
bare per round (median and range); asserts no timing.

Run: .venv/bin/python bench/session_cap_bench.py [--creates 400] [--rounds 3] [--concurrency 16] [--clients 100]
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from routequote.ports import SessionEvent, SessionRecord  # noqa: E402
from routequote.storage.sessions_common import create_scope  # noqa: E402
from routequote.storage.sessions_sql import SqlSessionStore  # noqa: E402

AT = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
STATE = {"steps": [{"index": 0, "status": "action_ready", "note": "x" * 2000}], "current_step": 0}


MODES = ("capped", "counted", "bare")


async def phase(store: SqlSessionStore, args: argparse.Namespace, mode: str, tag: str) -> float:
    sem = asyncio.Semaphore(args.concurrency)

    async def one(i: int) -> None:
        sid = f"ses_{tag}_{i}_{secrets.token_hex(4)}"
        record = SessionRecord(
            sid, secrets.token_hex(32), 1, "action_ready", "base:ETH->base:USDC", AT, AT, STATE
        )
        client = None if mode == "bare" else f"10.0.0.{i % args.clients}"
        async with sem:
            answer = await store.create(
                record,
                SessionEvent(sid, 1, None, "create", "action_ready", AT),
                create_scope(record.token_sha256),
                "k",
                "a" * 64,
                {"session_id": sid},
                client=client,
                max_open=args.cap if mode == "capped" else 0,
            )
        assert answer is None

    started = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(args.creates)))
    return args.creates / (time.perf_counter() - started)


async def measure(url: str, args: argparse.Namespace) -> dict[str, list[float]]:
    store = SqlSessionStore(url)
    await store.start()
    rates: dict[str, list[float]] = {m: [] for m in MODES}
    try:
        for m in MODES:
            await phase(store, args, m, f"warm_{m}")
        for r in range(args.rounds):
            for m in MODES if r % 2 == 0 else MODES[::-1]:
                rates[m].append(await phase(store, args, m, f"{r}{m}"))
    finally:
        await store.aclose()
    return rates


def line(backend: str, rates: dict[str, list[float]]) -> str:
    out = f"{backend:11s} " + "  ".join(f"{m} {statistics.median(rates[m]):6.0f}/s" for m in MODES)
    for m in MODES[:2]:
        ratios = [a / b for a, b in zip(rates[m], rates["bare"], strict=True)]
        out += f"  {m}/bare {statistics.median(ratios):.2f} ({min(ratios):.2f}..{max(ratios):.2f})"
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--creates", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--clients", type=int, default=100)
    args = parser.parse_args()
    # every client stays under the cap: its creates over all phases
    args.cap = args.creates * (len(MODES) * (args.rounds + 1)) // args.clients + 1
    print(
        f"session create at the store, {args.creates} creates per phase, {args.concurrency} at a time, "
        f"{args.clients} clients (cap {args.cap}), {args.rounds} interleaved rounds"
    )
    with tempfile.TemporaryDirectory() as tmp:
        print(line("sqlite", asyncio.run(measure(f"sqlite:///{tmp}/cap.sqlite3", args))))
    try:
        from tests.support.postgres import postgres_up, temporary_database
    except ImportError as exc:  # pragma: no cover - depends on the checkout
        print(f"postgresql skipped: {exc}")
        return
    if not postgres_up():
        print("postgresql skipped: nothing answers on 127.0.0.1:5432")
        return
    with temporary_database("routequote_test_bench_cap") as url:
        print(line("postgresql", asyncio.run(measure(url, args))))


if __name__ == "__main__":
    main()
