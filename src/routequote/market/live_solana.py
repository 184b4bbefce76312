"""Orca Whirlpool and Raydium CLMM pool state over Solana RPC `getMultipleAccounts`.

Accounts are fetched base64-encoded and decoded here by fixed offsets. Every account starts with the
8-byte Anchor discriminator `sha256("account:<Name>")[:8]`, which is checked.

Orca Whirlpool (program `whirLbMiicVdio4qvUfM5KAg6Ct8VwpYzGff3uctyCc`; IDL `whirlpool.json` and
`programs/whirlpool/src/state/{whirlpool,tick}.rs` in orca-so/whirlpools):

* `Whirlpool` (653 bytes): whirlpools_config Pubkey @8, whirlpool_bump [u8;1] @40, tick_spacing u16 @41,
  fee_tier_index_seed [u8;2] @43, fee_rate u16 @45 (hundredths of a bp = pips), protocol_fee_rate u16 @47,
  liquidity u128 @49, sqrt_price u128 @65 (Q64.64), tick_current_index i32 @81, protocol_fee_owed_a u64 @85,
  protocol_fee_owed_b u64 @93, token_mint_a Pubkey @101, token_vault_a @133, fee_growth_global_a u128 @165,
  token_mint_b Pubkey @181, ...
* `TickArray` (fixed, 9,988 bytes): start_tick_index i32 @8, ticks [Tick; 88] @12, whirlpool Pubkey @9956;
  `Tick` (113 bytes) = initialized bool, liquidity_net i128, liquidity_gross u128, fee_growth_outside_a/b
  u128, reward_growths_outside [u128; 3].
* `DynamicTickArray` (variable): start_tick_index i32 @8, whirlpool Pubkey @12, tick_bitmap u128 @44,
  ticks [DynamicTick; 88] @60 where `DynamicTick` is a borsh enum: tag 0 = Uninitialized (1 byte),
  tag 1 = Initialized(DynamicTickData: liquidity_net i128, liquidity_gross u128, fee_growth_outside_a/b
  u128, reward_growths_outside [u128; 3]; 112 bytes).
* Tick array PDA: seeds `["tick_array", whirlpool, start_tick_index as a decimal string]`; one array spans
  88 x tick_spacing ticks.

Raydium CLMM (program `CAMMCzo5YL8w4VFF8KVHrK22GGUsp5VTaW7grrKgrWqK`; IDL `raydium_clmm.json` and
`programs/amm/src/states/{pool,tick_array,config}.rs` in raydium-io/raydium-clmm; offsets cross-checked
against `PoolInfoLayout` / `TickArrayLayout` / `ClmmConfigLayout` of `@raydium-io/raydium-sdk-v2`):

* `PoolState` (1,544 bytes): bump u8 @8, amm_config Pubkey @9, owner @41, token_mint_0 @73, token_mint_1
  @105, token_vault_0 @137, token_vault_1 @169, observation_key @201, mint_decimals_0 u8 @233,
  mint_decimals_1 u8 @234, tick_spacing u16 @235, liquidity u128 @237, sqrt_price_x64 u128 @253,
  tick_current i32 @269, ..., status u8 @389 (bit 4 set = swaps disabled), reward_infos @397,
  tick_array_bitmap [u64; 16] @904.
* `AmmConfig` (117 bytes): bump u8 @8, index u16 @9, owner Pubkey @11, protocol_fee_rate u32 @43,
  trade_fee_rate u32 @47 (pips), tick_spacing u16 @51.
* `TickArrayState` (10,240 bytes): pool_id Pubkey @8, start_tick_index i32 @40, ticks [TickState; 60] @44;
  `TickState` (168 bytes) = tick i32, liquidity_net i128, liquidity_gross u128, ... (initialized when
  liquidity_gross != 0).
* Tick array PDA: seeds `["tick_array", pool_id, start_tick_index as i32 big-endian]`; one array spans
  60 x tick_spacing ticks.

`getMultipleAccounts` reads all its accounts at one slot, so each refresh reads the pools and their tick
arrays in **one** call: the tick arrays are chosen from the tick seen by the previous refresh. Only on a cold
start, or when the current tick left the middle of the fetched window, is a second call needed.
A tick array account that does not exist has no initialized ticks (both SDKs treat it so).

Raydium pools also carry the account keys a `swap_v2` needs, read from the pool account (amm_config, vaults,
observation_key) plus the tick-array bitmap extension PDA `["pool_tick_array_bitmap_extension", pool]` when that
account exists (read in the same call), and the start indexes of the fetched tick arrays the program treats as
initialized: the pool's default `tick_array_bitmap` bit (the program flips it exactly when an array's initialized
tick count goes 0 <-> 1, `flip_tick_array_bit` in `states/pool.rs`); outside the default range (the extension's,
not decoded here) an existing array holding an initialized tick. A set bit for a missing or empty array refuses
the read. For a pool spec that names pinned accounts (`pinned`), a decoded
amm_config / vault / tick spacing that differs refuses the read (the Solana pools component is unavailable).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeGuard

from solders.pubkey import Pubkey

from routequote.core.assets import ASSETS
from routequote.core.clmm import ClmmPool, tick_array_span, tick_array_start
from routequote.core.market import PoolState
from routequote.market.jsonrpc import JsonRpcClient, SourceDataError, StaleSourceData

ORCA_PROGRAM = "whirLbMiicVdio4qvUfM5KAg6Ct8VwpYzGff3uctyCc"
RAYDIUM_CLMM_PROGRAM = "CAMMCzo5YL8w4VFF8KVHrK22GGUsp5VTaW7grrKgrWqK"
SolanaVenue = Literal["orca_whirlpool", "raydium_clmm"]
SOLANA_VENUES: tuple[SolanaVenue, ...] = ("orca_whirlpool", "raydium_clmm")


def is_solana_venue(venue: str) -> TypeGuard[SolanaVenue]:
    return venue in SOLANA_VENUES


def discriminator(name: str) -> bytes:
    return hashlib.sha256(f"account:{name}".encode()).digest()[:8]


D_WHIRLPOOL = discriminator("Whirlpool")
D_ORCA_TICK_ARRAY = discriminator("TickArray")
D_ORCA_DYNAMIC_TICK_ARRAY = discriminator("DynamicTickArray")
D_RAY_POOL = discriminator("PoolState")
D_RAY_TICK_ARRAY = discriminator("TickArrayState")
D_RAY_AMM_CONFIG = discriminator("AmmConfig")
D_RAY_BITMAP_EXTENSION = discriminator("TickArrayBitmapExtension")

ORCA_TICK_SIZE = 113
ORCA_DYNAMIC_TICK_DATA = 112
RAY_TICK_SIZE = 168
RAY_STATUS_SWAP_DISABLED = 1 << 4


def _u(data: bytes, off: int, n: int) -> int:
    return int.from_bytes(data[off : off + n], "little", signed=False)


def _i(data: bytes, off: int, n: int) -> int:
    return int.from_bytes(data[off : off + n], "little", signed=True)


def _pk(data: bytes, off: int) -> str:
    return str(Pubkey.from_bytes(data[off : off + 32]))


def _need(data: bytes, n: int, what: str, disc: bytes | tuple[bytes, ...]) -> None:
    discs = disc if isinstance(disc, tuple) else (disc,)
    if len(data) < n:
        raise SourceDataError(f"{what}: account data is {len(data)} bytes, expected at least {n}")
    if data[:8] not in discs:
        raise SourceDataError(f"{what}: account discriminator {data[:8].hex()} is not a {what}")


@dataclass(frozen=True, slots=True)
class DecodedPool:
    venue: SolanaVenue
    tick_spacing: int
    fee_pips: int | None  # Raydium: from the AmmConfig account
    liquidity: int
    sqrt_price: int
    tick_current: int
    mint0: str
    mint1: str
    amm_config: str | None = None
    swap_disabled: bool = False
    vault0: str | None = None  # Raydium: token_vault_0 / token_vault_1 / observation_key of the pool account
    vault1: str | None = None
    observation: str | None = None
    tick_array_bitmap: int | None = None  # Raydium: the default bitmap [u64; 16] as one little-endian U1024


def decode_whirlpool(data: bytes) -> DecodedPool:
    _need(data, 213, "Whirlpool", D_WHIRLPOOL)
    return DecodedPool(
        venue="orca_whirlpool",
        tick_spacing=_u(data, 41, 2),
        fee_pips=_u(data, 45, 2),
        liquidity=_u(data, 49, 16),
        sqrt_price=_u(data, 65, 16),
        tick_current=_i(data, 81, 4),
        mint0=_pk(data, 101),
        mint1=_pk(data, 181),
    )


def decode_raydium_pool(data: bytes) -> DecodedPool:
    _need(data, 390, "PoolState", D_RAY_POOL)
    return DecodedPool(
        venue="raydium_clmm",
        tick_spacing=_u(data, 235, 2),
        fee_pips=None,
        liquidity=_u(data, 237, 16),
        sqrt_price=_u(data, 253, 16),
        tick_current=_i(data, 269, 4),
        mint0=_pk(data, 73),
        mint1=_pk(data, 105),
        amm_config=_pk(data, 9),
        swap_disabled=bool(data[389] & RAY_STATUS_SWAP_DISABLED),
        vault0=_pk(data, 137),
        vault1=_pk(data, 169),
        observation=_pk(data, 201),
        tick_array_bitmap=int.from_bytes(data[904:1032], "little") if len(data) >= 1032 else None,
    )


def decode_raydium_amm_config(data: bytes) -> int:
    """trade_fee_rate (pips) of an AmmConfig account."""
    _need(data, 53, "AmmConfig", D_RAY_AMM_CONFIG)
    return _u(data, 47, 4)


def decode_orca_tick_array(data: bytes, tick_spacing: int) -> tuple[int, list[tuple[int, int]]]:
    """(start_tick_index, [(tick, liquidity_net)] of initialized ticks) of a fixed or dynamic tick array."""
    _need(data, 60, "TickArray", (D_ORCA_TICK_ARRAY, D_ORCA_DYNAMIC_TICK_ARRAY))
    start = _i(data, 8, 4)
    out: list[tuple[int, int]] = []
    if data[:8] == D_ORCA_TICK_ARRAY:
        _need(data, 12 + 88 * ORCA_TICK_SIZE + 32, "TickArray", D_ORCA_TICK_ARRAY)
        for k in range(88):
            off = 12 + k * ORCA_TICK_SIZE
            if data[off]:
                out.append((start + k * tick_spacing, _i(data, off + 1, 16)))
        return start, out
    off = 60
    for k in range(88):
        if off >= len(data):
            raise SourceDataError("DynamicTickArray: account data ends inside the tick list")
        tag = data[off]
        if tag == 0:
            off += 1
        elif tag == 1:
            if off + 1 + ORCA_DYNAMIC_TICK_DATA > len(data):
                raise SourceDataError("DynamicTickArray: truncated tick data")
            out.append((start + k * tick_spacing, _i(data, off + 1, 16)))
            off += 1 + ORCA_DYNAMIC_TICK_DATA
        else:
            raise SourceDataError(f"DynamicTickArray: unknown DynamicTick tag {tag}")
    return start, out


def decode_raydium_tick_array(data: bytes) -> tuple[int, list[tuple[int, int]]]:
    _need(data, 44 + 60 * RAY_TICK_SIZE, "TickArrayState", D_RAY_TICK_ARRAY)
    start = _i(data, 40, 4)
    out: list[tuple[int, int]] = []
    for k in range(60):
        off = 44 + k * RAY_TICK_SIZE
        if _u(data, off + 20, 16):  # liquidity_gross
            out.append((_i(data, off, 4), _i(data, off + 4, 16)))
    return start, out


def raydium_bitmap_extension_address(pool: str) -> str:
    seeds = [b"pool_tick_array_bitmap_extension", bytes(Pubkey.from_string(pool))]
    return str(Pubkey.find_program_address(seeds, Pubkey.from_string(RAYDIUM_CLMM_PROGRAM))[0])


def tick_array_address(venue: SolanaVenue, pool: str, start: int) -> str:
    pool_key = bytes(Pubkey.from_string(pool))
    if venue == "orca_whirlpool":
        seeds = [b"tick_array", pool_key, str(start).encode()]
        program = ORCA_PROGRAM
    else:
        seeds = [b"tick_array", pool_key, start.to_bytes(4, "big", signed=True)]
        program = RAYDIUM_CLMM_PROGRAM
    return str(Pubkey.find_program_address(seeds, Pubkey.from_string(program))[0])


RAY_TICK_ARRAY_BITMAP_SIZE = 512  # the default bitmap covers array indexes [-512, 512)


def _raydium_bitmap_bit(pool: DecodedPool, start: int) -> bool | None:
    """The pool's default-bitmap bit for the array at `start`; None outside its range or without a bitmap."""
    if pool.venue != "raydium_clmm" or pool.tick_array_bitmap is None:
        return None
    index = start // tick_array_span("raydium_clmm", pool.tick_spacing)
    if not -RAY_TICK_ARRAY_BITMAP_SIZE <= index < RAY_TICK_ARRAY_BITMAP_SIZE:
        return None
    return bool(pool.tick_array_bitmap >> (index + RAY_TICK_ARRAY_BITMAP_SIZE) & 1)


