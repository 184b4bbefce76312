"""Session engine benchmark over HTTP. Prints ratios measured in one run (the machine is shared: no thresholds).

One uvicorn worker (`routequote serve`, rate limits off, memory quote store), first on an SQLite file in a
temporary directory, then on a temporary PostgreSQL database (skipped, with the reason, when PostgreSQL is
not reachable on 127.0.0.1:5432). In each server, on base:ETH->base:USDC:

* prepare: POST /v2/prepare, approval_v3 selected_mode one_shot, a fresh quote and idempotency key each;
* create:  POST /v2/session, selected_mode session, a fresh quote, token and idempotency key each;
* read:    GET /v2/session/{id} (view session) over the sessions just created;
* observe: POST /v2/session/{id}/observe naming a transaction hash that does not exist, against a local anvil
  (chain id 8453) set as ROUTEQUOTE_RPC_URL_BASE. Each observe is a real JSON-RPC read (one batch:
  eth_getTransactionByHash, eth_getTransactionReceipt, eth_blockNumber, eth_chainId), a `pending` outcome, and a
  committed transition awaiting_source_receipt -> awaiting_source_receipt (version + 1, an event row and the
  idempotency record, in one transaction). It does not measure receipt/log verification of a mined transaction.
* status:  GET /v2/status with the same client, as the client's own ceiling (the client shares the machine).

Quotes: every prepare and create binds a fresh quote. They are pre-issued over HTTP just before each measured
phase (at most --requests, below the memory quote store's 2048 records, well inside the 60 s quote TTL); the
measured prepare/create does not include its quote.

Load: a small asyncio HTTP/1.1 keep-alive client, --connections connections, each phase at most --requests
requests or --seconds seconds, whichever comes first. wrk (bench/_harness.py) is duration-bound and would
replay bodies once they run out (an idempotent replay is a different, cheaper path), so each request here is
sent exactly once. Reads and observes are spread so that no two connections touch one session at once.
Prepare and create are measured twice, interleaved; the best of the two is reported. Any unexpected status stops
the run.

Run: .venv/bin/python bench/session_bench.py [--connections 16] [--requests 1800] [--seconds 6]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import secrets
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(ROOT))

from _harness import served  # noqa: E402

from routequote.core.quote import SESSION_HEADER  # noqa: E402
from routequote.core.routes import ROUTES  # noqa: E402

ROUTE = "base:ETH->base:USDC"
AMOUNT_USD = 100
WALLET = "0x1111111111111111111111111111111111111111"
MISSING_TX = "0x" + "5e" * 32  # no such transaction on the fresh anvil


# ---- request bodies ----------------------------------------------------------------------------------


def intent() -> dict[str, Any]:
    src, dst = ROUTE.split("->")
    fc, ft = src.split(":")
    tc, tt = dst.split(":")
    return {"from_chain": fc, "from_token": ft, "to_chain": tc, "to_token": tt, "amount_usd": AMOUNT_USD}


def approval(quote: dict[str, Any], key: str, mode: str) -> dict[str, Any]:
    c = quote["continuation_v3"]
    return {
        "version": c["approval_v3_version"],
        "quote_id": quote["quote_id"],
        "quote_fingerprint": c["quote_fingerprint"],
        "selection_status": "selected",
        "selected_mode": mode,
        "maximum_input_base": c["input_base_bounds"]["maximum"],
        "minimum_output_base": c["minimum_output_base"],
        "direct_route_summary_sha256": c["direct_route_summary_sha256"],
        "idempotency_key": key,
    }


def wallets() -> dict[str, str]:
    return {c: WALLET for c in ROUTES[ROUTE].required_wallet_chains}


def new_token() -> str:
    return base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()


def new_key(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(8)}"


# ---- a minimal keep-alive HTTP/1.1 client --------------------------------------------------------------


class Client:
    def __init__(self, base: str) -> None:
        u = urlsplit(base)
        self.host, self.port = u.hostname or "127.0.0.1", u.port or 80

    def raw(self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None) -> bytes:
        lines = [f"{method} {path} HTTP/1.1", f"Host: {self.host}:{self.port}"]
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        data = b"" if body is None else orjson.dumps(body)
        if body is not None:
            lines += ["Content-Type: application/json", f"Content-Length: {len(data)}"]
        return ("\r\n".join(lines) + "\r\n\r\n").encode() + data


class Conn:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.r, self.w = reader, writer

    async def send(self, raw: bytes) -> tuple[int, bytes]:
        self.w.write(raw)
        head = await self.r.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        length = None
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"transfer-encoding":
                raise SystemExit("the bench client reads Content-Length answers only")
        return status, (await self.r.readexactly(length) if length else b"")


@dataclass
class Run:
    name: str
    backend: str
    count: int = 0
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)
    bodies: dict[int, bytes] = field(default_factory=dict)

    @property
    def rps(self) -> float:
        return self.count / self.seconds if self.seconds else 0.0

    def pct(self, p: float) -> float:
        xs = sorted(self.latencies)
        return xs[min(len(xs) - 1, int(p * len(xs)))] * 1e3 if xs else float("nan")


async def load(
    client: Client,
    requests: list[bytes],
    expect: int,
    conns: int,
    limit_s: float,
    keep: bool = False,
    name: str = "",
    backend: str = "",
) -> Run:
    """Send each request once over `conns` connections (connection w sends requests w, w+conns, ...), stopping
    new sends after limit_s; any status other than `expect` stops the run."""
    run = Run(name, backend)
    opened = [Conn(*await asyncio.open_connection(client.host, client.port)) for _ in range(conns)]
    stop_at = 0.0

    async def worker(w: int, conn: Conn) -> None:
        for i in range(w, len(requests), conns):
            if time.perf_counter() > stop_at:
                return
            t = time.perf_counter()
            status, body = await conn.send(requests[i])
            run.latencies.append(time.perf_counter() - t)
            if status != expect:
                raise SystemExit(f"{name}: expected {expect}, got {status}: {body[:300]!r}")
            if keep:
                run.bodies[i] = body

    t0 = time.perf_counter()
    stop_at = t0 + limit_s
    try:
        await asyncio.gather(*(worker(w, c) for w, c in enumerate(opened)))
    finally:
        run.seconds = time.perf_counter() - t0
        for c in opened:
            c.w.close()
    run.count = len(run.latencies)
    return run


# ---- one backend ---------------------------------------------------------------------------------------


@dataclass
class Phase:
    client: Client
    backend: str
    conns: int
    requests: int
    seconds: float

    async def run(
        self, name: str, reqs: list[bytes], expect: int, keep: bool = False, seconds: float | None = None
    ) -> Run:
        return await load(
            self.client,
            reqs,
            expect,
            self.conns,
            self.seconds if seconds is None else seconds,
            keep,
            name,
            self.backend,
        )

    async def quotes(self, n: int) -> list[dict[str, Any]]:
        req = self.client.raw("POST", "/v2/quote", intent())
        run = await self.run("quote", [req] * n, 200, keep=True, seconds=120)
        return [orjson.loads(run.bodies[i]) for i in range(n)]

    async def prepare(self) -> Run:
        qs = await self.quotes(self.requests)
        reqs = [
            self.client.raw(
                "POST",
                "/v2/prepare",
                {
                    "caller_approved": True,
                    **intent(),
                    "wallets": wallets(),
                    "approval_v3": approval(q, new_key("prep"), "one_shot"),
                },
            )
            for q in qs
        ]
        return await self.run("prepare", reqs, 200)

    async def create(self) -> tuple[Run, list[tuple[str, str]]]:
        qs = await self.quotes(self.requests)
        tokens = [new_token() for _ in qs]
        reqs = []
        for q, tok in zip(qs, tokens, strict=True):
            key = new_key("sess")
            body = {
                "caller_approved": True,
                **intent(),
                "wallets": wallets(),
                "approval_v3": approval(q, key, "session"),
                "idempotency_key": key,
            }
            reqs.append(self.client.raw("POST", "/v2/session", body, {SESSION_HEADER: tok}))
        run = await self.run("create", reqs, 201, keep=True)
        made = [(orjson.loads(b)["session_id"], tokens[i]) for i, b in sorted(run.bodies.items())]
        run.bodies.clear()
        return run, made

    async def read(self, sessions: list[tuple[str, str]]) -> Run:
        n = self.requests * 2
        reqs = [
            self.client.raw("GET", f"/v2/session/{sid}", None, {SESSION_HEADER: tok})
            for sid, tok in (sessions[i % len(sessions)] for i in range(n))
        ]
        return await self.run("read", reqs, 200)

    def observe_req(self, sid: str, tok: str) -> bytes:
        body = {"idempotency_key": new_key("obs"), "transaction_hashes": [MISSING_TX]}
        return self.client.raw("POST", f"/v2/session/{sid}/observe", body, {SESSION_HEADER: tok})

    async def observe(self, sessions: list[tuple[str, str]]) -> tuple[Run, str]:
        m = self.conns * 8  # a multiple of conns: connection w only ever touches sessions w, w+conns, ...
        if len(sessions) < m:
            raise SystemExit(f"observe needs {m} sessions, created {len(sessions)}")
        pool = sessions[:m]
        prime = await self.run(
            "observe-prime", [self.observe_req(s, t) for s, t in pool], 200, keep=True, seconds=120
        )
        first = {pool[i][0]: orjson.loads(b) for i, b in prime.bodies.items()}
        if {b["status"] for b in first.values()} != {"awaiting_source_receipt"}:
            raise SystemExit(
                f"observe-prime: unexpected statuses {sorted({b['status'] for b in first.values()})}"
            )
        reqs = [self.observe_req(*pool[i % m]) for i in range(self.requests * 2)]
        run = await self.run("observe", reqs, 200)
        # what was measured: the versions of the observed sessions rose by exactly the number of observes
        reads = await self.run(
            "observe-check",
            [self.client.raw("GET", f"/v2/session/{s}", None, {SESSION_HEADER: t}) for s, t in pool],
            200,
            keep=True,
            seconds=120,
        )
        after = {pool[i][0]: orjson.loads(b) for i, b in reads.bodies.items()}
        rise = sum(after[s]["session_version"] - first[s]["session_version"] for s in after)
        statuses = sorted({b["status"] for b in after.values()})
        check = f"versions rose by {rise} for {run.count} observes over {m} sessions; statuses now {statuses}"
        return run, check


async def measure(base: str, backend: str, args: argparse.Namespace, observe: bool) -> tuple[list[Run], str]:
    ph = Phase(Client(base), backend, args.connections, args.requests, args.seconds)
    # warm-up: connections, code paths, the database pool
    await ph.run("status", [ph.client.raw("GET", "/v2/status")] * 500, 200)
    warm = Phase(ph.client, backend, args.connections, 200, args.seconds)
    await warm.prepare()
    await warm.create()
    status = await ph.run("status", [ph.client.raw("GET", "/v2/status")] * (args.requests * 3), 200)
    prepares, creates, sessions = [], [], []
    for _ in range(2):  # interleaved, to share the machine's noise fairly
        prepares.append(await ph.prepare())
        run, made = await ph.create()
        creates.append(run)
        sessions += made
    runs = [
        status,
        max(prepares, key=lambda r: r.rps),
        max(creates, key=lambda r: r.rps),
        await ph.read(sessions),
    ]
    check = "observe not measured"
    if observe:
        run, check = await ph.observe(sessions)
        runs.append(run)
    return runs, check


# ---- servers -------------------------------------------------------------------------------------------


@contextlib.contextmanager
def anvil_base() -> Iterator[tuple[str | None, str]]:
    """A local anvil with chain id 8453 (installed from npm by tests/e2e/_evm.py), or None and the reason."""
    try:
        from tests.e2e._evm import ToolchainUnavailable, ensure_toolchain, start_anvil
    except ImportError as exc:  # pragma: no cover - depends on the checkout
        yield None, f"cannot import the anvil helpers: {exc}"
        return
    try:
        chain = start_anvil(*ensure_toolchain(), chain_id=8453)
    except ToolchainUnavailable as exc:
        yield None, str(exc)
        return
    try:
        yield chain.url, "anvil 8453"
    finally:
        chain.stop()


@contextlib.contextmanager
def postgres_database() -> Iterator[tuple[str | None, str]]:
    try:
        from tests.support.postgres import postgres_up, temporary_database
    except ImportError as exc:  # pragma: no cover
        yield None, f"cannot import the PostgreSQL helpers: {exc}"
        return
    if not postgres_up():
        yield None, "PostgreSQL is not reachable on 127.0.0.1:5432"
        return
    with temporary_database("routequote_test_bench") as url:
        yield url, "temporary database"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--requests", type=int, default=1800, help="at most this many per phase (<= 2000)")
    parser.add_argument("--seconds", type=float, default=6.0, help="at most this long per phase")
    args = parser.parse_args()
    if not 0 < args.requests <= 2000:
        raise SystemExit("--requests must be 1..2000 (the memory quote store keeps 2048 quotes)")
    t_start = time.perf_counter()
    rows: list[Run] = []
    notes: list[str] = []
    signing = base64.b64encode(secrets.token_bytes(32)).decode()
    with anvil_base() as (rpc, why_not), tempfile.TemporaryDirectory() as tmp:
        if rpc is None:
            notes.append(f"observe not measured: no anvil ({why_not})")
        common = {
            "signing_key": signing,
            "dev_signing_key_path": "",
            "finality_confirmations": "base=1",
            # every create comes from one client: a cap it never reaches, so creates take the capped path (the
            # default) without the default cap of 100 refusing the run part way
            "max_open_sessions_per_client": "1000000",
            # a session opens only where its chain has an RPC URL: without anvil, one nothing answers at
            "rpc_url_base": rpc or "http://127.0.0.1:9",
        }
        with served(database_url=f"sqlite+aiosqlite:///{tmp}/sessions.sqlite3", **common) as base:
            runs, check = asyncio.run(measure(base, "sqlite", args, rpc is not None))
            rows += runs
            notes.append(f"sqlite observe check: {check}")
        with postgres_database() as (pg_url, why):
            if pg_url is None:
                notes.append(f"postgresql not measured: {why}")
            else:
                with served(database_url=pg_url, **common) as base:
                    runs, check = asyncio.run(measure(base, "postgresql", args, rpc is not None))
                    rows += runs
                    notes.append(f"postgresql observe check: {check}")
    report(rows, notes, args, time.perf_counter() - t_start)


def report(rows: list[Run], notes: list[str], args: argparse.Namespace, total: float) -> None:
    print(
        f"sessions over HTTP, 1 uvicorn worker, rate limits off, route {ROUTE} ${AMOUNT_USD}, "
        f"{args.connections} connections, each phase <= {args.requests} requests or <= {args.seconds:g} s"
    )
    print(
        "prepare/create: a fresh quote each, pre-issued just before the phase (not inside the measured time); "
        "best of 2 interleaved rounds"
    )
    print(
        "observe: an unknown tx hash on anvil 8453 = one JSON-RPC batch read + pending outcome + one committed "
        "transition (awaiting_source_receipt -> same, version+1); not receipt/log verification"
    )
    print("status: GET /v2/status with the same client (its ceiling on this machine)")
    print()
    print(f"{'operation':10s} {'backend':11s} {'req/s':>8s} {'p50 ms':>8s} {'p99 ms':>8s} {'requests':>9s}")
    for r in rows:
        print(f"{r.name:10s} {r.backend:11s} {r.rps:8.0f} {r.pct(0.50):8.2f} {r.pct(0.99):8.2f} {r.count:9d}")
    print()
    for backend in dict.fromkeys(r.backend for r in rows):
        by = {r.name: r for r in rows if r.backend == backend}
        print(
            f"{backend:11s} ratio create/prepare = {by['create'].rps / by['prepare'].rps:.2f}   target >= 0.5"
        )
    for n in notes:
        print(n)
    print(f"total run {total:.0f} s")


if __name__ == "__main__":
    main()
