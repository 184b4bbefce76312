"""Every step kind and both directions of every bridge, carried to `complete` by the watcher (issue 42, section 4).

On the route suite's local chains (`_route_world.py`: anvil base / arbitrum / robinhood with Uniswap, the Across
SpokePool, CCTP v2 stand-ins and LayerZero EndpointV2 + the USDG OFT; a LiteSVM-backed fake Solana RPC, fake
Iris and LayerZero Scan), each chosen route is carried from create to `complete` while the caller only names
each transaction it signs, once (`_watch_routes.WatchedRun`): finality, Circle's attestation, the Across fill and
the LayerZero delivery are followed by the service itself. Each session is created with a webhook to a loopback
receiver and followed over its event stream from the first event; at the end the stream's messages and the
webhook bodies equal the stored event log (read from the database) byte for byte and in order, and every
webhook's signature verifies.

* SQLite: one server, the watcher in its process.
* PostgreSQL: two replica processes over one database (watch scope `leader`). The caller talks to one; the
  stream is opened on the other, the lease holder, which is killed with `kill -9` once the first signed
  transaction is named and the session waits. The survivor takes the lease over and finishes the route; the
  stream resumes there with `Last-Event-ID`. The takeover time is printed (never asserted).
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from _evm import AnvilChain
from _routes import World, build_world, check_receipt, fresh_chains
from _sessions import SESSION_HEADER, SessionApi, start_replica
from _watch_routes import (
    WAIT,
    WATCH_SETTINGS,
    EventTap,
    WatchedRun,
    bridge_legs,
    caller_operations,
    family,
    recorded_kinds,
    route_kinds,
    stored_log,
)
from standardwebhooks import Webhook
from test_watch_anvil import lease_holder
from test_watch_v1_corridor import CARRIED_KINDS as V1_CARRIED
from tests.integration.test_session_webhooks import Receiver, receiving
from tests.support.postgres import require_postgres, temporary_database
from tests.support.server_process import ServerProcess, shared_signing_key

from routequote.client import verify_webhook
from routequote.core.sessions.kinds import DESTINATION, REGISTRY, SOURCE
from routequote.ports import SessionEvent
from routequote.sessions.event_stream import encode_event

pytestmark = pytest.mark.chain
AMOUNT_USD = 100
CHOSEN = (
    "arbitrum:ETH->base:ETH",  # uniswap on arbitrum, CCTP arbitrum -> base (the mint an EVM action), uniswap on base
    "base:USDC->arbitrum:USDC",  # CCTP base -> arbitrum
    "solana:USDC->robinhood:USDG",  # CCTP burn on Solana -> base, Across base -> robinhood
    "base:USDC->solana:USDC",  # CCTP base -> Solana (the mint a Solana action)
    "robinhood:USDG->solana:USDG",  # the USDG OFT robinhood -> Solana (the delivery found through LayerZero Scan)
)
# On PostgreSQL the watching replica is killed in these (a restart of a replica costs tens of seconds on a loaded
# machine): while a named EVM swap waits for finality; while a CCTP burn on Solana waits for Circle (then Across);
# while the USDG OFT send waits for finality (then the LayerZero delivery). The others run on both replicas.
KILLED_ON_POSTGRESQL = (CHOSEN[0], CHOSEN[2], CHOSEN[4])


def test_the_chosen_routes_cover_every_step_kind_and_both_directions_of_every_bridge() -> None:
    covered = set().union(*(route_kinds(n) for n in CHOSEN))
    selectable = set(SOURCE.values()) | set(DESTINATION.values())
    assert covered == selectable
    # the kinds only the v1 corridor selects (a v2 session never does: `kinds.select` picks from SOURCE and
    # DESTINATION) are carried by the watcher in test_watch_v1_corridor.py, which checks the completed session's
    # evidence names them: with the routes here, every kind of the registry has a test carrying it
    assert set(REGISTRY) == covered | V1_CARRIED and not covered & V1_CARRIED
    # every bridge direction the route table has, by chain family; and between two chains of one family, both
    # ways where the table has both (CCTP base <-> arbitrum). Across only reaches robinhood and the USDG OFT only
    # leaves it: the table has no reverse of either.
    legs, chosen = bridge_legs(), bridge_legs(list(CHOSEN))
    assert {(p, family(a), family(b)) for p, a, b in legs} == {
        (p, family(a), family(b)) for p, a, b in chosen
    }
    both_ways = {(p, a, b) for p, a, b in legs if (p, b, a) in legs and family(a) is family(b)}
    assert both_ways and both_ways <= chosen


# ---- carrying one route and checking what the three readers received -------------------------------------------


@dataclasses.dataclass
class Carried:
    run: WatchedRun
    tap: EventTap
    log: list[SessionEvent]
    deliveries: list[tuple[dict[str, str], bytes]]
    secret: str
    operations: list[str]  # the idempotency keys of the caller's operations the store recorded
    seconds: float


def carry(
    world: World,
    name: str,
    database_url: str,
    stream_urls: list[str],
    on_wait: Callable[[WatchedRun, EventTap], None] | None = None,
) -> Carried:
    started = time.monotonic()
    with receiving() as rx:
        hook = None if on_wait is None else lambda r: on_wait(r, tap)  # the tap is started before any wait
        run = WatchedRun(world, name, AMOUNT_USD, create_extra={"webhook": {"url": rx.url}}, on_wait=hook)
        run.fund()
        run.create()
        secret = run.session["webhook"]["secret"]
        tap = EventTap(stream_urls, run.sid, run.token, SESSION_HEADER).start()
        run.drive()
        assert run.session["status"] == "complete", run.session
        tap.wait()
        log = stored_log(database_url, run.sid)
        operations = caller_operations(database_url, run.sid)
        wait_for_deliveries(rx, len(log))
        deliveries = list(rx.deliveries)
    check_receipt(run)
    return Carried(run, tap, log, deliveries, secret, operations, time.monotonic() - started)


def wait_for_deliveries(rx: Receiver, count: int) -> None:
    deadline = time.monotonic() + WAIT
    while len({h["webhook-id"] for h, _ in list(rx.deliveries)}) < count:
        assert time.monotonic() < deadline, f"{len(rx.deliveries)} webhook deliveries of {count}"
        time.sleep(0.05)


CALLER_MINTS = ("evm_cctp_mint_standin", "solana_cctp_mint_simulated")  # destination actions the caller signs


def tx_key(tx_id: str) -> str:
    return tx_id.lower() if tx_id.startswith("0x") else tx_id  # EVM hashes in any case; Solana's as they are


def check_carried(c: Carried, name: str) -> None:
    run, log = c.run, c.log
    sid = run.sid
    # the caller named each transaction it signed, once, and called observe for nothing else: its source actions
    # and its CCTP mints (the Across fill and the LayerZero delivery are others' transactions, found by the service)
    named = [tx_key(h) for call in run.naming_calls for h in call]
    signed = [
        tx_key(h)
        for o in run.outcomes
        for h in [
            *o.source_ids,
            *(o.destination_ids if o.executors.get("destination") in CALLER_MINTS else []),
        ]
    ]
    assert named == signed and len(set(named)) == len(named), (run.naming_calls, signed)
    # and the store agrees: one recorded caller operation per naming call, each an observe
    assert len(c.operations) == len(run.naming_calls), c.operations
    assert all(k.startswith("observe") for k in c.operations), c.operations
    # the service carried every wait itself: more events than the caller's create and naming calls made
    assert len(log) > 1 + len(run.naming_calls), [e.event for e in log]
    assert [e.seq for e in log] == list(range(1, len(log) + 1))
    assert log[-1].to_status == "complete" and log[-1].event == "step_verified_final"
    assert recorded_kinds(run.session, name) == route_kinds(name)

    expected = [encode_event(e).encode() for e in log]  # the log's one serialisation
    # the stream: every stored event once, in order, its `id:` the event id, its `data:` those bytes
    assert [i for i, _ in c.tap.messages] == [f"{sid}:{e.seq}" for e in log]
    assert [d.encode() for _, d in c.tap.messages] == expected
    for (_, data), e in zip(c.tap.messages, log, strict=True):  # the stored row, field by field
        got = json.loads(data)
        assert (got["sequence"], got["type"], got["status"], got["previous_status"]) == (
            e.seq,
            e.event,
            e.to_status,
            e.from_status,
        )
        assert (got["step_index"], got["next_operation"], got["funds"]) == (
            e.step_index,
            e.next_operation,
            e.funds,
        )
        assert got["transactions"] == [dict(t) for t in e.transactions]

    # webhooks: at least once, in order; a redelivery (same webhook-id) carries the same bytes
    first: dict[str, bytes] = {}
    order: list[str] = []
    for headers, body in c.deliveries:
        wid = headers["webhook-id"]
        assert first.setdefault(wid, body) == body, f"{wid} redelivered with other bytes"
        if wid not in order:
            order.append(wid)
        assert verify_webhook(c.secret, body, headers)["id"] == wid
        Webhook(c.secret).verify(body, headers)  # the Standard Webhooks library's own check
    assert order == [f"{sid}:{e.seq}" for e in log]
    assert [first[w] for w in order] == expected


# ---- SQLite: one server, the watcher in its process ------------------------------------------------------------


@pytest.fixture(scope="module")
def world(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    db = tmp_path_factory.mktemp("watch-every-kind") / "sessions.sqlite3"
    anvil_factory = request.getfixturevalue("anvil_factory")
    with build_world(anvil_factory, f"sqlite+aiosqlite:///{db}", overrides=WATCH_SETTINGS) as w:
        yield w


@pytest.mark.parametrize("name", CHOSEN)
def test_the_watcher_carries_the_route_and_every_reader_gets_the_log(
    world: World, name: str, record_property: Any
) -> None:
    with fresh_chains(world):
        c = carry(world, name, world.settings["database_url"], [world.api.url])
    check_carried(c, name)
    record_property("route_seconds", round(c.seconds, 1))
    print(
        f"\n{name} on SQLite: {len(c.log)} events, {len(c.run.naming_calls)} naming calls, {c.seconds:.1f} s"
    )


# ---- PostgreSQL: two replicas, the watching one killed with kill -9 mid-route -----------------------------------


@dataclasses.dataclass
class Replicas:
    """The world's server as two replica processes over one database (`_sessions.start_replica`)."""

    tmp: Path
    live: list[ServerProcess] = dataclasses.field(default_factory=list)
    settings: dict[str, Any] = dataclasses.field(default_factory=dict)
    deployments: dict[Any, Any] = dataclasses.field(default_factory=dict)

    @contextmanager
    def serve(self, settings: dict[str, Any], deployments: dict[Any, Any]) -> Iterator[str]:
        self.settings, self.deployments = settings, deployments
        try:
            for _ in range(2):  # one after the other: the first runs the migrations
                self.live.append(start_replica(self.tmp, settings, deployments))
            yield self.live[0].url
        finally:
            for server in self.live:
                server.stop()

    def holder(self, database_url: str) -> tuple[ServerProcess, ServerProcess]:
        """(the replica holding the watch lease, the other one)."""
        deadline = time.monotonic() + WAIT
        while (pid := lease_holder(database_url)) not in [s.process.pid for s in self.live]:
            assert time.monotonic() < deadline, "no replica holds the watch lease"
            time.sleep(0.1)
        held = next(s for s in self.live if s.process.pid == pid)
        return held, next(s for s in self.live if s is not held)

    def ensure_two(self) -> None:
        """A dead replica replaced by a new one (when the next route starts: the last kill costs no restart)."""
        self.live = [s for s in self.live if s.process.poll() is None]
        while len(self.live) < 2:
            self.live.append(start_replica(self.tmp, self.settings, self.deployments))


