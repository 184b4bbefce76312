"""Benchmark: routequote ``swap_exact_input`` vs ``@uniswap/v3-sdk`` ``Pool.getOutputAmount``.

Same pool state and swaps for both (the synthetic 3,000 USDC/ETH pool of
the clmm-speed reference note: fee 500, spacing 10, 200 initialized ticks from 100 nested positions),
one run: prints per-case microseconds for both, the ratio, and checks that amountOut, the final
sqrt price and the final tick are identical. Needs node + ``npm install`` in tests/reference.

    .venv/bin/python bench/clmm_bench.py
"""

from __future__ import annotations

import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

from routequote.core.clmm import ClmmPool, swap_exact_input

ROOT = Path(__file__).resolve().parents[1]
REF = ROOT / "tests" / "reference"


def build_pool() -> tuple[ClmmPool, list[tuple[int, int, int]]]:
    rng = random.Random(7)
    tick, spacing = 196256, 10
    sqrt_price = 1446501726624926496477173928747177
    nets: dict[int, int] = {}
    aligned = tick // spacing * spacing
    for i in range(100):
        near = i < 30
        lo = aligned - spacing * (rng.randint(1, 30) if near else rng.randint(31, 223))
        hi = aligned + spacing * (rng.randint(1, 30) if near else rng.randint(31, 181))
        liq = int(1.66e17 * (3.0 if near else 1.0) * rng.uniform(0.6, 1.4))
        nets[lo] = nets.get(lo, 0) + liq
        nets[hi] = nets.get(hi, 0) - liq
    ticks = tuple(sorted(nets.items()))
    active = sum(n for t, n in ticks if t <= tick)
    pool = ClmmPool("uniswap_v3", 500, spacing, sqrt_price, tick, active, ticks)
    gross: dict[int, int] = {}
    for t, n in ticks:
        gross[t] = abs(n)
    return pool, [(t, n, gross[t]) for t, n in ticks]


CASES = [
    ("$1k USDC->WETH", True, 1_000 * 10**6),
    ("$1k WETH->USDC", False, 333_333_333_333_333_333),
    ("$2M USDC->WETH", True, 2_000_000 * 10**6),
    ("$2M WETH->USDC", False, 666_666_666_666_666_666_666),
    ("$10M USDC->WETH", True, 10_000_000 * 10**6),
    ("$10M WETH->USDC", False, 3_333_333_333_333_333_333_333),
]


def time_python(pool: ClmmPool, rounds: int, iters: int) -> list[float]:
    for _ in range(2000):
        for _, zfo, amt in CASES:
            swap_exact_input(pool, zfo, amt)
    per_case: list[list[float]] = [[] for _ in CASES]
    clock = time.perf_counter_ns
    for _ in range(rounds):
        for i, (_, zfo, amt) in enumerate(CASES):
            samples = []
            for _ in range(iters):
                t0 = clock()
                swap_exact_input(pool, zfo, amt)
                samples.append(clock() - t0)
            per_case[i].append(statistics.median(samples) / 1000)
    return [statistics.median(x) for x in per_case]


def main() -> int:
    pool, ticks = build_pool()
    req = {
        "pool": {
            "fee": pool.fee_pips,
            "tick_spacing": pool.tick_spacing,
            "sqrt_price": str(pool.sqrt_price),
            "tick_current": pool.tick_current,
            "liquidity": str(pool.liquidity),
            "ticks": [[t, str(n), str(g)] for t, n, g in ticks],
        },
        "swaps": [[zfo, str(a)] for _, zfo, a in CASES],
        "rounds": 7,
        "iters": 2000,
    }
    proc = subprocess.run(
        ["node", str(REF / "uniswap_bench.cjs")],
        input=json.dumps(req),
        capture_output=True,
        text=True,
        check=True,
    )
    js = json.loads(proc.stdout)
    py_us = time_python(pool, rounds=7, iters=3000)
    ok = True
    print(f"{'case':18} {'crossed':>7} {'SDK us':>8} {'ours us':>8} {'speedup':>8}  identical")
    ratios = []
    for (name, zfo, amt), sdk, js_us, us in zip(CASES, js["outputs"], js["us_per_call"], py_us, strict=True):
        r = swap_exact_input(pool, zfo, amt)
        same = (str(r.amount_out), str(r.sqrt_price_after), r.tick_after) == (
            sdk["amount_out"],
            sdk["sqrt_price_after"],
            sdk["tick_after"],
        )
        ok &= same
        ratios.append(js_us / us)
        print(f"{name:18} {r.ticks_crossed:>7} {js_us:8.1f} {us:8.2f} {js_us / us:7.1f}x  {same}")
    print(
        f"speedup: min {min(ratios):.1f}x, median {statistics.median(ratios):.1f}x; outputs identical: {ok}"
    )
    return 0 if ok and min(ratios) >= 3 else 1


if __name__ == "__main__":
    sys.exit(main())
