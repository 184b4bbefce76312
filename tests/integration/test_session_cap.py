"""The per-client cap on open sessions under concurrency and crashes (issue 38 item 2), over real HTTP.

* 50 concurrent creates from one client against a cap of 20 open exactly 20 sessions: one server on SQLite,
  one on PostgreSQL, and two replicas (`routequote serve` processes) sharing PostgreSQL or one SQLite file. The
  other 30 answer 429 `open_sessions_limit_reached`.
* `kill -9` of a server in the middle of concurrent creates: every session that exists afterwards is counted by
  the cap (each has its `session_clients` row), and a new server with the cap set to that number refuses the
  next create.

Each create binds a quote issued beforehand by the server that receives it (a replica's quotes are its own).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import secrets
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.support.observable import OBSERVABLE
from tests.support.postgres import require_postgres, run_coroutine, temporary_database
from tests.support.server import free_port, running_server
from tests.support.server_process import ServerProcess, server_processes, shared_signing_key, start_server
from tests.unit.actions.support import approval_for, intent_for, wallets_for

from routequote.app import create_app
from routequote.config import Settings
from routequote.core.quote import SESSION_HEADER

ROUTE = "base:ETH->base:USDC"
CAP = 20
CREATES = 50


def _token() -> str:
    return base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()


def _bodies(url: str, n: int) -> list[dict[str, Any]]:
    """`n` create bodies, each binding a fresh quote from `url`."""
    out = []
    with httpx.Client(base_url=url, timeout=30) as http:
        for _ in range(n):
            r = http.post("/v2/quote", json=intent_for(ROUTE, 100))
            assert r.status_code == 200, r.text
            key = f"k-{secrets.token_hex(6)}"
            out.append(
                {
                    "caller_approved": True,
                    **intent_for(ROUTE, 100),
                    "wallets": wallets_for(ROUTE),
                    "approval_v3": approval_for(r.json(), key=key, selected_mode="session"),
                    "idempotency_key": key,
                }
            )
    return out


async def _create_all(jobs: list[tuple[str, dict[str, Any]]]) -> list[httpx.Response | BaseException]:
    """Every create at once, each on its own connection."""
    limits = httpx.Limits(max_connections=len(jobs), max_keepalive_connections=0)
    async with httpx.AsyncClient(timeout=120, limits=limits) as http:
        return await asyncio.gather(
            *(
                http.post(f"{url}/v2/session", json=body, headers={SESSION_HEADER: _token()})
                for url, body in jobs
            ),
            return_exceptions=True,
        )


def _outcome(replies: list[httpx.Response | BaseException]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in replies:
        assert isinstance(r, httpx.Response), repr(r)
        label = (
            str(r.status_code) if r.status_code == 201 else f"{r.status_code} {r.json().get('reason_class')}"
        )
        counts[label] = counts.get(label, 0) + 1
    return counts


# ---- the database, read directly ----------------------------------------------------------------------

COUNTS = (
    "SELECT (SELECT count(*) FROM sessions), "
    "(SELECT count(*) FROM sessions s LEFT JOIN session_clients c ON c.session_id = s.session_id "
    "WHERE c.session_id IS NULL)"
)


def _counts(database_url: str) -> tuple[int, int]:
    """(sessions, sessions no client row counts)."""
    if database_url.startswith("sqlite"):
        with contextlib.closing(sqlite3.connect(database_url.split("///", 1)[1])) as db:
            total, uncounted = db.execute(COUNTS).fetchone()
            return int(total), int(uncounted)

    async def read() -> tuple[int, int]:
        import asyncpg  # type: ignore[import-untyped]

        conn = await asyncpg.connect(database_url)
        try:
            row = await conn.fetchrow(COUNTS)
            return int(row[0]), int(row[1])
        finally:
            await conn.close()

    return run_coroutine(read())


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'sessions.sqlite3'}"
        return
    require_postgres()
    with temporary_database("routequote_test_cap") as url:
        yield url


# ---- exactly the cap ----------------------------------------------------------------------------------


def test_fifty_concurrent_creates_open_exactly_the_cap(database_url: str) -> None:
    port = free_port()
    settings = Settings(
        rate_limit="off", port=port, database_url=database_url, max_open_sessions_per_client=CAP, **OBSERVABLE
    )
    with running_server(create_app(settings), port) as url:
        replies = asyncio.run(_create_all([(url, body) for body in _bodies(url, CREATES)]))
    outcome = _outcome(replies)
    print(f"\n{CREATES} concurrent creates, cap {CAP}: {outcome}")
    assert outcome == {"201": CAP, "429 open_sessions_limit_reached": CREATES - CAP}
    assert _counts(database_url) == (CAP, 0)


def test_two_replicas_hold_one_cap(database_url: str, tmp_path: Path) -> None:
    """Two `routequote serve` processes on one database (PostgreSQL, or one SQLite file)."""
    settings = {
        "database_url": database_url,
        "signing_key": shared_signing_key(),
        "max_open_sessions_per_client": str(CAP),
    }
    with server_processes(tmp_path, ["a", "b"], settings) as (a, b):
        on_a = [(a.url, body) for body in _bodies(a.url, CREATES // 2)]
        on_b = [(b.url, body) for body in _bodies(b.url, CREATES - CREATES // 2)]
        jobs = [job for pair in zip(on_a, on_b, strict=True) for job in pair]
        replies = asyncio.run(_create_all(jobs))
    outcome = _outcome(replies)
    print(f"\n{CREATES} concurrent creates over two replicas, cap {CAP}: {outcome}")
    assert outcome == {"201": CAP, "429 open_sessions_limit_reached": CREATES - CAP}
    assert _counts(database_url) == (CAP, 0)


# ---- kill -9 ------------------------------------------------------------------------------------------

KILL_CREATES = 200
KILL_AFTER = 40  # answered creates before the kill: the rest are in flight when it lands
CLIENTS = 10  # (X-Forwarded-For from a trusted proxy): clients do not wait on each other's cap, so many
# creates are inside their transactions when the kill lands


def _client(i: int) -> dict[str, str]:
    return {SESSION_HEADER: _token(), "X-Forwarded-For": f"10.0.0.{i % CLIENTS}"}


async def _create_until_killed(server: ServerProcess, bodies: list[dict[str, Any]]) -> int:
    """All creates at once; SIGKILL the server once KILL_AFTER have answered 201. Returns the 201s seen."""
    made = 0
    killed = asyncio.Event()
    limits = httpx.Limits(max_connections=len(bodies), max_keepalive_connections=0)
    async with httpx.AsyncClient(timeout=60, limits=limits) as http:

        async def one(i: int, body: dict[str, Any]) -> None:
            nonlocal made
            try:
                r = await http.post(f"{server.url}/v2/session", json=body, headers=_client(i))
            except httpx.HTTPError:
                return  # cut by the kill
            if r.status_code == 201:
                made += 1
                if made >= KILL_AFTER and not killed.is_set():
                    killed.set()
                    server.kill()

        await asyncio.gather(*(one(i, b) for i, b in enumerate(bodies)))
    assert killed.is_set(), "the server was never killed: fewer creates succeeded than expected"
    return made


BUSIEST = (
    "SELECT client, count(*) FROM session_clients GROUP BY client ORDER BY count(*) DESC, client LIMIT 1"
)


def _busiest(database_url: str) -> tuple[str, int]:
    if database_url.startswith("sqlite"):
        with contextlib.closing(sqlite3.connect(database_url.split("///", 1)[1])) as db:
            client, n = db.execute(BUSIEST).fetchone()
            return str(client), int(n)

    async def read() -> tuple[str, int]:
        import asyncpg

        conn = await asyncpg.connect(database_url)
        try:
            row = await conn.fetchrow(BUSIEST)
            return str(row[0]), int(row[1])
        finally:
            await conn.close()

    return run_coroutine(read())


def test_kill_9_during_concurrent_creates_leaves_every_session_counted(
    database_url: str, tmp_path: Path
) -> None:
    settings = {
        "database_url": database_url,
        "max_open_sessions_per_client": "1000",
        "trusted_proxies": "127.0.0.1",
    }
    server = start_server(tmp_path, "victim", settings)
    try:
        answered = asyncio.run(_create_until_killed(server, _bodies(server.url, KILL_CREATES)))
    finally:
        server.kill()
    total, uncounted = _counts(database_url)
    print(
        f"\nkill -9 during {KILL_CREATES} creates: {answered} answered 201, {total} sessions exist, "
        f"{uncounted} not counted by the cap"
    )
    assert total >= answered >= KILL_AFTER
    assert uncounted == 0
    # and the cap counts them: with the cap at exactly the busiest client's sessions, it may open no other
    client, held = _busiest(database_url)
    after_settings = {**settings, "max_open_sessions_per_client": str(held)}
    with server_processes(tmp_path, ["after"], after_settings) as (after,):
        (body,) = _bodies(after.url, 1)
        headers = {SESSION_HEADER: _token(), "X-Forwarded-For": client}
        r = httpx.post(f"{after.url}/v2/session", json=body, headers=headers, timeout=30)
        assert r.status_code == 429 and r.json()["reason_class"] == "open_sessions_limit_reached", r.text
