"""Mixed 60 s load against `routequote serve`, with one worker and with two. Prints one table (no thresholds:
the machine is shared and timings are reported, never asserted).

Each run starts `routequote serve --workers N` (rate limits off, memory quote store, a temporary SQLite
session database), creates a few sessions, warms up, reads the RSS of every server process (/proc), then drives
--connections keep-alive HTTP/1.1 connections for --seconds, each sending, in a fixed weighted rotation:

* quote       POST /v2/quote, every one of the 72 routes in turn, at 1, 50 and 1000 USD;
* capabilities GET /v2/capabilities;
* status      GET /v2/status (its issued_quotes_retained is sampled: it must stay <= 2048);
* prepare     a one-shot approval of a quote issued just before on the same connection (a connection stays on
              one worker, so the memory quote store finds it), POST /v2/prepare; only the prepare is timed;
* session     GET /v2/session/{id} of the sessions created at the start (any worker reads the shared file).

Any answer other than the expected status is an error. After the run the RSS is read again.

Run: .venv/bin/python bench/load.py [--seconds 60] [--connections 16] [--workers 1,2]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import itertools
import os
import secrets
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from routequote.core.quote import SESSION_HEADER  # noqa: E402
from routequote.core.routes import ROUTES  # noqa: E402

PREPARE_ROUTES = ("base:ETH->base:USDC", "base:USDC->base:ETH", "arbitrum:ETH->arbitrum:USDC")
WALLETS = {
    "base": "0x1111111111111111111111111111111111111111",
    "arbitrum": "0x2222222222222222222222222222222222222222",
    "robinhood": "0x3333333333333333333333333333333333333333",
}
MIX = ["quote"] * 10 + ["capabilities"] * 2 + ["status"] * 2 + ["prepare"] * 3 + ["session"] * 3
STORE_CAP = 2048


def intent(route: str, usd: int) -> dict[str, Any]:
    (fc, ft), (tc, tt) = (side.split(":") for side in route.split("->"))
    return {"from_chain": fc, "from_token": ft, "to_chain": tc, "to_token": tt, "amount_usd": usd}


def approval(q: dict[str, Any], key: str, mode: str) -> dict[str, Any]:
    c = q["continuation_v3"]
    return {
        "version": c["approval_v3_version"],
        "quote_id": q["quote_id"],
        "quote_fingerprint": c["quote_fingerprint"],
        "selection_status": "selected",
        "selected_mode": mode,
        "maximum_input_base": c["input_base_bounds"]["maximum"],
        "minimum_output_base": c["minimum_output_base"],
        "direct_route_summary_sha256": c["direct_route_summary_sha256"],
        "idempotency_key": key,
    }


def wallets(route: str) -> dict[str, str]:
    return {c: WALLETS[c] for c in ROUTES[route].required_wallet_chains}


# ---- the server and its processes -------------------------------------------------------------------------


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = defaultdict(list)
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                stat = Path(f"/proc/{entry}/stat").read_text()
                ppid = int(stat.rsplit(")", 1)[1].split()[1])
                children[ppid].append(int(entry))
    out, todo = [pid], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def rss_mib(pid: int) -> dict[int, float]:
    """VmRSS of the server and every process under it (uvicorn's supervisor and workers), in MiB."""
    out: dict[int, float] = {}
    for p in descendants(pid):
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    out[p] = int(line.split()[1]) / 1024
    return out


@contextlib.contextmanager
def served(workers: int, db_dir: str) -> Iterator[tuple[str, int, subprocess.Popen[bytes]]]:
    import httpx

    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROUTEQUOTE_")}
    env.update(
        {
            "ROUTEQUOTE_RATE_LIMIT": "off",
            "ROUTEQUOTE_PORT": str(port),
            "ROUTEQUOTE_LOG_LEVEL": "warning",
            "ROUTEQUOTE_DATABASE_URL": f"sqlite+aiosqlite:///{db_dir}/sessions.sqlite3",
            # a session opens only where its route's chains have RPC URLs: configured, nothing answers there
            "ROUTEQUOTE_RPC_URL_BASE": "http://127.0.0.1:9",
            "ROUTEQUOTE_RPC_URL_ARBITRUM": "http://127.0.0.1:9",
            "ROUTEQUOTE_DEV_SIGNING_KEY_PATH": "",
        }
    )
    exe = Path(sys.executable).with_name("routequote")
    proc = subprocess.Popen(
        [str(exe), "serve", "--workers", str(workers)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 60
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{base}/v2/status").status_code == 200 and len(rss_mib(proc.pid)) >= workers:
                    break
            if time.time() > deadline or proc.poll() is not None:
                raise SystemExit("server did not start")
            time.sleep(0.2)
        yield base, port, proc
    finally:
        proc.terminate()
        proc.wait(30)


# ---- a minimal keep-alive HTTP/1.1 client ----------------------------------------------------------------


class Conn:
    def __init__(self, port: int) -> None:
        self.port = port
        self.r: asyncio.StreamReader
        self.w: asyncio.StreamWriter

    async def open(self) -> Conn:
        self.r, self.w = await asyncio.open_connection("127.0.0.1", self.port)
        return self

    async def call(
        self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
    ) -> tuple[int, bytes]:
        lines = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{self.port}"]
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        data = b"" if body is None else orjson.dumps(body)
        if body is not None:
            lines += ["Content-Type: application/json", f"Content-Length: {len(data)}"]
        self.w.write(("\r\n".join(lines) + "\r\n\r\n").encode() + data)
        head = await self.r.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        return status, (await self.r.readexactly(length) if length else b"")

    def close(self) -> None:
        self.w.close()


@dataclass
class Stats:
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    error_samples: list[str] = field(default_factory=list)
    max_retained: int = 0
    retained_samples: int = 0

    def error(self, kind: str, status: int, body: bytes) -> None:
        self.errors[kind] += 1
        if len(self.error_samples) < 5:
            self.error_samples.append(f"{kind}: {status} {body[:200]!r}")


async def create_sessions(port: int, n: int) -> list[tuple[str, str]]:
    conn = await Conn(port).open()
    out = []
    try:
        for i in range(n):
            route = PREPARE_ROUTES[i % len(PREPARE_ROUTES)]
            status, raw = await conn.call("POST", "/v2/quote", intent(route, 100))
            assert status == 200, raw
            key, token = (
                f"load-{secrets.token_hex(8)}",
                base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode(),
            )
            body = {
                "caller_approved": True,
                **intent(route, 100),
                "wallets": wallets(route),
                "approval_v3": approval(orjson.loads(raw), key, "session"),
                "idempotency_key": key,
            }
            status, raw = await conn.call("POST", "/v2/session", body, {SESSION_HEADER: token})
            assert status == 201, raw
            out.append((orjson.loads(raw)["session_id"], token))
    finally:
        conn.close()
    return out


async def worker(port: int, idx: int, until: float, sessions: list[tuple[str, str]], stats: Stats) -> None:
    conn = await Conn(port).open()
    routes = itertools.cycle([(r, usd) for usd in (1, 50, 1000) for r in ROUTES])
    for _ in range(idx * 7):
        next(routes)
    mix = itertools.cycle(MIX[idx % len(MIX) :] + MIX[: idx % len(MIX)])
    n = idx
    try:
        while time.monotonic() < until:
            kind = next(mix)
            n += 1
            t0 = time.perf_counter()
            if kind == "quote":
                route, usd = next(routes)
                status, raw = await conn.call("POST", "/v2/quote", intent(route, usd))
                want = 200
            elif kind == "capabilities":
                status, raw = await conn.call("GET", "/v2/capabilities")
                want = 200
            elif kind == "status":
                status, raw = await conn.call("GET", "/v2/status")
                want = 200
                if status == 200:
                    retained = orjson.loads(raw).get("issued_quotes_retained")
                    if isinstance(retained, int):
                        stats.max_retained = max(stats.max_retained, retained)
                        stats.retained_samples += 1
            elif kind == "prepare":
                route = PREPARE_ROUTES[n % len(PREPARE_ROUTES)]
                status, raw = await conn.call("POST", "/v2/quote", intent(route, 100))
                if status != 200:
                    stats.error("prepare(quote)", status, raw)
                    continue
                body = {
                    "caller_approved": True,
                    **intent(route, 100),
                    "wallets": wallets(route),
                    "approval_v3": approval(
                        orjson.loads(raw), f"load-{idx}-{n}-{secrets.token_hex(4)}", "one_shot"
                    ),
                }
                t0 = time.perf_counter()
                status, raw = await conn.call("POST", "/v2/prepare", body)
                want = 200
            else:
                sid, token = sessions[n % len(sessions)]
                status, raw = await conn.call("GET", f"/v2/session/{sid}", headers={SESSION_HEADER: token})
                want = 200
            elapsed = time.perf_counter() - t0
            if status != want:
                stats.error(kind, status, raw)
            else:
                stats.latencies[kind].append(elapsed)
    finally:
        conn.close()


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))] * 1e3 if xs else float("nan")


