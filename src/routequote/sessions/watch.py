"""The watcher: every session waiting on the chain is advanced by the service, without another call.

A session in `awaiting_source_receipt` or `awaiting_destination` (`WATCHED`) waits on a fact that appears on a
chain (a named transaction reaching finality, Circle's attestation, the Across fill, the LayerZero delivery).
Each tick the watcher looks at every such session and runs exactly what `POST /v2/session/{id}/observe` with no
new transaction names runs: gather the chain facts, decide in the core, fulfil the next action (re-quoted from
the verified output, held to the approval, else `reapproval_required`), and commit once through the same
transition table and store transaction (`SessionService.watched_outcome` / `commit_watched`). It records no
caller idempotent answer: no caller sent a key. A v1 corridor session runs its corridor's observe instead
(`V1CorridorMode._v1_observed`, asked with the transaction its caller named before), as its observe tools do. A
decision that only restates the stored pending state writes nothing, so a waiting session's event log grows only
when something changed.

Who watches: the session database holds the lease (`storage.watch_store`). `leader` (default): one process, the
holder of the `watcher` row renewed every tick, looks at every waiting session; with `--workers N` or several
replicas the others try each tick and one takes over once a dead holder's lease expires (within the lease and
one tick). A tick longer than the lease renews it as it goes. `shared`: each process
leases at most `batch` sessions per tick (one row per session), so replicas share the watch, each session
watched by one process at a time. Either way a commit is the store's optimistic version check: two processes
looking at one session at once still advance it once.

Failures never stop the loop and never advance anything: a read that fails (`ObservationUnavailable`: RPC
timeout, garbage, breaker open) backs off its chain for the rest of the tick and then exponentially; a session
whose observation is refused (a 4xx: reverted, not the prepared action) backs off alone. A chain without an RPC
URL is not watched, and its sessions say so (`watch_block`).

The seam: phase 1 (gather) for a tick goes through one `Gatherer.outcomes(chain, records)` call per chain.
`BatchedGatherer` (the default, sessions/batch_gather.py) asks every session's step kind what it reads,
deduplicates the reads across sessions and answers them from per-chain caches refreshed once per new block
(sessions/watch_cache.py: the head, block receipts and one log filter per new block; Solana signature
statuses; bridge lookups kept `bridge_lookup_seconds`), then lets each kind decide from the shared facts; a
change decided on a cached answer is decided again on direct reads before anything is committed. `PerSessionGatherer` gathers
each session on its own through the service's observe path (upstream calls grow with the sessions).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import secrets
import socket
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

import structlog

from routequote.core.assets import Chain
from routequote.core.routes import ROUTES
from routequote.core.sessions.machine import Status
from routequote.core.sessions.state import Decision
from routequote.ports import WATCH_LEADER as LEADER
from routequote.ports import WATCH_SESSION_PREFIX as SESSION_PREFIX
from routequote.ports import ObservationUnavailable, SessionRecord, StoreUnavailable
from routequote.readiness import rpc_setting
from routequote.sessions.batch_gather import BatchedGatherer, BatchedSessions
from routequote.sessions.watch_cache import WatchCache

log = structlog.get_logger("routequote.watch")

WATCHED = frozenset({Status.AWAITING_SOURCE_RECEIPT, Status.AWAITING_DESTINATION})


@dataclass(frozen=True)
class WatchConfig:
    enabled: bool = True
    interval_seconds: float = 2.0
    lease_seconds: float = 15.0
    scope: str = "leader"  # or "shared"
    batch: int = 2000
    max_backoff_seconds: float = 60.0
    bridge_lookup_seconds: float = 10.0

    @classmethod
    def from_settings(cls, settings: Any) -> WatchConfig:
        return cls(
            enabled=bool(settings.watch),
            interval_seconds=float(settings.watch_interval_seconds),
            lease_seconds=float(settings.watch_lease_seconds),
            scope=str(settings.watch_scope),
            batch=int(settings.watch_batch),
            max_backoff_seconds=float(settings.watch_max_backoff_seconds),
            bridge_lookup_seconds=float(settings.watch_bridge_lookup_seconds),
        )


def waiting_chain(route_key: str, current_step: int, phase: str) -> Chain | None:
    """The chain whose next fact a waiting session needs: the step's source chain before its source is
    verified, its target chain after (the fill, the mint or the delivery lands there)."""
    route = ROUTES.get(route_key)
    if route is None or not 0 <= current_step < len(route.steps):
        return None
    step = route.steps[current_step]
    return step.source.chain if phase == "source" else step.target.chain


@dataclass
class Watching:
    """What this instance follows, for the `watch` block of a session view (one per process)."""

    config: WatchConfig
    rpc_chains: frozenset[Chain] | None  # None: readers wired by hand (tests), every chain counts as watched

    def watched(self, chain: Chain) -> bool:
        return self.rpc_chains is None or chain in self.rpc_chains

    def block(self, view: dict[str, Any]) -> dict[str, Any]:
        """`watch: {active, reason, chain}` from a session view's status, route, step and phase."""
        status = str(view.get("status"))
        if view.get("view") != "session" or status not in WATCHED:
            return {"active": False, "reason": f"nothing to watch: a {status} session waits on no chain fact"}
        chain = waiting_chain(
            str(view.get("route")), int(view.get("current_step") or 0), str(view.get("phase"))
        )
        if chain is None:  # pragma: no cover - a stored session names a known route
            return {"active": False, "reason": "unknown route"}
        if not self.config.enabled:
            return {
                "active": False,
                "chain": chain.value,
                "reason": "the watcher is off on this instance (ROUTEQUOTE_WATCH=0): call observe",
            }
        if not self.watched(chain):
            return {
                "active": False,
                "chain": chain.value,
                "reason": f"no RPC URL for {chain.value} ({rpc_setting(chain)}): this instance cannot follow it; "
                "call observe on an instance that can",
            }
        return {
            "active": True,
            "chain": chain.value,
            "reason": f"followed on {chain.value} every {self.config.interval_seconds:g} s by the service: it "
            "advances without another call (observe still answers at once)",
        }


