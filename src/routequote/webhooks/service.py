"""Session webhooks: taken at create, delivered from the event log in the background.

`check` reads the create body's `webhook` (an object with exactly `url`) and resolves the host now, so a
URL that would be refused is a 400 before anything is created. `subscribe` stores it sealed and returns what
the caller needs once: the signing secret. `tick` is one delivery pass: it claims each due subscription
(exactly one process per subscription, on every replica), sends its pending events in order, one bounded
attempt each, and records the outcome; a failed event is retried with backoff and jitter within a 24-hour
window, then marked undeliverable (shown on the session) so later events can go.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import secrets
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

import structlog

from routequote.core.field_rules import object_fields
from routequote.core.webhook_rules import WebhookUrl, parse_webhook_url, retry_delay, undeliverable
from routequote.errors import InvalidRequest
from routequote.ports import SessionEvent
from routequote.sessions.event_stream import encode_event
from routequote.webhooks.sender import Attempt, Resolver, deliver_once, resolve, system_resolver
from routequote.webhooks.signing import (
    UnsealError,
    seal_url,
    signed_headers,
    unseal_url,
    webhook_secret,
)

log = structlog.get_logger("routequote.webhooks")  # session ids, sequences and outcome classes only

DELIVERY = "at least once, in order per session (Standard Webhooks signature, HMAC-SHA256)"
EVENTS_PER_CLAIM = 5  # bounded so a claim (60 s) outlasts its attempts (10 s each)


@dataclass(frozen=True)
class Subscription:
    """A session's webhook as the store keeps it: the sealed URL and how far delivery has got."""

    session_id: str
    url_sealed: str
    delivered_seq: int  # the last event handled: delivered, or given up after the retry window
    attempts: int  # failed attempts of the next event
    first_failure_at: datetime | None
    next_attempt_at: datetime
    last_failure: str | None
    undeliverable: tuple[int, ...]


class WebhookStore(Protocol):
    async def subscribe(self, session_id: str, url_sealed: str, now: datetime) -> None: ...

    async def get(self, session_id: str) -> Subscription | None: ...

    async def due(self, now: datetime, limit: int) -> Sequence[Subscription]: ...

    async def claim(self, seen: Subscription, holder: str, now: datetime, until: datetime) -> bool: ...

    async def pending_events(self, session_id: str, after_seq: int, limit: int) -> list[SessionEvent]: ...

    async def record(
        self,
        session_id: str,
        holder: str,
        *,
        delivered_seq: int,
        attempts: int,
        first_failure_at: datetime | None,
        next_attempt_at: datetime,
        last_failure: str | None,
        undeliverable: Sequence[int],
        release: bool,
    ) -> bool: ...


@dataclass(frozen=True)
class WebhookSettings:
    allow_hosts: tuple[str, ...] = ()
    interval_seconds: float = 1.0
    claim_seconds: float = 60.0
    batch: int = 50
    parallel: int = 16


Sender = Callable[[WebhookUrl, bytes, dict[str, str]], Awaitable[Attempt]]


