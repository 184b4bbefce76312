"""Concentrated-liquidity (CLMM) swap math, bit-exact per venue.

Pure: stdlib only, integers only, no I/O. See :mod:`.swap` for which venue code each loop ports.
"""

from .pool import ClmmPool, SwapResult, tick_array_span, tick_array_start
from .swap import swap_exact_input
from .tickmath import ClmmMathError, Venue, sqrt_price_at_tick, tick_at_sqrt_price

__all__ = [
    "ClmmMathError",
    "ClmmPool",
    "SwapResult",
    "Venue",
    "sqrt_price_at_tick",
    "swap_exact_input",
    "tick_array_span",
    "tick_array_start",
    "tick_at_sqrt_price",
]
