"""Hand-checked swaps: closed-form single-range formulas with explicit rounding, and multi-tick
crossings composed step by step from those formulas (computed here, independently of the module)."""

from __future__ import annotations

import pytest

from routequote.core.clmm import ClmmPool, sqrt_price_at_tick, swap_exact_input

Q96 = 1 << 96
Q64 = 1 << 64


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


# -- Uniswap v3 formulas (whitepaper eq. 6.15/6.16 with SqrtPriceMath's rounding) -------------------
def uni_step_0_for_1(sp: int, liq: int, amount_less_fee: int) -> tuple[int, int, int]:
    """Within one range: new price rounded up, input rounded up, output rounded down."""
    new = ceil_div(liq * Q96 * sp, liq * Q96 + amount_less_fee * sp)
    amt_in = ceil_div(ceil_div(liq * Q96 * (sp - new), sp), new)
    amt_out = liq * (sp - new) // Q96
    return new, amt_in, amt_out


def uni_step_1_for_0(sp: int, liq: int, amount_less_fee: int) -> tuple[int, int, int]:
    new = sp + amount_less_fee * Q96 // liq
    amt_in = ceil_div(liq * (new - sp), Q96)
    amt_out = (liq * Q96 * (new - sp) // new) // sp
    return new, amt_in, amt_out


def test_uniswap_single_range_closed_form_both_directions() -> None:
    sp = 1446501726624926496477173928747177  # tick 196256, 3,000 USDC/ETH
    liq = 16_600_000_000_000_000_000
    pool = ClmmPool("uniswap_v3", 500, 10, sp, 196256, liq, ((194020, liq), (198070, -liq)))
    amount = 1_000 * 10**6
    less_fee = amount * (10**6 - 500) // 10**6
    new, amt_in, amt_out = uni_step_0_for_1(sp, liq, less_fee)
    r = swap_exact_input(pool, True, amount)
    assert (r.sqrt_price_after, r.amount_out, r.amount_in, r.fee_amount) == (
        new,
        amt_out,
        amount,
        amount - amt_in,
    )
    assert r.ticks_crossed == 0 and r.liquidity_after == liq
    amount = 333 * 10**15
    less_fee = amount * (10**6 - 500) // 10**6
    new, amt_in, amt_out = uni_step_1_for_0(sp, liq, less_fee)
    r = swap_exact_input(pool, False, amount)
    assert (r.sqrt_price_after, r.amount_out, r.fee_amount) == (new, amt_out, amount - amt_in)


def test_uniswap_two_tick_crossings_hand_composed() -> None:
    # spacing 1, everything inside bitmap word 0 (ticks 0..255): no word-boundary stops.
    # Ranges: [10, 250) with L1 and [60, 140) with L2; price at tick 100.
    l1, l2 = 10**18, 3 * 10**18
    ticks = ((10, l1), (60, l2), (140, -l2), (250, -l1))
    sp = sqrt_price_at_tick("uniswap_v3", 100) + 12345
    pool = ClmmPool("uniswap_v3", 3000, 1, sp, 100, l1 + l2, ticks)
    fee = 3000
    amount = 9 * 10**15
    # step 1: price -> tick 60 with L1+L2 (all input consumed up to the boundary, fee on top)
    p60 = sqrt_price_at_tick("uniswap_v3", 60)
    in1 = ceil_div(ceil_div((l1 + l2) * Q96 * (sp - p60), sp), p60)
    out1 = (l1 + l2) * (sp - p60) // Q96
    fee1 = ceil_div(in1 * fee, 10**6 - fee)
    rem = amount - in1 - fee1
    assert rem > 0
    # step 2: from tick 60 with L1 only, ends inside the range
    new, in2, out2 = uni_step_0_for_1(p60, l1, rem * (10**6 - fee) // 10**6)
    assert new > sqrt_price_at_tick("uniswap_v3", 10)
    r = swap_exact_input(pool, True, amount)
    assert r.amount_out == out1 + out2
    assert r.fee_amount == fee1 + (rem - in2)
    assert r.sqrt_price_after == new and r.liquidity_after == l1 and r.ticks_crossed == 1
    # draining the other way: crosses 140 then 250 and walks to the price limit
    r = swap_exact_input(pool, False, 10**30)
    p140, p250 = sqrt_price_at_tick("uniswap_v3", 140), sqrt_price_at_tick("uniswap_v3", 250)
    out_a = ((l1 + l2) * Q96 * (p140 - sp) // p140) // sp
    out_b = (l1 * Q96 * (p250 - p140) // p250) // p140
    assert r.amount_out == out_a + out_b
    assert r.ticks_crossed == 2 and r.liquidity_after == 0 and r.amount_in < 10**30
    assert r.sqrt_price_after == 1461446703485210103287273052203988822378723970342 - 1  # MAX_SQRT_RATIO - 1


def test_uniswap_word_boundary_stop_is_a_separate_step() -> None:
    # Spacing 1, range [-300, 300): going down from tick 10 the loop stops at tick 0 (word start)
    # even though nothing is initialized there; each stop is separately rounded.
    liq = 5 * 10**20
    sp = sqrt_price_at_tick("uniswap_v3", 10) + 777
    pool = ClmmPool("uniswap_v3", 500, 1, sp, 10, liq, ((-300, liq), (300, -liq)))
    amount = 4 * 10**17
    r = swap_exact_input(pool, True, amount)
    p0 = sqrt_price_at_tick("uniswap_v3", 0)
    in1 = ceil_div(ceil_div(liq * Q96 * (sp - p0), sp), p0)
    out1 = liq * (sp - p0) // Q96
    fee1 = ceil_div(in1 * 500, 10**6 - 500)
    rem = amount - in1 - fee1
    new, in2, out2 = uni_step_0_for_1(p0, liq, rem * (10**6 - 500) // 10**6)
    assert r.amount_out == out1 + out2 and r.sqrt_price_after == new
    assert r.ticks_crossed == 0


@pytest.mark.parametrize("venue", ["orca_whirlpool", "raydium_clmm"])
def test_q64_single_range_closed_form(venue: str) -> None:
    liq = 7 * 10**15
    sp = sqrt_price_at_tick(venue, -1000) + 99  # type: ignore[arg-type]
    pool = ClmmPool(
        venue, 3000, 8 if venue == "orca_whirlpool" else 10, sp, -1000, liq, ((-4000, liq), (4000, -liq))
    )  # type: ignore[arg-type]
    amount = 10**9
    less_fee = amount * (10**6 - 3000) // 10**6
    r = swap_exact_input(pool, True, amount)
    new = ceil_div(liq * Q64 * sp, liq * Q64 + less_fee * sp)
    assert r.sqrt_price_after == new if venue == "raydium_clmm" else True
    assert r.amount_out == liq * (sp - new) // Q64
    if venue == "orca_whirlpool":  # single ceil division of L*diff<<64 by (lo*hi)
        amt_in = ceil_div(liq * (sp - new) * Q64, new * sp)
    else:  # two successive ceil divisions, as in Uniswap
        amt_in = ceil_div(ceil_div(liq * Q64 * (sp - new), sp), new)
    assert r.fee_amount == amount - amt_in and r.amount_in == amount
    # other direction
    r = swap_exact_input(pool, False, amount)
    new = sp + less_fee * Q64 // liq
    assert r.amount_out == (liq * Q64 * (new - sp) // new) // sp if venue == "raydium_clmm" else True
    if venue == "orca_whirlpool":
        assert r.amount_out == liq * (new - sp) * Q64 // (new * sp)
    assert r.fee_amount == amount - ceil_div(liq * (new - sp), Q64)


def test_orca_stops_with_error_past_tick_array_window() -> None:
    from routequote.core.clmm import ClmmMathError

    liq = 10**12
    sp = sqrt_price_at_tick("orca_whirlpool", 100)
    pool = ClmmPool(
        "orca_whirlpool", 500, 1, sp, 100, liq, ((0, liq), (80, -liq + 1))
    )  # window: array [0, 87]
    with pytest.raises(ClmmMathError, match="tick array sequence"):
        swap_exact_input(pool, False, 10**15)  # would run past tick 87 (end of the only array)
    r = swap_exact_input(pool, True, 10)
    assert r.amount_in == 10
