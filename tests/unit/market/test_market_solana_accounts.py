"""Solana CLMM account decoding and the getMultipleAccounts reader.

The recorded Raydium accounts were serialized with `@raydium-io/raydium-sdk-v2`'s own layouts
(tests/recordings/generate_solana.py), so these tests check our offsets against Raydium's codec."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from tests.recordings.fake_upstreams import FakeUpstreams, load

from routequote.clock import FixedClock
from routequote.core.clmm import ClmmMathError, ClmmPool, swap_exact_input, tick_array_span, tick_array_start
from routequote.market.jsonrpc import JsonRpcClient, SourceDataError, StaleSourceData
from routequote.market.live_solana import (
    D_WHIRLPOOL,
    SolanaClmmSource,
    SolanaPoolSpec,
    decode_orca_tick_array,
    decode_raydium_amm_config,
    decode_raydium_pool,
    decode_raydium_tick_array,
    decode_whirlpool,
    tick_array_address,
)

REC = load("solana_getMultipleAccounts.json")
POOLS = REC["pool_accounts"]
EXPECTED = {e["pool_id"]: e for e in REC["expected_pools"]}
ORCA, RAY = POOLS["solana:orca_whirlpool:USDC-USDG"], POOLS["solana:raydium_clmm:SOL-USDC"]


def raw(address: str) -> bytes:
    return base64.b64decode(REC["accounts"][address]["data"][0])


def outcome(pool: ClmmPool, zfo: bool, amount: int) -> object:
    try:
        return swap_exact_input(pool, zfo, amount)
    except ClmmMathError as exc:  # Orca refuses swaps that run past the tick arrays it is given
        return str(exc)


def specs() -> list[SolanaPoolSpec]:
    return [
        SolanaPoolSpec(
            "solana:orca_whirlpool:USDC-USDG", "orca_whirlpool", ORCA, "solana:USDG", "solana:USDC"
        ),
        SolanaPoolSpec("solana:raydium_clmm:SOL-USDC", "raydium_clmm", RAY, "solana:SOL", "solana:USDC"),
    ]


def test_pool_accounts_decode_to_the_recorded_state() -> None:
    w = decode_whirlpool(raw(ORCA))
    e = EXPECTED["solana:orca_whirlpool:USDC-USDG"]
    assert (w.fee_pips, w.tick_spacing, w.sqrt_price, w.tick_current, w.liquidity) == (
        e["fee_pips"],
        e["tick_spacing"],
        int(e["sqrt_price"]),
        e["tick_current"],
        int(e["liquidity"]),
    )
    assert (w.mint0, w.mint1) == (
        "2u1tszSeqZ3qBWF3uNGPFc8TzMk2tdiwknnRMWGWjGWH",
        "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",
    )
    r = decode_raydium_pool(raw(RAY))
    e = EXPECTED["solana:raydium_clmm:SOL-USDC"]
    assert (r.tick_spacing, r.sqrt_price, r.tick_current, r.liquidity, r.swap_disabled) == (
        e["tick_spacing"],
        int(e["sqrt_price"]),
        e["tick_current"],
        int(e["liquidity"]),
        False,
    )
    assert r.mint0 == "So11111111111111111111111111111111111111112"
    assert r.amm_config is not None and decode_raydium_amm_config(raw(r.amm_config)) == e["fee_pips"]


def test_tick_arrays_fixed_dynamic_and_raydium() -> None:
    kinds = set()
    for venue, pool, pid in (
        ("orca_whirlpool", ORCA, "solana:orca_whirlpool:USDC-USDG"),
        ("raydium_clmm", RAY, "solana:raydium_clmm:SOL-USDC"),
    ):
        e = EXPECTED[pid]
        spacing = e["tick_spacing"]
        want = {t: int(n) for t, n in e["ticks"]}
        got: dict[int, int] = {}
        for start in sorted({tick_array_start(venue, t, spacing) for t in want}):  # type: ignore[arg-type]
            data = raw(tick_array_address(venue, pool, start))  # type: ignore[arg-type]
            kinds.add((venue, data[:8].hex()))
            s, ticks = (
                decode_orca_tick_array(data, spacing)
                if venue == "orca_whirlpool"
                else decode_raydium_tick_array(data)
            )
            assert s == start
            got.update(ticks)
        assert got == want
    assert len(kinds) == 3  # Orca fixed TickArray, Orca DynamicTickArray, Raydium TickArrayState


def test_malformed_accounts_are_refused() -> None:
    good = raw(ORCA)
    with pytest.raises(SourceDataError, match="discriminator"):
        decode_whirlpool(b"\x00" * 8 + good[8:])
    with pytest.raises(SourceDataError, match="bytes"):
        decode_whirlpool(D_WHIRLPOOL + b"\x00" * 20)
    with pytest.raises(SourceDataError):
        decode_raydium_pool(good)  # a Whirlpool is not a Raydium PoolState
    dyn = next(raw(a) for a in REC["accounts"] if raw(a)[:8].hex() == "11d8f68ee1c7da38")
    with pytest.raises(SourceDataError):
        decode_orca_tick_array(dyn[:-50], 1)  # truncated inside the tick list
    with pytest.raises(SourceDataError, match="tag"):
        decode_orca_tick_array(dyn[:60] + b"\x07" + dyn[61:], 1)


async def test_reader_builds_the_pools_from_one_call_in_the_steady_state() -> None:
    clock = FixedClock(datetime(2026, 11, 20, 12, tzinfo=UTC))
    fake = FakeUpstreams(clock)
    async with httpx.AsyncClient(transport=fake.transport()) as http:
        rpc = JsonRpcClient("http://rpc-solana.test", http)
        src = SolanaClmmSource(rpc, specs())
        first = await src.fetch()
        assert first.round_trips == 2  # cold: pools first, then pools + tick arrays at one slot
        second = await src.fetch()
        assert second.round_trips == 1 and second.slot > first.slot
        for pid, e in EXPECTED.items():
            got = second.pools[pid].clmm
            venue = got.venue
            span = tick_array_span(venue, e["tick_spacing"])
            center = tick_array_start(venue, e["tick_current"], e["tick_spacing"])
            want = ClmmPool(
                venue,
                e["fee_pips"],
                e["tick_spacing"],
                int(e["sqrt_price"]),
                e["tick_current"],
                int(e["liquidity"]),
                tuple((t, int(n)) for t, n in e["ticks"]),
                tick_array_range=(center - 2 * span, center + 2 * span),
            )
            assert got == want
            for zfo in (True, False):
                for amount in (10**3, 10**6, 10**9, 10**11, 10**14):
                    assert outcome(got, zfo, amount) == outcome(want, zfo, amount)
        fake.faults["rpc-solana.test"] = "stale"
        with pytest.raises(StaleSourceData):
            await src.fetch()


async def test_wrong_mint_or_missing_pool_is_refused() -> None:
    clock = FixedClock(datetime(2026, 11, 20, 12, tzinfo=UTC))
    fake = FakeUpstreams(clock)
    async with httpx.AsyncClient(transport=fake.transport()) as http:
        rpc = JsonRpcClient("http://rpc-solana.test", http)
        swapped = [
            SolanaPoolSpec(
                "solana:orca_whirlpool:USDC-USDG", "orca_whirlpool", ORCA, "solana:USDC", "solana:USDG"
            )
        ]
        with pytest.raises(SourceDataError, match="mint"):
            await SolanaClmmSource(rpc, swapped).fetch()
        missing = [
            SolanaPoolSpec(
                "solana:raydium_clmm:SOL-USDC",
                "raydium_clmm",
                "11111111111111111111111111111112",
                "solana:SOL",
                "solana:USDC",
            )
        ]
        with pytest.raises(SourceDataError, match="does not exist"):
            await SolanaClmmSource(rpc, missing).fetch()


def test_recording_is_the_documented_wire_format() -> None:
    acc: dict[str, Any] = REC["accounts"][ORCA]
    assert set(acc) == {"data", "executable", "lamports", "owner", "rentEpoch", "space"}
    assert acc["data"][1] == "base64" and acc["space"] == len(raw(ORCA))
    json.dumps(REC)  # plain JSON


async def test_hinted_window_and_config_make_the_cold_read_one_call_and_wrong_hints_are_corrected() -> None:
    clock = FixedClock(datetime(2026, 11, 20, 12, tzinfo=UTC))
    fake = FakeUpstreams(clock)
    ray_cfg = decode_raydium_pool(raw(RAY)).amm_config
    hints = {pid: (e["tick_current"], e["tick_spacing"]) for pid, e in EXPECTED.items()}
    async with httpx.AsyncClient(transport=fake.transport()) as http:
        rpc = JsonRpcClient("http://rpc-solana.test", http)
        good = [
            SolanaPoolSpec(
                s.pool_id,
                s.venue,
                s.address,
                s.token0,
                s.token1,
                hints[s.pool_id],
                ray_cfg if s.venue == "raydium_clmm" else None,
            )
            for s in specs()
        ]
        hinted = await SolanaClmmSource(rpc, good).fetch()
        assert hinted.round_trips == 1
        far = [
            SolanaPoolSpec(
                s.pool_id,
                s.venue,
                s.address,
                s.token0,
                s.token1,
                (hints[s.pool_id][0] + 5000, hints[s.pool_id][1]),
                ORCA if s.venue == "raydium_clmm" else None,
            )
            for s in specs()
        ]
        corrected = await SolanaClmmSource(rpc, far).fetch()
        assert corrected.round_trips == 2
        for pid in EXPECTED:
            assert corrected.pools[pid].clmm == hinted.pools[pid].clmm
