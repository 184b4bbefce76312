"""Orca Whirlpool and Raydium CLMM `swap_v2` instructions with their full account lists (pure; solders only).

Layouts (Anchor; instruction data = sha256("global:swap_v2")[:8] + borsh args):

* Orca Whirlpool `swap_v2` (program `whirLbMiicVdio4qvUfM5KAg6Ct8VwpYzGff3uctyCc`; IDL `whirlpool.json`,
  `programs/whirlpool/src/instructions/v2/swap.rs` in orca-so/whirlpools): args `amount u64,
  other_amount_threshold u64, sqrt_price_limit u128, amount_specified_is_input bool, a_to_b bool,
  remaining_accounts_info Option<RemainingAccountsInfo>` (43 bytes with `None`); accounts `token_program_a,
  token_program_b, memo_program, token_authority (signer), whirlpool (w), token_mint_a, token_mint_b,
  token_owner_account_a (w), token_vault_a (w), token_owner_account_b (w), token_vault_b (w), tick_array_0..2
  (w), oracle (w)`. Tick arrays: PDA `["tick_array", whirlpool, start_tick_index as a decimal string]`, 88 ticks
  each, in swap direction (the SDK's `getTickArrayPublicKeysForSwap`: b->a starts from `tick + tick_spacing`);
  oracle: PDA `["oracle", whirlpool]`. The price limit is the program's MIN/MAX_SQRT_PRICE_X64 (no limit).
* Raydium CLMM `swap_v2` (program `CAMMCzo5YL8w4VFF8KVHrK22GGUsp5VTaW7grrKgrWqK`; IDL `raydium_clmm.json`,
  `programs/amm/src/instructions/swap_v2.rs` `SwapSingleV2` in raydium-io/raydium-clmm): args `amount u64,
  other_amount_threshold u64, sqrt_price_limit_x64 u128 (0 = none), is_base_input bool` (41 bytes); accounts
  `payer (signer), amm_config, pool_state (w), input_token_account (w), output_token_account (w), input_vault (w),
  output_vault (w), observation_state (w), token_program, token_program_2022, memo_program, input_vault_mint,
  output_vault_mint`, then remaining accounts: the tick-array bitmap extension PDA
  `["pool_tick_array_bitmap_extension", pool]` (read-only) and the tick arrays in swap direction, PDA
  `["tick_array", pool, start_index i32 big-endian]`, 60 ticks each. The account order is cross-checked with
  the public Rust client that builds `SwapSingleV2` through anchor-client and with sevenlabs-hq/carbon's
  `raydium_clmm_swap_v2` account arrangement; the b->a tick-array shift with Orca's legacy SDK
  (`shift = aToB ? 0 : tickSpacing` in `getTickArrayPublicKeysForSwap`). Both instructions are compared with the
  venues' SDKs over generated cases (`tests/integration/test_solana_swap_sdk_equality.py`).

  Raydium rules, from raydium-io/raydium-clmm `instructions/swap_v2.rs` (`exact_internal_v2`),
  `instructions/swap.rs` (`swap_internal`) and `states/pool.rs`: `observation_state` must be
  `pool_state.observation_key` (an `address =` constraint) and the observation must belong to the pool;
  remaining accounts are walked in order: the account whose key is the bitmap-extension PDA is loaded as the
  extension (`AccountLoader::try_from`, so it must exist when passed), any other account whose data is not
  `TickArrayState::LEN` ends the list, the rest are tick arrays. The first tick array used is
  `get_first_initialized_tick_array`: the array holding the current tick if the pool bitmap marks it
  initialized, else the next initialized one in swap direction; leading accounts that do not match are popped,
  later ones must follow in swap direction (`NotEnoughTickArrayAccount` when they run out) and belong to the
  pool. The extension is needed ("must add account if need") when the search leaves the default bitmap range
  (`MissingTickArrayBitmapExtensionAccount`). The remaining accounts are chosen exactly as
  `@raydium-io/raydium-sdk-v2` does (`makeSwapBaseInInstructions` after `PoolUtils.computeAmountOut`): the
  bitmap extension PDA (writable), then up to two initialized arrays on the other side of the current tick, then
  the initialized arrays in swap direction up to the one holding the last tick the swap reaches, plus one more
  (`raydium_sdk_tick_arrays`). The pool state they follow is one read (`SolanaPoolRead`): live chain state, or
  the embedded snapshot's modelled state (then the swap may fail on mainnet, never pay less than its minimum).

Pinned pools (every address below appears in the public sources named next to it; PDAs are re-derived
in the tests and must match):

* Orca USDG/USDC, tick spacing 1: whirlpool `9RqDTfwCx2SgxsvKpspQHc38HUo3B6hRd3oR9JR966Ps` (= PDA
  `["whirlpool", 2LecshUwdy9xi7meFgHtFJQNSKk4KdTrcpvaB56dP2NQ, USDG, USDC, 1u16 LE]`), vault A (USDG)
  `6j9UtMmzmWuLu45XXmdUXN3NJBdiicxxoBEex8jUs3j6`, vault B (USDC) `5Sokmb48nt8aH8TnnkrAcVea4SdRqGU3qTxhRFvTHJyn`,
  oracle `4FQqY5C4fjReyc3MkMRqbR7bk9KRzXdCTbAXb5wbycVh`. Sources: the AssetFare plan CLI's `ORCA` pin table
  (the service this one reimplements), a public Solana indexer's CLMM handler test (pool + mint/vault pairs),
  a public "gecko" swap-rehearsal script and its fixture ("the USDG/USDC ts=1 pool four swap_v2 transactions
  landed on"), and an Orca API v2 pool-list script.
* Raydium SOL/USDC, AmmConfig index 2 (0.05 %, tick spacing 10): pool
  `2QdhepnKRTLjjSqPL1PtKNwqrUkoLee5Gqs8bvZhRdMv` (= PDA `["pool", amm_config, wSOL, USDC]`), amm_config
  `HfERMT5DRA6C1TAqecrJQFpmkf3wsWTMncqnj3RDg5aw` (= PDA `["amm_config", 2u16 BE]`), vault 0 (wSOL)
  `E2BcoCeJLTa27mAXDA4xwEq3pBUcyH6XXEHYk4KvKYTv`, vault 1 (USDC) `4d35yC7C8zhCDec7JbPptL9SEb4NUddKHxURgmvD8hfo`,
  bitmap extension `9z9VTNvaTpJuwjn4LSnjHwZgUR9iGuy59BwXTNbxRF6s`. Sources: a recorded
  `api.raydium.io/v2/ammV3/ammPools` sample (`data[0]`), a public Rust client test deriving these keys
  (`PoolKeys::new(CAMM…, wSOL, USDC, 2)`), Raydium's UI fee-config table (index 2 = 500 pips / spacing 10),
  a mainnet increase_liquidity transaction's account list. **Not pinned:** the pool's `observation_state`
  (an early pool: a keypair account, not a PDA, and Raydium publishes no key list for it): a live read takes it
  from the pool account (offset 201), whose amm_config and vaults must equal the pinned ones; the embedded
  snapshot carries `RAYDIUM_SNAPSHOT_OBSERVATION`, inferred, not confirmed: it is the one writable account that
  a public validator's dropped-transaction statistics list next to this pool and both its vaults, with the same
  count, in three separate windows. If it is wrong the program refuses the swap (`address =` constraint).
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass

from solders.instruction import AccountMeta, Instruction
from solders.pubkey import Pubkey

from routequote.core.assets import ASSETS, TOKEN_2022_PROGRAM, Asset
from routequote.core.clmm import ClmmMathError, ClmmPool, sqrt_price_at_tick, swap_exact_input

ORCA_WHIRLPOOL_PROGRAM = Pubkey.from_string("whirLbMiicVdio4qvUfM5KAg6Ct8VwpYzGff3uctyCc")
RAYDIUM_CLMM_PROGRAM = Pubkey.from_string("CAMMCzo5YL8w4VFF8KVHrK22GGUsp5VTaW7grrKgrWqK")
MEMO_PROGRAM = Pubkey.from_string("MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr")
SPL_TOKEN = Pubkey.from_string("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA")
TOKEN_2022 = Pubkey.from_string(TOKEN_2022_PROGRAM)
SWAP_V2_DISCRIMINATOR = hashlib.sha256(b"global:swap_v2").digest()[:8]  # 2b04ed0b1ac91e62 for both programs
ORCA_TICK_ARRAY_SIZE = 88
RAYDIUM_TICK_ARRAY_SIZE = 60
ORCA_MIN_TICK, ORCA_MAX_TICK = -443636, 443636
ORCA_MIN_SQRT_PRICE_X64 = 4295048016
ORCA_MAX_SQRT_PRICE_X64 = 79226673515401279992447579055
ORCA_SWAP_V2_DATA_LEN = 43
RAYDIUM_SWAP_V2_DATA_LEN = 41
RAYDIUM_MAX_TICK_ARRAYS = 12  # a bound on the tick arrays a verifier accepts (2 behind + the swap's + 1)
RAYDIUM_SNAPSHOT_OBSERVATION = "4fEjbMXTet3w8qhScPmT6X79ypagRydKLHPqcGsrhcmP"
POOL_STATE_LIVE = "live_chain_read"
POOL_STATE_SNAPSHOT = "embedded_snapshot"
RAYDIUM_FIXED_ACCOUNTS = 13


@dataclass(frozen=True, slots=True)
class OrcaPool:
    pool_id: str
    whirlpool: str
    token_a: str  # asset key of mint A
    token_b: str
    vault_a: str
    vault_b: str
    oracle: str
    tick_spacing: int


@dataclass(frozen=True, slots=True)
class RaydiumPool:
    pool_id: str
    pool: str
    amm_config: str
    token_0: str
    token_1: str
    vault_0: str
    vault_1: str
    bitmap_extension: str
    tick_spacing: int


@dataclass(frozen=True, slots=True)
class RaydiumLiveAccounts:
    """What a Raydium swap takes from the read of the pinned pool (see the module docstring)."""

    observation: str
    tick_array_starts: tuple[int, ...]  # in the SDK's order (`raydium_sdk_tick_arrays`)
    bitmap_extension: str | None  # the PDA when that account exists, else None (not passed)


@dataclass(frozen=True, slots=True)
class SolanaPoolRead:
    """One read of a pinned Solana pool that both the price and the swap's accounts come from.

    `source` is `POOL_STATE_LIVE` (read from the chain) or `POOL_STATE_SNAPSHOT` (the embedded, modelled
    snapshot). Raydium: `observation` / `bitmap_extension` (None when that account does not exist) and the
    arrays the program treats as initialized."""

    source: str
    tick_current: int
    clmm: ClmmPool
    initialized_tick_arrays: tuple[int, ...] = ()
    observation: str | None = None
    bitmap_extension: str | None = None


ORCA_USDG_USDC = OrcaPool(
    pool_id="solana:orca_whirlpool:USDC-USDG",
    whirlpool="9RqDTfwCx2SgxsvKpspQHc38HUo3B6hRd3oR9JR966Ps",
    token_a="solana:USDG",
    token_b="solana:USDC",
    vault_a="6j9UtMmzmWuLu45XXmdUXN3NJBdiicxxoBEex8jUs3j6",
    vault_b="5Sokmb48nt8aH8TnnkrAcVea4SdRqGU3qTxhRFvTHJyn",
    oracle="4FQqY5C4fjReyc3MkMRqbR7bk9KRzXdCTbAXb5wbycVh",
    tick_spacing=1,
)
RAYDIUM_SOL_USDC = RaydiumPool(
    pool_id="solana:raydium_clmm:SOL-USDC",
    pool="2QdhepnKRTLjjSqPL1PtKNwqrUkoLee5Gqs8bvZhRdMv",
    amm_config="HfERMT5DRA6C1TAqecrJQFpmkf3wsWTMncqnj3RDg5aw",
    token_0="solana:SOL",
    token_1="solana:USDC",
    vault_0="E2BcoCeJLTa27mAXDA4xwEq3pBUcyH6XXEHYk4KvKYTv",
    vault_1="4d35yC7C8zhCDec7JbPptL9SEb4NUddKHxURgmvD8hfo",
    bitmap_extension="9z9VTNvaTpJuwjn4LSnjHwZgUR9iGuy59BwXTNbxRF6s",
    tick_spacing=10,
)
ORCA_POOLS = {ORCA_USDG_USDC.pool_id: ORCA_USDG_USDC}
RAYDIUM_POOLS = {RAYDIUM_SOL_USDC.pool_id: RAYDIUM_SOL_USDC}
SOLANA_POOL_STATE_UNAVAILABLE = (
    "solana_pool_state_unavailable: the market view carries no state with the pinned accounts for this pool "
    "(the embedded snapshot and the live Solana reader both do)"
)
SNAPSHOT_SWAP_NOTE = (
    "Prepared from the embedded snapshot: the tick arrays (and, for Raydium, the observation account) follow "
    "modelled pool state, so the swap may be refused on mainnet; it can never deliver less than its minimum output."
)


def _pk(x: str | Pubkey) -> Pubkey:
    return x if isinstance(x, Pubkey) else Pubkey.from_string(x)


def _mint(a: Asset) -> Pubkey:
    addr = a.address or a.wrapped_address
    assert addr is not None
    return Pubkey.from_string(addr)


def _token_program(a: Asset) -> Pubkey:
    return TOKEN_2022 if a.token_program == TOKEN_2022_PROGRAM else SPL_TOKEN


def _ata(owner: str | Pubkey, a: Asset) -> Pubkey:
    from solders.token.associated import get_associated_token_address

    return get_associated_token_address(_pk(owner), _mint(a), _token_program(a))


def orca_oracle_address(whirlpool: str) -> str:
    return str(Pubkey.find_program_address([b"oracle", bytes(_pk(whirlpool))], ORCA_WHIRLPOOL_PROGRAM)[0])


def orca_tick_array_address(whirlpool: str, start: int) -> str:
    seeds = [b"tick_array", bytes(_pk(whirlpool)), str(start).encode()]
    return str(Pubkey.find_program_address(seeds, ORCA_WHIRLPOOL_PROGRAM)[0])


def raydium_tick_array_address(pool: str, start: int) -> str:
    seeds = [b"tick_array", bytes(_pk(pool)), start.to_bytes(4, "big", signed=True)]
    return str(Pubkey.find_program_address(seeds, RAYDIUM_CLMM_PROGRAM)[0])


def raydium_bitmap_extension_address(pool: str) -> str:
    seeds = [b"pool_tick_array_bitmap_extension", bytes(_pk(pool))]
    return str(Pubkey.find_program_address(seeds, RAYDIUM_CLMM_PROGRAM)[0])


def orca_tick_array_starts(tick_current: int, tick_spacing: int, a_to_b: bool) -> list[int]:
    """Three tick-array start indexes in swap direction (Orca SDK `getTickArrayPublicKeysForSwap`): a->b walks
    down from the array holding the current tick, b->a walks up from the array holding `tick + tick_spacing`.
    Past the last valid array the last one is repeated (the program accepts repeated arrays)."""
    span = ORCA_TICK_ARRAY_SIZE * tick_spacing
    first = ((tick_current + (0 if a_to_b else tick_spacing)) // span) * span
    lo, hi = (ORCA_MIN_TICK // span) * span, (ORCA_MAX_TICK // span) * span
    step = -span if a_to_b else span
    return [min(hi, max(lo, first + i * step)) for i in range(3)]


def raydium_tick_array_starts(
    tick_current: int, tick_spacing: int, zero_for_one: bool, count: int = 3
) -> list[int]:
    """`count` consecutive array starts from the one holding the current tick (initialized or not)."""
    span = RAYDIUM_TICK_ARRAY_SIZE * tick_spacing
    first = (tick_current // span) * span
    step = -span if zero_for_one else span
    return [first + i * step for i in range(count)]


def _last_target_tick(clmm: ClmmPool, zero_for_one: bool, tick_after: int, sqrt_after: int) -> int | None:
    """The initialized tick the swap was heading for when its input ran out: the tick it ended on when it ended
    exactly by crossing one, else the next visible initialized tick in swap direction from where it stopped."""
    ticks = clmm.cache.ticks
    if zero_for_one:
        crossed = tick_after + 1
        if crossed in ticks and sqrt_after == sqrt_price_at_tick(clmm.venue, crossed):
            return crossed
        below = [t for t in ticks if t <= tick_after]
        return below[-1] if below else None
    if tick_after in ticks and sqrt_after == sqrt_price_at_tick(clmm.venue, tick_after):
        return tick_after
    above = [t for t in ticks if t > tick_after]
    return above[0] if above else None


def raydium_sdk_tick_arrays(
    clmm: ClmmPool, initialized: tuple[int, ...] | list[int], zero_for_one: bool, amount_in: int
) -> tuple[int, ...]:
    """The tick-array starts `@raydium-io/raydium-sdk-v2` passes for an exact-input swap of `amount_in`
    (`PoolUtils.getOutputAmountAndRemainAccounts` -> `swapInternal(includeExtraTickArrays)`): up to two
    initialized arrays on the other side of the current tick (nearest first, the first swap array left out),
    then the initialized arrays in swap direction from the current one up to the array holding the last tick the
    swap heads for, plus the next one. Empty when the swap cannot be filled from the known arrays."""
    span = RAYDIUM_TICK_ARRAY_SIZE * clmm.tick_spacing
    current = (clmm.tick_current // span) * span
    inits = sorted(set(initialized))
    if zero_for_one:
        ahead = sorted((x for x in inits if x <= current), reverse=True)
        behind = [x for x in inits if x >= current][:2]
    else:
        ahead = [x for x in inits if x >= current]
        behind = sorted((x for x in inits if x <= current), reverse=True)[:2]
    if not ahead or amount_in <= 0:
        return ()
    try:
        res = swap_exact_input(clmm, zero_for_one, amount_in)
    except ClmmMathError:
        return ()
    if res.amount_in != amount_in:
        return ()  # not fillable from these arrays: the program would refuse it too
    target = _last_target_tick(clmm, zero_for_one, res.tick_after, res.sqrt_price_after)
    if target is None or (target // span) * span not in ahead:
        return ()
    k = ahead.index((target // span) * span)
    return tuple(x for x in behind if x != ahead[0]) + tuple(ahead[: k + 2])


def raydium_tick_arrays_in_swap_direction(
    starts: tuple[int, ...] | list[int], tick_current: int, tick_spacing: int, zero_for_one: bool
) -> bool:
    """True when `starts` have the SDK's shape (`raydium_sdk_tick_arrays`): array starts for this spacing, at
    most two strictly on the other side of the current tick's array (moving away from it), then at least one in
    swap direction from the current array, strictly ordered; at most `RAYDIUM_MAX_TICK_ARRAYS` in all."""
    span = RAYDIUM_TICK_ARRAY_SIZE * tick_spacing
    current = (tick_current // span) * span
    if not 0 < len(starts) <= RAYDIUM_MAX_TICK_ARRAYS or any(s % span for s in starts):
        return False
    sign = -1 if zero_for_one else 1  # swap direction
    k = 0
    while k < len(starts) and (starts[k] - current) * sign < 0:
        k += 1
    behind, ahead = list(starts[:k]), list(starts[k:])
    if k > 2 or not ahead:
        return False
    away = all((b - a) * sign < 0 for a, b in zip(behind, behind[1:], strict=False))
    onward = all((b - a) * sign > 0 for a, b in zip(ahead, ahead[1:], strict=False))
    return away and onward


def orca_swap_v2_data(amount: int, minimum_out: int, a_to_b: bool) -> bytes:
    limit = ORCA_MIN_SQRT_PRICE_X64 if a_to_b else ORCA_MAX_SQRT_PRICE_X64
    return (
        SWAP_V2_DISCRIMINATOR
        + struct.pack("<QQ", amount, minimum_out)
        + limit.to_bytes(16, "little")
        + bytes(
            [1, 1 if a_to_b else 0, 0]
        )  # amount_specified_is_input, a_to_b, remaining_accounts_info = None
    )


def orca_swap_v2(
    owner: str | Pubkey, pool: OrcaPool, amount: int, minimum_out: int, a_to_b: bool, tick_current: int
) -> Instruction:
    """Whirlpool `swap_v2`, exact input `amount` of A (a_to_b) or B, at least `minimum_out` out."""
    a, b = ASSETS[pool.token_a], ASSETS[pool.token_b]
    o = _pk(owner)
    arrays = [
        orca_tick_array_address(pool.whirlpool, s)
        for s in orca_tick_array_starts(tick_current, pool.tick_spacing, a_to_b)
    ]
    metas = [
        AccountMeta(_token_program(a), False, False),
        AccountMeta(_token_program(b), False, False),
        AccountMeta(MEMO_PROGRAM, False, False),
        AccountMeta(o, True, False),
        AccountMeta(_pk(pool.whirlpool), False, True),
        AccountMeta(_mint(a), False, False),
        AccountMeta(_mint(b), False, False),
        AccountMeta(_ata(o, a), False, True),
        AccountMeta(_pk(pool.vault_a), False, True),
        AccountMeta(_ata(o, b), False, True),
        AccountMeta(_pk(pool.vault_b), False, True),
        *(AccountMeta(_pk(t), False, True) for t in arrays),
        AccountMeta(_pk(pool.oracle), False, True),
    ]
    return Instruction(ORCA_WHIRLPOOL_PROGRAM, orca_swap_v2_data(amount, minimum_out, a_to_b), metas)


def raydium_swap_v2_data(amount: int, minimum_out: int) -> bytes:
    return SWAP_V2_DISCRIMINATOR + struct.pack("<QQ", amount, minimum_out) + bytes(16) + bytes([1])


def raydium_swap_v2(
    owner: str | Pubkey,
    pool: RaydiumPool,
    amount: int,
    minimum_out: int,
    zero_for_one: bool,
    live: RaydiumLiveAccounts,
) -> Instruction:
    """Raydium CLMM `swap_v2` (`SwapSingleV2`), base input, no price limit, at least `minimum_out` out; the
    observation, bitmap extension and tick arrays as read live (`live`)."""
    t0, t1 = ASSETS[pool.token_0], ASSETS[pool.token_1]
    src, dst = (t0, t1) if zero_for_one else (t1, t0)
    v_in, v_out = (pool.vault_0, pool.vault_1) if zero_for_one else (pool.vault_1, pool.vault_0)
    o = _pk(owner)
    # writable, as the SDK passes it (`swapV2Instruction`)
    ext = [AccountMeta(_pk(live.bitmap_extension), False, True)] if live.bitmap_extension else []
    metas = [
        AccountMeta(o, True, False),
        AccountMeta(_pk(pool.amm_config), False, False),
        AccountMeta(_pk(pool.pool), False, True),
        AccountMeta(_ata(o, src), False, True),
        AccountMeta(_ata(o, dst), False, True),
        AccountMeta(_pk(v_in), False, True),
        AccountMeta(_pk(v_out), False, True),
        AccountMeta(_pk(live.observation), False, True),
        AccountMeta(SPL_TOKEN, False, False),
        AccountMeta(TOKEN_2022, False, False),
        AccountMeta(MEMO_PROGRAM, False, False),
        AccountMeta(_mint(src), False, False),
        AccountMeta(_mint(dst), False, False),
        *ext,
        *(
            AccountMeta(_pk(raydium_tick_array_address(pool.pool, s)), False, True)
            for s in live.tick_array_starts
        ),
    ]
    return Instruction(RAYDIUM_CLMM_PROGRAM, raydium_swap_v2_data(amount, minimum_out), metas)


def decode_orca_swap_v2(data: bytes) -> tuple[int, int, int, bool, bool] | None:
    """(amount, other_amount_threshold, sqrt_price_limit, amount_specified_is_input, a_to_b), or None."""
    if len(data) != ORCA_SWAP_V2_DATA_LEN or data[:8] != SWAP_V2_DISCRIMINATOR or data[42] != 0:
        return None
    if data[40] not in (0, 1) or data[41] not in (0, 1):
        return None
    amount, threshold = struct.unpack_from("<QQ", data, 8)
    return amount, threshold, int.from_bytes(data[24:40], "little"), bool(data[40]), bool(data[41])


def decode_raydium_swap_v2(data: bytes) -> tuple[int, int, int, bool] | None:
    """(amount, other_amount_threshold, sqrt_price_limit_x64, is_base_input), or None."""
    if len(data) != RAYDIUM_SWAP_V2_DATA_LEN or data[:8] != SWAP_V2_DISCRIMINATOR or data[40] not in (0, 1):
        return None
    amount, threshold = struct.unpack_from("<QQ", data, 8)
    return amount, threshold, int.from_bytes(data[24:40], "little"), bool(data[40])
