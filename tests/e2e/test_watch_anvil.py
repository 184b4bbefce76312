"""The watcher on local chains (issue 42, section 1), over real HTTP against running servers.

* A session is carried from `awaiting_source_receipt` and `awaiting_destination` to the next status by the service:
  the caller names each transaction it signs once, and never calls observe after that (swap on base, then an
  Across deposit filled on robinhood by the test as relayer). Nothing is written while a session only waits.
* A chain without an RPC URL is not watched, and a session waiting there says so.
* An RPC that answers garbage or hangs mid-watch: nothing advances, the loop keeps ticking, and once the RPC
  answers again the session advances.
* Two server processes on one session database (SQLite file, then PostgreSQL): one holds the lease; `kill -9` it
  mid-watch and the other takes over and finishes the session. The takeover time is printed (never asserted).

Anvil 8453 (base) and 4663 (robinhood), `_evm.deploy_all` contracts, `ROUTEQUOTE_FINALITY_CONFIRMATIONS`
base=3 so a named transaction first waits for finality.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from _evm import AnvilChain, balance_of, deploy_all, sign_and_send
from _sessions import SessionApi, deployment_overrides, deposit_relay_data, fill_relay, fund_relayer
from eth_account import Account
from tests.support.postgres import require_postgres, temporary_database
from tests.support.server import free_port, running_server

from routequote.app import create_app
from routequote.config import Settings
from routequote.core.actions.evm import DEFAULT_DEPLOYMENTS, EvmDeployment
from routequote.core.assets import Chain
from routequote.ports import WATCH_LEADER as LEADER
from routequote.storage.sessions_sql import SqlSessionStore
from routequote.storage.watch_store import SqlWatchStore

pytestmark = pytest.mark.chain
BASE, ROBINHOOD = 8453, 4663
ETH_USDC = "base:ETH->base:USDC"
ETH_USDG = "base:ETH->robinhood:USDG"
WAIT = 120.0  # bounds a hang only (a busy machine is slow); no timing is asserted


def deployments_for(chains: dict[int, AnvilChain]) -> dict[Chain, EvmDeployment]:
    b, r = chains[BASE].addresses, chains[ROBINHOOD].addresses
    return {
        Chain.BASE: DEFAULT_DEPLOYMENTS[Chain.BASE].with_overrides(
            tokens={"USDC": b["token6"], "WETH": b["weth"]},
            swap_router02=b["router02"],
            across_spoke_pool=b["local_spoke"],
        ),
        Chain.ROBINHOOD: DEFAULT_DEPLOYMENTS[Chain.ROBINHOOD].with_overrides(
            tokens={"USDG": r["token6"], "WETH": r["weth"]},
            swap_router02=r["router02"],
            across_spoke_pool=r["local_spoke"],
        ),
    }


@pytest.fixture(scope="module")
def chains(anvil_factory: Callable[[int], AnvilChain]) -> Iterator[dict[int, AnvilChain]]:
    out = {cid: anvil_factory(cid) for cid in (BASE, ROBINHOOD)}
    for chain in out.values():
        deploy_all(chain)
    snaps = {cid: c.snapshot() for cid, c in out.items()}
    yield out
    for cid, chain in out.items():
        chain.revert(snaps[cid])


@pytest.fixture
def fresh(chains: dict[int, AnvilChain]) -> Iterator[dict[int, AnvilChain]]:
    snaps = {cid: c.snapshot() for cid, c in chains.items()}
    yield chains
    for cid, chain in chains.items():
        chain.revert(snaps[cid])


@contextlib.contextmanager
def database(kind: str, tmp: Path) -> Iterator[str]:
    if kind == "postgresql":
        require_postgres()
        with temporary_database() as url:
            yield url
    else:
        yield f"sqlite+aiosqlite:///{tmp / 'watch.sqlite3'}"


def settings_for(chains: dict[int, AnvilChain], database_url: str, **over: Any) -> dict[str, Any]:
    return {
        "rate_limit": "off",
        "rpc_url_base": chains[BASE].url,
        "rpc_url_robinhood": chains[ROBINHOOD].url,
        "finality_confirmations": "base=3,arbitrum=1,robinhood=1",
        "database_url": database_url,
        "dev_signing_key_path": "",
        "watch": True,
        "watch_interval_seconds": 0.2,
        "watch_lease_seconds": 3.0,
        "watch_max_backoff_seconds": 1.0,
        **over,
    }


# ---- helpers -------------------------------------------------------------------------------------------------


def wallet(chains: dict[int, AnvilChain]) -> tuple[str, str]:
    acct = Account.create()
    for chain in chains.values():
        chain.send(acct.address, "0x", value=10 * 10**18)
    return str(acct.address), acct.key.hex()


def submit(chain: AnvilChain, key: str, session: dict[str, Any]) -> list[str]:
    """The wallet signs and sends the current action exactly as returned (a block of the current second first:
    an Across deposit's quoteTimestamp is the second it was prepared)."""
    latest = int(chain.rpc.call("eth_getBlockByNumber", "latest", False)["timestamp"], 16)
    chain.rpc.call("evm_mine", max(latest + 1, int(time.time()) + 1))
    receipts = sign_and_send(chain, key, session["current_action"]["unsigned_action"]["transactions"])
    return [str(r["transactionHash"]) for r in receipts]


def mine(chain: AnvilChain, blocks: int) -> None:
    chain.rpc.call("anvil_mine", hex(blocks))


def wait_for(api: SessionApi, sid: str, token: str, status: str) -> dict[str, Any]:
    """Read (never observe) until the session is in `status`."""
    deadline = time.monotonic() + WAIT
    while True:
        s = api.read(sid, token)
        if s["status"] == status:
            return s
        assert time.monotonic() < deadline, f"still {s['status']} (v{s['session_version']}), want {status}"
        time.sleep(0.1)


def name_once(
    api: SessionApi, sid: str, token: str, hashes: list[str], key: str | None = None
) -> dict[str, Any]:
    r = api.observe(sid, token, hashes, key)
    assert r.status_code == 200, r.text
    return dict(r.json())


# ---- a whole session without another observe ---------------------------------------------------------------


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def test_the_service_carries_the_session_past_every_wait_without_another_observe(
    kind: str, fresh: dict[int, AnvilChain], tmp_path: Path
) -> None:
    chains = fresh
    base, rh = chains[BASE], chains[ROBINHOOD]
    who, key = wallet(chains)
    with database(kind, tmp_path) as url:
        settings = settings_for(chains, url)
        app = create_app(Settings(**settings), deployments=deployments_for(chains))
        with running_server(app) as server:
            api = SessionApi(server)
            s, token = api.create(ETH_USDG, {"base": who, "robinhood": who})
            sid = s["session_id"]
            assert s["watch"]["active"] is False  # action_ready: the caller signs next

            usdc0 = balance_of(base, base.addresses["token6"], who)
            swap = submit(base, key, s)
            usdc1 = balance_of(base, base.addresses["token6"], who)
            named = name_once(api, sid, token, swap, "observe-swap-once")  # the only call naming the swap
            assert (named["status"], named["session_version"]) == ("awaiting_source_receipt", 2)
            assert named["watch"]["active"] is True and named["watch"]["chain"] == "base"
            time.sleep(1.0)  # several ticks while the swap is not final: nothing may be written
            assert api.read(sid, token)["session_version"] == 2
            mine(base, 3)
            s = wait_for(api, sid, token, "action_ready")
            assert (s["session_version"], s["current_step"]) == (3, 1)
            assert int(s["current_action"]["unsigned_action"]["inputAmount"]) == usdc1 - usdc0

            deposit = submit(base, key, s)
            name_once(api, sid, token, deposit)
            mine(base, 3)
            s = wait_for(api, sid, token, "awaiting_destination")
            assert s["session_version"] in (5, 6)
            # the first look for the fill keeps its search cursor (what observe would write), then nothing more
            deadline = time.monotonic() + WAIT
            while (s := api.read(sid, token))["session_version"] == 5:
                assert time.monotonic() < deadline
                time.sleep(0.1)
            assert (
                s["status"] == "awaiting_destination"
                and s["steps"][1]["destination_status"] == "awaiting_fill"
            )
            time.sleep(1.0)
            assert api.read(sid, token)["session_version"] == 6
            assert s["watch"] == {**s["watch"], "active": True, "chain": "robinhood"}

            # an instance without a robinhood RPC URL over the same database does not follow it, and says so
            blind = create_app(
                Settings(**{**settings, "rpc_url_robinhood": ""}), deployments=deployments_for(chains)
            )
            with running_server(blind) as other:
                seen = SessionApi(other).read(sid, token)
            assert seen["watch"]["active"] is False
            assert "ROUTEQUOTE_RPC_URL_ROBINHOOD" in seen["watch"]["reason"]

            relayer = rh.accounts[1]
            relay = deposit_relay_data(receipt_of(base, deposit[-1]), base.addresses["local_spoke"], BASE)
            fund_relayer(rh, relayer, 10**12)
            usdg0 = balance_of(rh, rh.addresses["token6"], who)
            fill_relay(rh, relayer, relay, BASE)
            usdg1 = balance_of(rh, rh.addresses["token6"], who)
            done = wait_for(api, sid, token, "complete")
            # create, pending, verified, pending, in flight, cursor kept, final: each change once, nothing else
            assert done["session_version"] == 7
            assert done["funds"]["state"] == "delivered" and done["watch"]["active"] is False
            route = api.read(sid, token, "receipt")["receipt"]["route"]
            assert route["complete"] is True and int(route["actual_output_base"]) == usdg1 - usdg0 > 0

            # observe is unchanged: its replayed key answers what it answered then; a new one is refused (finished)
            replay = api.observe(sid, token, swap, "observe-swap-once")
            assert replay.status_code == 200 and replay.json()["idempotent_replay"] is True
            assert {
                k: v for k, v in replay.json().items() if k not in ("idempotent_replay", "watch", "preflight")
            } == {k: v for k, v in named.items() if k not in ("idempotent_replay", "watch", "preflight")}
            again = api.observe(sid, token, swap)
            assert (
                again.status_code == 409 and again.json()["reason_class"] == "operation_not_allowed_in_status"
            )
            api.close()


def receipt_of(chain: AnvilChain, tx_hash: str) -> dict[str, Any]:
    receipt: dict[str, Any] = chain.rpc.call("eth_getTransactionReceipt", tx_hash)
    return receipt


# ---- a failing RPC mid-watch --------------------------------------------------------------------------------


class FaultyRpc:
    """A loopback JSON-RPC proxy to anvil that can answer garbage or hang, counting what it was asked."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.mode = "pass"
        self.counts: dict[str, int] = {"pass": 0, "garbage": 0, "hang": 0}
        self.lock = threading.Lock()

    @contextlib.contextmanager
    def running(self) -> Iterator[str]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length", "0") or 0))
                with proxy.lock:
                    mode = proxy.mode
                    proxy.counts[mode] += 1
                if mode == "hang":
                    time.sleep(4.0)  # past the reader's timeout
                    return
                if mode == "garbage":
                    raw = (
                        b'{"jsonrpc":"2.0","id":1,"result":"0xZZ"}'
                        if body.startswith(b"{")
                        else b"[{]nonsense"
                    )
                else:
                    raw = httpx.post(
                        proxy.upstream, content=body, headers={"Content-Type": "application/json"}
                    ).content
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}"
        finally:
            server.shutdown()
            server.server_close()

    def wait_count(self, mode: str, at_least: int) -> None:
        deadline = time.monotonic() + WAIT
        while self.counts[mode] < at_least:
            assert time.monotonic() < deadline, f"the watcher stopped asking ({self.counts})"
            time.sleep(0.05)


def test_an_rpc_answering_garbage_or_hanging_mid_watch_advances_nothing_and_the_loop_survives(
    fresh: dict[int, AnvilChain], tmp_path: Path
) -> None:
    chains = fresh
    base = chains[BASE]
    who, key = wallet(chains)
    rpc = FaultyRpc(base.url)
    with rpc.running() as proxy_url:
        settings = settings_for(
            chains, f"sqlite+aiosqlite:///{tmp_path / 'w.sqlite3'}", rpc_url_base=proxy_url
        )
        app = create_app(Settings(**settings), deployments=deployments_for(chains))
        watcher = app.state.watcher
        with running_server(app) as server:
            api = SessionApi(server)
            s, token = api.create(ETH_USDC, {"base": who})
            sid = s["session_id"]
            named = name_once(api, sid, token, submit(base, key, s))
            assert named["status"] == "awaiting_source_receipt"
            before = api.read(sid, token)

            rpc.mode = "garbage"
            mine(
                base, 3
            )  # final on chain now: only the broken RPC stands between the session and its advance
            rpc.wait_count("garbage", 5)
            ticks = watcher.ticks
            rpc.mode = "hang"
            rpc.wait_count("hang", 2)
            deadline = time.monotonic() + WAIT
            while watcher.ticks < ticks + 3:  # the loop keeps ticking through the hangs
                assert time.monotonic() < deadline
                time.sleep(0.05)
            now = api.read(sid, token)
            assert (now["status"], now["session_version"], now["steps"]) == (
                before["status"],
                before["session_version"],
                before["steps"],
            )
            assert httpx.get(f"{server}/livez").status_code == 200

            rpc.mode = (
                "pass"  # the RPC recovers (after the breaker's cooldown): the session advances by itself
            )
            done = wait_for(api, sid, token, "complete")
            assert done["session_version"] == 3
            api.close()


# ---- one lease across processes; kill -9 the holder --------------------------------------------------------


@contextlib.contextmanager
def server_proc(
    tmp: Path, settings: dict[str, Any], chains: dict[int, AnvilChain]
) -> Iterator[tuple[str, Any]]:
    """`python tests/e2e/_sessions.py CONFIG` (the app under uvicorn, another OS process): (URL, Popen)."""
    port = free_port()
    config = tmp / f"server-{port}.json"
    overrides = deployment_overrides(deployments_for(chains))
    config.write_text(json.dumps({"settings": {**settings, "port": port}, "deployments": overrides}))
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(root / "src")])}
    with (tmp / f"server-{port}.log").open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).with_name("_sessions.py")), str(config)],
            cwd=root,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=sink,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + WAIT
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/v2/status", timeout=1).status_code < 500:
                    break
            assert proc.poll() is None and time.monotonic() < deadline, "server did not start"
            time.sleep(0.1)
        yield url, proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)


def lease_holder(url: str) -> int | None:
    """The pid holding the `watcher` lease (its holder id is host:pid:random), if any live one."""

    async def read() -> dict[str, Any]:
        store = SqlSessionStore(url)
        try:
            return await SqlWatchStore(store).leases()
        finally:
            await store.aclose()

    leases = asyncio.run(read())
    if LEADER not in leases:
        return None
    holder, _until = leases[LEADER]
    return int(holder.split(":")[1])


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def test_one_process_holds_the_lease_and_another_takes_over_after_kill_9(
    kind: str, fresh: dict[int, AnvilChain], tmp_path: Path, record_property: Any
) -> None:
    chains = fresh
    base = chains[BASE]
    who, key = wallet(chains)
    with database(kind, tmp_path) as url:
        settings = settings_for(chains, url)
        with (
            server_proc(tmp_path, settings, chains) as (url_a, a),
            server_proc(tmp_path, settings, chains) as (
                url_b,
                b,
            ),
        ):
            pids = {a.pid: a, b.pid: b}
            deadline = time.monotonic() + WAIT
            while (holder := lease_holder(url)) is None:
                assert time.monotonic() < deadline
                time.sleep(0.1)
            assert holder in pids
            for _ in range(
                10
            ):  # both alive: the holder keeps it (renewed each tick), the other never gets it
                time.sleep(0.1)
                assert lease_holder(url) == holder

            survivor = next(p for p in pids if p != holder)
            api = SessionApi(url_a if survivor == a.pid else url_b)
            s, token = api.create(ETH_USDC, {"base": who})
            sid = s["session_id"]
            assert name_once(api, sid, token, submit(base, key, s))["status"] == "awaiting_source_receipt"

            os.kill(holder, signal.SIGKILL)  # mid-watch: the session is waiting on its finality
            killed_at = time.monotonic()
            pids[holder].wait(timeout=10)
            mine(base, 3)
            while lease_holder(url) != survivor:
                assert time.monotonic() < killed_at + WAIT, "no process took the lease over"
                time.sleep(0.02)
            takeover = time.monotonic() - killed_at
            done = wait_for(api, sid, token, "complete")
            assert (
                done["session_version"] == 3
            )  # advanced once, by the survivor: nothing lost, nothing doubled
            api.close()
    record_property("watch_lease_takeover_seconds", round(takeover, 3))
    print(f"\nwatch lease takeover after kill -9 ({kind}, lease 3 s, tick 0.2 s): {takeover:.2f} s")
