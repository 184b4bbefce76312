"""`routequote matrix`: fill the 72 cells, one quote each. Against a server, a 429 pauses every worker for
the answer's Retry-After (as the explorer does) and the cell is tried again; a matrix with missing cells
exits non-zero."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

MAX_RETRY_AFTER_SECONDS = 60  # a longer Retry-After is waited in steps of this, never trusted blindly
DEFAULT_RETRY_AFTER_SECONDS = 5


class Pause:
    """One shared pause: after a 429 no worker sends before `until` (monotonic seconds)."""

    def __init__(self, sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self.until = 0.0
        self.waits = 0
        self._sleep = sleep

    def rate_limited(self, retry_after: int | None) -> None:
        wait = min(MAX_RETRY_AFTER_SECONDS, max(1, retry_after or DEFAULT_RETRY_AFTER_SECONDS))
        self.until = max(self.until, time.monotonic() + wait)
        self.waits += 1

    async def gate(self) -> None:
        while (left := self.until - time.monotonic()) > 0:
            await self._sleep(min(left, 0.5))


async def fill_cells(
    keys: list[str],
    quote: Callable[[str], Awaitable[dict[str, Any]]],
    cell: Callable[[dict[str, Any]], dict[str, Any]],
    *,
    concurrency: int,
    max_retries: int,
    on_done: Callable[[], None],
    pause: Pause | None = None,
) -> tuple[dict[str, dict[str, Any]], Pause]:
    """{route: cell or {"error": reason}}; a rate-limited cell waits out Retry-After up to `max_retries` times."""
    from routequote.client import ClientError, RateLimited, ServerError
    from routequote.errors import RouteQuoteError

    pause = pause or Pause()
    gate = asyncio.Semaphore(max(1, concurrency))
    cells: dict[str, dict[str, Any]] = {}

    async def one(key: str) -> None:
        async with gate:
            for attempt in range(max_retries + 1):
                await pause.gate()
                try:
                    cells[key] = cell(await quote(key))
                    break
                except RateLimited as exc:
                    cells[key] = {"error": exc.reason_class or exc.error}
                    if attempt < max_retries:
                        pause.rate_limited(exc.retry_after)
                except ServerError as exc:
                    cells[key] = {"error": exc.reason_class or exc.error}
                    break
                except (ClientError, RouteQuoteError) as exc:
                    cells[key] = {"error": getattr(exc, "reason_class", None) or type(exc).__name__}
                    break
        on_done()

    await asyncio.gather(*(one(k) for k in keys))
    return cells, pause
