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
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from routequote.clock import SystemClock, UuidFactory
from routequote.core.assets import ASSETS
from routequote.market.snapshot import EmbeddedSnapshot
from routequote.service import RouteQuoteService, ServiceConfig
from routequote.storage.quotes import MemoryQuoteStore

BODIES = [
    {
        "from_chain": a.chain.value,
        "from_token": a.token.value,
        "to_chain": b.chain.value,
        "to_token": b.token.value,
        "amount_usd": usd,
    }
    for a in ASSETS.values()
    for b in ASSETS.values()
    if a.key != b.key
    for usd in (1, 50, 1000)
]


def new_service() -> RouteQuoteService:
    return RouteQuoteService(EmbeddedSnapshot(), MemoryQuoteStore(), SystemClock(), UuidFactory(), ServiceConfig())


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
    print(f"  cold (nothing cached): best {min(cold):.3f} s  ({min(cold) / n * 1e6:.0f} us/quote)   target < 1 s")
    print(f"  warm (pricing cached): best {min(warm):.3f} s  ({min(warm) / n * 1e6:.0f} us/quote)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wrk(url: str, duration: int, connections: int, script: str | None = None) -> tuple[float, str]:
    cmd = ["wrk", "-t1", f"-c{connections}", f"-d{duration}s", "--latency"]
    if script:
        cmd += ["-s", script]
    out = subprocess.run([*cmd, url], capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    p50 = re.search(r"^\s+50%\s+(\S+)", out, re.M)
    p99 = re.search(r"^\s+99%\s+(\S+)", out, re.M)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if non2xx:
        raise SystemExit(f"wrk saw {non2xx.group(1)} non-2xx responses from {url}")
    return rps, f"p50 {p50.group(1) if p50 else '?'} p99 {p99.group(1) if p99 else '?'}"


def over_http(duration: int, connections: int) -> None:
    if not shutil.which("wrk"):
        print("HTTP benchmark skipped: wrk is not installed (apt-get install wrk)")
        return
    port = free_port()
    env = {**os.environ, "ROUTEQUOTE_RATE_LIMIT": "off", "ROUTEQUOTE_PORT": str(port), "ROUTEQUOTE_LOG_LEVEL": "warning"}
    exe = Path(sys.executable).with_name("routequote")
    server = subprocess.Popen([str(exe), "serve", "--workers", "1"], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        import httpx

        deadline = time.time() + 30
        while True:
            try:
                if httpx.get(f"{base}/v2/status").status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.time() > deadline:
                raise SystemExit("server did not start")
            time.sleep(0.1)
        # rotate through every route and amount so the benchmark is not one cached body
        lua_bodies = ",\n".join("[[" + json.dumps(b) + "]]" for b in BODIES)
        lua = (
            "local bodies = {" + lua_bodies + "}\nlocal i = 0\nwrk.method = 'POST'\n"
            "wrk.headers['Content-Type'] = 'application/json'\n"
            "request = function()\n  i = i % #bodies + 1\n  return wrk.format(nil, nil, nil, bodies[i])\nend\n"
        )
        with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
            f.write(lua)
            script = f.name
        wrk(f"{base}/v2/status", 2, connections)  # warm-up
        wrk(f"{base}/v2/quote", 2, connections, script)
        rows = []
        for _ in range(2):  # interleave to share the machine's noise fairly
            rows.append(("status", *wrk(f"{base}/v2/status", duration, connections)))
            rows.append(("quote", *wrk(f"{base}/v2/quote", duration, connections, script)))
        status = max(r[1] for r in rows if r[0] == "status")
        quote = max(r[1] for r in rows if r[0] == "quote")
        print(f"HTTP, 1 uvicorn worker, wrk -t1 -c{connections} -d{duration}s (best of 2, interleaved):")
        for name, rps, lat in rows:
            print(f"  {name:6s} {rps:9.0f} req/s  {lat}")
        print(f"  ratio quote/status = {quote / status:.2f}   target >= 0.4")
        os.unlink(script)
    finally:
        server.terminate()
        server.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--duration", type=int, default=8)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--skip-http", action="store_true")
    args = parser.parse_args()
    in_process()
    if not args.skip_http:
        over_http(args.duration, args.connections)


if __name__ == "__main__":
    main()
