"""ROUTEQUOTE_WORKERS=2 on the embedded defaults answers correctly: a quote issued by one worker is prepared by
the other. A real `routequote serve --workers 2` (its default quote store is then `peers`: a worker asks the
issuing one over a private local socket); every quote and every prepare goes over a fresh connection, so the kernel spreads them over both workers
(with per-worker memory about half the prepares landed on the other worker and answered 409)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.support.server_process import ServerProcess, start_server

from routequote.core.routes import ROUTES

ROUTE = "base:ETH->base:USDC"
WALLET = "0x1111111111111111111111111111111111111111"
INTENT = {
    "from_chain": "base",
    "from_token": "ETH",
    "to_chain": "base",
    "to_token": "USDC",
    "amount_usd": 100,
}


@pytest.fixture(scope="module")
def two_workers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    tmp = tmp_path_factory.mktemp("two-workers")
    server = start_server(
        tmp, "two", {"database_url": f"sqlite+aiosqlite:///{tmp}/sessions.sqlite3"}, workers=2
    )
    try:
        yield server
    finally:
        server.stop()


def prepare_body(quote: dict[str, Any], key: str) -> dict[str, Any]:
    c = quote["continuation_v3"]
    return {
        "caller_approved": True,
        **INTENT,
        "wallets": {chain: WALLET for chain in ROUTES[ROUTE].required_wallet_chains},
        "approval_v3": {
            "version": c["approval_v3_version"],
            "quote_id": quote["quote_id"],
            "quote_fingerprint": c["quote_fingerprint"],
            "selection_status": "selected",
            "selected_mode": "one_shot",
            "maximum_input_base": c["input_base_bounds"]["maximum"],
            "minimum_output_base": c["minimum_output_base"],
            "direct_route_summary_sha256": c["direct_route_summary_sha256"],
            "idempotency_key": key,
        },
    }


def fresh() -> httpx.Client:
    return httpx.Client(limits=httpx.Limits(max_keepalive_connections=0), timeout=30)


def test_every_quote_is_prepared_whichever_worker_answers(two_workers: ServerProcess) -> None:
    url = two_workers.url

    def quote_then_prepare(n: int) -> tuple[int, str, dict[str, Any]]:
        with fresh() as http:
            quote = http.post(f"{url}/v2/quote", json=INTENT)
            assert quote.status_code == 200, quote.text
            body = prepare_body(quote.json(), f"workers-{n:04d}-key")
            prepared = http.post(f"{url}/v2/prepare", json=body)
            return prepared.status_code, prepared.text, body

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(quote_then_prepare, range(40)))
    assert [status for status, _, _ in results] == [200] * 40, [t[:200] for s, t, _ in results if s != 200]

    # a replay answers the first answer, whichever worker it reaches
    _, first, body = results[0]
    with fresh() as http:
        replays = [http.post(f"{url}/v2/prepare", json=body) for _ in range(6)]
    assert {r.status_code for r in replays} == {200}
    assert {r.json()["payload_sha256"] for r in replays} == {
        httpx.Response(200, text=first).json()["payload_sha256"]
    }


def test_the_workers_private_directory_lives_only_while_serving(tmp_path: Path) -> None:
    """`routequote serve` creates the workers' socket directory (0700) in its temporary folder and removes it."""
    scratch = Path(tempfile.mkdtemp(prefix="rq-"))  # short: the sockets' paths must fit (else it moves)
    previous = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = str(scratch)
    try:
        server = start_server(
            tmp_path,
            "dir",
            {"database_url": f"sqlite+aiosqlite:///{tmp_path}/s.sqlite3"},
            workers=2,
        )
    finally:
        if previous is None:
            del os.environ["TMPDIR"]
        else:
            os.environ["TMPDIR"] = previous
    try:
        try:
            (folder,) = list(scratch.iterdir())
            assert folder.name.startswith("routequote-peers-")
            assert folder.stat().st_mode & 0o777 == 0o700
            # the server answers once one worker is up; the other may still start (a hang's bound)
            deadline = time.monotonic() + 180
            while not {"slot-0.sock", "slot-1.sock"} <= {p.name for p in folder.iterdir()}:
                assert time.monotonic() < deadline, sorted(p.name for p in folder.iterdir())
                time.sleep(0.1)
        finally:
            server.stop()
        assert list(scratch.iterdir()) == []
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def test_a_memory_store_with_two_workers_is_refused_at_start(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROUTEQUOTE_")}
    env.update(
        {
            "ROUTEQUOTE_QUOTE_STORE": "memory",
            "ROUTEQUOTE_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path}/s.sqlite3",
            "ROUTEQUOTE_DEV_SIGNING_KEY_PATH": "",
        }
    )
    exe = Path(sys.executable).with_name("routequote")
    done = subprocess.run(
        [str(exe), "serve", "--workers", "2"], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 2
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines == [
        "configuration error: ROUTEQUOTE_QUOTE_STORE=memory cannot serve ROUTEQUOTE_WORKERS=2: a quote issued by "
        "one worker would be unknown to the others (unset it, or use peers, sqlite or redis)"
    ]
