"""Real clock and id factory (the core is handed these; tests hand it fixed ones)."""

from __future__ import annotations

import os
import threading
import time
from datetime import UTC, datetime


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()


class _RandomHex:
    """os.urandom read 4 KiB at a time and kept as hex: one system call and one hex conversion for 256 quote
    ids, not one each (a getrandom call cost about 6 µs of a loaded worker's time). What is buffered is
    dropped in a forked child, so a parent and its child never hand out the same digits."""

    CHUNK = 4096

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._drop()
        os.register_at_fork(after_in_child=self._drop)

    def _drop(self) -> None:
        self._hex = ""
        self._at = 0

    def take(self, digits: int) -> str:
        with self._lock:
            if self._at + digits > len(self._hex):
                self._hex, self._at = os.urandom(self.CHUNK).hex(), 0
            start = self._at
            self._at = start + digits
            return self._hex[start : start + digits]


_random_hex = _RandomHex()
# the first hex digit of the variant byte, with its two top bits set to 10 (RFC 4122)
_VARIANT = {f"{n:x}": f"{n & 0x3 | 0x8:x}" for n in range(16)}
# a byte as two hex digits, looked up: formatting it cost a third of a slotted id
_BYTE_HEX = tuple(f"{byte:02x}" for byte in range(256))


def random_uuid4(last_byte: int | None = None) -> str:
    """str(uuid.uuid4()) (the id of every quote), from the operating system's CSPRNG, at a fraction of its cost;
    `last_byte` replaces the last random byte (the peer quote store's worker slot)."""
    h = _random_hex.take(32)
    tail = h[20:] if last_byte is None else h[20:30] + _BYTE_HEX[last_byte]
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{_VARIANT[h[16]]}{h[17:20]}-{tail}"


class UuidFactory:
    def new_id(self) -> str:
        return random_uuid4()


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
