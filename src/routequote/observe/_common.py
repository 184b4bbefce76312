"""Shared by the observers: a per-upstream circuit breaker and strict wire-value parsers.

The live market's breaker lives inside `LiveMarket` (per `LiveSource`, tied to its cache and health
report), so it cannot be reused here without its market state; this one is the same rule on its own:
after `failure_threshold` consecutive failures no call is made for `cooldown_seconds`, then one probe
is let through (another failure opens it again at once; a success closes it).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from routequote.market.jsonrpc import RpcError
from routequote.ports import ObservationUnavailable

T = TypeVar("T")


class WireError(ValueError):
    """An upstream answered with a value that does not have the documented shape."""


@dataclass
class Breaker:
    name: str
    failure_threshold: int = 3
    cooldown_seconds: float = 15.0
    clock: Callable[[], float] = field(default=time.monotonic)
    failures: int = 0
    open_until: float = -1e18

    def check(self) -> None:
        """Raise ObservationUnavailable while open; otherwise let the call (or the half-open probe) through."""
        if self.failures >= self.failure_threshold and self.clock() < self.open_until:
            raise ObservationUnavailable(
                f"rpc_circuit_open:{self.name}",
                f"{self.name}: not called for {self.cooldown_seconds:g} s after {self.failures} consecutive failures",
            )

    def success(self) -> None:
        self.failures = 0
        self.open_until = -1e18

    def failure(self) -> None:
        self.failures += 1
        if self.failures >= self.failure_threshold:
            self.open_until = self.clock() + self.cooldown_seconds

    async def guard(self, work: Awaitable[T]) -> T:
        """One upstream call through the breaker (after `check`): an RPC, wire or observation failure counts
        against it and is raised as ObservationUnavailable; a result closes it."""
        try:
            out = await work
        except (RpcError, WireError) as exc:
            self.failure()
            raise unavailable(exc, self.name) from exc
        except ObservationUnavailable:
            self.failure()
            raise
        self.success()
        return out

    @property
    def state(self) -> str:
        return (
            "open" if self.failures >= self.failure_threshold and self.clock() < self.open_until else "closed"
        )


def unavailable(exc: Exception, name: str) -> ObservationUnavailable:
    """The ObservationUnavailable for an upstream failure: reason like `rpc_timeout:base`."""
    if isinstance(exc, RpcError):
        return ObservationUnavailable(f"rpc_{exc.kind}:{name}", f"{name}: {exc}")
    if isinstance(exc, WireError):
        return ObservationUnavailable(f"rpc_invalid_response:{name}", f"{name}: {exc}")
    return ObservationUnavailable(f"rpc_error:{name}", f"{name}: {type(exc).__name__}")


HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


def quantity(value: Any, what: str) -> int:
    """A JSON-RPC QUANTITY: a string `0x` + at least one hex digit. Nothing else is accepted."""
    if (
        not isinstance(value, str)
        or not value.startswith("0x")
        or len(value) < 3
        or not set(value[2:]) <= HEX_DIGITS
    ):
        raise WireError(f"{what}: not a hex quantity: {value!r}")
    return int(value, 16)


def data_bytes(value: Any, what: str) -> bytes:
    """JSON-RPC DATA: `0x` + an even number of hex digits."""
    if (
        not isinstance(value, str)
        or not value.startswith("0x")
        or len(value) % 2
        or not set(value[2:]) <= HEX_DIGITS
    ):
        raise WireError(f"{what}: not hex data: {value!r}")
    return bytes.fromhex(value[2:])


def hash32(value: Any, what: str) -> str:
    """A 32-byte hash, lower-cased: `0x` + 64 hex digits."""
    raw = data_bytes(value, what)
    if len(raw) != 32:
        raise WireError(f"{what}: not 32 bytes: {value!r}")
    return "0x" + raw.hex()


def integer(value: Any, what: str) -> int:
    """A JSON integer or a decimal string of one (Iris and Solana send both); never a float or a bool."""
    if isinstance(value, bool):
        raise WireError(f"{what}: not an integer: {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    raise WireError(f"{what}: not an integer: {value!r}")