class WatchedSessions(Protocol):
    """The session service's watcher entry (engine.SessionService)."""

    async def watched_outcome(self, record: SessionRecord) -> Decision: ...

    async def commit_watched(self, record: SessionRecord, outcome: Decision) -> SessionRecord | None: ...


class Gatherer(Protocol):
    """Phase 1 and 2 for one chain and tick: an outcome per record (same order), an exception where it failed,
    None where it was not looked at (the chain failed first)."""

    async def outcomes(
        self, chain: Chain, records: Sequence[SessionRecord]
    ) -> list[Decision | BaseException | None]: ...


class PerSessionGatherer:
    """Each session gathered on its own through the service's observe path (upstream calls grow with sessions).
    The first chain failure stops the chain for this tick."""

    def __init__(self, sessions: WatchedSessions) -> None:
        self.sessions = sessions

    async def outcomes(
        self, chain: Chain, records: Sequence[SessionRecord]
    ) -> list[Decision | BaseException | None]:
        out: list[Decision | BaseException | None] = [None] * len(records)
        for i, record in enumerate(records):
            try:
                out[i] = await self.sessions.watched_outcome(record)
            except ObservationUnavailable as exc:
                out[i] = exc
                break
            except Exception as exc:  # a refused observation (4xx) or a fault: this session only
                out[i] = exc
        return out


def default_gatherer(sessions: WatchedSessions, config: WatchConfig | None = None) -> Gatherer:
    """`BatchedGatherer` (sessions/batch_gather.py: the reads of all a chain's sessions at once, from caches
    refreshed once per new block) for a service that offers its entries, else `PerSessionGatherer`."""
    if isinstance(sessions, BatchedSessions):
        lookup = (config or WatchConfig()).bridge_lookup_seconds
        return BatchedGatherer(sessions, WatchCache(lookup_seconds=lookup))
    return PerSessionGatherer(sessions)


@dataclass
class _Backoff:
    failures: int = 0
    due: float = 0.0


@dataclass
class TickReport:
    held: bool = False
    looked_at: int = 0
    advanced: int = 0
    failed: int = 0
    skipped_unwatched: int = 0
    skipped_backoff: int = 0
    per_chain: dict[str, int] = field(default_factory=dict)


