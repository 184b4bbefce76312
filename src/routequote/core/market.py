"""An immutable view of the market that quote assembly prices against.

It is filled by an adapter (the embedded snapshot, or live providers) and says where its numbers came
from; quote assembly copies that label into every quote so that a modelled number never passes for a
live one. Amounts are integers: prices in USD with 8 decimals (Chainlink style), fees in parts per
million or thousandths of a basis point, gas in units.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from routequote.core.assets import Chain, Token
from routequote.core.clmm import ClmmPool, tick_array_start

USD_E8 = 10**8


@dataclass(frozen=True, slots=True)
class PoolState:
    pool_id: str  # chain:venue:TOKENA-TOKENB (see Step.pool_id)
    address: str | None  # pool contract / account; None where not pinned
    token0: str  # asset key of the pool's token0 (token A on Solana venues)
    token1: str
    clmm: ClmmPool
    # Live Solana CLMM pools only (empty elsewhere): account keys read from the pool account itself (Raydium:
    # amm_config, vault_0, vault_1, observation, and tick_array_bitmap_extension when that account exists) and
    # the start indexes of the tick arrays, within the window the reader fetched, that the program treats as
    # initialized (Raydium: the pool's tick-array bitmap bit; the account must exist).
    accounts: dict[str, str] = field(default_factory=dict)
    initialized_tick_arrays: tuple[int, ...] = ()
    # Where this pool's state came from: "live_chain_read" (the Solana reader) or the snapshot's source label
    # ("embedded_snapshot": modelled). None where nobody said (EVM pools: their actions never need it).
    state_source: str | None = None


@dataclass(frozen=True, slots=True)
class CctpModel:
    fast_fee_bps_milli: dict[int, int]  # by source domain; 1300 = 1.3 bps
    max_fee_buffer_percent: int  # maxFee = ceil(fee * (100 + buffer) / 100)
    attestation_seconds: dict[int, int]  # fast attestation by source domain
    mint_seconds: int  # the caller's destination mint transaction


@dataclass(frozen=True, slots=True)
class AcrossModel:
    lp_fee_ppm: int
    relayer_capital_fee_ppm: int
    relayer_gas_fee_base: int  # in output-token base units (USDG, 6 decimals)
    output_tolerance_bps: int  # how far a fresh Across quote may move before deposit
    fill_seconds: int


@dataclass(frozen=True, slots=True)
class OftModel:
    native_fee_wei: int  # LayerZero messaging fee, paid in ETH on top of the amount
    native_fee_buffer_percent: int
    delivery_seconds: int | None  # None: no complete estimate (DVN verification time varies)


@dataclass(frozen=True, slots=True)
class MarketView:
    source: str  # "embedded_snapshot" | "live" | ...
    version: str  # changes whenever any number changes; pricing caches key on it
    as_of: str  # RFC 3339 time of the data
    notes: tuple[str, ...]
    live: bool
    prices_usd_e8: dict[Token, int]
    pools: dict[str, PoolState]
    cctp: CctpModel
    across: AcrossModel
    oft: OftModel
    gas_units: dict[Chain, dict[str, int]]
    swap_tolerance_bps: dict[str, int]  # by pool id: min-out tolerance of each swap venue
    swap_seconds: dict[Chain, int]
    unavailable: dict[str, str] = field(default_factory=dict)  # market component -> reason
    # components a live view priced from the embedded snapshot because their live source failed (fallback)
    fallback_components: tuple[str, ...] = ()

    def price(self, token: Token) -> Fraction:
        return Fraction(self.prices_usd_e8[token], USD_E8)


def _initialized_arrays(clmm: ClmmPool) -> tuple[int, ...]:
    if clmm.venue not in ("orca_whirlpool", "raydium_clmm"):
        return ()
    return tuple(sorted({tick_array_start(clmm.venue, t, clmm.tick_spacing) for t, _ in clmm.ticks}))


def market_view_from_dict(doc: dict[str, Any], *, source: str, live: bool) -> MarketView:
    """Parse the snapshot document format (see data/market_snapshot.json)."""
    pools = {}
    for p in doc["pools"]:
        clmm = ClmmPool(
            venue=p["venue"],
            fee_pips=int(p["fee_pips"]),
            tick_spacing=int(p["tick_spacing"]),
            sqrt_price=int(p["sqrt_price"]),
            tick_current=int(p["tick_current"]),
            liquidity=int(p["liquidity"]),
            ticks=tuple((int(t), int(n)) for t, n in p["ticks"]),
        )
        accounts = {str(k): str(v) for k, v in (p.get("accounts") or {}).items()}
        pools[p["pool_id"]] = PoolState(
            p["pool_id"],
            p.get("address"),
            p["token0"],
            p["token1"],
            clmm,
            accounts=accounts,
            # the arrays a Solana swap may name: those holding a (modelled) initialized tick
            initialized_tick_arrays=_initialized_arrays(clmm) if accounts else (),
            state_source=source,
        )
    c, a, o = doc["cctp"], doc["across"], doc["oft"]
    return MarketView(
        source=source,
        version=str(doc["version"]),
        as_of=str(doc["as_of"]),
        notes=tuple(doc.get("notes", ())),
        live=live,
        prices_usd_e8={Token(k): int(v) for k, v in doc["prices_usd_e8"].items()},
        pools=pools,
        cctp=CctpModel(
            fast_fee_bps_milli={int(k): int(v) for k, v in c["fast_fee_bps_milli"].items()},
            max_fee_buffer_percent=int(c["max_fee_buffer_percent"]),
            attestation_seconds={int(k): int(v) for k, v in c["attestation_seconds"].items()},
            mint_seconds=int(c["mint_seconds"]),
        ),
        across=AcrossModel(
            lp_fee_ppm=int(a["lp_fee_ppm"]),
            relayer_capital_fee_ppm=int(a["relayer_capital_fee_ppm"]),
            relayer_gas_fee_base=int(a["relayer_gas_fee_base"]),
            output_tolerance_bps=int(a["output_tolerance_bps"]),
            fill_seconds=int(a["fill_seconds"]),
        ),
        oft=OftModel(
            native_fee_wei=int(o["native_fee_wei"]),
            native_fee_buffer_percent=int(o["native_fee_buffer_percent"]),
            delivery_seconds=None if o.get("delivery_seconds") is None else int(o["delivery_seconds"]),
        ),
        gas_units={Chain(k): {a_: int(u) for a_, u in v.items()} for k, v in doc["gas_units"].items()},
        swap_tolerance_bps={k: int(v) for k, v in doc["swap_tolerance_bps"].items()},
        swap_seconds={Chain(k): int(v) for k, v in doc["swap_seconds"].items()},
    )
