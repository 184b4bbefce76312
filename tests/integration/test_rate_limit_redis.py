"""Rate limits shared through a real Redis (127.0.0.1:6379): two app instances, one budget."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from tests.support.server import running_server
from tests.support.services import require_redis

from routequote.app import create_app
from routequote.config import Settings

pytestmark = pytest.mark.redis
REDIS_URL = "redis://127.0.0.1:6379/15"


@pytest.fixture()
def two_servers() -> Iterator[tuple[str, str]]:
    require_redis()
    # database 15 is flushed before and after, so earlier runs leave no budget behind
    settings = Settings(rate_limit="5/minute", redis_url=REDIS_URL)
    apps = [create_app(settings), create_app(settings)]
    import redis

    redis.Redis.from_url(REDIS_URL).flushdb()
    with running_server(apps[0]) as a, running_server(apps[1]) as b:
        yield a, b
    redis.Redis.from_url(REDIS_URL).flushdb()


def test_two_instances_share_one_budget_through_redis(two_servers: tuple[str, str]) -> None:
    a, b = two_servers
    codes = []
    for i in range(7):
        url = a if i % 2 == 0 else b
        codes.append(httpx.get(f"{url}/v2/status").status_code)
    assert codes == [200, 200, 200, 200, 200, 429, 429]
    r = httpx.get(f"{b}/v2/capabilities")
    assert r.status_code == 429 and r.json()["error"] == "rate_limited"
    assert int(r.headers["Retry-After"]) >= 1