async def drive(
    port: int,
    seconds: float,
    connections: int,
    sessions: list[tuple[str, str]],
    stats: Stats,
    rss_of: int | None = None,
    timeline: list[float] | None = None,
) -> float:
    start = time.monotonic()

    async def sample() -> None:  # total RSS of the server's processes, ten times over the run
        assert rss_of is not None and timeline is not None
        for _ in range(10):
            await asyncio.sleep(seconds / 10)
            timeline.append(sum(rss_mib(rss_of).values()))

    tasks = [worker(port, i, start + seconds, sessions, stats) for i in range(connections)]
    if rss_of is not None:
        tasks.append(sample())
    await asyncio.gather(*tasks)
    return time.monotonic() - start


def run(workers: int, seconds: float, connections: int) -> dict[str, Any]:
    with (
        tempfile.TemporaryDirectory(prefix="routequote-load-") as tmp,
        served(workers, tmp) as (base, port, proc),
    ):
        sessions = asyncio.run(create_sessions(port, 16))
        warm = Stats()
        asyncio.run(drive(port, 3, connections, sessions, warm))  # warm-up, not counted
        before = rss_mib(proc.pid)
        stats = Stats()
        timeline: list[float] = []
        elapsed = asyncio.run(drive(port, seconds, connections, sessions, stats, proc.pid, timeline))
        after = rss_mib(proc.pid)
    total = sum(len(v) for v in stats.latencies.values())
    every = [x for v in stats.latencies.values() for x in v]
    return {
        "workers": workers,
        "requests": total,
        "seconds": elapsed,
        "rps": total / elapsed,
        "p50": pct(every, 0.5),
        "p99": pct(every, 0.99),
        "errors": sum(stats.errors.values()),
        "by_kind": {k: (len(v), pct(v, 0.5), pct(v, 0.99)) for k, v in sorted(stats.latencies.items())},
        "error_samples": stats.error_samples,
        "rss_before": before,
        "rss_after": after,
        "max_retained": stats.max_retained,
        "retained_samples": stats.retained_samples,
        "rss_timeline": timeline,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--connections", type=int, default=16)
    ap.add_argument("--workers", default="1,2")
    args = ap.parse_args()
    results = [run(int(w), args.seconds, args.connections) for w in args.workers.split(",")]
    print(
        f"\nmixed load: {args.seconds:.0f} s, {args.connections} keep-alive connections, rate limits off, "
        f"mix {dict((k, MIX.count(k)) for k in dict.fromkeys(MIX))} per {len(MIX)}"
    )
    print(
        f"{'workers':>7} {'requests':>9} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'errors':>6} "
        f"{'RSS before MiB':>15} {'RSS after MiB':>14} {'max retained':>12}"
    )
    for r in results:
        print(
            f"{r['workers']:>7} {r['requests']:>9} {r['rps']:>8.0f} {r['p50']:>8.1f} {r['p99']:>8.1f} {r['errors']:>6} "
            f"{sum(r['rss_before'].values()):>15.0f} {sum(r['rss_after'].values()):>14.0f} {r['max_retained']:>12}"
        )
    for r in results:
        print(
            f"\nworkers={r['workers']}: per process RSS before/after (MiB): "
            + ", ".join(
                f"{pid}: {r['rss_before'].get(pid, 0):.0f}/{r['rss_after'].get(pid, 0):.0f}"
                for pid in sorted(set(r["rss_before"]) | set(r["rss_after"]))
            )
        )
        line = r["rss_timeline"]
        if line:
            half = line[len(line) // 2 :]
            print(
                f"  RSS over the run (MiB, {len(line)} samples): {', '.join(f'{x:.0f}' for x in line)}; "
                f"second half moved {max(half) - min(half):.1f} MiB"
            )
        for kind, (n, p50, p99) in r["by_kind"].items():
            print(f"  {kind:<13} {n:>7} requests  p50 {p50:6.1f} ms  p99 {p99:6.1f} ms")
        print(
            f"  issued_quotes_retained: max {r['max_retained']} over {r['retained_samples']} samples (cap {STORE_CAP})"
        )
        for sample in r["error_samples"]:
            print(f"  error: {sample}")
    bad = [r for r in results if r["errors"] or r["max_retained"] > STORE_CAP]
    raise SystemExit(1 if bad else 0)


if __name__ == "__main__":
    main()
