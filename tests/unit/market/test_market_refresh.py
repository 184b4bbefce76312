"""`routequote market refresh`: a new snapshot document from live readings, with a diff summary."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import httpx
from rich.console import Console
from rich.progress import Progress
from tests.recordings.fake_upstreams import FakeUpstreams, live_config

from routequote.clock import FixedClock, SequentialIds
from routequote.core.assets import Token
from routequote.core.intent import parse_quote_request
from routequote.market.live import LiveMarket
from routequote.market.refresh import refresh_snapshot, write_document
from routequote.market.snapshot import EmbeddedSnapshot, load_snapshot_document
from routequote.service import RouteQuoteService, ServiceConfig
from routequote.storage.quotes import MemoryQuoteStore


async def test_refresh_rebuilds_the_snapshot_and_reports_what_moved(tmp_path: Path) -> None:
    clock = FixedClock(datetime(2026, 11, 20, 12, tzinfo=UTC))
    fake = FakeUpstreams(clock)
    fake.faults["across.test"] = "garbage"  # one failing source keeps its old values and is reported
    old = load_snapshot_document()
    async with httpx.AsyncClient(transport=fake.transport()) as http:
        market = LiveMarket(
            live_config(), clock, http=http, snapshot_document=old, source_deadline=fake.deadline
        )
        with Progress(console=Console(file=open("/dev/null", "w"))) as progress:  # noqa: SIM115
            result = await refresh_snapshot(market, old, progress)
            assert progress.tasks[0].completed == len(market.sources)
    assert set(result.failed) == {"across"} and "failed validation" in result.failed["across"]  # detail: log
    doc = result.document
    assert doc["prices_usd_e8"]["SOL"] == "15243217000" and doc["prices_usd_e8"]["ETH"] == "312055000000"
    assert doc["across"] == old["across"]  # failed source: unchanged
    assert doc["cctp"]["fast_fee_bps_milli"] == {"5": 1000, "6": 1300, "3": 1300}
    assert doc["oft"]["native_fee_wei"] == "41873000000000"
    ray = next(p for p in doc["pools"] if p["pool_id"] == "solana:raydium_clmm:SOL-USDC")
    assert ray["address"] == "3ucNos4NbumPLZNWztqGHNFFgkHeRMBQAVemeeomsUxv"
    changes = {c.what: c for c in result.changes}
    eth = changes["price ETH/USD"]
    assert eth.moved_percent is not None and abs(eth.moved_percent - 0.0) < 1e-9  # 3120.55 in both
    sol = changes["price SOL/USD"]
    assert sol.moved_percent is not None and round(sol.moved_percent, 4) == round(
        (152.43217 - 152.40) / 152.40 * 100, 4
    )
    assert "solana:raydium_clmm:SOL-USDC in-range liquidity" in changes
    # the written file is a valid embedded snapshot that quotes
    path = tmp_path / "snapshot.json"
    write_document(path, doc)
    snap = EmbeddedSnapshot(path)
    assert snap.current().prices_usd_e8[Token.SOL] == 15243217000
    service = RouteQuoteService(snap, MemoryQuoteStore(), clock, SequentialIds(), ServiceConfig())
    q = await service.quote(
        parse_quote_request(
            {
                "from_chain": "solana",
                "from_token": "SOL",
                "to_chain": "solana",
                "to_token": "USDC",
                "amount_usd": 100,
            }
        )
    )
    assert q.payload["market"]["source"] == "embedded_snapshot"
    assert json.loads(path.read_text())["version"].startswith("refreshed-live-")
