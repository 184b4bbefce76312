"""Whole routes carried by the watcher (issue 42, section 4): the route harness (`_routes.Run`) with the caller
cut down to what the issue allows, and the three readers of one session's events.

* `WatchedRun`: the caller names each transaction it signs once (the one `observe` with `transaction_hashes`
  per signed action); every other wait (finality, Circle's attestation, the Across fill, the LayerZero delivery)
  is left to the service, read back with GET only. While the session waits the chains keep producing blocks (the
  test mines one on the chain it waits on now and then), so a named transaction becomes final by itself.
* `EventTap`: the event stream (`GET /v2/session/{id}/events`) read from the first event in a thread, each
  message's `id` and `data` as received; a dropped connection resumes with `Last-Event-ID` on the next URL.
* `stored_log`: the session's event log as the store holds it, read from the database directly;
  `caller_operations`: the keys of the caller's recorded operations on it.
* `route_kinds`: the step kinds a route's steps select (`core.sessions.kinds` SOURCE / DESTINATION).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from _routes import Run
from httpx_sse import SSEError, connect_sse
from sqlalchemy import Connection, select
from tests.support.postgres import run_coroutine

from routequote.core.assets import CHAINS, Chain, ChainFamily
from routequote.core.routes import ROUTES, Provider
from routequote.core.sessions.kinds import DESTINATION, SOURCE, BridgeKind, KindKey
from routequote.core.sessions.machine import Status
from routequote.ports import SessionEvent
from routequote.sessions.watch import WATCHED
from routequote.storage.sessions_schema import session_idempotency
from routequote.storage.sessions_sql import SqlSessionStore

WAIT = 180.0  # bounds a hang only (a loaded machine is slow); no timing is asserted
WAITING = frozenset(s.value for s in WATCHED)
MINE_EVERY = 0.5  # seconds between the blocks the test mines on a chain a session waits on
# the bridge each provider's source evidence records (`steps[k].bridge.kind`)
BRIDGES = {
    Provider.CIRCLE_CCTP: BridgeKind.CCTP,
    Provider.ACROSS: BridgeKind.ACROSS,
    Provider.PAXOS_OFT: BridgeKind.OFT,
}
# what the world's servers run with on top of `build_world`'s settings: the watcher on, quick; two
# confirmations, so every named EVM transaction first waits for finality; webhooks to a loopback receiver
WATCH_SETTINGS: dict[str, Any] = {
    "watch": True,
    "watch_interval_seconds": 0.2,
    "watch_lease_seconds": 3.0,
    "watch_max_backoff_seconds": 1.0,
    "finality_confirmations": "base=2,arbitrum=2,robinhood=2",
    "webhook_allow_hosts": "127.0.0.1",
    "webhook_interval_seconds": 0.1,
    "event_stream_poll_seconds": 0.2,
}


def family(chain: Chain) -> ChainFamily:
    return CHAINS[chain].family


def route_kinds(name: str) -> set[KindKey]:
    """The kinds that observe the route's steps: each step's source by its chain family, and a bridge's
    destination by the bridge and the target's family."""
    out: set[KindKey] = set()
    for step in ROUTES[name].steps:
        out.add(SOURCE[family(step.source.chain)])
        if step.provider in BRIDGES:
            out.add(DESTINATION[(BRIDGES[step.provider], family(step.target.chain))])
    return out


def bridge_legs(names: list[str] | None = None) -> set[tuple[Provider, Chain, Chain]]:
    """(provider, from chain, to chain) of every bridge step of the routes (all of ROUTES by default)."""
    routes = [ROUTES[n] for n in names] if names is not None else list(ROUTES.values())
    return {
        (s.provider, s.source.chain, s.target.chain) for r in routes for s in r.steps if s.provider in BRIDGES
    }


def recorded_kinds(session: dict[str, Any], name: str) -> set[KindKey]:
    """The kinds the completed session's own evidence selects: each step's source, and the destination of the
    bridge its source evidence recorded (what `kinds.select` reads)."""
    out: set[KindKey] = set()
    for k, step in enumerate(ROUTES[name].steps):
        out.add(SOURCE[family(step.source.chain)])
        bridge = session["steps"][k].get("bridge")
        if bridge:
            out.add(DESTINATION[(BridgeKind(bridge["kind"]), family(step.target.chain))])
    return out


