"""Tick math: published constants, the Uniswap fast path vs the literal port, round trips."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from routequote.core.clmm import sqrt_price_at_tick, tick_at_sqrt_price
from routequote.core.clmm.tickmath import (
    ORCA_MAX_SQRT_PRICE,
    ORCA_MIN_SQRT_PRICE,
    RAY_MAX_SQRT_PRICE,
    RAY_MIN_SQRT_PRICE,
    UNI_MAX_SQRT_RATIO,
    UNI_MIN_SQRT_RATIO,
    uni_tick_at_sqrt_exact,
    uni_tick_at_sqrt_fast,
)


def test_published_bounds() -> None:
    # TickMath.sol: MIN_SQRT_RATIO = getSqrtRatioAtTick(MIN_TICK), MAX_SQRT_RATIO = getSqrtRatioAtTick(MAX_TICK)
    assert sqrt_price_at_tick("uniswap_v3", -887272) == UNI_MIN_SQRT_RATIO == 4295128739
    assert sqrt_price_at_tick("uniswap_v3", 887272) == UNI_MAX_SQRT_RATIO
    assert sqrt_price_at_tick("uniswap_v3", 0) == 1 << 96
    assert sqrt_price_at_tick("orca_whirlpool", -443636) == ORCA_MIN_SQRT_PRICE
    assert sqrt_price_at_tick("orca_whirlpool", 443636) == ORCA_MAX_SQRT_PRICE
    assert sqrt_price_at_tick("orca_whirlpool", 0) == 1 << 64
    assert sqrt_price_at_tick("raydium_clmm", -443636) == RAY_MIN_SQRT_PRICE
    assert sqrt_price_at_tick("raydium_clmm", 443636) == RAY_MAX_SQRT_PRICE
    assert sqrt_price_at_tick("raydium_clmm", 0) == 1 << 64
    # whirlpools-core tests: tick_index_to_sqrt_price(1) / (-1)
    assert sqrt_price_at_tick("orca_whirlpool", 1) == 18447666387855959850
    assert sqrt_price_at_tick("orca_whirlpool", -1) == 18445821805675392311
    # Uniswap v3 tick 196256 (the 3,000 USDC/ETH pool in clmm-speed.md): tick of the price
    assert tick_at_sqrt_price("uniswap_v3", 1446501726624926496477173928747177) == 196256
    assert tick_at_sqrt_price("uniswap_v3", UNI_MIN_SQRT_RATIO) == -887272
    assert tick_at_sqrt_price("uniswap_v3", UNI_MAX_SQRT_RATIO - 1) == 887271


@settings(max_examples=400, deadline=None)
@given(st.integers(UNI_MIN_SQRT_RATIO, UNI_MAX_SQRT_RATIO - 1))
def test_uniswap_fast_tick_equals_literal_port(p: int) -> None:
    assert uni_tick_at_sqrt_fast(p) == uni_tick_at_sqrt_exact(p)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["uniswap_v3", "orca_whirlpool", "raydium_clmm"]), st.integers(-443635, 443635))
def test_round_trip_and_floor(venue: str, t: int) -> None:
    p = sqrt_price_at_tick(venue, t)  # type: ignore[arg-type]
    q = sqrt_price_at_tick(venue, t + 1)  # type: ignore[arg-type]
    assert p < q
    assert tick_at_sqrt_price(venue, p) == t  # type: ignore[arg-type]
    assert tick_at_sqrt_price(venue, q - 1) == t  # type: ignore[arg-type]
    assert uni_tick_at_sqrt_exact(sqrt_price_at_tick("uniswap_v3", t)) == t