def _raydium_array_initialized(pool: DecodedPool, start: int, has_ticks: bool, what: str) -> bool:
    """Whether the program treats an existing tick array as initialized: the pool's default bitmap bit
    (`floor(start / span) + 512`, `check_current_tick_array_is_initialized` in raydium-clmm
    `libraries/tick_array_bit_map.rs`) inside the default range; outside it (the bitmap extension's range, not
    read here) or for an Orca pool, whether it holds an initialized tick. A set bit for an array without
    initialized ticks is inconsistent state and refuses the read."""
    bit = _raydium_bitmap_bit(pool, start)
    if bit is None:
        return has_ticks
    if bit and not has_ticks:
        raise SourceDataError(
            f"{what}: the pool bitmap marks tick array {start} initialized but it has no initialized tick"
        )
    return bit


@dataclass(frozen=True, slots=True)
class SolanaPoolSpec:
    pool_id: str  # solana:<venue>:TOKENA-TOKENB
    venue: SolanaVenue
    address: str
    token0: str  # asset key of mint A (Orca) / token_mint_0 (Raydium)
    token1: str
    hint: tuple[int, int] | None = (
        None  # (tick, tick spacing) expected on a cold start, e.g. from the snapshot
    )
    amm_config: str | None = (
        None  # Raydium: the pool's AmmConfig account, if known (checked against the pool)
    )
    # pinned accounts the pool account must name (Raydium: amm_config, vault_0, vault_1) and its pinned tick
    # spacing; a mismatch refuses the read
    pinned: tuple[tuple[str, str], ...] = ()
    pinned_tick_spacing: int | None = None


