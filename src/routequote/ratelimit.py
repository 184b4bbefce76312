"""Per-client rate limits on the public operations (in-process by default, Redis when configured)."""

from __future__ import annotations

import contextvars
import math
import time
from collections.abc import Callable

from limits import parse
from limits.aio.storage import MemoryStorage, Storage
from limits.aio.strategies import MovingWindowRateLimiter
from limits.errors import StorageError
from limits.storage import storage_from_string
from redis.exceptions import RedisError

from routequote.errors import RateLimited
from routequote.storage.store_faults import fault_of
from routequote.store_errors import store_unavailable

# The client the current request was counted against: every surface names it here (through `check`) before it
# runs an operation, so per-client rules further in (the cap on open sessions) key on the same address.
current_client: contextvars.ContextVar[str | None] = contextvars.ContextVar("routequote_client", default=None)


class RateLimiter:
    """`spec` like "120/minute", or "off". One bucket per (operation group, client)."""

    def __init__(
        self, spec: str, redis_url: str = "", *, on_limited: Callable[[str], None] | None = None
    ) -> None:
        self.enabled = spec.strip().lower() not in ("off", "none", "0", "")
        self.spec = spec
        # called with the operation group of every request refused as over the limit (the metrics' counter)
        self.on_limited = on_limited
        if not self.enabled:
            return
        self.item = parse(spec)
        storage: Storage
        if redis_url:
            url = (
                redis_url.replace("redis://", "async+redis://", 1)
                if redis_url.startswith("redis://")
                else redis_url
            )
            storage = storage_from_string(url, implementation="redispy")  # type: ignore[assignment]
        else:
            storage = MemoryStorage()
        self.storage = storage
        self.limiter = MovingWindowRateLimiter(storage)

    async def allows(self, client: str, group: str = "quote_api") -> bool:
        """Whether `check` would let one more request through now, counting nothing (names the client too)."""
        current_client.set(client)
        if not self.enabled:
            return True
        try:
            return await self.limiter.test(self.item, group, client)
        except (RedisError, StorageError, OSError) as exc:
            raise store_unavailable(
                "rate_limit_store_unavailable", "rate-limit store", fault_of(exc)
            ) from exc

    async def check(self, client: str, group: str = "quote_api") -> dict[str, str]:
        """Count one request; raise RateLimited when over. Returns RateLimit-* headers."""
        current_client.set(client)
        if not self.enabled:
            return {}
        try:
            allowed = await self.limiter.hit(self.item, group, client)
            stats = await self.limiter.get_window_stats(self.item, group, client)
        except (RedisError, StorageError, OSError) as exc:  # the shared store cannot serve: 503, never a 500
            raise store_unavailable(
                "rate_limit_store_unavailable", "rate-limit store", fault_of(exc)
            ) from exc
        reset = max(0, math.ceil(stats.reset_time - time.time()))
        headers = {
            "RateLimit-Limit": str(self.item.amount),
            "RateLimit-Remaining": str(max(0, stats.remaining)),
            "RateLimit-Reset": str(reset),
            "RateLimit-Policy": f"{self.item.amount};w={self.item.get_expiry()}",
        }
        if not allowed:
            if self.on_limited is not None:
                self.on_limited(group)
            raise RateLimited(
                "rate_limit_exceeded",
                f"limit {self.spec} per client exceeded",
                retry_after_seconds=max(1, min(3600, reset)),
                details={"limit": self.spec},
                headers=headers,
            )
        return headers
