"""The delivery pass (webhooks/service.py) over a store and a receiver that are plain objects: order, retries
with backoff, the retry window, and claims. The SQL store and real receivers: tests/integration."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from routequote.core.webhook_rules import RETRY_WINDOW_SECONDS, WebhookUrl, parse_webhook_url
from routequote.ports import SessionEvent
from routequote.webhooks.sender import Attempt
from routequote.webhooks.service import Subscription, Webhooks, WebhookSettings

T0 = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
KEY = b"\x07" * 32


class Clock:
    def __init__(self) -> None:
        self.at = T0

    def __call__(self) -> datetime:
        return self.at


class Store:
    """Keeps what the SQL store keeps, with the same claim rule (a claim is taken only when free)."""

    def __init__(self, clock: Clock) -> None:
        self.subs: dict[str, Subscription] = {}
        self.claims: dict[str, tuple[str, datetime]] = {}
        self.events: dict[str, list[SessionEvent]] = {}
        self.clock = clock

    def add_event(self, session_id: str, event: str, status: str) -> None:
        log = self.events.setdefault(session_id, [])
        log.append(SessionEvent(session_id, len(log) + 1, None, event, status, self.clock()))

    async def subscribe(self, session_id: str, url_sealed: str, now: datetime) -> None:
        self.subs.setdefault(session_id, Subscription(session_id, url_sealed, 0, 0, None, now, None, ()))

    async def get(self, session_id: str) -> Subscription | None:
        return self.subs.get(session_id)

    async def due(self, now: datetime, limit: int) -> Sequence[Subscription]:
        return [
            s
            for s in self.subs.values()
            if s.next_attempt_at <= now
            and (s.session_id not in self.claims or self.claims[s.session_id][1] <= now)
            and len(self.events.get(s.session_id, [])) > s.delivered_seq
        ][:limit]

    async def claim(self, seen: Subscription, holder: str, now: datetime, until: datetime) -> bool:
        session_id, current = seen.session_id, self.subs[seen.session_id]
        held = self.claims.get(session_id)
        if held is not None and held[1] > now:
            return False
        if (current.delivered_seq, current.attempts) != (seen.delivered_seq, seen.attempts):
            return False  # another process delivered from it since `seen` was read
        if current.next_attempt_at > now:
            return False
        self.claims[session_id] = (holder, until)
        return True

    async def pending_events(self, session_id: str, after_seq: int, limit: int) -> list[SessionEvent]:
        return [e for e in self.events.get(session_id, []) if e.seq > after_seq][:limit]

    async def record(self, session_id: str, holder: str, *, release: bool, **fields: object) -> bool:
        if self.claims.get(session_id, ("",))[0] != holder:
            return False
        fields["undeliverable"] = tuple(fields["undeliverable"])  # type: ignore[arg-type]
        self.subs[session_id] = replace(self.subs[session_id], **fields)  # type: ignore[arg-type]
        if release:
            del self.claims[session_id]
        return True


class Receiver:
    def __init__(self) -> None:
        self.failing = False
        self.got: list[tuple[str, int]] = []

    async def __call__(self, url: WebhookUrl, body: bytes, headers: dict[str, str]) -> Attempt:
        import json

        event = json.loads(body)
        if self.failing:
            return Attempt(False, 503, "http 503")
        self.got.append((event["session_id"], event["sequence"]))
        return Attempt(True, 204, "delivered")


def setup() -> tuple[Clock, Store, Receiver, Webhooks]:
    clock, receiver = Clock(), Receiver()
    store = Store(clock)
    hooks = Webhooks(store, KEY, WebhookSettings(), clock, sender=receiver, jitter=lambda: 1.0)
    return clock, store, receiver, hooks


URL = parse_webhook_url("https://hooks.example.com/in", ())


def test_events_go_in_order_and_each_once() -> None:
    clock, store, receiver, hooks = setup()
    asyncio.run(hooks.subscribe("s1", URL))
    store.add_event("s1", "create", "action_ready")
    store.add_event("s1", "observe", "awaiting_source_receipt")
    assert asyncio.run(hooks.tick()) == 2
    store.add_event("s1", "cancel", "cancelled")
    assert asyncio.run(hooks.tick()) == 1
    assert asyncio.run(hooks.tick()) == 0
    assert receiver.got == [("s1", 1), ("s1", 2), ("s1", 3)]
    assert store.subs["s1"].delivered_seq == 3 and store.claims == {}


def test_a_failure_holds_the_session_back_and_is_retried_with_doubling_delays() -> None:
    clock, store, receiver, hooks = setup()
    asyncio.run(hooks.subscribe("s1", URL))
    store.add_event("s1", "create", "action_ready")
    store.add_event("s1", "cancel", "cancelled")
    receiver.failing = True
    delays = []
    for _ in range(4):
        assert asyncio.run(hooks.tick()) == 0
        sub = store.subs["s1"]
        delays.append(int((sub.next_attempt_at - clock()).total_seconds()))
        assert asyncio.run(hooks.tick()) == 0  # not due yet: nothing is sent
        clock.at = sub.next_attempt_at
    assert delays == [5, 10, 20, 40] and store.subs["s1"].attempts == 4
    assert store.subs["s1"].last_failure == "http 503"
    receiver.failing = False
    assert asyncio.run(hooks.tick()) == 2
    assert receiver.got == [("s1", 1), ("s1", 2)]
    assert store.subs["s1"].attempts == 0 and store.subs["s1"].first_failure_at is None


def test_an_event_failing_for_the_whole_window_is_marked_undeliverable_and_the_next_goes() -> None:
    clock, store, receiver, hooks = setup()
    asyncio.run(hooks.subscribe("s1", URL))
    store.add_event("s1", "create", "action_ready")
    receiver.failing = True
    asyncio.run(hooks.tick())
    clock.at = T0 + timedelta(seconds=RETRY_WINDOW_SECONDS)
    store.add_event("s1", "cancel", "cancelled")
    asyncio.run(hooks.tick())  # event 1 fails again, past the window: given up; event 2 fails once
    sub = store.subs["s1"]
    assert sub.undeliverable == (1,) and sub.delivered_seq == 1 and sub.attempts == 1
    receiver.failing = False
    clock.at = sub.next_attempt_at
    assert asyncio.run(hooks.tick()) == 1 and receiver.got == [("s1", 2)]
    status = asyncio.run(hooks.status("s1"))
    assert status is not None and status["undeliverable"] == [1] and status["delivered_through"] == 2


def test_a_held_claim_keeps_a_second_deliverer_out() -> None:
    clock, store, receiver, hooks = setup()
    other = Webhooks(store, KEY, WebhookSettings(), clock, sender=receiver, jitter=lambda: 1.0)
    asyncio.run(hooks.subscribe("s1", URL))
    store.add_event("s1", "create", "action_ready")
    store.claims["s1"] = (other.holder, clock() + timedelta(seconds=60))  # the other process is mid-delivery
    assert asyncio.run(hooks.tick()) == 0 and receiver.got == []
    clock.at += timedelta(seconds=61)  # it died: its claim expires and this process takes over
    assert asyncio.run(hooks.tick()) == 1 and receiver.got == [("s1", 1)]


def test_a_claimer_that_read_the_row_before_another_delivered_sends_nothing_again() -> None:
    """Two processes read the same due row; one claims, delivers and releases; the other's claim (from its stale
    read) fails, so the event is not sent twice (found by two replicas on PostgreSQL: 26 deliveries of 24)."""
    clock, store, receiver, hooks = setup()
    other = Webhooks(store, KEY, WebhookSettings(), clock, sender=receiver, jitter=lambda: 1.0)
    asyncio.run(hooks.subscribe("s1", URL))
    store.add_event("s1", "create", "action_ready")
    stale = asyncio.run(store.due(clock(), 10))
    assert asyncio.run(hooks.tick()) == 1
    assert asyncio.run(other._deliver(stale[0])) == 0 and receiver.got == [("s1", 1)]


def test_a_url_sealed_under_another_key_is_never_sent_and_says_why() -> None:
    clock, store, receiver, hooks = setup()
    rotated = Webhooks(store, b"\x08" * 32, WebhookSettings(), clock, sender=receiver, jitter=lambda: 1.0)
    asyncio.run(hooks.subscribe("s1", URL))
    store.add_event("s1", "create", "action_ready")
    assert asyncio.run(rotated.tick()) == 0 and receiver.got == []
    assert "cannot be opened" in (store.subs["s1"].last_failure or "")


def test_the_secret_is_the_same_for_one_key_and_session_and_differs_otherwise() -> None:
    _, _, _, hooks = setup()
    a = hooks.secret_block("s1")["secret"]
    assert a == hooks.secret_block("s1")["secret"] != hooks.secret_block("s2")["secret"]