@dataclass(frozen=True, slots=True)
class SolanaPoolsState:
    slot: int
    pools: dict[str, PoolState]
    round_trips: int


def _mint_of(asset_key: str) -> str | None:
    a = ASSETS[asset_key]
    return a.wrapped_address or a.address


def _account_bytes(value: Any, what: str) -> bytes | None:
    if value is None:
        return None
    try:
        data = value["data"]
        if not (isinstance(data, list) and len(data) == 2 and data[1] == "base64"):
            raise SourceDataError(f"{what}: account data is not base64-encoded")
        return base64.b64decode(data[0], validate=True)
    except (KeyError, TypeError, ValueError) as exc:
        raise SourceDataError(f"{what}: malformed account object") from exc


@dataclass
class SolanaClmmSource:
    """The Solana CLMM pools, read with `getMultipleAccounts` (see the module docstring)."""

    rpc: JsonRpcClient
    specs: Sequence[SolanaPoolSpec]
    arrays_each_side: int = 2
    commitment: str = "confirmed"
    _centers: dict[str, int] = field(default_factory=dict)  # last tick-array start per pool
    _configs: dict[str, str] = field(default_factory=dict)  # raydium pool -> amm_config address
    _spacings: dict[str, int] = field(default_factory=dict)
    last_slot: int = 0

    async def _get(self, keys: list[str]) -> tuple[int, list[Any]]:
        opts: dict[str, Any] = {"encoding": "base64", "commitment": self.commitment}
        res = await self.rpc.call("getMultipleAccounts", [keys, opts])
        try:
            slot = int(res["context"]["slot"])
            values = res["value"]
        except (KeyError, TypeError, ValueError) as exc:
            raise SourceDataError("getMultipleAccounts: response lacks context.slot / value") from exc
        if not isinstance(values, list) or len(values) != len(keys):
            raise SourceDataError("getMultipleAccounts: value is not one entry per requested account")
        if slot < self.last_slot:
            raise StaleSourceData(
                f"getMultipleAccounts answered at slot {slot}, older than slot {self.last_slot}"
            )
        return slot, values

    def _decode_pool(self, spec: SolanaPoolSpec, value: Any) -> DecodedPool:
        data = _account_bytes(value, spec.pool_id)
        if data is None:
            raise SourceDataError(f"{spec.pool_id}: pool account {spec.address} does not exist")
        pool = decode_whirlpool(data) if spec.venue == "orca_whirlpool" else decode_raydium_pool(data)
        for asset_key, mint in ((spec.token0, pool.mint0), (spec.token1, pool.mint1)):
            want = _mint_of(asset_key)
            if want is not None and want != mint:
                raise SourceDataError(f"{spec.pool_id}: pool mint {mint} is not {asset_key} ({want})")
        if pool.swap_disabled:
            raise SourceDataError(f"{spec.pool_id}: swaps are disabled on this pool (status bit 4)")
        decoded = {"amm_config": pool.amm_config, "vault_0": pool.vault0, "vault_1": pool.vault1}
        for name, want_key in spec.pinned:
            if decoded.get(name) != want_key:
                raise SourceDataError(
                    f"{spec.pool_id}: pool account {spec.address} names {name} {decoded.get(name)}, "
                    f"not the pinned {want_key}: refusing its state"
                )
        if spec.pinned_tick_spacing is not None and pool.tick_spacing != spec.pinned_tick_spacing:
            raise SourceDataError(
                f"{spec.pool_id}: pool account {spec.address} has tick spacing {pool.tick_spacing}, "
                f"not the pinned {spec.pinned_tick_spacing}: refusing its state"
            )
        return pool

    def _window(self, spec: SolanaPoolSpec, center: int, spacing: int) -> list[int]:
        span = tick_array_span(spec.venue, spacing)
        k = self.arrays_each_side
        return [center + i * span for i in range(-k, k + 1)]

    async def fetch(self) -> SolanaPoolsState:
        trips0 = self.rpc.round_trips
        for (
            s
        ) in self.specs:  # a hinted pool starts with a guessed window: cold reads take one call when right
            if s.amm_config and s.pool_id not in self._configs:
                self._configs[s.pool_id] = s.amm_config
            if (
                s.hint
                and s.pool_id not in self._centers
                and (s.venue != "raydium_clmm" or s.pool_id in self._configs)
            ):
                self._centers[s.pool_id] = tick_array_start(s.venue, s.hint[0], s.hint[1])
                self._spacings[s.pool_id] = s.hint[1]
        if any(s.pool_id not in self._centers for s in self.specs) or any(
            s.venue == "raydium_clmm" and s.pool_id not in self._configs for s in self.specs
        ):
            _, values = await self._get([s.address for s in self.specs])
            for spec, value in zip(self.specs, values, strict=True):
                p = self._decode_pool(spec, value)
                self._centers[spec.pool_id] = tick_array_start(spec.venue, p.tick_current, p.tick_spacing)
                self._spacings[spec.pool_id] = p.tick_spacing
                if p.amm_config:
                    self._configs[spec.pool_id] = p.amm_config
        for _attempt in range(2):
            keys: list[str] = []
            layout: list[tuple[SolanaPoolSpec, int, int, list[int]]] = []  # spec, pool idx, cfg idx, arrays
            ext_idx: dict[str, int] = {}  # raydium pool id -> index of its bitmap extension account
            for spec in self.specs:
                pool_idx = len(keys)
                keys.append(spec.address)
                cfg_idx = -1
                if spec.venue == "raydium_clmm":
                    cfg_idx = len(keys)
                    keys.append(self._configs[spec.pool_id])
                    ext_idx[spec.pool_id] = len(keys)
                    keys.append(raydium_bitmap_extension_address(spec.address))
                layout.append((spec, pool_idx, cfg_idx, []))
            # tick arrays need the spacing: taken from the previous read (spacing never changes)
            for spec, _, _, arrays in layout:
                arrays.extend(self._window(spec, self._centers[spec.pool_id], self._spacing(spec)))
            array_keys = [
                (spec, start, len(keys) + n)
                for n, (spec, start) in enumerate((s, a) for s, _, _, arr in layout for a in arr)
            ]
            keys += [tick_array_address(spec.venue, spec.address, start) for spec, start, _ in array_keys]
            slot, values = await self._get(keys)
            moved = False
            pools: dict[str, PoolState] = {}
            for spec, pool_idx, cfg_idx, arrays in layout:
                p = self._decode_pool(spec, values[pool_idx])
                used_spacing = self._spacings.get(spec.pool_id)
                self._spacings[spec.pool_id] = p.tick_spacing
                center = self._centers[spec.pool_id]
                now_start = tick_array_start(spec.venue, p.tick_current, p.tick_spacing)
                span = tick_array_span(spec.venue, p.tick_spacing)
                if used_spacing != p.tick_spacing or abs(now_start - center) > span * max(
                    0, self.arrays_each_side - 1
                ):
                    self._centers[spec.pool_id] = now_start
                    moved = True
                if cfg_idx >= 0 and p.amm_config and p.amm_config != self._configs[spec.pool_id]:
                    self._configs[spec.pool_id] = p.amm_config  # the hinted config was not this pool's
                    moved = True
                if moved:
                    continue
                fee = p.fee_pips
                if cfg_idx >= 0:
                    cfg = _account_bytes(values[cfg_idx], f"{spec.pool_id} AmmConfig")
                    if cfg is None:
                        raise SourceDataError(f"{spec.pool_id}: AmmConfig account does not exist")
                    fee = decode_raydium_amm_config(cfg)
                assert fee is not None
                ticks: dict[int, int] = {}
                initialized: list[int] = []
                for s2, start, idx in array_keys:
                    if s2 is not spec:
                        continue
                    data = _account_bytes(values[idx], f"{spec.pool_id} tick array {start}")
                    if data is None:
                        if _raydium_bitmap_bit(p, start):
                            raise SourceDataError(
                                f"{spec.pool_id}: the pool bitmap marks tick array {start} initialized but it does not exist"
                            )
                        continue
                    if spec.venue == "orca_whirlpool":
                        got_start, found = decode_orca_tick_array(data, p.tick_spacing)
                    else:
                        got_start, found = decode_raydium_tick_array(data)
                    if got_start != start:
                        raise SourceDataError(
                            f"{spec.pool_id}: tick array at {start} says it starts at {got_start}"
                        )
                    if _raydium_array_initialized(p, start, bool(found), spec.pool_id):
                        initialized.append(start)
                    for t, net in found:
                        if net:
                            ticks[t] = net
                try:
                    clmm = ClmmPool(
                        venue=spec.venue,
                        fee_pips=fee,
                        tick_spacing=p.tick_spacing,
                        sqrt_price=p.sqrt_price,
                        tick_current=p.tick_current,
                        liquidity=p.liquidity,
                        ticks=tuple(sorted(ticks.items())),
                        tick_array_range=(arrays[0], arrays[-1]),
                    )
                except ValueError as exc:
                    raise SourceDataError(f"{spec.pool_id}: inconsistent pool state: {exc}") from exc
                accounts: dict[str, str] = {}
                if spec.venue == "raydium_clmm":
                    assert p.amm_config and p.vault0 and p.vault1 and p.observation
                    accounts = {
                        "amm_config": p.amm_config,
                        "vault_0": p.vault0,
                        "vault_1": p.vault1,
                        "observation": p.observation,
                    }
                    ext = _account_bytes(
                        values[ext_idx[spec.pool_id]], f"{spec.pool_id} tick array bitmap extension"
                    )
                    if ext is not None:
                        if ext[:8] != D_RAY_BITMAP_EXTENSION:
                            raise SourceDataError(
                                f"{spec.pool_id}: the bitmap extension PDA holds another account type"
                            )
                        accounts["tick_array_bitmap_extension"] = keys[ext_idx[spec.pool_id]]
                pools[spec.pool_id] = PoolState(
                    spec.pool_id,
                    spec.address,
                    spec.token0,
                    spec.token1,
                    clmm,
                    accounts=accounts,
                    initialized_tick_arrays=tuple(sorted(initialized)),
                    state_source="live_chain_read",
                )
            if not moved:
                self.last_slot = slot
                return SolanaPoolsState(slot, pools, self.rpc.round_trips - trips0)
        raise StaleSourceData("pool price kept moving out of the fetched tick-array window")

    def _spacing(self, spec: SolanaPoolSpec) -> int:
        sp = self._spacings.get(spec.pool_id)
        if sp is None:
            raise SourceDataError(f"{spec.pool_id}: tick spacing unknown")
        return sp
