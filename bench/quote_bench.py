"""Quote hot path benchmark. Prints ratios measured in one run (the machine is shared: no thresholds here).

1. In-process: all 72 routes x {1, 50, 1000} USD through RouteQuoteService.quote_request, cold (fresh
   service, nothing cached) and warm (pricing cached per route/amount/market version).
2. Over HTTP with one uvicorn worker: req/s of POST /v2/quote against GET /v2/status in the same
   server, side by side, with wrk (Debian package `wrk`). Target ratio quote/status >= 0.4.

Run: .venv/bin/python bench/quote_bench.py [--duration 10] [--connections 32]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _harness import BODIES, lua_script, served, wrk  # noqa: E402

from routequote.clock import SystemClock, UuidFactory  # noqa: E402
from routequote.market.snapshot import EmbeddedSnapshot  # noqa: E402
from routequote.service import RouteQuoteService, ServiceConfig  # noqa: E402
from routequote.storage.quotes import MemoryQuoteStore  # noqa: E402


def new_service() -> RouteQuoteService:
    return RouteQuoteService(
        EmbeddedSnapshot(), MemoryQuoteStore(), SystemClock(), UuidFactory(), ServiceConfig()
    )


async def sweep(service: RouteQuoteService) -> float:
    t0 = time.perf_counter()
    for body in BODIES:
        await service.quote_request(body)
    return time.perf_counter() - t0


def in_process() -> None:
    cold = []
    for _ in range(3):
        cold.append(asyncio.run(sweep(new_service())))
    service = new_service()
    asyncio.run(sweep(service))
    warm = [asyncio.run(sweep(service)) for _ in range(5)]
    n = len(BODIES)
    print(f"in-process sweep of {n} quotes (72 routes x 3 amounts):")
    print(
        f"  cold (nothing cached): best {min(cold):.3f} s  ({min(cold) / n * 1e6:.0f} us/quote)   target < 1 s"
    )
    print(f"  warm (pricing cached): best {min(warm):.3f} s  ({min(warm) / n * 1e6:.0f} us/quote)")


def over_http(duration: int, connections: int, redis_url: str) -> None:
    if not shutil.which("wrk"):
        print("HTTP benchmark skipped: wrk is not installed (apt-get install wrk)")
        return
    store = {"quote_store": "redis", "redis_url": redis_url} if redis_url else {}
    with served(**store) as base, lua_script(lambda body, _: body, {}) as script:
        wrk(f"{base}/v2/status", 2, connections)  # warm-up
        wrk(f"{base}/v2/quote", 2, connections, script)
        rows = []
        for _ in range(2):  # interleave to share the machine's noise fairly
            rows.append(("status", *wrk(f"{base}/v2/status", duration, connections)))
            rows.append(("quote", *wrk(f"{base}/v2/quote", duration, connections, script)))
    status = max(r[1] for r in rows if r[0] == "status")
    quote = max(r[1] for r in rows if r[0] == "quote")
    where = "Redis quote store" if redis_url else "memory quote store"
    print(f"HTTP, 1 uvicorn worker, {where}, wrk -t1 -c{connections} -d{duration}s (best of 2, interleaved):")
    for name, rps, lat in rows:
        print(f"  {name:6s} {rps:9.0f} req/s  {lat}")
    print(f"  ratio quote/status = {quote / status:.2f}   target >= 0.4")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--duration", type=int, default=8)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--skip-http", action="store_true")
    parser.add_argument("--redis-url", default="", help="also share issued quotes through this Redis")
    args = parser.parse_args()
    in_process()
    if not args.skip_http:
        over_http(args.duration, args.connections, args.redis_url)


if __name__ == "__main__":
    main()