@pytest.fixture(scope="module")
def pg(
    anvil_factory: Callable[[int], AnvilChain], world: World, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[World, Replicas, str]]:  # after the SQLite world: the chains are restored by then
    require_postgres()
    replicas = Replicas(tmp_path_factory.mktemp("replicas"))
    # the replicas of one deployment share the signing key (webhook secrets are derived from it)
    overrides = {**WATCH_SETTINGS, "signing_key": shared_signing_key()}
    with (
        temporary_database() as url,
        build_world(anvil_factory, url, overrides=overrides, serve=replicas.serve) as w,
    ):
        yield w, replicas, url


@pytest.mark.postgres
@pytest.mark.parametrize("name", CHOSEN)
def test_on_two_replicas_the_survivor_of_a_kill_9_finishes_the_route_and_every_reader_gets_the_log(
    pg: tuple[World, Replicas, str], name: str, record_property: Any
) -> None:
    w, replicas, url = pg
    replicas.ensure_two()  # a replica killed by the test before is replaced
    victim, survivor = replicas.holder(url)
    caller = dataclasses.replace(w, api=SessionApi(survivor.url))  # the caller talks to the survivor
    takeover: list[float] = []

    def kill_the_watcher(run: WatchedRun, tap: EventTap) -> None:
        """The first signed transaction is named and the session waits: kill -9 the replica that watches, once
        the session is quiet (so no webhook claim or half-done look dies with it: a claim would hold its event
        back for its 60 s) and the stream on it has passed on every event so far (so the stream resumes on the
        survivor with a Last-Event-ID: a loaded machine may not have sent the first event yet)."""
        quiet = run.quiet()
        tap.wait_through(quiet["session_version"])
        assert tap.connections == [(victim.url, None)], tap.connections
        assert lease_holder(url) == victim.process.pid
        victim.kill()
        killed = time.monotonic()
        while lease_holder(url) != survivor.process.pid:
            assert time.monotonic() < killed + WAIT, "no replica took the watch lease over"
            time.sleep(0.02)
        takeover.append(time.monotonic() - killed)

    try:
        with fresh_chains(w):
            kill = kill_the_watcher if name in KILLED_ON_POSTGRESQL else None
            c = carry(caller, name, url, [victim.url, survivor.url], kill)
    finally:
        caller.api.close()
    check_carried(c, name)
    assert c.tap.connections[0] == (victim.url, None)  # the stream began on the replica that watches
    if name not in KILLED_ON_POSTGRESQL:
        assert len(c.tap.connections) == 1 and victim.process.poll() is None
        print(f"\n{name} on PostgreSQL, two replicas: {len(c.log)} events, {c.seconds:.1f} s")
        return
    assert takeover, "the session never waited after a naming call"
    # the stream resumed on the survivor after the last event it had from the killed replica
    assert any(u == survivor.url and last for u, last in c.tap.connections[1:]), c.tap.connections
    record_property("watch_lease_takeover_seconds", round(takeover[0], 3))
    print(
        f"\n{name} on PostgreSQL, two replicas, kill -9 mid-route: takeover {takeover[0]:.2f} s "
        f"(lease 3 s, tick 0.2 s), {len(c.log)} events, stream connections {c.tap.connections}, "
        f"{c.seconds:.1f} s"
    )
