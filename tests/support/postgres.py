"""Local PostgreSQL for the suite: a throw-away database per run, a clear skip when the server is not up,
and a way to take the server down and up again (for the restart tests)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import shutil
import socket
import subprocess
import time
from collections.abc import Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import pytest

T = TypeVar("T")

PG_HOST, PG_PORT = "127.0.0.1", 5432
PG_ADMIN_URL = f"postgresql://postgres@{PG_HOST}:{PG_PORT}/postgres"


def run_coroutine(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to the end on a loop of its own (callable from sync code and from inside a running loop)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def postgres_up(timeout: float = 5.0) -> bool:  # bounds a hang: a busy machine answers late, not never
    try:
        with socket.create_connection((PG_HOST, PG_PORT), timeout=timeout):
            pass
    except OSError:
        return False
    try:
        return run_coroutine(_can_login(timeout + 2))
    except Exception:
        return False


async def _can_login(timeout: float) -> bool:
    import asyncpg  # type: ignore[import-untyped]

    conn = await asyncpg.connect(PG_ADMIN_URL, timeout=timeout)
    try:
        return bool(await conn.fetchval("SELECT 1") == 1)
    finally:
        await conn.close()


def require_postgres() -> None:
    if not postgres_up():
        pytest.skip(
            f"SKIPPED: PostgreSQL is not reachable on {PG_HOST}:{PG_PORT} as user postgres "
            "(.ci/run starts it on CI machines)"
        )


async def admin_sql(sql: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(PG_ADMIN_URL, timeout=5)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


def create_database(prefix: str = "routequote_test") -> str:
    """A new empty database; returns its URL (plain postgresql://, as an operator would write it)."""
    name = f"{prefix}_{secrets.token_hex(6)}"
    run_coroutine(admin_sql(f'CREATE DATABASE "{name}"'))
    return f"postgresql://postgres@{PG_HOST}:{PG_PORT}/{name}"


def drop_database(url: str) -> None:
    name = url.rsplit("/", 1)[1]
    if not name.startswith("routequote_test"):
        raise ValueError("refusing to drop a database this suite did not create")
    run_coroutine(admin_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@contextlib.contextmanager
def temporary_database(prefix: str = "routequote_test") -> Iterator[str]:
    url = create_database(prefix)
    try:
        yield url
    finally:
        drop_database(url)


def _cluster() -> tuple[str, str] | None:
    """(version, name) of the local cluster on PG_PORT, when pg_ctlcluster can drive it from here.

    RQ_SHARED_POSTGRES=1 says other test runs share this server (parallel local work): never stop it then."""
    if os.environ.get("RQ_SHARED_POSTGRES"):
        return None
    if shutil.which("pg_lsclusters") is None or shutil.which("pg_ctlcluster") is None:
        return None
    if hasattr(os, "geteuid") and os.geteuid() != 0:
        return None  # pg_ctlcluster must run as root or as the cluster owner; do not guess sudo
    out = subprocess.run(["pg_lsclusters", "--no-header"], capture_output=True, text=True, check=False).stdout
    for line in out.splitlines():
        fields = line.split()
        if len(fields) >= 3 and fields[2] == str(PG_PORT):
            return fields[0], fields[1]
    return None


def _ctl(action: str) -> None:
    cluster = _cluster()
    if cluster is None:
        pytest.skip("SKIPPED: cannot restart the local PostgreSQL here (needs pg_ctlcluster, run as root)")
    subprocess.run(
        ["pg_ctlcluster", cluster[0], cluster[1], action], check=True, capture_output=True, timeout=60
    )


def wait_postgres(timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if postgres_up():
            return
        time.sleep(0.2)
    raise RuntimeError("PostgreSQL did not come back")


def restart_postgres() -> None:
    """Restart the local cluster (every open connection dies) and wait until it accepts logins again."""
    _ctl("restart")
    wait_postgres()


@contextlib.contextmanager
def postgres_stopped() -> Iterator[None]:
    """PostgreSQL is down inside the block; it is started again (and awaited) however the block ends."""
    if _cluster() is None:
        pytest.skip("SKIPPED: cannot stop the local PostgreSQL here (needs pg_ctlcluster, run as root)")
    _ctl("stop")
    try:
        yield
    finally:
        _ctl("start")
        wait_postgres()


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
