"""The seams between the service and the outside world. Each has a real adapter and a fake beside it."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from routequote.core.intent import QuoteIntent
from routequote.core.market import MarketView
from routequote.core.quote import QuoteBody
from routequote.core.routes import Route


@dataclass(frozen=True, slots=True)
class SourceHealth:
    """Health of one upstream market source (a pool, a bridge fee API, a price feed)."""

    name: str
    ok: bool
    reason: str | None = None
    checked_at: str | None = None
    components: tuple[str, ...] = field(default_factory=tuple)  # pool ids / provider names it feeds


class MarketData(Protocol):
    """Where quote assembly gets its market. `view()` raises UpstreamUnavailable / CapacityBusy."""

    @property
    def label(self) -> str: ...

    async def view(self) -> MarketView: ...

    def health(self) -> list[SourceHealth]: ...


class Clock(Protocol):
    def now(self) -> datetime: ...

    def monotonic(self) -> float: ...


class IdFactory(Protocol):
    def new_id(self) -> str: ...


@dataclass(frozen=True, slots=True)
class IssuedQuote:
    """A quote as issued: the exact payload, and the priced body it was assembled from."""

    payload: dict[str, Any]
    intent: QuoteIntent
    route: Route
    body: QuoteBody
    expires_at_monotonic: float  # in this process's monotonic clock


class QuoteStore(Protocol):
    """Issued quotes, kept until their TTL ends so prepare (and later sessions) bind to exactly what
    was issued. A quote that is not found (expired, evicted, restarted) fails closed."""

    scope: str  # how far a record is visible, published in capabilities' continuation_v3.cache_scope

    async def put(self, issued: IssuedQuote) -> None: ...

    async def get(self, quote_id: str, now_monotonic: float) -> IssuedQuote | None: ...

    def retained(self) -> int | None: ...  # records held, where the store can tell cheaply


class IdempotencyStore(Protocol):
    """Answers already given, by idempotency key: a replay gets the same answer, a different request
    under the same key is refused."""

    async def get(self, key: str, now_monotonic: float) -> tuple[str, dict[str, Any]] | None: ...

    async def put(
        self, key: str, request_sha256: str, response: dict[str, Any], ttl_seconds: float, now_monotonic: float
    ) -> None: ...

    def retained(self) -> int | None: ...
