"""Property tests (hypothesis) on random pools of all three venues."""

from __future__ import annotations

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from routequote.core.clmm import (
    ClmmMathError,
    ClmmPool,
    SwapResult,
    sqrt_price_at_tick,
    swap_exact_input,
    tick_at_sqrt_price,
)

Q = {"uniswap_v3": 96, "orca_whirlpool": 64, "raydium_clmm": 64}
U64_MAX = (1 << 64) - 1


@st.composite
def pools(draw: st.DrawFn) -> ClmmPool:
    venue = draw(st.sampled_from(["uniswap_v3", "orca_whirlpool", "raydium_clmm"]))
    spacing = draw(st.sampled_from([1, 4, 10, 60]))
    center = draw(st.integers(-100_000, 100_000)) // spacing * spacing
    positions = draw(
        st.lists(
            st.tuples(st.integers(-60, 60), st.integers(1, 60), st.integers(1, 10**20)),
            min_size=1,
            max_size=6,
        )
    )
    nets: dict[int, int] = {}
    ranges = []
    for off, width, liq in positions:
        lo = center + off * spacing
        hi = lo + width * spacing
        ranges.append((lo, hi, liq))
        nets[lo] = nets.get(lo, 0) + liq
        nets[hi] = nets.get(hi, 0) - liq
    ticks = tuple(sorted(nets.items()))
    tc = draw(st.integers(ticks[0][0] - 3 * spacing, ticks[-1][0] + 3 * spacing))
    p0 = sqrt_price_at_tick(venue, tc)
    sp = p0 + draw(st.integers(0, sqrt_price_at_tick(venue, tc + 1) - p0 - 1))
    tc = tick_at_sqrt_price(venue, sp)
    active = sum(liq for lo, hi, liq in ranges if lo <= tc < hi)
    fee = draw(st.sampled_from([0, 100, 500, 3000, 10000]))
    return ClmmPool(venue, fee, spacing, sp, tc, active, ticks)  # type: ignore[arg-type]


def reserves_out(pool: ClmmPool, zfo: bool) -> int:
    """Upper bound on the output token held by the ranges the swap can walk through (rounded up)."""
    q = Q[pool.venue]
    total = 0
    liq = pool.liquidity
    sp = pool.sqrt_price
    ticks = list(pool.ticks)
    if zfo:  # token1 between lower ticks and the price
        for t, net in reversed([x for x in ticks if x[0] <= pool.tick_current]):
            pt = sqrt_price_at_tick(pool.venue, t)
            total += -(-(liq * (sp - pt)) >> q)
            liq -= net
            sp = pt
    else:  # token0 between the price and upper ticks
        for t, net in [x for x in ticks if x[0] > pool.tick_current]:
            pt = sqrt_price_at_tick(pool.venue, t)
            total += -(-(liq * (pt - sp) << q) // (pt * sp)) + 1
            liq += net
            sp = pt
    return total


def quote(pool: ClmmPool, zfo: bool, amount: int) -> SwapResult | None:
    try:
        return swap_exact_input(pool, zfo, amount)
    except ClmmMathError:
        return None


amounts = st.integers(1, 10**6) | st.builds(lambda m, e: m * 10**e, st.integers(1, 999), st.integers(0, 16))


@settings(max_examples=250, deadline=None)
@given(pools(), st.booleans(), amounts, amounts)
def test_swap_invariants(pool: ClmmPool, zfo: bool, a: int, b: int) -> None:
    lo, hi = min(a, b), max(a, b)
    r_lo, r_hi = quote(pool, zfo, lo), quote(pool, zfo, hi)
    assume(r_lo is not None and r_hi is not None)
    assert r_lo is not None and r_hi is not None
    for r, amount in ((r_lo, lo), (r_hi, hi)):
        assert 0 <= r.fee_amount <= r.amount_in <= amount
        assert r.amount_out >= 0
        assert r.amount_out <= reserves_out(pool, zfo)
        if zfo:
            assert r.sqrt_price_after <= pool.sqrt_price and r.tick_after <= pool.tick_current
        else:
            assert r.sqrt_price_after >= pool.sqrt_price and r.tick_after >= pool.tick_current
        assert 0 <= r.ticks_crossed <= len(pool.ticks)
        assert r.liquidity_after >= 0
        if r.amount_in < amount:  # partial fill only when the pool is exhausted in that direction
            assert r.liquidity_after == 0 or pool.venue == "orca_whirlpool"
        # every step charges at least fee_pips of what it consumes (fees round up)
        assert r.fee_amount * 10**6 >= r.amount_in * pool.fee_pips
    # output (and consumed input) monotone in the requested input
    assert r_lo.amount_out <= r_hi.amount_out
    assert r_lo.amount_in <= r_hi.amount_in


@settings(max_examples=100, deadline=None)
@given(pools(), st.booleans(), amounts)
def test_round_trip_loses_value(pool: ClmmPool, zfo: bool, amount: int) -> None:
    """Swapping the output straight back never returns more than was put in."""
    r = quote(pool, zfo, amount)
    assume(r is not None and r.amount_out > 0)
    assert r is not None
    after = ClmmPool(
        pool.venue,
        pool.fee_pips,
        pool.tick_spacing,
        r.sqrt_price_after,
        r.tick_after,
        r.liquidity_after,
        pool.ticks,
    )
    back = quote(after, not zfo, r.amount_out)
    assume(back is not None)
    assert back is not None
    assert back.amount_out <= r.amount_in
