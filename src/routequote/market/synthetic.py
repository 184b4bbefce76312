"""Builds the embedded market snapshot: modelled pool states sized like the real pools.

The embedded snapshot is not live data and says so. Pool *shapes* (initialized ticks, liquidity net)
are generated deterministically from a seed as nested positions concentrated around the reference
price, scaled so that the in-range value matches the order of magnitude of the real pool; prices,
fee tiers, tick spacings and bridge fee schedules come from public documentation (cited in `notes`).
Run `routequote market build-snapshot --out FILE` to regenerate the file; the output is byte-stable for a seed.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from math import isqrt
from typing import Any

from routequote.core.assets import ASSETS, Token
from routequote.core.clmm import sqrt_price_at_tick, tick_at_sqrt_price

SNAPSHOT_FORMAT = 1


@dataclass(frozen=True)
class PoolSpec:
    pool_id: str
    venue: str
    address: str | None
    token0: str
    token1: str
    fee_pips: int
    tick_spacing: int
    in_range_value_usd: int  # modelled value of all positions at the reference price
    width_percent: float  # widest position, +-% around the price
    tolerance_bps: int  # minimum-output tolerance the quote applies to this venue
    # Solana pools: the static accounts a swap_v2 names (pinned in core.actions.solana_swaps; see its sources)
    accounts: tuple[tuple[str, str], ...] = ()


PRICES_USD_E8 = {
    Token.SOL: 152_40_000000,
    Token.ETH: 3120_55_000000,
    Token.USDC: 1_00000000,
    Token.USDG: 1_00000000,
}

POOLS = (
    PoolSpec(
        "base:uniswap_v3:ETH-USDC",
        "uniswap_v3",
        "0xd0b53D9277642d899DF5C87A3966A349A798F224",
        "base:ETH",
        "base:USDC",
        500,
        10,
        40_000_000,
        20.0,
        50,
    ),
    PoolSpec(
        "arbitrum:uniswap_v3:ETH-USDC",
        "uniswap_v3",
        "0xC6962004f452bE9203591991D15f6b388e09E8D0",
        "arbitrum:ETH",
        "arbitrum:USDC",
        500,
        10,
        30_000_000,
        20.0,
        50,
    ),
    PoolSpec(
        "robinhood:uniswap_v3:ETH-USDG",
        "uniswap_v3",
        "0x69BfaF19C9f377BB306a89aEd9F6B07e2c1a8d9a",
        "robinhood:ETH",
        "robinhood:USDG",
        500,
        10,
        4_000_000,
        25.0,
        75,
    ),
    # Raydium CLMM SOL/USDC, AmmConfig index 2 (HfERMT5DRA6C1TAqecrJQFpmkf3wsWTMncqnj3RDg5aw: trade fee 500
    # pips, tick spacing 10), as served by api.raydium.io/v2/ammV3/ammPools and re-derived in public client
    # tests (PDA ["pool", amm_config, wSOL, USDC]); see routequote.core.actions.solana_swaps.RAYDIUM_SOL_USDC.
    PoolSpec(
        "solana:raydium_clmm:SOL-USDC",
        "raydium_clmm",
        "2QdhepnKRTLjjSqPL1PtKNwqrUkoLee5Gqs8bvZhRdMv",
        "solana:SOL",
        "solana:USDC",
        500,
        10,
        12_000_000,
        25.0,
        50,
        (
            ("amm_config", "HfERMT5DRA6C1TAqecrJQFpmkf3wsWTMncqnj3RDg5aw"),
            ("vault_0", "E2BcoCeJLTa27mAXDA4xwEq3pBUcyH6XXEHYk4KvKYTv"),
            ("vault_1", "4d35yC7C8zhCDec7JbPptL9SEb4NUddKHxURgmvD8hfo"),
            # not a PDA and not published by Raydium: inferred (see solana_swaps.RAYDIUM_SNAPSHOT_OBSERVATION)
            ("observation", "4fEjbMXTet3w8qhScPmT6X79ypagRydKLHPqcGsrhcmP"),
            ("tick_array_bitmap_extension", "9z9VTNvaTpJuwjn4LSnjHwZgUR9iGuy59BwXTNbxRF6s"),
            ("mint_0", "So11111111111111111111111111111111111111112"),
            ("mint_1", "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"),
            ("token_program_0", "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"),
            ("token_program_1", "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"),
        ),
    ),
    # Orca Whirlpool USDG/USDC, tick spacing 1 (PDA ["whirlpool", 2Lecsh…, USDG, USDC, 1u16]); see
    # routequote.core.actions.solana_swaps.ORCA_USDG_USDC for the sources.
    PoolSpec(
        "solana:orca_whirlpool:USDC-USDG",
        "orca_whirlpool",
        "9RqDTfwCx2SgxsvKpspQHc38HUo3B6hRd3oR9JR966Ps",
        "solana:USDG",
        "solana:USDC",
        100,
        1,
        3_000_000,
        0.6,
        10,
        (
            ("whirlpools_config", "2LecshUwdy9xi7meFgHtFJQNSKk4KdTrcpvaB56dP2NQ"),
            ("vault_a", "6j9UtMmzmWuLu45XXmdUXN3NJBdiicxxoBEex8jUs3j6"),
            ("vault_b", "5Sokmb48nt8aH8TnnkrAcVea4SdRqGU3qTxhRFvTHJyn"),
            ("oracle", "4FQqY5C4fjReyc3MkMRqbR7bk9KRzXdCTbAXb5wbycVh"),
            ("mint_a", "2u1tszSeqZ3qBWF3uNGPFc8TzMk2tdiwknnRMWGWjGWH"),
            ("mint_b", "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"),
            ("token_program_a", "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb"),
            ("token_program_b", "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"),
        ),
    ),
)

# The USDG OFT on Robinhood Chain waits for 40 confirmations (sub-second blocks: ~10 s), then its three required
# DVNs (Paxos, Canary, LayerZero Labs) verify on the destination and the executor calls lz_receive. LayerZero
# publishes no latency figure for this pathway; 120 s is the order of magnitude of such deliveries, a model
# like the CCTP attestation and Across fill times beside it (the quote's ETA says its times are modelled).
OFT_DELIVERY_SECONDS = 120

NOTES = (
    "Embedded, modelled market snapshot: NOT live data. Quotes priced from it are estimates of the venues' math "
    "on a modelled state.",
    "Reference prices SOL and ETH in USD as set by the operator at snapshot time; USDC and USDG taken as 1 USD.",
    "Pool fee tiers, tick spacings and EVM pool addresses from public Uniswap/Base/Arbitrum docs and third-party "
    "notes; initialized ticks and liquidity are generated as nested positions sized to the pools' order of "
    "magnitude of in-range value (seeded, reproducible).",
    "CCTP v2 fast-transfer fees by source domain from Circle's fee table (Solana 1 bp, Base/Arbitrum 1.3 bp); "
    "fast attestation ~8 s.",
    "Across relayer fee model (LP + capital + destination gas) and ~4 s fills; LayerZero OFT native fee modelled.",
    "LayerZero OFT delivery (Robinhood egress) modelled at 120 s: 40 source confirmations, then three required "
    "DVNs verify and the executor delivers; an order of magnitude, not a measurement.",
    "Solana pool accounts are pinned (Raydium CLMM SOL/USDC 0.05 %, Orca Whirlpool USDG/USDC) and carried here "
    "with each pool; their ticks are modelled, so a Solana swap prepared from this snapshot names tick arrays "
    "derived from modelled state: it may fail on mainnet, but never delivers less than its minimum output.",
)


def _price_ratio(spec: PoolSpec) -> tuple[int, int]:
    """token1 base units per token0 base unit, as a fraction (num, den)."""
    a0, a1 = ASSETS[spec.token0], ASSETS[spec.token1]
    return PRICES_USD_E8[a0.token] * a1.one, PRICES_USD_E8[a1.token] * a0.one


def _amounts(sqrt_p: float, sqrt_a: float, sqrt_b: float, liquidity: float) -> tuple[float, float]:
    if sqrt_p <= sqrt_a:
        return liquidity * (sqrt_b - sqrt_a) / (sqrt_a * sqrt_b), 0.0
    if sqrt_p >= sqrt_b:
        return 0.0, liquidity * (sqrt_b - sqrt_a)
    return liquidity * (sqrt_b - sqrt_p) / (sqrt_p * sqrt_b), liquidity * (sqrt_p - sqrt_a)


def build_pool(spec: PoolSpec, seed: int) -> dict[str, Any]:
    rng = random.Random(f"{seed}:{spec.pool_id}")
    q = 96 if spec.venue == "uniswap_v3" else 64
    num, den = _price_ratio(spec)
    sqrt_price = isqrt(num * (1 << (2 * q)) // den)
    tick = tick_at_sqrt_price(spec.venue, sqrt_price)  # type: ignore[arg-type]
    s = spec.tick_spacing
    max_width_ticks = int(math.log(1 + spec.width_percent / 100) / math.log(1.0001))
    positions: list[tuple[int, int, float]] = []
    for i in range(100):
        frac = (i + 1) / 100
        width = max(s, int(max_width_ticks * frac**1.6))
        lo = (tick - width) // s * s
        hi = -((-(tick + width)) // s) * s
        if lo == hi:
            hi += s
        weight = math.exp(-((frac * 2.5) ** 2)) + 0.08 * (1 - frac)
        weight *= rng.uniform(0.6, 1.4)
        positions.append((lo, hi, weight))
    # value of one unit of liquidity per position at the current price, in USD (sizing only)
    a0, a1 = ASSETS[spec.token0], ASSETS[spec.token1]
    p0 = PRICES_USD_E8[a0.token] / 1e8 / a0.one
    p1 = PRICES_USD_E8[a1.token] / 1e8 / a1.one
    sp = sqrt_price / (1 << q)
    unit_value = 0.0
    for lo, hi, w in positions:
        sa = sqrt_price_at_tick(spec.venue, lo) / (1 << q)  # type: ignore[arg-type]
        sb = sqrt_price_at_tick(spec.venue, hi) / (1 << q)  # type: ignore[arg-type]
        x0, x1 = _amounts(sp, sa, sb, w)
        unit_value += x0 * p0 + x1 * p1
    scale = spec.in_range_value_usd / unit_value
    net: dict[int, int] = {}
    for lo, hi, w in positions:
        liq = int(w * scale)
        net[lo] = net.get(lo, 0) + liq
        net[hi] = net.get(hi, 0) - liq
    ticks = sorted((t, n) for t, n in net.items() if n != 0)
    active = sum(n for t, n in ticks if t <= tick)
    return {
        "pool_id": spec.pool_id,
        "venue": spec.venue,
        "address": spec.address,
        "token0": spec.token0,
        "token1": spec.token1,
        "fee_pips": spec.fee_pips,
        "tick_spacing": spec.tick_spacing,
        "sqrt_price": str(sqrt_price),
        "tick_current": tick,
        "liquidity": str(active),
        "modelled_in_range_value_usd": spec.in_range_value_usd,
        "ticks": [[t, str(n)] for t, n in ticks],
        **({"accounts": dict(spec.accounts)} if spec.accounts else {}),
    }


def build_snapshot(*, as_of: str, seed: int = 20261120) -> dict[str, Any]:
    pools = [build_pool(spec, seed) for spec in POOLS]
    return {
        "format": SNAPSHOT_FORMAT,
        "version": f"embedded-{as_of[:10]}-s{seed}",
        "as_of": as_of,
        "source": "embedded_snapshot",
        "notes": list(NOTES),
        "prices_usd_e8": {t.value: str(v) for t, v in PRICES_USD_E8.items()},
        "pools": pools,
        "swap_tolerance_bps": {spec.pool_id: spec.tolerance_bps for spec in POOLS},
        "swap_seconds": {"solana": 2, "base": 2, "arbitrum": 1, "robinhood": 1},
        "cctp": {
            "fast_fee_bps_milli": {"5": 1000, "6": 1300, "3": 1300},
            "max_fee_buffer_percent": 20,
            "attestation_seconds": {"5": 8, "6": 8, "3": 8},
            "mint_seconds": 4,
        },
        "across": {
            "lp_fee_ppm": 100,
            "relayer_capital_fee_ppm": 400,
            "relayer_gas_fee_base": "15000",
            "output_tolerance_bps": 25,
            "fill_seconds": 4,
        },
        "oft": {
            "native_fee_wei": "42000000000000",
            "native_fee_buffer_percent": 25,
            "delivery_seconds": OFT_DELIVERY_SECONDS,
        },
        "gas_units": {
            "base": {
                "erc20_approve": 46000,
                "uniswap_v3_swap": 137000,
                "cctp_deposit_for_burn": 140000,
                "cctp_receive_message": 200000,
                "across_deposit": 98000,
                "native_transfer": 21000,
                "erc20_transfer": 52000,
            },
            "arbitrum": {
                "erc20_approve": 46000,
                "uniswap_v3_swap": 137000,
                "cctp_deposit_for_burn": 140000,
                "cctp_receive_message": 200000,
                "across_deposit": 98000,
                "native_transfer": 21000,
                "erc20_transfer": 52000,
            },
            "robinhood": {
                "erc20_approve": 46000,
                "uniswap_v3_swap": 137000,
                "oft_send": 180000,
                "native_transfer": 21000,
                "erc20_transfer": 52000,
            },
            "solana": {
                "raydium_clmm_swap": 150000,
                "orca_whirlpool_swap": 120000,
                "cctp_deposit_for_burn": 120000,
                "cctp_receive_message": 200000,
                "spl_transfer": 30000,
            },
        },
    }
