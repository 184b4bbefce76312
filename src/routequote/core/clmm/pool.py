"""Immutable CLMM pool state and swap result types."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field

from .tickmath import (
    I128_MAX,
    I128_MIN,
    ORCA_TICK_ARRAY_SIZE,
    RAY_TICK_ARRAY_SIZE,
    U128_MAX,
    VENUES,
    Venue,
    sqrt_price_at_tick,
    sqrt_price_bounds,
    tick_at_sqrt_price,
    tick_bounds,
)

FEE_DENOMINATOR = 1_000_000


def tick_array_span(venue: Venue, tick_spacing: int) -> int:
    """Number of ticks covered by one tick array (Orca 88 x spacing, Raydium 60 x spacing)."""
    if venue == "orca_whirlpool":
        return ORCA_TICK_ARRAY_SIZE * tick_spacing
    if venue == "raydium_clmm":
        return RAY_TICK_ARRAY_SIZE * tick_spacing
    raise ValueError(f"{venue} has no tick arrays")


def tick_array_start(venue: Venue, tick: int, tick_spacing: int) -> int:
    """Start index of the tick array holding ``tick`` (floor division, as both SDKs do)."""
    span = tick_array_span(venue, tick_spacing)
    return (tick // span) * span


class _PoolCache:
    """Derived, non-compared per-pool data: sorted visible ticks and their sqrt prices."""

    __slots__ = ("ticks", "nets", "sqrts", "compressed", "window_lo", "window_hi")

    def __init__(
        self,
        ticks: list[int],
        nets: list[int],
        sqrts: list[int],
        compressed: list[int],
        window_lo: int,
        window_hi: int,
    ) -> None:
        self.ticks = ticks
        self.nets = nets
        self.sqrts = sqrts
        self.compressed = compressed
        self.window_lo = window_lo
        self.window_hi = window_hi


@dataclass(frozen=True, slots=True)
class ClmmPool:
    """State of one concentrated-liquidity pool, as the venue stores it.

    ``sqrt_price`` is Q64.96 for ``uniswap_v3`` and Q64.64 for ``orca_whirlpool`` / ``raydium_clmm``.
    ``ticks`` are the initialized ticks, ascending: ``(tick_index, liquidity_net)``.

    ``tick_array_range`` (optional, Orca / Raydium only): ``(first_start, last_start)`` start indices
    of the contiguous window of tick arrays handed to the venue's SDK.

    * Orca: whirlpools-core stops a swap at the edge of the tick-array sequence it is given (its
      implicit price limit is the sqrt price of the sequence's first / last tick), so the window
      changes results. Default: the smallest window covering ``tick_current`` and every
      initialized tick. (The Orca WASM API accepts at most 6 arrays; Python has no such cap.)
    * Raydium: only initialized ticks inside the window are visible; the swap stops after the
      last visible initialized tick. Default: all initialized ticks are visible.
    """

    venue: Venue
    fee_pips: int
    tick_spacing: int
    sqrt_price: int
    tick_current: int
    liquidity: int
    ticks: tuple[tuple[int, int], ...]
    tick_array_range: tuple[int, int] | None = None
    _cache: _PoolCache | None = field(default=None, init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        venue = self.venue
        if venue not in VENUES:
            raise ValueError(f"unknown venue {venue!r}")
        if not (0 <= self.fee_pips < FEE_DENOMINATOR):
            raise ValueError("fee_pips must be in [0, 1_000_000)")
        spacing = self.tick_spacing
        if not (0 < spacing <= 32768):
            raise ValueError("tick_spacing must be in (0, 32768]")
        if not (0 <= self.liquidity <= U128_MAX):
            raise ValueError("liquidity must be a u128")
        lo_tick, hi_tick = tick_bounds(venue)
        prev: int | None = None
        for t, net in self.ticks:
            if prev is not None and t <= prev:
                raise ValueError("ticks must be sorted strictly ascending")
            if t % spacing:
                raise ValueError(f"tick {t} is not a multiple of tick_spacing {spacing}")
            if not (lo_tick <= t <= hi_tick):
                raise ValueError(f"tick {t} outside venue bounds")
            if not (I128_MIN <= net <= I128_MAX):
                raise ValueError("liquidity_net must be an i128")
            prev = t
        min_sp, max_sp = sqrt_price_bounds(venue)
        sp = self.sqrt_price
        if venue == "uniswap_v3":
            if not (min_sp <= sp < max_sp):
                raise ValueError("sqrt_price outside [MIN_SQRT_RATIO, MAX_SQRT_RATIO)")
        elif not (min_sp <= sp <= max_sp):
            raise ValueError("sqrt_price outside the venue's [MIN_SQRT_PRICE, MAX_SQRT_PRICE]")
        # tick_current must satisfy sqrt(tick) <= sqrt_price < sqrt(tick + 1), or be the
        # "crossed downwards" state tick == tick_at(price) - 1 with the price exactly on a tick.
        t_at = tick_at_sqrt_price(venue, sp)
        tc = self.tick_current
        if tc != t_at and not (tc == t_at - 1 and sqrt_price_at_tick(venue, t_at) == sp):
            raise ValueError(f"tick_current {tc} inconsistent with sqrt_price (tick {t_at})")

        ticks = [t for t, _ in self.ticks]
        nets = [n for _, n in self.ticks]
        window_lo, window_hi = lo_tick, hi_tick
        if venue == "uniswap_v3":
            if self.tick_array_range is not None:
                raise ValueError("tick_array_range applies to orca_whirlpool / raydium_clmm only")
        else:
            span = tick_array_span(venue, spacing)
            rng = self.tick_array_range
            if rng is None and venue == "orca_whirlpool":
                lo = min(ticks[0], tc) if ticks else tc
                hi = max(ticks[-1], tc) if ticks else tc
                rng = (tick_array_start(venue, lo, spacing), tick_array_start(venue, hi, spacing))
                object.__setattr__(self, "tick_array_range", rng)
            if rng is not None:
                first, last = rng
                if first % span or last % span or last < first:
                    raise ValueError("tick_array_range must be ascending tick-array start indices")
                window_lo, window_hi = first, last + span - 1
                i0 = bisect_left(ticks, window_lo)
                i1 = bisect_right(ticks, window_hi)
                ticks, nets = ticks[i0:i1], nets[i0:i1]
            if venue == "orca_whirlpool":
                window_lo = max(window_lo, lo_tick)
                window_hi = min(window_hi, hi_tick)
                if not (window_lo <= tc <= window_hi):
                    raise ValueError("tick_current must lie inside the Orca tick-array window")
        sqrts = [sqrt_price_at_tick(venue, t) for t in ticks]
        compressed = [t // spacing for t in ticks]
        object.__setattr__(self, "_cache", _PoolCache(ticks, nets, sqrts, compressed, window_lo, window_hi))

    @property
    def cache(self) -> _PoolCache:
        c = self._cache
        assert c is not None
        return c


@dataclass(frozen=True, slots=True)
class SwapResult:
    """Outcome of an exact-input swap."""

    amount_in: int  # input actually consumed, fee included
    amount_out: int
    fee_amount: int  # LP (trade) fee paid, in input-token base units
    sqrt_price_after: int
    tick_after: int
    liquidity_after: int
    ticks_crossed: int  # initialized ticks crossed (liquidity_net applied)
