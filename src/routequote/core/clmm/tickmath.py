"""Per-venue tick <-> sqrt-price math, bit-exact ports of each venue's own code.

* ``uniswap_v3``: ``TickMath.sol`` of Uniswap v3-core (Q64.96).
* ``orca_whirlpool``: ``rust-sdk/core/src/math/tick.rs`` of orca-so/whirlpools (Q64.64).
* ``raydium_clmm``: ``libraries/tick_math.rs`` of raydium-io/raydium-clmm, as mirrored by
  ``TickUtil`` in ``@raydium-io/raydium-sdk-v2`` (Q64.64).

Integers only. The one float use (``_uniswap_tick_fast``) is a seed that is then corrected
exactly against the integer ``getSqrtRatioAtTick``; the result is therefore exactly
"the greatest tick whose sqrt ratio is <= the input", which is ``getTickAtSqrtRatio``'s
documented contract (checked against the literal port in the unit tests).
"""

from __future__ import annotations

import math
from typing import Final, Literal

Venue = Literal["uniswap_v3", "orca_whirlpool", "raydium_clmm"]
VENUES: Final[tuple[Venue, ...]] = ("uniswap_v3", "orca_whirlpool", "raydium_clmm")

U64_MAX: Final = (1 << 64) - 1
U128_MAX: Final = (1 << 128) - 1
U160_MAX: Final = (1 << 160) - 1
U256_MAX: Final = (1 << 256) - 1
I128_MIN: Final = -(1 << 127)
I128_MAX: Final = (1 << 127) - 1

# --- Uniswap v3 (TickMath.sol) ---------------------------------------------------------------
UNI_MIN_TICK: Final = -887272
UNI_MAX_TICK: Final = 887272
UNI_MIN_SQRT_RATIO: Final = 4295128739
UNI_MAX_SQRT_RATIO: Final = 1461446703485210103287273052203988822378723970342

_UNI_FACTORS: Final[tuple[tuple[int, int], ...]] = (
    (0x2, 0xFFF97272373D413259A46990580E213A),
    (0x4, 0xFFF2E50F5F656932EF12357CF3C7FDCC),
    (0x8, 0xFFE5CACA7E10E4E61C3624EAA0941CD0),
    (0x10, 0xFFCB9843D60F6159C9DB58835C926644),
    (0x20, 0xFF973B41FA98C081472E6896DFB254C0),
    (0x40, 0xFF2EA16466C96A3843EC78B326B52861),
    (0x80, 0xFE5DEE046A99A2A811C461F1969C3053),
    (0x100, 0xFCBE86C7900A88AEDCFFC83B479AA3A4),
    (0x200, 0xF987A7253AC413176F2B074CF7815E54),
    (0x400, 0xF3392B0822B70005940C7A398E4B70F3),
    (0x800, 0xE7159475A2C29B7443B29C7FA6E889D9),
    (0x1000, 0xD097F3BDFD2022B8845AD8F792AA5825),
    (0x2000, 0xA9F746462D870FDF8A65DC1F90E061E5),
    (0x4000, 0x70D869A156D2A1B890BB3DF62BAF32F7),
    (0x8000, 0x31BE135F97D08FD981231505542FCFA6),
    (0x10000, 0x9AA508B5B7A84E1C677DE54F3E99BC9),
    (0x20000, 0x5D6AF8DEDB81196699C329225EE604),
    (0x40000, 0x2216E584F5FA1EA926041BEDFE98),
    (0x80000, 0x48A170391F7DC42444E8FA2),
)

# --- Orca Whirlpool (rust-sdk/core constants + math/tick.rs) ------------------------------------
ORCA_MIN_TICK: Final = -443636
ORCA_MAX_TICK: Final = 443636
ORCA_MIN_SQRT_PRICE: Final = 4295048016
ORCA_MAX_SQRT_PRICE: Final = 79226673515401279992447579055
ORCA_TICK_ARRAY_SIZE: Final = 88

