"""EventFeed over the in-memory store: pages through a long log without waiting and in order, wakes at once on a
commit of this process, ends after the resting event, and a per-client cap gives its slots back."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from routequote.errors import RateLimited
from routequote.ports import SessionEvent, SessionRecord
from routequote.sessions.event_stream import EventFeed, StreamSlots, StreamStart
from routequote.storage.sessions_common import create_scope
from routequote.storage.sessions_memory import MemorySessionStore

T0 = datetime(2026, 11, 22, 5, 0, tzinfo=UTC)
SID = "072447e9-69d5-545a-b648-b067cce0e49a"


class Sessions:
    """What EventFeed uses of the session engine: its store and its commit listeners."""

    def __init__(self, store: MemorySessionStore) -> None:
        self.store = store
        self.on_event: list[Any] = []

    async def commit(self, version: int, status: str, to_status: str) -> None:
        event = SessionEvent(
            SID, version + 1, status, "submitted_pending", to_status, T0 + timedelta(seconds=version)
        )
        assert await self.store.transition(SID, version, to_status, {"v": version}, event)
        for listener in self.on_event:
            listener(event)


async def new_log(events: int) -> Sessions:
    store = MemorySessionStore()
    record = SessionRecord(SID, "a" * 64, 1, "action_ready", "base:ETH->base:USDC", T0, T0, {"v": 0})
    first = SessionEvent(SID, 1, None, "create", "action_ready", T0)
    assert await store.create(record, first, create_scope("a" * 64), "k", "b" * 64, {}) is None
    sessions = Sessions(store)
    for version in range(1, events):
        await sessions.commit(version, "action_ready", "action_ready")
    return sessions


async def test_a_long_log_is_read_page_by_page_in_order_then_followed_live() -> None:
    sessions = await new_log(250)
    feed = EventFeed(sessions, poll_seconds=3600.0, page=100)  # type: ignore[arg-type]
    got: list[int] = []

    async def follow() -> None:
        async for event in feed.follow(StreamStart(SID, 7, False)):
            got.append(event.seq)

    task = asyncio.create_task(follow())
    for _ in range(100_000):  # the stored log, read without waiting for the (hour-long) poll
        if len(got) == 243:
            break
        await asyncio.sleep(0)
    assert got == list(range(8, 251))
    await sessions.commit(250, "action_ready", "awaiting_source_receipt")  # woken by the commit, not the poll
    await sessions.commit(251, "awaiting_source_receipt", "cancelled")
    await asyncio.wait_for(task, 60)  # bounds a hang only: it ends after the resting event
    assert got == list(range(8, 253))
    assert feed._waiters == {}


def test_slots_cap_each_client_and_are_given_back() -> None:
    slots = StreamSlots(2)
    slots.acquire("a")
    slots.acquire("a")
    slots.acquire("b")
    with pytest.raises(RateLimited) as refused:
        slots.acquire("a")
    assert refused.value.reason_class == "event_streams_limit_reached"
    slots.release("a")
    slots.acquire("a")
    for client in ("a", "a", "b"):
        slots.release(client)
    assert slots.open_streams() == 0


async def test_one_poller_reads_every_followed_sessions_version_and_wakes_on_another_processs_commit() -> (
    None
):
    """Three streams on one session: a commit the feed is not told of (another process's) reaches all three by the
    poller's version read, one read per interval for all of them; the last stream to end stops the poller."""
    sessions = await new_log(1)
    feed = EventFeed(sessions, poll_seconds=0.01, page=100)  # type: ignore[arg-type]
    feed.FALLBACK_POLLS = 10**9  # type: ignore[misc] # only the poller may wake them here
    got: list[list[int]] = [[], [], []]
    asked: list[list[str]] = []
    read_versions = sessions.store.versions

    async def versions(ids: list[str]) -> dict[str, int]:
        asked.append(list(ids))
        return await read_versions(ids)

    sessions.store.versions = versions  # type: ignore[method-assign]

    async def follow(n: int) -> None:
        async for event in feed.follow(StreamStart(SID, 0, False)):
            got[n].append(event.seq)

    tasks = [asyncio.create_task(follow(n)) for n in range(3)]
    for _ in range(100_000):
        if all(g == [1] for g in got) and feed.polls >= 2:
            break
        await asyncio.sleep(0.001)
    assert all(g == [1] for g in got)
    sessions.on_event.clear()  # commits of "another process": no in-process wake-up
    await sessions.commit(1, "action_ready", "cancelled")
    await asyncio.wait_for(asyncio.gather(*tasks), 60)  # bounds a hang only
    assert got == [[1, 2]] * 3
    assert asked and all(ids == [SID] for ids in asked) and len(asked) == feed.polls  # one read per interval
    assert feed._poller is None and feed._waiters == {}
