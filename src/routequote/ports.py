"""The seams between the service and the outside world. Each has a real adapter and a fake beside it."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from routequote.core.market import MarketView


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


class QuoteStore(Protocol):
    """Issued quotes, kept until their TTL ends so prepare and sessions can bind to them."""

    def put(self, quote_id: str, record: dict[str, Any], expires_at_monotonic: float) -> None: ...

    def get(self, quote_id: str, now_monotonic: float) -> dict[str, Any] | None: ...

    def __len__(self) -> int: ...
