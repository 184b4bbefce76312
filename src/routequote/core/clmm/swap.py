"""Exact-input swap loops, one per venue, each a literal port of the venue's own code.

* ``uniswap_v3``: ``UniswapV3Pool.swap`` + ``SwapMath.computeSwapStep`` + ``SqrtPriceMath`` +
  ``TickBitmap.nextInitializedTickWithinOneWord`` (256-tick word stops, MIN/MAX tick clamping),
  price limit ``MIN_SQRT_RATIO + 1`` / ``MAX_SQRT_RATIO - 1`` as QuoterV2 uses for a zero limit.
* ``orca_whirlpool``: whirlpools-core ``compute_swap`` / ``compute_swap_step`` / ``TickArraySequence``
  (``swap_quote_by_input_token`` without oracle / adaptive fee and without transfer fees).
* ``raydium_clmm``: ``swapInternal`` / ``SwapMathUtil.computeSwap`` of raydium-sdk-v2 (the
  program's swap loop; fee collected from input, no dynamic fee, no limit orders), price limit
  ``MIN_SQRT_PRICE_X64 + 1`` / ``MAX_SQRT_PRICE_X64 - 1``.

Each step's rounding is reproduced exactly; Python ints emulate the fixed-width arithmetic
(including the places where the venue wraps or reverts).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right

from .pool import FEE_DENOMINATOR, ClmmPool, SwapResult
from .tickmath import (
    ORCA_MAX_SQRT_PRICE,
    ORCA_MIN_SQRT_PRICE,
    RAY_MAX_SQRT_PRICE,
    RAY_MAX_TICK,
    RAY_MIN_SQRT_PRICE,
    RAY_MIN_TICK,
    U64_MAX,
    U128_MAX,
    U160_MAX,
    U256_MAX,
    UNI_MAX_SQRT_RATIO,
    UNI_MAX_TICK,
    UNI_MIN_SQRT_RATIO,
    UNI_MIN_TICK,
    ClmmMathError,
    orca_sqrt_at_tick,
    orca_tick_at_sqrt,
    ray_tick_at_sqrt,
    uni_sqrt_at_tick,
    uni_tick_at_sqrt_fast,
)

_I256_MAX = (1 << 255) - 1


def swap_exact_input(pool: ClmmPool, zero_for_one: bool, amount_in: int) -> SwapResult:
    """Quote an exact-input swap of ``amount_in`` (token0 if ``zero_for_one`` else token1).

    Raises :class:`ClmmMathError` where the venue's code would revert / return an error.
    ``SwapResult.amount_in`` is less than requested only when the pool ran out of liquidity or
    reached the venue's price limit / tick-array window.
    """
    if amount_in <= 0:
        raise ClmmMathError("amount_in must be positive")
    venue = pool.venue
    if venue == "uniswap_v3":
        return _swap_uniswap(pool, zero_for_one, amount_in)
    if venue == "orca_whirlpool":
        return _swap_orca(pool, zero_for_one, amount_in)
    if venue == "raydium_clmm":
        return _swap_raydium(pool, zero_for_one, amount_in)
    raise ValueError(f"unknown venue {venue!r}")


# ================================================================================================
# Uniswap v3
# ================================================================================================


def uni_amount0_delta(sqrt_a: int, sqrt_b: int, liquidity: int, round_up: bool) -> int:
    """``SqrtPriceMath.getAmount0Delta`` (unsigned)."""
    if sqrt_a > sqrt_b:
        sqrt_a, sqrt_b = sqrt_b, sqrt_a
    if sqrt_a <= 0:
        raise ClmmMathError("sqrt price must be positive")
    prod = (liquidity << 96) * (sqrt_b - sqrt_a)
    if round_up:
        q = -(-prod // sqrt_b)  # mulDivRoundingUp
        return -(-q // sqrt_a)  # divRoundingUp
    return (prod // sqrt_b) // sqrt_a


def uni_amount1_delta(sqrt_a: int, sqrt_b: int, liquidity: int, round_up: bool) -> int:
    """``SqrtPriceMath.getAmount1Delta`` (unsigned)."""
    if sqrt_a > sqrt_b:
        sqrt_a, sqrt_b = sqrt_b, sqrt_a
    prod = liquidity * (sqrt_b - sqrt_a)
    return -(-prod >> 96) if round_up else prod >> 96


def uni_next_sqrt_from_input(sqrt_p: int, liquidity: int, amount: int, zero_for_one: bool) -> int:
    """``SqrtPriceMath.getNextSqrtPriceFromInput`` with the uint256 overflow branches."""
    if sqrt_p <= 0 or liquidity <= 0:
        raise ClmmMathError("getNextSqrtPriceFromInput: zero price or liquidity")
    if amount == 0:
        return sqrt_p
    if zero_for_one:
        numerator1 = liquidity << 96
        product = amount * sqrt_p
        if product <= U256_MAX:
            denominator = numerator1 + product
            if denominator <= U256_MAX:
                return -(-(numerator1 * sqrt_p) // denominator)
        d = numerator1 // sqrt_p + amount
        if d > U256_MAX:
            raise ClmmMathError("SafeMath add overflow")
        return -(-numerator1 // d)
    quotient = (amount << 96) // liquidity
    result = sqrt_p + quotient
    if result > U160_MAX:
        raise ClmmMathError("toUint160 overflow")
    return result


def _swap_uniswap(pool: ClmmPool, zfo: bool, amount: int) -> SwapResult:
    if amount > _I256_MAX:
        raise ClmmMathError("amountIn exceeds int256")
    c = pool.cache
    comp = c.compressed
    nets = c.nets
    n_ticks = len(comp)
    spacing = pool.tick_spacing
    fee = pool.fee_pips
    one_minus_fee = FEE_DENOMINATOR - fee
    sqrt_at = uni_sqrt_at_tick
    sp = pool.sqrt_price
    if zfo:
        limit = UNI_MIN_SQRT_RATIO + 1
        if not limit < sp:
            raise ClmmMathError("SPL")
    else:
        limit = UNI_MAX_SQRT_RATIO - 1
        if not limit > sp:
            raise ClmmMathError("SPL")
    tick = pool.tick_current
    liq = pool.liquidity
    remaining = amount
    out = 0
    fee_total = 0
    crossed = 0
    while remaining != 0 and sp != limit:
        # TickBitmap.nextInitializedTickWithinOneWord
        compressed = tick // spacing
        idx = -1
        if zfo:
            word_lo = compressed - (compressed & 255)
            i = bisect_right(comp, compressed) - 1
            if i >= 0 and comp[i] >= word_lo:
                idx = i
                tick_next = comp[i] * spacing
            else:
                tick_next = word_lo * spacing
        else:
            c1 = compressed + 1
            word_hi = c1 + 255 - (c1 & 255)
            i = bisect_left(comp, c1)
            if i < n_ticks and comp[i] <= word_hi:
                idx = i
                tick_next = comp[i] * spacing
            else:
                tick_next = word_hi * spacing
        if tick_next < UNI_MIN_TICK:
            tick_next = UNI_MIN_TICK
        elif tick_next > UNI_MAX_TICK:
            tick_next = UNI_MAX_TICK
        sp_next = sqrt_at(tick_next)
        if zfo:  # noqa: SIM108
            target = limit if sp_next < limit else sp_next
        else:
            target = limit if sp_next > limit else sp_next

        # SwapMath.computeSwapStep, exact input, inlined
        less_fee = remaining * one_minus_fee // FEE_DENOMINATOR
        if zfo:
            prod = (liq << 96) * (sp - target)
            q = -(-prod // sp)
            step_in = -(-q // target)
            if less_fee >= step_in:
                sp_new = target
            else:
                sp_new = uni_next_sqrt_from_input(sp, liq, less_fee, True)
                prod = (liq << 96) * (sp - sp_new)
                q = -(-prod // sp)
                step_in = -(-q // sp_new)
            step_out = (liq * (sp - sp_new)) >> 96
        else:
            step_in = -(-(liq * (target - sp)) >> 96)
            if less_fee >= step_in:
                sp_new = target
            else:
                sp_new = uni_next_sqrt_from_input(sp, liq, less_fee, False)
                step_in = -(-(liq * (sp_new - sp)) >> 96)
            prod = (liq << 96) * (sp_new - sp)
            step_out = (prod // sp_new) // sp
        if sp_new != target:  # noqa: SIM108
            step_fee = remaining - step_in
        else:
            step_fee = -(-(step_in * fee) // one_minus_fee)
        remaining -= step_in + step_fee
        out += step_out
        fee_total += step_fee

        if sp_new == sp_next:
            if idx >= 0:
                net = nets[idx]
                liq = liq - net if zfo else liq + net
                if liq < 0:
                    raise ClmmMathError("LS")
                if liq > U128_MAX:
                    raise ClmmMathError("LA")
                crossed += 1
            tick = tick_next - 1 if zfo else tick_next
        elif sp_new != sp:
            tick = uni_tick_at_sqrt_fast(sp_new)
        sp = sp_new
    return SwapResult(amount - remaining, out, fee_total, sp, tick, liq, crossed)


# ================================================================================================
# Orca Whirlpool (whirlpools-core)
# ================================================================================================


class _U64Overflow(ClmmMathError):
    """AMOUNT_EXCEEDS_MAX_U64"""


def orca_amount_delta_a(p1: int, p2: int, liquidity: int, round_up: bool) -> int:
    """``try_get_amount_delta_a``."""
    lo, hi = (p1, p2) if p1 < p2 else (p2, p1)
    numerator = ((liquidity * (hi - lo)) << 64) & U256_MAX  # U256 checked_shl wraps bits
    denominator = lo * hi
    q, r = divmod(numerator, denominator)
    if round_up and r:
        q += 1
    if q > U64_MAX:
        raise _U64Overflow("Amount exceeds max u64")
    return q


def orca_amount_delta_b(p1: int, p2: int, liquidity: int, round_up: bool) -> int:
    """``try_get_amount_delta_b``."""
    lo, hi = (p1, p2) if p1 < p2 else (p2, p1)
    product = liquidity * (hi - lo)
    q = product >> 64
    if round_up and product & U64_MAX:
        q += 1
    if q > U64_MAX:
        raise _U64Overflow("Amount exceeds max u64")
    return q


def orca_next_sqrt_from_a_input(sp: int, liquidity: int, amount: int) -> int:
    """``try_get_next_sqrt_price_from_a`` with ``specified_input = true``."""
    if amount == 0:
        return sp
    p = sp * amount
    numerator = ((liquidity * sp) << 64) & U256_MAX
    denominator = (liquidity << 64) + p
    q, r = divmod(numerator, denominator)
    if r:
        q += 1
    if not (ORCA_MIN_SQRT_PRICE <= q <= ORCA_MAX_SQRT_PRICE):
        raise ClmmMathError("Sqrt price out of bounds")
    return q


def orca_next_sqrt_from_b_input(sp: int, liquidity: int, amount: int) -> int:
    """``try_get_next_sqrt_price_from_b`` with ``specified_input = true``."""
    if amount == 0:
        return sp
    if liquidity == 0:
        raise ClmmMathError("division by zero liquidity")
    result = sp + (amount << 64) // liquidity
    if not (ORCA_MIN_SQRT_PRICE <= result <= ORCA_MAX_SQRT_PRICE):
        raise ClmmMathError("Sqrt price out of bounds")
    return result


def _swap_orca(pool: ClmmPool, a_to_b: bool, amount: int) -> SwapResult:
    if amount > U64_MAX:
        raise ClmmMathError("token amount exceeds u64")
    c = pool.cache
    ticks = c.ticks
    nets = c.nets
    sqrts = c.sqrts
    n_ticks = len(ticks)
    start_index = c.window_lo
    end_index = c.window_hi
    spacing = pool.tick_spacing
    fee = pool.fee_pips
    one_minus_fee = FEE_DENOMINATOR - fee
    sp = pool.sqrt_price
    # sqrt_price_limit 0 -> MIN/MAX_SQRT_PRICE; running past the tick-array window is an error
    # (INVALID_TICK_ARRAY_SEQUENCE), exactly as whirlpools-core 3.1.0 behaves.
    limit = ORCA_MIN_SQRT_PRICE if a_to_b else ORCA_MAX_SQRT_PRICE
    if (a_to_b and limit > sp) or (not a_to_b and limit < sp):
        raise ClmmMathError("Invalid sqrt price limit direction")
    tick = pool.tick_current
    liq = pool.liquidity
    remaining = amount
    calculated = 0
    trade_fee = 0
    crossed = 0
    while remaining > 0 and limit != sp:
        idx = -1
        if a_to_b:
            if tick < start_index:
                raise ClmmMathError("Invalid tick array sequence")
            i = bisect_right(ticks, (tick // spacing) * spacing) - 1
            if i >= 0 and ticks[i] >= start_index:
                idx = i
                next_index = ticks[i]
                next_sqrt = sqrts[i]
            else:
                next_index = start_index
                next_sqrt = orca_sqrt_at_tick(start_index)
            target = next_sqrt if next_sqrt > limit else limit
        else:
            if tick >= end_index:
                raise ClmmMathError("Invalid tick array sequence")
            i = bisect_right(ticks, tick)
            if i < n_ticks and ticks[i] <= end_index:
                idx = i
                next_index = ticks[i]
                next_sqrt = sqrts[i]
            else:
                next_index = end_index
                next_sqrt = orca_sqrt_at_tick(end_index)
            target = next_sqrt if next_sqrt < limit else limit

        # compute_swap_step (specified_input = true)
        overflow = False
        try:
            if a_to_b:
                fixed = orca_amount_delta_a(sp, target, liq, True)
            else:
                fixed = orca_amount_delta_b(sp, target, liq, True)
        except _U64Overflow:
            overflow = True
            fixed = 0
        amount_calc = remaining * one_minus_fee // FEE_DENOMINATOR if fee else remaining
        if not overflow and fixed <= amount_calc:
            sp_new = target
        elif a_to_b:
            sp_new = orca_next_sqrt_from_a_input(sp, liq, amount_calc)
        else:
            sp_new = orca_next_sqrt_from_b_input(sp, liq, amount_calc)
        is_max = sp_new == target
        if a_to_b:
            step_out = orca_amount_delta_b(sp, sp_new, liq, False)
            if not is_max or overflow:
                fixed = orca_amount_delta_a(sp, sp_new, liq, True)
        else:
            step_out = orca_amount_delta_a(sp, sp_new, liq, False)
            if not is_max or overflow:
                fixed = orca_amount_delta_b(sp, sp_new, liq, True)
        step_in = fixed
        if not is_max:
            step_fee = remaining - step_in
        else:
            # try_reverse_apply_swap_fee(amount_in) - amount_in
            pre_fee = -(-(step_in * FEE_DENOMINATOR) // one_minus_fee) if step_in else 0
            if pre_fee > U64_MAX:
                raise ClmmMathError("Amount exceeds max u64")
            step_fee = pre_fee - step_in

        trade_fee += step_fee
        remaining = remaining - step_in - step_fee
        if remaining < 0:
            raise ClmmMathError("Arithmetic over- or underflow")
        calculated += step_out
        if calculated > U64_MAX:
            raise ClmmMathError("Arithmetic over- or underflow")

        if sp_new == next_sqrt:
            if idx >= 0:
                net = nets[idx]
                liq = liq - net if a_to_b else liq + net
                if liq < 0 or liq > U128_MAX:
                    raise ClmmMathError("liquidity over- or underflow")
                crossed += 1
            tick = next_index - 1 if a_to_b else next_index
        elif sp_new != sp:
            tick = orca_tick_at_sqrt(sp_new)
        sp = sp_new
    return SwapResult(amount - remaining, calculated, trade_fee, sp, tick, liq, crossed)


# ================================================================================================
# Raydium CLMM (raydium-sdk-v2 swapInternal / program swap loop)
# ================================================================================================


def ray_amount_delta_a(p1: int, p2: int, liquidity: int, round_up: bool) -> int:
    """``LiquidityMathUtil.getDeltaAmountAUnsigned`` / ``get_delta_amount_0_unsigned``."""
    lo, hi = (p1, p2) if p1 < p2 else (p2, p1)
    if lo <= 0:
        raise ClmmMathError("sqrt price must be positive")
    prod = (liquidity << 64) * (hi - lo)
    if round_up:
        q = -(-prod // hi)
        result = -(-q // lo)
    else:
        result = (prod // hi) // lo
    if result > U64_MAX:
        raise _U64Overflow("MaxTokenOverflow")
    return result


def ray_amount_delta_b(p1: int, p2: int, liquidity: int, round_up: bool) -> int:
    """``LiquidityMathUtil.getDeltaAmountBUnsigned`` / ``get_delta_amount_1_unsigned``."""
    lo, hi = (p1, p2) if p1 < p2 else (p2, p1)
    prod = liquidity * (hi - lo)
    result = -(-prod >> 64) if round_up else prod >> 64
    if result > U64_MAX:
        raise _U64Overflow("MaxTokenOverflow")
    return result


def ray_next_sqrt_from_input(sp: int, liquidity: int, amount: int, zero_for_one: bool) -> int:
    """``SqrtPriceMath.getNextSqrtPriceFromInput``."""
    if sp <= 0 or liquidity <= 0:
        raise ClmmMathError("getNextSqrtPriceFromInput: zero price or liquidity")
    if amount == 0:
        return sp
    if zero_for_one:
        numerator = liquidity << 64
        denominator = numerator + amount * sp
        return -(-(numerator * sp) // denominator)
    return sp + (amount << 64) // liquidity


def _swap_raydium(pool: ClmmPool, zfo: bool, amount: int) -> SwapResult:
    if amount > U64_MAX:
        raise ClmmMathError("amount exceeds u64")
    c = pool.cache
    ticks = c.ticks
    nets = c.nets
    sqrts = c.sqrts
    n_ticks = len(ticks)
    fee = pool.fee_pips
    one_minus_fee = FEE_DENOMINATOR - fee
    limit = RAY_MIN_SQRT_PRICE + 1 if zfo else RAY_MAX_SQRT_PRICE - 1
    sp = pool.sqrt_price
    tick = pool.tick_current
    liq = pool.liquidity
    remaining = amount
    calculated = 0
    fee_total = 0
    crossed = 0
    while remaining != 0 and sp != limit:
        if zfo:
            i = bisect_right(ticks, tick) - 1
            if i < 0:
                break  # no initialized tick left in the tick arrays: partial fill (allTrade=false)
        else:
            i = bisect_right(ticks, tick)
            if i >= n_ticks:
                break
        tick_next = ticks[i]
        if tick_next < RAY_MIN_TICK:
            tick_next = RAY_MIN_TICK
        elif tick_next > RAY_MAX_TICK:
            tick_next = RAY_MAX_TICK
        sp_next = sqrts[i]
        if zfo:  # noqa: SIM108
            target = limit if sp_next < limit else sp_next
        else:
            target = limit if sp_next > limit else sp_next

        if sp != target:
            # SwapMathUtil.computeSwap, base input, fee on input
            amount_for_price = remaining * one_minus_fee // FEE_DENOMINATOR
            step_in_opt: int | None
            try:
                if zfo:
                    step_in_opt = ray_amount_delta_a(target, sp, liq, True)
                else:
                    step_in_opt = ray_amount_delta_b(sp, target, liq, True)
            except _U64Overflow:
                step_in_opt = None
            step_in = 0 if step_in_opt is None else step_in_opt
            if step_in_opt is not None and amount_for_price >= step_in:
                sp_new = target
            else:
                sp_new = ray_next_sqrt_from_input(sp, liq, amount_for_price, zfo)
            if zfo:
                if sp_new < target:
                    raise ClmmMathError("!result.sqrtPriceNextX64.gte(sqrtPriceTargetX64)")
            elif target < sp_new:
                raise ClmmMathError("!sqrtPriceTargetX64.gte(result.sqrtPriceNextX64)")
            is_max = target == sp_new
            if zfo:
                if not is_max:
                    step_in = ray_amount_delta_a(sp_new, sp, liq, True)
                step_out = ray_amount_delta_b(sp_new, sp, liq, False)
            else:
                if not is_max:
                    step_in = ray_amount_delta_b(sp, sp_new, liq, True)
                step_out = ray_amount_delta_a(sp, sp_new, liq, False)
            if not is_max:  # noqa: SIM108
                step_fee = remaining - step_in
            else:
                step_fee = -(-(step_in * fee) // one_minus_fee)
            remaining -= step_in + step_fee
            calculated += step_out
            fee_total += step_fee
        else:
            sp_new = target

        if sp_new == sp_next:
            net = nets[i]
            liq = liq - net if zfo else liq + net
            if liq < 0:
                raise ClmmMathError("Liquidity underflow")
            crossed += 1
            tick = tick_next - 1 if zfo else tick_next
        elif sp_new != sp:
            tick = ray_tick_at_sqrt(sp_new)
        sp = sp_new
    return SwapResult(amount - remaining, calculated, fee_total, sp, tick, liq, crossed)
