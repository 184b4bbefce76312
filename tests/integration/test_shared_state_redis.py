"""Issued quotes and prepare idempotency shared through a real Redis (127.0.0.1:6379): a quote issued
by one instance binds a prepare on another, replays are answered from the shared record, and the
stored quote round-trips to the same domain objects."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest
from tests.support.server import running_server
from tests.support.services import require_redis
from tests.unit.actions.support import approval_for, intent_for, wallets_for

from routequote.app import create_app
from routequote.config import Settings
from routequote.errors import DependencyUnavailable

pytestmark = pytest.mark.redis
REDIS_URL = "redis://127.0.0.1:6379/14"
ROUTE = "base:USDC->base:ETH"


@pytest.fixture()
def two_instances() -> Iterator[tuple[str, str]]:
    require_redis()
    import redis

    redis.Redis.from_url(REDIS_URL).flushdb()
    settings = Settings(rate_limit="off", quote_store="redis", redis_url=REDIS_URL)
    with running_server(create_app(settings)) as a, running_server(create_app(settings)) as b:
        yield a, b
    redis.Redis.from_url(REDIS_URL).flushdb()


def prepare_body(quote: dict[str, Any], **approval: Any) -> dict[str, Any]:
    return {
        "caller_approved": True,
        **intent_for(ROUTE, 100),
        "wallets": wallets_for(ROUTE),
        "approval_v3": approval_for(quote, **approval),
    }


def test_quote_on_one_instance_binds_prepare_on_another(two_instances: tuple[str, str]) -> None:
    a, b = two_instances
    quote = httpx.post(f"{a}/v2/quote", json=intent_for(ROUTE, 100)).json()
    caps = httpx.get(f"{b}/v2/capabilities").json()
    assert caps["continuation_v3"]["cache_scope"] == "shared_redis_ttl_expired_fails_closed"
    body = prepare_body(quote)
    first = httpx.post(f"{b}/v2/prepare", json=body)
    assert first.status_code == 200, first.text
    bundle = first.json()
    assert bundle["quote_binding"]["quote_fingerprint"] == quote["continuation_v3"]["quote_fingerprint"]
    assert bundle["idempotent_replay"] is False
    # the replay goes to the other instance and is answered from the shared record
    replay = httpx.post(f"{a}/v2/prepare", json=body)
    assert replay.status_code == 200 and replay.json()["idempotent_replay"] is True
    assert replay.json()["payload_sha256"] == bundle["payload_sha256"]
    # the same key with another request is refused on either instance
    changed = prepare_body(
        quote, minimum_output_base=str(int(quote["continuation_v3"]["minimum_output_base"]) + 1)
    )
    refused = httpx.post(f"{a}/v2/prepare", json=changed)
    assert (
        refused.status_code == 409
        and refused.json()["reason"] == "idempotency_key_reused_with_different_request"
    )


def test_metrics_time_each_redis_write_and_count_its_commands(two_instances: tuple[str, str]) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    a, _ = two_instances

    def scrape() -> dict[tuple[str, str], float]:
        text = httpx.get(f"{a}/metrics").text
        return {
            (s.name, s.labels.get("store", "")): s.value
            for family in text_string_to_metric_families(text)
            for s in family.samples
            if s.name.startswith("routequote_redis_")
        }

    before = scrape()
    began = time.perf_counter()
    quotes = [httpx.post(f"{a}/v2/quote", json=intent_for(ROUTE, 100 + i)) for i in range(3)]
    span = time.perf_counter() - began
    assert all(q.status_code == 200 for q in quotes)
    after = scrape()
    writes = after[("routequote_redis_write_seconds_count", "quotes")] - before.get(
        ("routequote_redis_write_seconds_count", "quotes"), 0
    )
    commands = after[("routequote_redis_commands_total", "quotes")] - before.get(
        ("routequote_redis_commands_total", "quotes"), 0
    )
    # one quote after another: a write each, and each write's commands counted (the first of a second also
    # pushes expiries, the first of an issue writes its shared record)
    assert writes >= 3 and commands >= writes
    seconds = after[("routequote_redis_write_seconds_sum", "quotes")] - before.get(
        ("routequote_redis_write_seconds_sum", "quotes"), 0
    )
    # a round trip each, inside the span the test saw them in (how long is the machine's business: a bound of
    # one wire timeout per write raced a loaded machine's clock, as the wire's own timer checks only a hang)
    assert 0 < seconds <= span, (seconds, span)
    # the idempotency store has its own connection: no prepare yet, so no write of it is counted
    assert after.get(("routequote_redis_write_seconds_count", "idempotency"), 0) == 0


def test_unknown_quote_fails_closed_everywhere(two_instances: tuple[str, str]) -> None:
    a, b = two_instances
    quote = httpx.post(f"{a}/v2/quote", json=intent_for(ROUTE, 100)).json()
    import redis

    # as if it expired: the quote is a field of its second's hash (the id's last byte names the second)
    bucket = f"routequote:quote:b:{int(quote['quote_id'][34:], 16)}"
    assert redis.Redis.from_url(REDIS_URL).hdel(bucket, quote["quote_id"]) == 1
    r = httpx.post(f"{b}/v2/prepare", json=prepare_body(quote))
    assert r.status_code == 409 and r.json()["action_created"] is False


async def test_stored_quote_round_trips_to_the_same_domain_objects() -> None:
    from datetime import UTC, datetime

    from routequote.clock import FixedClock, SequentialIds
    from routequote.market.snapshot import EmbeddedSnapshot
    from routequote.service import RouteQuoteService, ServiceConfig
    from routequote.storage.quote_records import issued_from_record, issued_to_record
    from routequote.storage.quotes import MemoryQuoteStore

    service = RouteQuoteService(
        EmbeddedSnapshot(),
        MemoryQuoteStore(),
        FixedClock(datetime(2026, 11, 22, tzinfo=UTC)),
        SequentialIds(),
        ServiceConfig(),
    )
    for key in ("robinhood:ETH->base:ETH", "solana:SOL->robinhood:ETH", "base:USDC->base:ETH"):
        src, dst = key.split("->")
        (fc, ft), (tc, tt) = src.split(":"), dst.split(":")
        issued = await service.quote_request(
            {"from_chain": fc, "from_token": ft, "to_chain": tc, "to_token": tt, "amount_usd": 1000}
        )
        original = await service.issued_quote(issued["quote_id"])
        assert original is not None
        loaded = issued_from_record(issued_to_record(original), 5.0)
        assert loaded.payload == original.payload and loaded.json == original.json
        assert loaded.intent == original.intent and loaded.route is original.route
        assert loaded.body.pricing == original.body.pricing
        assert loaded.body.summary_sha256 == original.body.summary_sha256


def bucket_of(quote_id: str) -> str:
    return f"routequote:quote:b:{int(quote_id[34:], 16)}"


async def test_quotes_of_a_compiled_issue_are_stored_compact_and_read_back_exactly() -> None:
    """Each quote is a field of its second's hash: its expiry, then its record. The first quote of a body is
    stored whole; later ones as their own values naming one shared record. Each reads back to the same JSON and
    domain objects; without its shared record a quote fails closed, and a later second writes it again."""
    require_redis()
    import redis

    from routequote.clock import SystemClock
    from routequote.core.intent import parse_quote_request
    from routequote.market.snapshot import EmbeddedSnapshot
    from routequote.service import RouteQuoteService, ServiceConfig
    from routequote.storage.redis_store import BUCKET_GRACE_MS, SHARED_GRACE_MS, RedisQuoteStore

    raw = redis.Redis.from_url(REDIS_URL)
    raw.flushdb()
    store = RedisQuoteStore(REDIS_URL)
    reader = RedisQuoteStore(REDIS_URL)  # another worker: nothing of the writer's in its memory
    service = RouteQuoteService(
        EmbeddedSnapshot(), store, SystemClock(), store.ids, ServiceConfig(quote_ttl_seconds=60)
    )
    try:
        before_ms = int(time.time() * 1000)
        quotes = [await service.quote(parse_quote_request(intent_for(ROUTE, 100))) for _ in range(4)]
        after_ms = int(time.time() * 1000)
        assert not raw.keys("routequote:quote:????????-*")  # nothing under a key of its own
        fields = [raw.hget(bucket_of(q.quote_id), q.quote_id) for q in quotes]
        assert all(f is not None for f in fields), fields
        expiries, stored = zip(*(f.partition(b"|")[::2] for f in fields if f is not None), strict=True)
        assert all(before_ms + 60_000 <= int(e) <= after_ms + 60_000 for e in expiries), expiries
        assert stored[0][:1] == b"{"  # the reference assembly: whole
        assert all(r[:1] == b"C" and len(r) < 1024 for r in stored[1:]), stored
        for q in quotes:  # each hash expires whole: the longest TTL and a grace after its second
            second = int(before_ms // 1000) + (int(q.quote_id[34:], 16) - before_ms // 1000) % 256
            expected = (second + 1) * 1000 + 60_000 + BUCKET_GRACE_MS
            assert abs(raw.execute_command("PEXPIRETIME", bucket_of(q.quote_id)) - expected) < 100
        shared = {r.partition(b"\n")[0][1:] for r in stored[1:]}
        assert len(shared) == 1  # one shared record for the body's compiled issue
        (shared_key,) = shared
        assert 60_000 < raw.pttl(shared_key) <= 60_000 + SHARED_GRACE_MS
        for q in quotes:
            loaded = await reader.get(q.quote_id, 0.0)
            assert loaded is not None and loaded.json == q.json and loaded.payload == orjson.loads(q.json)
            assert loaded.intent == q.intent and loaded.body.pricing == q.body.pricing
            assert 58.0 < loaded.expires_at_monotonic <= 60.0  # its lifetime, from the record's expiry
        # a shared record changed under its key is a fault of the store (503, never bound); one that is gone
        # fails closed, as an expired quote
        original = raw.get(shared_key)
        assert original is not None
        raw.set(shared_key, original.replace(b"routequote", b"routequotX", 1))
        with pytest.raises(DependencyUnavailable) as caught:
            await reader.get(quotes[1].quote_id, 0.0)
        assert caught.value.details == {"store_fault": "malformed_record"}
        raw.delete(shared_key)
        assert await reader.get(quotes[2].quote_id, 0.0) is None
        assert (await reader.get(quotes[0].quote_id, 0.0)) is not None  # the whole record needs nothing
        # the first quote of the next second checks the shared record, and writes it again
        time.sleep(1.05 - time.time() % 1)
        again = await service.quote(parse_quote_request(intent_for(ROUTE, 100)))
        assert raw.get(shared_key) == original
        loaded = await reader.get(again.quote_id, 0.0)
        assert loaded is not None and loaded.json == again.json
    finally:
        await store.aclose()
        await reader.aclose()
        raw.flushdb()


async def test_a_quote_expires_by_its_record_and_a_foreign_id_gets_a_key_of_its_own() -> None:
    require_redis()
    from datetime import UTC, datetime

    import redis

    from routequote.clock import FixedClock, SequentialIds
    from routequote.core.intent import parse_quote_request
    from routequote.market.snapshot import EmbeddedSnapshot
    from routequote.service import RouteQuoteService, ServiceConfig
    from routequote.storage.redis_store import RedisQuoteStore

    raw = redis.Redis.from_url(REDIS_URL)
    raw.flushdb()
    start = int(time.time())
    now = [start - start % 256 + 100.2]  # a second whose last byte no sequential id below has
    store = RedisQuoteStore(REDIS_URL, wall=lambda: now[0])
    reader = RedisQuoteStore(REDIS_URL, wall=lambda: now[0])
    clock, config = FixedClock(datetime(2026, 11, 22, tzinfo=UTC)), ServiceConfig(quote_ttl_seconds=30)
    ours = RouteQuoteService(EmbeddedSnapshot(), store, clock, store.ids, config)
    foreign = RouteQuoteService(EmbeddedSnapshot(), store, clock, SequentialIds(), config)
    try:
        q = await ours.quote(parse_quote_request(intent_for(ROUTE, 100)))
        assert raw.hexists(bucket_of(q.quote_id), q.quote_id)
        now[0] += 1.0  # the next second's quote goes to the next second's hash (the command is packed anew)
        following = await ours.quote(parse_quote_request(intent_for(ROUTE, 100)))
        assert bucket_of(following.quote_id) != bucket_of(q.quote_id)
        assert raw.hexists(bucket_of(following.quote_id), following.quote_id)
        now[0] -= 1.0
        now[0] += 29.5  # Redis keeps the hash (it expires 65 s after its second); the record says how long
        loaded = await reader.get(q.quote_id, 100.0)
        assert loaded is not None and 100.0 < loaded.expires_at_monotonic <= 100.5
        now[0] += 1.0
        assert raw.hexists(bucket_of(q.quote_id), q.quote_id)
        assert await reader.get(q.quote_id, 100.0) is None  # past its own expiry: fails closed
        # an id this store did not make (or made too long before it is stored): its own key, Redis' expiry
        for service in (foreign, ours):
            if service is ours:
                store.ids.wall = lambda: now[0] - 10
            q = await service.quote(parse_quote_request(intent_for(ROUTE, 100)))
            key = f"routequote:quote:{q.quote_id}"
            assert raw.get(key) is not None and 29_000 < raw.pttl(key) <= 30_000
            assert not raw.hexists(bucket_of(q.quote_id), q.quote_id)
            loaded = await reader.get(q.quote_id, 0.0)
            assert loaded is not None and loaded.json == q.json and 29.0 < loaded.expires_at_monotonic <= 30.0
    finally:
        await store.aclose()
        await reader.aclose()
        raw.flushdb()
