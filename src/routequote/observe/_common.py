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

import httpx

from routequote.market.jsonrpc import RpcError
from routequote.market.upstream import ResponseTooLarge, fetch_bounded, loads, log_failure, public_reason
from routequote.ports import ObservationUnavailable

T = TypeVar("T")


class WireError(ValueError):
    """An upstream answered with a value that does not have the documented shape (its text, which may quote
    the value, is for the log only: `unavailable` never relays it)."""


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

    async def guard(self, work: Awaitable[T], method: str | None = None) -> T:
        """One upstream call through the breaker (after `check`): an RPC, wire or observation failure counts
        against it and is raised as ObservationUnavailable (classified, naming `method`); a result closes it."""
        try:
            out = await work
        except (RpcError, WireError) as exc:
            self.failure()
            raise unavailable(exc, self.name, method) from None
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


def unavailable(exc: Exception, name: str, method: str | None = None) -> ObservationUnavailable:
    """The ObservationUnavailable for an upstream failure: reason like `rpc_timeout:base`, a message naming
    the chain's RPC, the method and the classified reason. What the node wrote (an error message, a value
    that failed a check) goes to the log, redacted and bounded, never into the answer."""
    kind = (
        exc.kind
        if isinstance(exc, RpcError)
        else "invalid_response"
        if isinstance(exc, WireError)
        else "error"
    )
    method = (exc.method if isinstance(exc, RpcError) else None) or method
    log_failure(f"{name} RPC", method, kind, exc)
    return ObservationUnavailable(f"rpc_{kind}:{name}", public_reason(f"{name} RPC", method, kind))


@dataclass
class RestUpstream:
    """A REST lookup an observer makes (Circle Iris, LayerZero Scan): one bounded GET behind the breaker, every
    failure an ObservationUnavailable `<prefix>_<kind>` whose message names the dependency, the method and a
    classified reason; what the upstream wrote goes to the log only."""

    dependency: str  # as answers name it, e.g. "Circle Iris"
    method: str  # our name for the call, e.g. "GET /v2/messages"
    prefix: str  # of the reason, e.g. "iris"
    breaker: Breaker
    max_bytes: int

    def fail(self, reason: str, kind: str, exc: BaseException) -> ObservationUnavailable:
        self.breaker.failure()
        log_failure(self.dependency, self.method, kind, exc)
        return ObservationUnavailable(reason, public_reason(self.dependency, self.method, kind))

    async def get_json(self, client: httpx.AsyncClient, url: str, timeout: float, **kwargs: Any) -> Any:
        """The parsed answer; None for 404 (not indexed yet). The caller parses it, and on a WireError raises
        `self.fail(f"{prefix}_invalid_response", "invalid_response", exc)`."""
        p = self.prefix
        self.breaker.check()
        try:
            resp = await fetch_bounded(
                client, "GET", url, max_bytes=self.max_bytes, timeout=timeout, **kwargs
            )
        except ResponseTooLarge as exc:
            raise self.fail(f"{p}_too_large", "too_large", exc) from None
        except httpx.TimeoutException as exc:
            raise self.fail(f"{p}_timeout", "timeout", exc) from None
        except httpx.HTTPError as exc:
            raise self.fail(f"{p}_transport_error", "transport_error", exc) from None
        if resp.status_code == 404:
            self.breaker.success()
            return None
        if resp.status_code == 429:
            raise self.fail(f"{p}_rate_limited", "rate_limited", RuntimeError("HTTP 429"))
        if resp.status_code != 200:
            status = resp.status_code
            raise self.fail(f"{p}_http_{status}", "transport_error", RuntimeError(f"HTTP {status}"))
        try:
            return await loads(resp.body)
        except ValueError as exc:
            raise self.fail(f"{p}_invalid_response", "invalid_response", exc) from None


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