class Webhooks:
    def __init__(
        self,
        store: WebhookStore,
        key_material: bytes,
        settings: WebhookSettings,
        now: Callable[[], datetime],
        *,
        resolver: Resolver = system_resolver,
        sender: Sender | None = None,
        jitter: Callable[[], float] = lambda: random.uniform(0.5, 1.0),
    ) -> None:
        self.store = store
        self._key = key_material
        self.settings = settings
        self.now = now
        self.resolver = resolver
        self._send: Sender = sender or (
            lambda url, body, headers: deliver_once(url, body, headers, resolver=resolver)
        )
        self.jitter = jitter
        self.holder = secrets.token_hex(8)  # this process, in claims
        self.delivered = 0
        self.failed = 0

    # ---- at create -------------------------------------------------------------------------------------

    async def check(self, raw: Any) -> WebhookUrl:
        """The create body's `webhook`, or 400 (nothing is created): an object with exactly `url`, a URL the
        rules take, and a host that resolves only to addresses a delivery may connect to."""
        if not isinstance(raw, dict):
            raise InvalidRequest("webhook_invalid", "webhook must be an object with one field, url")
        fields = object_fields(raw, required=("url",))
        url = parse_webhook_url(fields["url"], self.settings.allow_hosts)
        await resolve(url, self.resolver)
        return url

    async def subscribe(self, session_id: str, url: WebhookUrl) -> dict[str, Any]:
        await self.store.subscribe(session_id, seal_url(self._key, session_id, url.url), self.now())
        return self.secret_block(session_id)

    def secret_block(self, session_id: str) -> dict[str, Any]:
        return {
            "secret": webhook_secret(self._key, session_id),
            "scheme": "standard-webhooks/v1",
            "delivery": DELIVERY,
            "note": "the secret is shown only in this answer: keep it to verify each delivery's webhook-signature",
        }

    async def status(self, session_id: str) -> dict[str, Any] | None:
        sub = await self.store.get(session_id)
        if sub is None:
            return None
        return {
            "delivery": DELIVERY,
            "delivered_through": sub.delivered_seq,
            "failed_attempts": sub.attempts,
            "next_attempt_at": sub.next_attempt_at.isoformat().replace("+00:00", "Z")
            if sub.attempts
            else None,
            "last_failure": sub.last_failure,
            "undeliverable": list(sub.undeliverable),
        }

    # ---- delivery --------------------------------------------------------------------------------------

    async def tick(self) -> int:
        """One pass over the due subscriptions; returns how many events were delivered."""
        now = self.now()
        due = await self.store.due(now, self.settings.batch)
        gate = asyncio.Semaphore(self.settings.parallel)

        async def one(sub: Subscription) -> int:
            async with gate:
                return await self._deliver(sub)

        return sum(await asyncio.gather(*(one(s) for s in due)))

    async def _deliver(self, sub: Subscription) -> int:
        now = self.now()
        until = now + timedelta(seconds=self.settings.claim_seconds)
        if not await self.store.claim(sub, self.holder, now, until):
            return 0  # another process holds it, or delivered from it since it was read
        delivered_seq, attempts, first_failure = sub.delivered_seq, sub.attempts, sub.first_failure_at
        given_up, last_failure, next_at = list(sub.undeliverable), sub.last_failure, now
        sent = 0
        try:
            url: WebhookUrl | None = parse_webhook_url(
                unseal_url(self._key, sub.session_id, sub.url_sealed), self.settings.allow_hosts
            )
        except (UnsealError, InvalidRequest):
            url = None
        for event in await self.store.pending_events(sub.session_id, delivered_seq, EVENTS_PER_CLAIM):
            attempt = await self._attempt(url, event)
            now = self.now()
            if attempt.delivered:
                delivered_seq, attempts, first_failure, last_failure, next_at = event.seq, 0, None, None, now
                sent += 1
                continue
            attempts, first_failure, last_failure = attempts + 1, first_failure or now, attempt.reason[:160]
            log.info(
                "webhook_attempt_failed", session_id=sub.session_id, sequence=event.seq, reason=last_failure
            )
            self.failed += 1
            if undeliverable(int(first_failure.timestamp()), int(now.timestamp())):
                given_up.append(event.seq)
                delivered_seq, attempts, first_failure, next_at = event.seq, 0, None, now
                continue
            next_at = now + timedelta(seconds=retry_delay(attempts, self.jitter()))
            break
        self.delivered += sent
        await self.store.record(
            sub.session_id,
            self.holder,
            delivered_seq=delivered_seq,
            attempts=attempts,
            first_failure_at=first_failure,
            next_attempt_at=next_at,
            last_failure=last_failure,
            undeliverable=given_up,
            release=True,
        )
        return sent

    async def _attempt(self, url: WebhookUrl | None, event: SessionEvent) -> Attempt:
        if url is None:
            return Attempt(False, None, "the stored webhook URL cannot be opened with this server key")
        body = encode_event(event).encode()  # the same bytes as the event stream's data line
        message_id = f"{event.session_id}:{event.seq}"
        headers = signed_headers(
            webhook_secret(self._key, event.session_id), message_id, int(self.now().timestamp()), body
        )
        return await self._send(url, body, headers)

    async def run(self, stop: asyncio.Event) -> None:
        """Deliver until `stop` is set; a failing pass (the store unavailable) is logged and tried again."""
        while not stop.is_set():
            try:
                await self.tick()
            except Exception as exc:  # the loop outlives any one pass
                log.warning("webhook_pass_failed", error=type(exc).__name__)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.settings.interval_seconds)