@dataclass
class WatchedRun(Run):
    """A route run whose caller never calls observe except to name a transaction it signed, once."""

    # called once, the first time the session waits after a naming call (before the test mines a block or plays
    # the bridge's upstream): what is waited for cannot have happened yet
    on_wait: Callable[[WatchedRun], None] | None = None
    naming_calls: list[list[str]] = field(default_factory=list)
    _last_mined: float = 0.0

    def observe(self, named: list[str] | None, *, expect: int = 200) -> dict[str, Any]:
        if named is None:  # the harness played the upstream the step waits on: the service follows it
            return self.settle(bridge_wait_ends=False)
        assert expect == 200
        source = self.session["phase"] == "source"
        r = self.world.api.observe(self.sid, self.token, named)  # the one call that names these
        assert r.status_code == 200, (self.route_name, r.text)
        self.naming_calls.append(list(named))
        self.take(dict(r.json()))
        return self.settle(bridge_wait_ends=source)

    def take(self, s: dict[str, Any]) -> None:
        if s["session_version"] == self.session.get("session_version"):
            return
        assert s["session_version"] > self.session["session_version"], (self.session, s)
        self.statuses.append(s["status"])
        self.session = s
        if s["status"] not in WAITING:
            self.check_funds(s)

    def settle(self, *, bridge_wait_ends: bool) -> dict[str, Any]:
        """Read (GET only) until the service has carried the session past its wait: to a status that waits on
        the caller, or, after a bridge's source was named, to `awaiting_destination` (the harness then plays
        the bridge's upstream)."""
        deadline = time.monotonic() + WAIT
        while True:
            s = self.session
            if s["status"] not in WAITING:
                return s
            if self.on_wait is not None:  # the session waits, before the chain or an upstream moves on
                hook, self.on_wait = self.on_wait, None
                hook(self)
                continue
            if bridge_wait_ends and s["status"] == Status.AWAITING_DESTINATION.value:
                return s
            self.chain_moves_on(s)
            assert time.monotonic() < deadline, (
                f"{self.route_name}: still {s['status']} v{s['session_version']}"
            )
            time.sleep(0.1)
            self.take(self.world.api.read(self.sid, self.token))

    def quiet(self, seconds: float = 1.0) -> dict[str, Any]:
        """The session as it rests while it waits: the same version for `seconds` (the watcher's pending looks
        write nothing) and every event so far delivered to its webhook."""
        deadline, since, version = time.monotonic() + WAIT, time.monotonic(), -1
        while True:
            s = self.world.api.read(self.sid, self.token)
            if s["session_version"] != version:
                since, version = time.monotonic(), s["session_version"]
            hook = s.get("webhook")
            delivered = hook is None or hook["delivered_through"] >= version
            if delivered and time.monotonic() - since >= seconds:
                self.take(s)
                return s
            assert time.monotonic() < deadline, f"{self.route_name}: never quiet ({s['status']} v{version})"
            time.sleep(0.05)

    def chain_moves_on(self, s: dict[str, Any]) -> None:
        """A block on the EVM chain the session waits on, now and then (finality comes with blocks)."""
        watch = s.get("watch") or {}
        chain = Chain(watch["chain"]) if watch.get("chain") else None
        if (
            chain is None
            or family(chain) is not ChainFamily.EVM
            or time.monotonic() < self._last_mined + MINE_EVERY
        ):
            return
        self.world.chain(chain).rpc.call("anvil_mine", "0x1")
        self._last_mined = time.monotonic()


class EventTap:
    """The session's event stream, from its first event, in a thread: `messages` holds each SSE message's
    (`id`, `data`) as received. When a connection drops it resumes with `Last-Event-ID`, on the next of `urls`
    (a replica killed mid-stream: the survivor serves the rest). Ends after the event the session rests with."""

    def __init__(self, urls: list[str], sid: str, token: str, header: str) -> None:
        self.urls, self.sid, self.token, self.header = urls, sid, token, header
        self.messages: list[tuple[str, str]] = []
        self.connections: list[tuple[str, str | None]] = []  # (url, Last-Event-ID sent)
        self.errors: list[str] = []
        self.finished = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> EventTap:
        self.thread.start()
        return self

    def _run(self) -> None:
        at, deadline = 0, time.monotonic() + WAIT * 3
        while not self.finished.is_set() and time.monotonic() < deadline:
            url = self.urls[min(at, len(self.urls) - 1)]
            last = self.messages[-1][0] if self.messages else None
            headers = {self.header: self.token, **({"last-event-id": last} if last else {})}
            self.connections.append((url, last))
            try:
                with (
                    httpx.Client(base_url=url, timeout=httpx.Timeout(10, read=60)) as http,
                    connect_sse(http, "GET", f"/v2/session/{self.sid}/events", headers=headers) as source,
                ):
                    if source.response.status_code == 204:  # the session already rested with our last event
                        self.finished.set()
                        return
                    assert source.response.status_code == 200, source.response.text
                    for message in source.iter_sse():
                        if message.data:
                            self.messages.append((message.id, message.data))
                    if self.messages and json.loads(self.messages[-1][1])["outcome"] is not None:
                        self.finished.set()  # the stream ends after the event the session rests with
            except (httpx.HTTPError, SSEError) as exc:  # the replica went away: resume on the next one
                self.errors.append(type(exc).__name__)
                at += 1
                time.sleep(0.2)

    def wait_through(self, seq: int) -> None:
        """Until the stream has passed on every event through `seq` (bounded by WAIT: a hang, not a timing)."""
        deadline = time.monotonic() + WAIT
        while not self.messages or int(self.messages[-1][0].rsplit(":", 1)[1]) < seq:
            assert time.monotonic() < deadline, (
                f"the stream has not reached event {seq}: {self.messages[-1:]}"
            )
            assert self.thread.is_alive(), f"the stream ended before event {seq}: {self.errors}"
            time.sleep(0.02)

    def wait(self) -> list[tuple[str, str]]:
        assert self.finished.wait(WAIT), f"the stream did not end: {self.messages[-1:]} {self.errors}"
        self.thread.join(10)
        return self.messages


def stored_log(database_url: str, sid: str) -> list[SessionEvent]:
    """The session's event log as the store holds it (`session_events`, read from the database)."""

    async def read() -> list[SessionEvent]:
        store = SqlSessionStore(database_url)
        try:
            return await store.events(sid)
        finally:
            await store.aclose()

    return run_coroutine(read())


def caller_operations(database_url: str, sid: str) -> list[str]:
    """The idempotency keys of every caller operation on the session (observe, refresh, cancel) the store
    recorded: the watcher records none (no caller sent a key)."""

    def keys(conn: Connection) -> list[str]:
        scope = session_idempotency.c.scope == f"session:{sid}"
        rows = conn.execute(select(session_idempotency.c.key).where(scope)).all()
        conn.rollback()
        return sorted(str(r.key) for r in rows)

    async def read() -> list[str]:
        store = SqlSessionStore(database_url)
        try:
            return await store.execute(keys, write=False)
        finally:
            await store.aclose()

    return run_coroutine(read())
