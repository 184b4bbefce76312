"""Route matrix benchmark: what filling the explorer's 72-cell matrix costs, the old way against the new.

Against one `routequote serve` (one worker, rate limits off), in pairs interleaved in one run:
- old fill: 72 POST /v2/quote, six in flight at a time (what the explorer did: 72 of a visitor's 120/minute);
- matrix, computed: one POST /v2/route-matrix at an amount the server has not seen (all 72 routes priced);
- matrix, kept: the same request again (answered from the last matrices kept).
Each amount is fresh for its pair, so neither side reuses the other's pricing cache. Prints the medians, the
ratios and a quote's own latency while a computed matrix runs (the event loop is handed back between routes).

Run: .venv/bin/python bench/route_matrix_bench.py [--pairs 15]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))

from _harness import served  # noqa: E402

from routequote.core.routes import ROUTES  # noqa: E402


def quote_body(route: str, amount: float) -> dict[str, object]:
    (fc, ft), (tc, tt) = (side.split(":") for side in route.split("->"))
    return {"from_chain": fc, "from_token": ft, "to_chain": tc, "to_token": tt, "amount_usd": amount}


async def old_fill(http: httpx.AsyncClient, amount: float) -> float:
    queue = list(ROUTES)
    started = time.perf_counter()

    async def worker() -> None:
        while queue:
            r = await http.post("/v2/quote", json=quote_body(queue.pop(), amount))
            assert r.status_code == 200, r.text

    await asyncio.gather(*(worker() for _ in range(6)))
    return time.perf_counter() - started


async def matrix(http: httpx.AsyncClient, amount: float) -> float:
    started = time.perf_counter()
    r = await http.post("/v2/route-matrix", json={"amount_usd": amount})
    assert r.status_code == 200 and r.json()["priced_routes"] == 72, r.text
    return time.perf_counter() - started


async def quote_during_matrix(http: httpx.AsyncClient, amount: float) -> float:
    """The latency of one quote sent while a computed matrix runs."""
    running = asyncio.create_task(http.post("/v2/route-matrix", json={"amount_usd": amount}))
    await asyncio.sleep(0.005)
    started = time.perf_counter()
    r = await http.post("/v2/quote", json=quote_body("base:ETH->base:USDC", 100))
    took = time.perf_counter() - started
    assert r.status_code == 200 and (await running).status_code == 200
    return took


async def run(base: str, pairs: int) -> None:
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        await old_fill(http, 999.5)  # warm both paths
        await matrix(http, 998.5)
        old, computed, kept, during, alone = [], [], [], [], []
        for i in range(pairs):
            a, b = 10 + i * 61.25, 11 + i * 61.25  # amounts nobody asked for yet
            if i % 2:
                old.append(await old_fill(http, a))
                computed.append(await matrix(http, b))
            else:
                computed.append(await matrix(http, b))
                old.append(await old_fill(http, a))
            kept.append(await matrix(http, b))
            started = time.perf_counter()
            await http.post("/v2/quote", json=quote_body("base:ETH->base:USDC", 100))
            alone.append(time.perf_counter() - started)
            during.append(await quote_during_matrix(http, 7 + i * 61.25))
    med = statistics.median
    print(f"pairs: {pairs} (72 routes each)")
    print(f"old fill (72 quotes, 6 in flight): median {med(old) * 1e3:7.1f} ms  requests of the limit: 72")
    print(
        f"route matrix, computed:            median {med(computed) * 1e3:7.1f} ms  requests of the limit: 1"
    )
    print(f"route matrix, kept:                median {med(kept) * 1e3:7.2f} ms")
    print(f"ratio old fill / computed matrix: {med(old) / med(computed):.2f}x")
    print(f"ratio computed / kept matrix:     {med(computed) / med(kept):.1f}x")
    print(
        f"one quote alone: median {med(alone) * 1e3:.2f} ms; "
        f"sent while a computed matrix runs: median {med(during) * 1e3:.2f} ms, max {max(during) * 1e3:.2f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=15)
    args = parser.parse_args()
    with served() as base:
        asyncio.run(run(base, args.pairs))


if __name__ == "__main__":
    main()
