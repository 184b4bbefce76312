"""A cold live quote reads every upstream in one parallel wave. The fake upstreams hold each answer until no
request arrived for some turns of the event loop (`FakeUpstreams.settled`) and number the waves of requests (a
request sent after some answer of wave n came back is in wave n + 1), so the count is structural, not a timing."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import httpx
from tests.recordings.fake_upstreams import WaveCountingUpstreams, live_config, pin_solana_pools

from routequote.clock import FixedClock, SequentialIds
from routequote.core.intent import parse_quote_request
from routequote.market.live import LiveMarket
from routequote.market.snapshot import load_snapshot_document
from routequote.service import RouteQuoteService, ServiceConfig
from routequote.storage.quotes import MemoryQuoteStore

T0 = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
BODY = {
    "from_chain": "base",
    "from_token": "USDC",
    "to_chain": "solana",
    "to_token": "USDC",
    "amount_usd": 100,
}


async def cold_quote(
    snapshot: dict[str, Any] | None = None, pinned: bool = True
) -> tuple[WaveCountingUpstreams, Any]:
    """One cold quote against fresh fakes. The source deadline is the fakes' (`FakeUpstreams.deadline`): no
    answer of theirs races the wall clock of a busy machine."""
    clock = FixedClock(T0)
    fake = WaveCountingUpstreams(clock, delay_seconds=0.0)
    pools = pin_solana_pools(fake) if pinned else fake.solana["pool_accounts"]
    async with httpx.AsyncClient(transport=fake.transport()) as http:
        market = LiveMarket(
            live_config(solana_pools=pools),
            clock,
            http=http,
            snapshot_document=snapshot,
            source_deadline=fake.deadline,
        )
        service = RouteQuoteService(market, MemoryQuoteStore(), clock, SequentialIds(), ServiceConfig())
        issued = await service.quote(parse_quote_request(BODY))
        view = await market.view()
    assert not view.unavailable, view.unavailable
    return fake, (issued, view)


async def test_a_cold_quote_reads_every_upstream_in_one_wave() -> None:
    fake, (issued, view) = await cold_quote()
    assert fake.waves == 1, dict(fake.requests_by_wave)
    # every source was read: 3 EVM chains, Solana, Iris, Across, Pyth
    hosts = set(fake.requests)
    assert {"rpc-base.test", "rpc-arbitrum.test", "rpc-robinhood.test", "rpc-solana.test"} <= hosts
    assert {"iris.test", "across.test", "hermes.test"} <= hosts
    assert issued.payload["market"]["live"] is True


async def test_ticks_the_snapshot_did_not_know_cost_a_wave_never_a_wrong_price() -> None:
    _, (_, hinted) = await cold_quote()
    stale = copy.deepcopy(load_snapshot_document())
    emptied = 0
    for pool in stale["pools"]:
        if pool["pool_id"].startswith("base:"):
            pool["ticks"] = []
            emptied += 1
    assert emptied
    fake, (_, view) = await cold_quote(stale)
    assert fake.waves == 2 and set(fake.requests_by_wave) == {1, 2}
    assert view.pools == hinted.pools  # the same pool states, ticks included


async def test_an_operator_set_raydium_pool_without_its_amm_config_takes_one_more_solana_read() -> None:
    fake, _ = await cold_quote(pinned=False)  # the recording's stand-in pool: AmmConfig not pinned
    assert fake.waves == 2 and fake.requests_by_wave[2] == 1
