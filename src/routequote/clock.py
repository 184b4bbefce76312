"""Real clock and id factory (the core is handed these; tests hand it fixed ones)."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()


class UuidFactory:
    def new_id(self) -> str:
        return str(uuid.uuid4())


class FixedClock:
    """A clock for tests: starts at `start`, moves only when told."""

    def __init__(self, start: datetime) -> None:
        self._now = start
        self._mono = 1000.0

    def now(self) -> datetime:
        return self._now

    def monotonic(self) -> float:
        return self._mono

    def advance(self, seconds: float) -> None:
        from datetime import timedelta

        self._now += timedelta(seconds=seconds)
        self._mono += seconds


class SequentialIds:
    def __init__(self, prefix: str = "00000000-0000-4000-8000-") -> None:
        self._prefix = prefix
        self._n = 0

    def new_id(self) -> str:
        self._n += 1
        return f"{self._prefix}{self._n:012d}"
