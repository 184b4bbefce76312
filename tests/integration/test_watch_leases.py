"""The watcher's leases in the session database (storage/watch_store.py), on SQLite and on PostgreSQL: one holder
at a time, renewed by its holder, taken by another only once expired, given up on release; in `shared` scope two
replicas lease disjoint sets of waiting sessions, and together all of them."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from tests.support.postgres import require_postgres, run_coroutine, temporary_database

from routequote.ports import WATCH_LEADER as LEADER
from routequote.ports import WATCH_SESSION_PREFIX as SESSION_PREFIX
from routequote.ports import SessionEvent, SessionRecord
from routequote.storage.sessions_sql import SqlSessionStore
from routequote.storage.watch_store import SqlWatchStore

T0 = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
WAITING = ["awaiting_source_receipt", "awaiting_destination"]


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with contextlib.ExitStack() as stack:
        if request.param == "postgresql":
            require_postgres()
            yield stack.enter_context(temporary_database())
        else:
            yield f"sqlite+aiosqlite:///{tmp_path / 'leases.sqlite3'}"


async def _store(url: str) -> SqlSessionStore:
    store = SqlSessionStore(url)
    await store.start()
    return store


async def _add(store: SqlSessionStore, n: int, status: str) -> list[str]:
    ids = []
    for i in range(n):
        sid = f"00000000-0000-4000-8000-{len(status):08d}{i:04d}"
        record = SessionRecord(
            sid, "0" * 64, 1, status, "base:ETH->base:USDC", T0, T0, {"mode": "v2_session"}
        )
        await store.create(record, SessionEvent(sid, 1, None, "create", status, T0), f"s:{sid}", "k", "h", {})
        ids.append(sid)
    return ids


def test_one_holder_renews_and_another_takes_over_only_after_expiry(database_url: str) -> None:
    async def run() -> None:
        a, b = await _store(database_url), await _store(database_url)  # two processes' pools on one database
        wa, wb = SqlWatchStore(a), SqlWatchStore(b)
        try:
            assert await wa.claim([LEADER], "A", T0, 10) == {LEADER}
            assert await wb.claim([LEADER], "B", T0 + timedelta(seconds=5), 10) == set()
            assert await wa.claim([LEADER], "A", T0 + timedelta(seconds=8), 10) == {LEADER}  # renewed to 18 s
            assert await wb.claim([LEADER], "B", T0 + timedelta(seconds=17), 10) == set()
            assert await wb.claim([LEADER], "B", T0 + timedelta(seconds=19), 10) == {LEADER}
            assert await wa.claim([LEADER], "A", T0 + timedelta(seconds=20), 10) == set()
            holder, until = (await wa.leases())[LEADER]
            assert holder == "B" and until == T0 + timedelta(seconds=29)
            await wb.release("B")
            assert await wa.claim([LEADER], "A", T0 + timedelta(seconds=21), 10) == {LEADER}
        finally:
            await a.aclose()
            await b.aclose()

    run_coroutine(run())


def test_racing_claims_have_exactly_one_winner(database_url: str) -> None:
    async def run() -> None:
        stores = [await _store(database_url) for _ in range(4)]
        try:
            won = await asyncio.gather(
                *(SqlWatchStore(s).claim([LEADER], f"H{i}", T0, 10) for i, s in enumerate(stores))
            )
            assert sorted(len(w) for w in won) == [0, 0, 0, 1]
        finally:
            for s in stores:
                await s.aclose()

    run_coroutine(run())


def test_shared_scope_leases_disjoint_sessions(database_url: str) -> None:
    async def run() -> None:
        a, b = await _store(database_url), await _store(database_url)
        wa, wb = SqlWatchStore(a), SqlWatchStore(b)
        try:
            waiting = set(await _add(a, 5, "awaiting_destination")) | set(
                await _add(a, 3, "awaiting_source_receipt")
            )
            await _add(a, 2, "action_ready")  # not waiting on the chain: never leased
            first = {r.session_id for r in await wa.claim_waiting(WAITING, "A", T0, 10, 5)}
            second = {r.session_id for r in await wb.claim_waiting(WAITING, "B", T0, 10, 5)}
            assert len(first) == 5 and len(second) == 3
            assert first.isdisjoint(second) and first | second == waiting
            # A renews its own; B finds nothing more until A's leases expire
            again = {
                r.session_id for r in await wa.claim_waiting(WAITING, "A", T0 + timedelta(seconds=5), 10, 5)
            }
            assert again == first
            assert {
                r.session_id for r in await wb.claim_waiting(WAITING, "B", T0 + timedelta(seconds=6), 10, 10)
            } == second
            later = {
                r.session_id for r in await wb.claim_waiting(WAITING, "B", T0 + timedelta(seconds=16), 10, 10)
            }
            assert later == waiting  # A stopped renewing (killed): B follows every session
            leases = await wa.leases()
            assert {n for n, (h, _) in leases.items() if h == "B"} == {SESSION_PREFIX + s for s in waiting}
        finally:
            await a.aclose()
            await b.aclose()

    run_coroutine(run())


def test_more_waiting_sessions_than_a_page_are_each_looked_at_in_turn(database_url: str) -> None:
    """A look that changes nothing writes nothing, so an order by last change would hand the same first page back
    every tick and leave the rest waiting: pages go round in session id order from the previous page's last id."""

    async def run() -> None:
        store = await _store(database_url)
        watch = SqlWatchStore(store)
        try:
            waiting = sorted(await _add(store, 7, "awaiting_destination"))
            await _add(store, 2, "action_ready")  # not waiting on the chain: never in a page
            pages, after = [], None
            for _ in range(4):
                page = [r.session_id for r in await watch.waiting(WAITING, 3, after)]
                pages.append(page)
                after = page[-1]
            assert pages == [waiting[0:3], waiting[3:6], [waiting[6], *waiting[0:2]], waiting[2:5]]
            # shared scope: the same rotation over the sessions a holder may lease
            shared, after = [], None
            for i in range(3):
                now = T0 + timedelta(seconds=i)
                page = [r.session_id for r in await watch.claim_waiting(WAITING, "A", now, 10, 3, after)]
                shared.append(page)
                after = page[-1]
            assert shared == pages[:3]
        finally:
            await store.aclose()

    run_coroutine(run())