_ORCA_POS_FACTORS: Final[tuple[tuple[int, int], ...]] = (
    (2, 79236085330515764027303304731),
    (4, 79244008939048815603706035061),
    (8, 79259858533276714757314932305),
    (16, 79291567232598584799939703904),
    (32, 79355022692464371645785046466),
    (64, 79482085999252804386437311141),
    (128, 79736823300114093921829183326),
    (256, 80248749790819932309965073892),
    (512, 81282483887344747381513967011),
    (1024, 83390072131320151908154831281),
    (2048, 87770609709833776024991924138),
    (4096, 97234110755111693312479820773),
    (8192, 119332217159966728226237229890),
    (16384, 179736315981702064433883588727),
    (32768, 407748233172238350107850275304),
    (65536, 2098478828474011932436660412517),
    (131072, 55581415166113811149459800483533),
    (262144, 38992368544603139932233054999993551),
)
_ORCA_NEG_FACTORS: Final[tuple[tuple[int, int], ...]] = (
    (2, 18444899583751176498),
    (4, 18443055278223354162),
    (8, 18439367220385604838),
    (16, 18431993317065449817),
    (32, 18417254355718160513),
    (64, 18387811781193591352),
    (128, 18329067761203520168),
    (256, 18212142134806087854),
    (512, 17980523815641551639),
    (1024, 17526086738831147013),
    (2048, 16651378430235024244),
    (4096, 15030750278693429944),
    (8192, 12247334978882834399),
    (16384, 8131365268884726200),
    (32768, 3584323654723342297),
    (65536, 696457651847595233),
    (131072, 26294789957452057),
    (262144, 37481735321082),
)
_ORCA_BIT_PRECISION: Final = 14

# --- Raydium CLMM (libraries/tick_math.rs; SDK TickUtil) ------------------------------------------
RAY_MIN_TICK: Final = -443636
RAY_MAX_TICK: Final = 443636
RAY_MIN_SQRT_PRICE: Final = 4295048016
RAY_MAX_SQRT_PRICE: Final = 79226673521066979257578248091
RAY_TICK_ARRAY_SIZE: Final = 60

_RAY_FACTORS: Final[tuple[tuple[int, int], ...]] = (
    (1 << 1, 0xFFF97272373D4000),
    (1 << 2, 0xFFF2E50F5F657000),
    (1 << 3, 0xFFE5CACA7E10F000),
    (1 << 4, 0xFFCB9843D60F7000),
    (1 << 5, 0xFF973B41FA98E800),
    (1 << 6, 0xFF2EA16466C9B000),
    (1 << 7, 0xFE5DEE046A9A3800),
    (1 << 8, 0xFCBE86C7900BB000),
    (1 << 9, 0xF987A7253AC65800),
    (1 << 10, 0xF3392B0822BB6000),
    (1 << 11, 0xE7159475A2CAF000),
    (1 << 12, 0xD097F3BDFD2F2000),
    (1 << 13, 0xA9F746462D9F8000),
    (1 << 14, 0x70D869A156F31C00),
    (1 << 15, 0x31BE135F97ED3200),
    (1 << 16, 0x9AA508B5B85A500),
    (1 << 17, 0x5D6AF8DEDC582C),
    (1 << 18, 0x2216E584F5FA),
)
_RAY_BIT_PRECISION: Final = 16

# Shared by Orca and Raydium (both derived from the same Whirlpool tick math).
_LOG_B_2_X32: Final = 59543866431248
_LOG_B_P_ERR_MARGIN_LOWER_X64: Final = 184467440737095516
_LOG_B_P_ERR_MARGIN_UPPER_X64: Final = 15793534762490258745


class ClmmMathError(ValueError):
    """The venue's own code would revert / return an error for this input."""


def tick_bounds(venue: Venue) -> tuple[int, int]:
    if venue == "uniswap_v3":
        return UNI_MIN_TICK, UNI_MAX_TICK
    if venue == "orca_whirlpool":
        return ORCA_MIN_TICK, ORCA_MAX_TICK
    if venue == "raydium_clmm":
        return RAY_MIN_TICK, RAY_MAX_TICK
    raise ValueError(f"unknown venue {venue!r}")


def sqrt_price_bounds(venue: Venue) -> tuple[int, int]:
    """Inclusive (min, max) sqrt price representable by the venue."""
    if venue == "uniswap_v3":
        return UNI_MIN_SQRT_RATIO, UNI_MAX_SQRT_RATIO
    if venue == "orca_whirlpool":
        return ORCA_MIN_SQRT_PRICE, ORCA_MAX_SQRT_PRICE
    if venue == "raydium_clmm":
        return RAY_MIN_SQRT_PRICE, RAY_MAX_SQRT_PRICE
    raise ValueError(f"unknown venue {venue!r}")


# ------------------------------------------------------------------------------------------------
# sqrt price at tick (uncached literal ports)
# ------------------------------------------------------------------------------------------------


def _uni_sqrt_at_tick(tick: int) -> int:
    abs_tick = -tick if tick < 0 else tick
    if abs_tick > UNI_MAX_TICK:
        raise ClmmMathError("T")
    ratio = 0xFFFCB933BD6FAD37AA2D162D1A594001 if abs_tick & 0x1 else 0x100000000000000000000000000000000
    for bit, factor in _UNI_FACTORS:
        if abs_tick & bit:
            ratio = (ratio * factor) >> 128
    if tick > 0:
        ratio = U256_MAX // ratio
    return (ratio >> 32) + (0 if ratio % (1 << 32) == 0 else 1)


