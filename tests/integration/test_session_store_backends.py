"""The session-store contract across OS processes (SQLite and PostgreSQL), and each SQL backend's own cases: the
SQLite file, its URL spellings, an unusable path; PostgreSQL unreachable, silent, migrated twice at once, down and
back (that one only where the test may stop the server). The shared contract: test_session_store_contract.py."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import secrets
import socket
import sys
from pathlib import Path

import pytest
from tests.support.postgres import (
    closed_port,
    postgres_stopped,
    postgres_up,
    require_postgres,
    restart_postgres,
    temporary_database,
)
from tests.support.session_store_contract import create, new_session, step, truncate_sessions, url_of

from routequote.ports import SessionStore, StoreUnavailable
from routequote.storage.sessions_common import create_scope, session_scope
from routequote.storage.sessions_sql import SqlSessionStore
from routequote.storage.sessions_sql_connections import normalise_url

REPO = Path(__file__).resolve().parents[2]


# ---- several OS processes ----------------------------------------------------------------------------


async def _race_in_processes(
    url: str, session_id: str, expected: int, workdir: Path, n: int = 4
) -> list[str]:
    go = workdir / f"go-{secrets.token_hex(4)}"
    procs = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "tests.support.session_store_worker",
            url,
            session_id,
            str(expected),
            str(go),
            f"p{i}",
            cwd=str(REPO),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        for i in range(n)
    ]
    try:
        for p in procs:
            assert p.stdout is not None
            line = await asyncio.wait_for(p.stdout.readline(), 60)
            if line.strip() != b"ready":
                _, err = await p.communicate()
                raise AssertionError(f"worker did not start: {line!r} {err.decode()[-2000:]}")
        go.touch()
        outcomes = []
        for p in procs:
            out, err = await asyncio.wait_for(p.communicate(), 60)
            assert p.returncode == 0, err.decode()[-2000:]
            outcomes.append(out.decode().strip())
        return outcomes
    finally:
        for p in procs:
            if p.returncode is None:
                p.kill()
                await p.wait()


@pytest.mark.parametrize(
    "store", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)], indirect=True
)
async def test_two_processes_transitioning_one_version_have_exactly_one_winner(
    store: SessionStore, tmp_path: Path
) -> None:
    record = await create(store, {"step": 0})
    outcomes = await _race_in_processes(url_of(store), record.session_id, 1, tmp_path)
    assert sorted(outcomes) == ["lost", "lost", "lost", "won"]
    winner = f"p{outcomes.index('won')}"
    got = await store.get(record.session_id)
    assert got is not None
    assert (got.version, got.state) == (2, {"step": 0, "winner": winner})
    assert [e.event for e in await store.events(record.session_id)] == ["create", f"observe_{winner}"]
    assert await store.idempotent(session_scope(record.session_id), f"key-{winner}") is not None
    losers = [f"p{i}" for i, o in enumerate(outcomes) if o == "lost"]
    for name in losers:
        assert await store.idempotent(session_scope(record.session_id), f"key-{name}") is None


# ---- SQLite specifics --------------------------------------------------------------------------------


async def test_the_sqlite_file_holds_only_the_token_hash(tmp_path: Path) -> None:
    token = base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()  # as a caller makes one
    token_sha = hashlib.sha256(token.encode()).hexdigest()
    store = SqlSessionStore(f"sqlite+aiosqlite:///{tmp_path}/t/sessions.sqlite3")
    await store.start()
    try:
        record, event = new_session({"wallet": "0x" + "ab" * 20}, token_sha256=token_sha)
        await store.create(
            record, event, create_scope(token_sha), "k", "a" * 64, {"session_id": record.session_id}
        )
        assert await store.transition(
            record.session_id,
            1,
            "s2",
            {"w": 1},
            step(record, 1, "action_ready", "s2"),
            (session_scope(record.session_id), "k2", "b" * 64, {"ok": True}),
        )
        files = [p for p in (tmp_path / "t").iterdir() if p.is_file()]  # the database, its WAL and shm
        blob = b"".join(p.read_bytes() for p in files)
        assert token_sha.encode() in blob  # the search can find what is there ...
        assert record.session_id.encode() in blob
        assert token.encode() not in blob  # ... and the token itself is not
        assert token[:16].encode() not in blob
    finally:
        await store.aclose()


async def test_sqlite_url_spellings_and_a_missing_directory(tmp_path: Path) -> None:
    assert normalise_url("sqlite:///var/x.sqlite3").drivername == "sqlite+aiosqlite"
    assert normalise_url("postgresql://u:p@h/db").drivername == "postgresql+asyncpg"
    assert normalise_url("postgres://u@h/db").drivername == "postgresql+asyncpg"
    assert normalise_url("postgresql+psycopg://u@h/db?sslmode=require").query == {"ssl": "require"}
    assert SqlSessionStore("sqlite:///x.sqlite3").scope == "sqlite"
    assert SqlSessionStore("postgresql://u@127.0.0.1/db").scope == "postgresql"
    for bad in ("mysql://root:hunter2@h/db", "sqlite://", "sqlite:///:memory:", "not a url hunter2"):
        with pytest.raises(ValueError) as caught:
            SqlSessionStore(bad)
        assert "hunter2" not in str(caught.value)
    deep = tmp_path / "a" / "b" / "c.sqlite3"
    store = SqlSessionStore(f"sqlite:///{deep}")
    await store.start()
    await store.ping()
    await store.aclose()
    assert deep.exists()


async def test_an_unusable_sqlite_path_is_store_unavailable(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a directory")
    store = SqlSessionStore(f"sqlite:///{tmp_path}/file/sessions.sqlite3")
    with pytest.raises(StoreUnavailable):
        await store.start()
    await store.aclose()


# ---- PostgreSQL specifics ----------------------------------------------------------------------------


async def test_unreachable_postgres_is_store_unavailable_without_secrets() -> None:
    password = "s3cret-" + secrets.token_hex(6)
    url = f"postgresql://routequote:{password}@127.0.0.1:{closed_port()}/sessions"
    store = SqlSessionStore(url)
    record, event = new_session()
    calls = [
        store.start,
        store.ping,
        lambda: store.get(record.session_id),
        store.count_by_status,
        lambda: store.create(record, event, create_scope(record.token_sha256), "k", "a" * 64, {}),
        lambda: store.transition(record.session_id, 1, "s", {}, step(record, 1, "action_ready", "s")),
    ]
    try:
        for call in calls:
            with pytest.raises(StoreUnavailable) as caught:
                await call()
            message = str(caught.value)
            assert message.startswith("session database")
            assert password not in message and url not in message and "routequote:" not in message
            assert caught.value.__cause__ is None and caught.value.__suppress_context__
    finally:
        await store.aclose()


async def test_a_postgres_that_accepts_but_never_answers_times_out_as_unavailable() -> None:
    with socket.socket() as silent:  # the handshake completes in the backlog; nothing ever replies
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        store = SqlSessionStore(f"postgresql://u@127.0.0.1:{silent.getsockname()[1]}/db", connect_timeout=0.5)
        try:
            with pytest.raises(StoreUnavailable, match="timed out"):
                await store.ping()
        finally:
            await store.aclose()


@pytest.mark.postgres
async def test_two_stores_migrating_one_fresh_postgres_at_once_both_succeed() -> None:
    require_postgres()
    with temporary_database("routequote_test_migrate") as url:
        stores = [SqlSessionStore(url) for _ in range(4)]
        try:
            await asyncio.gather(*(s.start() for s in stores))
            record = await create(stores[0])
            assert await stores[3].get(record.session_id) == record
        finally:
            for s in stores:
                await s.aclose()


@pytest.mark.postgres
async def test_the_store_answers_unavailable_while_postgres_is_down_and_recovers_after(pg_url: str) -> None:
    store = SqlSessionStore(pg_url)
    await store.start()
    try:
        await truncate_sessions(store)
        record = await create(store, {"step": 0})
        assert await store.transition(
            record.session_id, 1, "s2", {"step": 1}, step(record, 1, "action_ready", "s2")
        )
        with postgres_stopped():
            with pytest.raises(StoreUnavailable):
                await store.get(record.session_id)
            with pytest.raises(StoreUnavailable):
                await store.transition(record.session_id, 2, "s3", {"step": 2}, step(record, 2, "s2", "s3"))
        assert postgres_up()
        got = await store.get(record.session_id)  # the same store, no restart of the app
        assert got is not None and (got.version, got.status, got.state) == (2, "s2", {"step": 1})
        assert await store.transition(record.session_id, 2, "s3", {"step": 2}, step(record, 2, "s2", "s3"))
        assert [e.seq for e in await store.events(record.session_id)] == [1, 2, 3]
        # a restart while the pool holds open connections: the very next call must work (pre-ping reconnects)
        restart_postgres()
        got = await store.get(record.session_id)
        assert got is not None and got.version == 3
        assert await store.transition(record.session_id, 3, "s4", {"step": 3}, step(record, 3, "s3", "s4"))
    finally:
        await store.aclose()