class Watcher:
    """The loop (see the module docstring). `store`: `storage.watch_store.watch_store(session_store)`."""

    def __init__(
        self,
        sessions: WatchedSessions,
        store: Any,
        watching: Watching,
        *,
        gatherer: Gatherer | None = None,
        wall: Callable[[], datetime] = lambda: datetime.now(UTC),
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.sessions = sessions
        self.store = store
        self.watching = watching
        self.config = watching.config
        self.gatherer: Gatherer = gatherer or default_gatherer(sessions, self.config)
        self.wall = wall
        self.monotonic = monotonic
        self.holder = f"{socket.gethostname()[:60]}:{os.getpid()}:{secrets.token_hex(4)}"
        self.held = False
        self.ticks = 0
        self.last: TickReport | None = None
        self._backoff: dict[str, _Backoff] = {}
        self.after: str | None = None  # the last session id of the previous full page (see `_records`)

    # ---- backoff --------------------------------------------------------------------------------------

    def _waiting(self, key: str, now: float) -> bool:
        b = self._backoff.get(key)
        return b is not None and now < b.due

    def _failed(self, key: str, now: float) -> None:
        b = self._backoff.setdefault(key, _Backoff())
        b.failures += 1
        delay = min(self.config.interval_seconds * 2**b.failures, self.config.max_backoff_seconds)
        b.due = now + delay * (0.75 + random.random() / 2)  # noqa: S311 - jitter, not a secret

    def _ok(self, key: str) -> None:
        self._backoff.pop(key, None)

    # ---- one tick -------------------------------------------------------------------------------------

    async def _records(self) -> list[SessionRecord] | None:
        now, ttl = self.wall(), self.config.lease_seconds
        statuses = [s.value for s in WATCHED]
        batch, after = self.config.batch, self.after
        if self.config.scope == "shared":
            self.held = True
            page = list(await self.store.claim_waiting(statuses, self.holder, now, ttl, batch, after))
        else:
            self.held = LEADER in await self.store.claim([LEADER], self.holder, now, ttl)
            if not self.held:
                return None
            page = list(await self.store.waiting(statuses, batch, after))
        # a full page: more may wait, so the next tick goes on after this one (every waiting session is looked
        # at within ceil(waiting / batch) ticks); a short page held them all, so the next starts from the first
        self.after = page[-1].session_id if len(page) >= batch else None
        return page

    async def _heartbeat(self, names: list[str]) -> None:
        """While a long tick runs: renew what it holds every third of the lease; a lease lost (the database
        unreachable past the lease, another process took it) ends the tick at the next session."""
        while True:
            await asyncio.sleep(self.config.lease_seconds / 3)
            try:
                held = await self.store.claim(names, self.holder, self.wall(), self.config.lease_seconds)
            except Exception as exc:  # the store is unavailable: the lease runs out unless the next try works
                log.warning("watch_lease_renewal_failed", error_type=type(exc).__name__)
                continue
            if self.config.scope != "shared" and LEADER not in held:
                self.held = False
                log.warning("watch_lease_lost", holder=self.holder)
                return

    async def tick(self) -> TickReport:
        records = await self._records()
        if records is None:
            return await self._tick(None)
        names = (
            [SESSION_PREFIX + r.session_id for r in records] if self.config.scope == "shared" else [LEADER]
        )
        heartbeat = asyncio.create_task(self._heartbeat(names), name="routequote-watch-lease")
        try:
            return await self._tick(records)
        finally:
            heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await heartbeat

    async def _tick(self, records: list[SessionRecord] | None) -> TickReport:
        report = TickReport()
        self.ticks += 1
        self.last = report
        if records is None:
            return report
        report.held = True
        now = self.monotonic()
        groups: dict[Chain, list[SessionRecord]] = {}
        for record in records:
            state = record.state
            chain = waiting_chain(record.route, int(state.get("current_step", 0)), str(state.get("phase")))
            if chain is None or not self.watching.watched(chain):
                report.skipped_unwatched += 1
                continue
            if self._waiting(f"chain:{chain.value}", now) or self._waiting(record.session_id, now):
                report.skipped_backoff += 1
                continue
            groups.setdefault(chain, []).append(record)
        for chain, group in groups.items():
            await self._chain(chain, group, report)
        return report

    async def _chain(self, chain: Chain, group: list[SessionRecord], report: TickReport) -> None:
        results = await self.gatherer.outcomes(chain, group)
        now = self.monotonic()
        chain_key = f"chain:{chain.value}"
        chain_ok = True
        for record, result in zip(group, results, strict=True):
            if result is None:
                continue
            if not self.held:  # the lease was lost mid-tick: another process follows these sessions now
                return
            report.looked_at += 1
            report.per_chain[chain.value] = report.per_chain.get(chain.value, 0) + 1
            if isinstance(result, ObservationUnavailable):
                chain_ok = False
                report.failed += 1
                self._failed(chain_key, now)
                log.warning("watch_chain_unavailable", chain=chain.value, reason=result.reason)
                continue
            if isinstance(result, BaseException):
                report.failed += 1
                self._failed(record.session_id, now)
                log.info(
                    "watch_session_not_advanced",
                    session_id=record.session_id,
                    error_type=type(result).__name__,
                    reason=getattr(result, "reason_class", None),
                )
                continue
            try:
                committed = await self.sessions.commit_watched(record, result)
            except StoreUnavailable:
                raise
            except Exception as exc:  # an illegal transition or a conflict: nothing was written
                report.failed += 1
                self._failed(record.session_id, now)
                log.info("watch_commit_refused", session_id=record.session_id, error_type=type(exc).__name__)
                continue
            self._ok(record.session_id)
            if committed is not None:
                report.advanced += 1
        if chain_ok:
            self._ok(chain_key)

    # ---- the loop -------------------------------------------------------------------------------------

    async def loop(self) -> None:
        while True:
            try:
                report = await self.tick()
                if report.advanced or report.failed:
                    log.info(
                        "watch_tick",
                        looked_at=report.looked_at,
                        advanced=report.advanced,
                        failed=report.failed,
                    )
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the store is unavailable, or anything else: try again next tick
                log.warning("watch_tick_failed", error_type=type(exc).__name__)
            await asyncio.sleep(self.config.interval_seconds)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """For the app's lifespan: the loop in the background while the app serves; the lease is given up at
        shutdown so another process takes over at its next tick."""
        if not self.config.enabled or self.watching.rpc_chains == frozenset():
            yield  # off, or no chain has an RPC URL (the embedded defaults): nothing could be followed
            return
        task = asyncio.create_task(self.loop(), name="routequote-watch")
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            with contextlib.suppress(Exception):
                await self.store.release(self.holder)


__all__ = [
    "WATCHED",
    "Gatherer",
    "PerSessionGatherer",
    "TickReport",
    "WatchConfig",
    "Watcher",
    "Watching",
    "default_gatherer",
]