def _orca_sqrt_at_tick(tick: int) -> int:
    if tick >= 0:
        ratio = 79232123823359799118286999567 if tick & 1 else 79228162514264337593543950336
        for bit, factor in _ORCA_POS_FACTORS:
            if tick & bit:
                ratio = (ratio * factor) >> 96  # mul_shift_96
        return ratio >> 32
    abs_tick = -tick
    ratio = 18445821805675392311 if abs_tick & 1 else 18446744073709551616
    for bit, factor in _ORCA_NEG_FACTORS:
        if abs_tick & bit:
            ratio = (ratio * factor) >> 64
    return ratio


def _ray_sqrt_at_tick(tick: int) -> int:
    if tick < RAY_MIN_TICK or tick > RAY_MAX_TICK:
        raise ClmmMathError(f"Tick {tick} is out of range [{RAY_MIN_TICK}, {RAY_MAX_TICK}]")
    abs_tick = -tick if tick < 0 else tick
    ratio = 0xFFFCB933BD6FB800 if abs_tick & 1 else 1 << 64
    for bit, factor in _RAY_FACTORS:
        if abs_tick & bit:
            ratio = (ratio * factor) >> 64
    if tick > 0:
        ratio = (1 << 128) // ratio
    return ratio


# Module-level caches: tick -> sqrt price, per venue. Bounded so a long-lived service cannot grow
# them without limit (cleared wholesale when full; entries are cheap to recompute).
_CACHE_LIMIT: Final = 200_000
_UNI_CACHE: dict[int, int] = {}
_ORCA_CACHE: dict[int, int] = {}
_RAY_CACHE: dict[int, int] = {}


def uni_sqrt_at_tick(tick: int) -> int:
    """Cached ``TickMath.getSqrtRatioAtTick``."""
    v = _UNI_CACHE.get(tick)
    if v is None:
        v = _uni_sqrt_at_tick(tick)
        if len(_UNI_CACHE) >= _CACHE_LIMIT:
            _UNI_CACHE.clear()
        _UNI_CACHE[tick] = v
    return v


def orca_sqrt_at_tick(tick: int) -> int:
    """Cached whirlpools-core ``tick_index_to_sqrt_price``."""
    v = _ORCA_CACHE.get(tick)
    if v is None:
        v = _orca_sqrt_at_tick(tick)
        if len(_ORCA_CACHE) >= _CACHE_LIMIT:
            _ORCA_CACHE.clear()
        _ORCA_CACHE[tick] = v
    return v


def ray_sqrt_at_tick(tick: int) -> int:
    """Cached Raydium ``get_sqrt_price_at_tick``."""
    v = _RAY_CACHE.get(tick)
    if v is None:
        v = _ray_sqrt_at_tick(tick)
        if len(_RAY_CACHE) >= _CACHE_LIMIT:
            _RAY_CACHE.clear()
        _RAY_CACHE[tick] = v
    return v


def sqrt_price_at_tick(venue: Venue, tick: int) -> int:
    """sqrt(1.0001^tick) in the venue's fixed point (Q64.96 for Uniswap, Q64.64 otherwise)."""
    if venue == "uniswap_v3":
        return uni_sqrt_at_tick(tick)
    if venue == "orca_whirlpool":
        if tick < ORCA_MIN_TICK or tick > ORCA_MAX_TICK:
            raise ClmmMathError(f"tick {tick} out of bounds")
        return orca_sqrt_at_tick(tick)
    if venue == "raydium_clmm":
        return ray_sqrt_at_tick(tick)
    raise ValueError(f"unknown venue {venue!r}")


# ------------------------------------------------------------------------------------------------
# tick at sqrt price
# ------------------------------------------------------------------------------------------------


def uni_tick_at_sqrt_exact(sqrt_price_x96: int) -> int:
    """Literal port of ``TickMath.getTickAtSqrtRatio`` (reference; the fast path is below)."""
    if not (UNI_MIN_SQRT_RATIO <= sqrt_price_x96 < UNI_MAX_SQRT_RATIO):
        raise ClmmMathError("R")
    ratio = sqrt_price_x96 << 32
    msb = ratio.bit_length() - 1
    r = ratio >> (msb - 127) if msb >= 128 else ratio << (127 - msb)
    log_2 = (msb - 128) << 64
    for shift in range(63, 49, -1):
        r = (r * r) >> 127
        f = r >> 128
        log_2 |= f << shift
        r >>= f
    log_sqrt10001 = log_2 * 255738958999603826347141
    tick_low = (log_sqrt10001 - 3402992956809132418596140100660247210) >> 128
    tick_hi = (log_sqrt10001 + 291339464771989622907027621153398088495) >> 128
    if tick_low == tick_hi:
        return tick_low
    return tick_hi if uni_sqrt_at_tick(tick_hi) <= sqrt_price_x96 else tick_low


