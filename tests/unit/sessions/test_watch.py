"""The watcher's entry into the session service (sessions/watch.py, engine.watched_outcome / commit_watched), on
the session corpus's fakes (fixed clock, sequential ids, in-memory store, fabricated receipts).

Two identical worlds run the same calls; where one calls observe with no new names, the other lets the watcher
tick: the session reads back byte for byte the same (only the caller's idempotency record differs). A tick while
nothing changed writes nothing; a failing read or a refused observation writes nothing and backs off."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

from tests.unit.sessions.corpus import TOKEN, Recorder, swap_receipts

from routequote.core.assets import Chain
from routequote.ports import ObservationUnavailable
from routequote.sessions.watch import WatchConfig, Watcher, Watching
from routequote.storage.watch_store import watch_store

ROUTE = "base:ETH->base:USDC"


async def _waiting() -> tuple[Recorder, str, dict[str, Any]]:
    """A one-step session whose named swap is mined but not final (awaiting_source_receipt)."""
    r = Recorder()
    created = await r.sessions.create(await r.create_body(ROUTE), TOKEN)
    sid = created.body["session_id"]
    action = created.body["current_action"]["unsigned_action"]
    shallow = swap_receipts(r.evm, action, int(action["expectedOutput"]), seed=7, confirmations=1)
    named = await r.observe(sid, shallow, key="name-once")
    assert named.body["status"] == "awaiting_source_receipt"
    return r, sid, action


def _watcher(r: Recorder) -> Watcher:
    watching = Watching(WatchConfig(interval_seconds=0.05), None)
    r.sessions.watching = watching
    return Watcher(r.sessions, watch_store(r.sessions.store), watching)


def _final(r: Recorder, action: dict[str, Any]) -> None:
    swap_receipts(r.evm, action, int(action["expectedOutput"]), seed=7, confirmations=64)


def test_a_watched_advance_reads_back_exactly_as_observe_would_have_left_it() -> None:
    async def run() -> None:
        observed, sid_a, action_a = await _waiting()
        watched, sid_b, action_b = await _waiting()
        assert sid_a == sid_b and action_a == action_b  # the two worlds are the same so far
        watcher = _watcher(watched)
        observed.sessions.watching = watched.sessions.watching

        idle = await watcher.tick()  # not final yet: looked at, nothing written
        assert (idle.held, idle.looked_at, idle.advanced) == (True, 1, 0)
        assert (await watched.sessions.store.get(sid_b)).version == 2  # type: ignore[union-attr]

        _final(observed, action_a)
        _final(watched, action_b)
        answer = await observed.sessions.observe(sid_a, TOKEN, {"idempotency_key": "caller-observe"})
        report = await watcher.tick()
        assert report.advanced == 1

        a, b = await observed.sessions.read(sid_a, TOKEN), await watched.sessions.read(sid_b, TOKEN)
        assert a == b and a["status"] == "complete" and a["session_version"] == 3
        assert {k: v for k, v in answer.body.items() if k != "watch"} == {
            k: v for k, v in a.items() if k not in ("watch", "updated_at")
        } | {"idempotent_replay": False, "updated_at": answer.body["updated_at"]}
        ev_a = [
            (e.seq, e.from_status, e.event, e.to_status, e.at)
            for e in await observed.sessions.store.events(sid_a)
        ]
        ev_b = [
            (e.seq, e.from_status, e.event, e.to_status, e.at)
            for e in await watched.sessions.store.events(sid_b)
        ]
        assert ev_a == ev_b
        # the caller's key is recorded where the caller sent it, and nowhere else
        assert await observed.sessions.store.idempotent(f"session:{sid_a}", "caller-observe") is not None
        assert await watched.sessions.store.idempotent(f"session:{sid_b}", "caller-observe") is None
        assert a["watch"]["active"] is False  # complete: nothing left to follow

        after = await watcher.tick()  # nothing waits any more
        assert (after.looked_at, after.advanced) == (0, 0)

    asyncio.run(run())


class _Failing:
    def __init__(self, error: Exception) -> None:
        self.error = error
        self.calls = 0

    async def transaction(self, chain: str, tx_hash: str) -> Any:
        self.calls += 1
        raise self.error

    async def logs(self, *args: Any, **kwargs: Any) -> Any:
        raise self.error

    async def block_number(self, chain: str) -> int:
        raise self.error


def test_a_failing_read_writes_nothing_backs_off_and_the_session_advances_once_it_answers() -> None:
    async def run() -> None:
        r, sid, action = await _waiting()
        watcher = _watcher(r)
        _final(r, action)
        real, failing = r.sessions.evm, _Failing(ObservationUnavailable("rpc_timeout:base", "base timed out"))
        r.sessions.evm = failing  # type: ignore[assignment]
        first = await watcher.tick()
        assert (first.failed, first.advanced) == (1, 0)
        second = await watcher.tick()  # the chain is backed off: not even asked
        assert (second.skipped_backoff, failing.calls) == (1, 1)
        assert (await r.sessions.store.get(sid)).version == 2  # type: ignore[union-attr]

        r.sessions.evm = real
        watcher._backoff.clear()  # the backoff's time has passed
        done = await watcher.tick()
        assert done.advanced == 1
        assert (await r.sessions.read(sid, TOKEN))["status"] == "complete"

    asyncio.run(run())


def test_a_refused_observation_writes_nothing_and_only_that_session_backs_off() -> None:
    async def run() -> None:
        r, sid, action = await _waiting()
        watcher = _watcher(r)
        reverted = swap_receipts(r.evm, action, int(action["expectedOutput"]), seed=7, confirmations=64)
        for h in reverted:  # the swap reverted on chain
            r.evm.txs[h] = replace(r.evm.txs[h], status=0)
        report = await watcher.tick()
        assert (report.failed, report.advanced) == (1, 0)
        assert sid in watcher._backoff and not any(k.startswith("chain:") for k in watcher._backoff)
        record = await r.sessions.store.get(sid)
        assert record is not None and (record.status, record.version) == ("awaiting_source_receipt", 2)

    asyncio.run(run())


def test_the_view_says_whether_the_session_is_followed() -> None:
    async def run() -> None:
        r, sid, _action = await _waiting()
        r.sessions.watching = Watching(WatchConfig(), frozenset({Chain.BASE}))
        assert (await r.sessions.read(sid, TOKEN))["watch"] == {
            "active": True,
            "chain": "base",
            "reason": "followed on base every 2 s by the service: it advances without another call (observe still "
            "answers at once)",
        }
        r.sessions.watching = Watching(WatchConfig(), frozenset({Chain.ARBITRUM}))
        blind = (await r.sessions.read(sid, TOKEN))["watch"]
        assert blind["active"] is False and "ROUTEQUOTE_RPC_URL_BASE" in blind["reason"]
        r.sessions.watching = Watching(WatchConfig(enabled=False), None)
        off = (await r.sessions.read(sid, TOKEN))["watch"]
        assert off["active"] is False and "ROUTEQUOTE_WATCH=0" in off["reason"]
        # a watcher on an instance that cannot read base does not look at it
        watcher = Watcher(
            r.sessions, watch_store(r.sessions.store), Watching(WatchConfig(), frozenset({Chain.ARBITRUM}))
        )
        report = await watcher.tick()
        assert (report.skipped_unwatched, report.looked_at) == (1, 0)

    asyncio.run(run())


def test_more_waiting_sessions_than_a_batch_are_each_looked_at_in_turn() -> None:
    """With batch 2 and five sessions waiting, the two changed longest ago never finalise. A look that changes
    nothing writes nothing, so a page of the least recently changed would be those two every tick; pages go round
    instead (session id order from the last page's end), and the three behind them advance within three ticks."""

    async def run() -> None:
        r = Recorder()
        sessions: list[tuple[str, int, dict[str, Any]]] = []
        for seed in range(5):
            r.clock.advance(1)  # the earlier created, the longer ago changed
            created = await r.sessions.create(await r.create_body(ROUTE), TOKEN)
            sid, action = created.body["session_id"], created.body["current_action"]["unsigned_action"]
            shallow = swap_receipts(r.evm, action, int(action["expectedOutput"]), seed=seed, confirmations=1)
            assert (await r.observe(sid, shallow, key=f"name-once-{seed}")).body[
                "status"
            ] == "awaiting_source_receipt"
            sessions.append((sid, seed, action))
        for _sid, seed, action in sessions[2:]:  # the two oldest stay unfinal
            swap_receipts(r.evm, action, int(action["expectedOutput"]), seed=seed, confirmations=64)
        watching = Watching(WatchConfig(interval_seconds=0.05, batch=2), None)
        r.sessions.watching = watching
        watcher = Watcher(r.sessions, watch_store(r.sessions.store), watching)
        reports = [await watcher.tick() for _ in range(3)]
        assert [t.looked_at for t in reports] == [2, 2, 2] and sum(t.advanced for t in reports) == 3
        statuses = [(await r.sessions.read(sid, TOKEN))["status"] for sid, _, _ in sessions]
        assert statuses == ["awaiting_source_receipt"] * 2 + ["complete"] * 3

    asyncio.run(run())
