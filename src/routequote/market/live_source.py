"""One upstream of the live market: the components it feeds, how it is read, and its breaker and cache
state."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class LiveSource:
    """One upstream: what it feeds, how to read it, and its breaker / cache state."""

    name: str
    components: tuple[str, ...]
    fetch: Callable[[], Awaitable[Any]]
    max_age_seconds: float
    # state
    reading: Any = None
    key: int | None = None
    as_of_unix: float | None = None
    fetched_at: float = -1e18  # monotonic time of the last successful read
    next_attempt: float = -1e18  # monotonic time before which no upstream call is made
    failures: int = 0
    error: str | None = None
    error_kind: str | None = None
    checked_at: str | None = None
    attempts: int = 0
    last_latency_ms: float | None = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