_LOG2_SQRT10001: Final = math.log2(1.0001) / 2.0


def uni_tick_at_sqrt_fast(sqrt_price_x96: int) -> int:
    """``getTickAtSqrtRatio`` via a float seed corrected exactly (greatest t with ratio(t) <= p)."""
    if not (UNI_MIN_SQRT_RATIO <= sqrt_price_x96 < UNI_MAX_SQRT_RATIO):
        raise ClmmMathError("R")
    t = math.floor((math.log2(sqrt_price_x96) - 96.0) / _LOG2_SQRT10001)
    if t < UNI_MIN_TICK:
        t = UNI_MIN_TICK
    elif t > UNI_MAX_TICK - 1:
        t = UNI_MAX_TICK - 1
    while uni_sqrt_at_tick(t) > sqrt_price_x96:
        t -= 1
    while t < UNI_MAX_TICK - 1 and uni_sqrt_at_tick(t + 1) <= sqrt_price_x96:
        t += 1
    return t


def _whirl_tick_at_sqrt(sqrt_price_x64: int, bit_precision: int, sqrt_at: object) -> int:
    """Shared body of Orca ``sqrt_price_to_tick_index`` / Raydium ``get_tick_at_sqrt_price``."""
    msb = sqrt_price_x64.bit_length() - 1
    log2p_integer_x32 = (msb - 64) << 32
    bit = 0x8000_0000_0000_0000
    precision = 0
    log2p_fraction_x64 = 0
    r = sqrt_price_x64 >> (msb - 63) if msb >= 64 else sqrt_price_x64 << (63 - msb)
    while bit > 0 and precision < bit_precision:
        r *= r
        is_r_more_than_two = r >> 127
        r >>= 63 + is_r_more_than_two
        log2p_fraction_x64 += bit * is_r_more_than_two
        bit >>= 1
        precision += 1
    log2p_fraction_x32 = log2p_fraction_x64 >> 32
    log2p_x32 = log2p_integer_x32 + log2p_fraction_x32
    logbp_x64 = log2p_x32 * _LOG_B_2_X32
    tick_low = (logbp_x64 - _LOG_B_P_ERR_MARGIN_LOWER_X64) >> 64
    tick_high = (logbp_x64 + _LOG_B_P_ERR_MARGIN_UPPER_X64) >> 64
    if tick_low == tick_high:
        return tick_low
    assert callable(sqrt_at)
    high_price: int = sqrt_at(tick_high)
    return tick_high if high_price <= sqrt_price_x64 else tick_low


def orca_tick_at_sqrt(sqrt_price_x64: int) -> int:
    """Port of whirlpools-core ``sqrt_price_to_tick_index`` (no bounds check, like the SDK)."""
    if sqrt_price_x64 <= 0 or sqrt_price_x64 > U128_MAX:
        raise ClmmMathError("sqrt price out of u128 range")
    return _whirl_tick_at_sqrt(sqrt_price_x64, _ORCA_BIT_PRECISION, orca_sqrt_at_tick)


def ray_tick_at_sqrt(sqrt_price_x64: int) -> int:
    """Port of Raydium ``get_tick_at_sqrt_price`` (SDK ``TickUtil.getTickAtSqrtPrice``)."""
    if not (RAY_MIN_SQRT_PRICE <= sqrt_price_x64 <= RAY_MAX_SQRT_PRICE):
        raise ClmmMathError("SqrtPriceX64")
    return _whirl_tick_at_sqrt(sqrt_price_x64, _RAY_BIT_PRECISION, ray_sqrt_at_tick)


def tick_at_sqrt_price(venue: Venue, sqrt_price: int) -> int:
    """The venue's own sqrt-price -> tick function (greatest tick at or below the price)."""
    if venue == "uniswap_v3":
        return uni_tick_at_sqrt_fast(sqrt_price)
    if venue == "orca_whirlpool":
        return orca_tick_at_sqrt(sqrt_price)
    if venue == "raydium_clmm":
        return ray_tick_at_sqrt(sqrt_price)
    raise ValueError(f"unknown venue {venue!r}")
