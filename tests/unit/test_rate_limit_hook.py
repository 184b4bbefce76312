"""The rate limiter reports each refusal through its `on_limited` hook (the metrics' counter), by operation group,
and only refusals."""

from __future__ import annotations

import pytest

from routequote.errors import RateLimited
from routequote.ratelimit import RateLimiter


async def test_the_hook_hears_each_refusal_by_group_and_nothing_else() -> None:
    heard: list[str] = []
    limiter = RateLimiter("2/minute", on_limited=heard.append)
    await limiter.check("203.0.113.7", "session_api")
    await limiter.check("203.0.113.7", "session_api")
    assert heard == []  # allowed requests are not reported
    with pytest.raises(RateLimited):
        await limiter.check("203.0.113.7", "session_api")
    with pytest.raises(RateLimited):
        await limiter.check("203.0.113.7", "session_api")
    await limiter.check("203.0.113.8", "session_api")  # another client's bucket
    assert heard == ["session_api", "session_api"]


async def test_a_limiter_without_a_hook_still_refuses() -> None:
    limiter = RateLimiter("1/minute")
    await limiter.check("203.0.113.7")
    with pytest.raises(RateLimited):
        await limiter.check("203.0.113.7")
