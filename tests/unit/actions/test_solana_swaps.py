"""Orca Whirlpool / Raydium CLMM `swap_v2` builders: pinned accounts re-derive from their seeds, the
instruction data and account lists match the programs' IDL layouts (golden file
`tests/golden/actions_solana_swaps.json`, regenerate with UPDATE_GOLDEN=1), tick arrays follow the swap
direction, and the wSOL wrap / ATA creation / fee transfer parts execute in LiteSVM."""

from __future__ import annotations

import base64
import json
import os
import struct
from pathlib import Path
from typing import Any

import pytest
from solders.account import Account
from solders.keypair import Keypair
from solders.litesvm import LiteSVM
from solders.message import Message
from solders.pubkey import Pubkey
from solders.token.state import Mint, TokenAccount
from solders.transaction import Transaction
from tests.recordings.fake_upstreams import FakeUpstreams, live_config, pin_solana_pools

from routequote.core.actions import common as ak
from routequote.core.actions import solana as sol
from routequote.core.actions import solana_swaps as sw
from routequote.core.assets import ASSETS
from routequote.core.clmm import ClmmPool, sqrt_price_at_tick
from routequote.market.live import LiveMarket
from routequote.market.live_solana import tick_array_address

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "actions_solana_swaps.json"
OWNER = "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM"
# a test-only stand-in: the Raydium pool's real observation account comes from the live read (see solana_swaps)
TEST_OBSERVATION = str(
    Pubkey.find_program_address([b"routequote-test-observation"], sw.RAYDIUM_CLMM_PROGRAM)[0]
)


def live_accounts(tick: int, zero_for_one: bool, ext: bool = True) -> sw.RaydiumLiveAccounts:
    """Live-read stand-in: the arrays holding and following the current tick all initialized."""
    starts = tuple(sw.raydium_tick_array_starts(tick, 10, zero_for_one))
    return sw.RaydiumLiveAccounts(
        TEST_OBSERVATION, starts, sw.RAYDIUM_SOL_USDC.bitmap_extension if ext else None
    )


ORCA_ACCOUNT_NAMES = (
    "token_program_a",
    "token_program_b",
    "memo_program",
    "token_authority",
    "whirlpool",
    "token_mint_a",
    "token_mint_b",
    "token_owner_account_a",
    "token_vault_a",
    "token_owner_account_b",
    "token_vault_b",
    "tick_array_0",
    "tick_array_1",
    "tick_array_2",
    "oracle",
)
RAYDIUM_ACCOUNT_NAMES = (
    "payer",
    "amm_config",
    "pool_state",
    "input_token_account",
    "output_token_account",
    "input_vault",
    "output_vault",
    "observation_state",
    "token_program",
    "token_program_2022",
    "memo_program",
    "input_vault_mint",
    "output_vault_mint",
    "remaining:tickarray_bitmap_extension",
    "remaining:tick_array_0",
    "remaining:tick_array_1",
    "remaining:tick_array_2",
)


# ---- pinned accounts ---------------------------------------------------------------------------------


def test_pinned_orca_accounts_derive_from_their_seeds() -> None:
    p = sw.ORCA_USDG_USDC
    config = Pubkey.from_string(
        "2LecshUwdy9xi7meFgHtFJQNSKk4KdTrcpvaB56dP2NQ"
    )  # Orca mainnet WhirlpoolsConfig
    a, b = ak.mint(ASSETS[p.token_a]), ak.mint(ASSETS[p.token_b])
    assert bytes(a) < bytes(b)  # Whirlpool mint order
    seeds = [b"whirlpool", bytes(config), bytes(a), bytes(b), p.tick_spacing.to_bytes(2, "little")]
    assert str(Pubkey.find_program_address(seeds, sw.ORCA_WHIRLPOOL_PROGRAM)[0]) == p.whirlpool
    assert sw.orca_oracle_address(p.whirlpool) == p.oracle
    # tick-array PDAs agree with the live reader's derivation
    assert sw.orca_tick_array_address(p.whirlpool, -88) == tick_array_address(
        "orca_whirlpool", p.whirlpool, -88
    )


def test_pinned_raydium_accounts_derive_from_their_seeds() -> None:
    p = sw.RAYDIUM_SOL_USDC
    prog = sw.RAYDIUM_CLMM_PROGRAM
    assert str(Pubkey.find_program_address([b"amm_config", (2).to_bytes(2, "big")], prog)[0]) == p.amm_config
    m0, m1 = ak.mint(ASSETS[p.token_0]), ak.mint(ASSETS[p.token_1])
    assert (
        str(
            Pubkey.find_program_address(
                [b"pool", bytes(Pubkey.from_string(p.amm_config)), bytes(m0), bytes(m1)], prog
            )[0]
        )
        == p.pool
    )
    assert sw.raydium_bitmap_extension_address(p.pool) == p.bitmap_extension
    assert sw.raydium_tick_array_address(p.pool, -600) == tick_array_address("raydium_clmm", p.pool, -600)
    assert not hasattr(p, "observation")  # not citable: taken from the live pool account at prepare time


def test_snapshot_pools_are_the_pinned_accounts() -> None:
    from routequote.market.synthetic import POOLS

    by_id = {p.pool_id: p for p in POOLS}
    orca, ray = by_id[sw.ORCA_USDG_USDC.pool_id], by_id[sw.RAYDIUM_SOL_USDC.pool_id]
    assert (orca.address, orca.tick_spacing, orca.token0) == (sw.ORCA_USDG_USDC.whirlpool, 1, "solana:USDG")
    assert (ray.address, ray.fee_pips, ray.tick_spacing) == (sw.RAYDIUM_SOL_USDC.pool, 500, 10)


# ---- layouts -----------------------------------------------------------------------------------------


def _named(ix: Any, names: tuple[str, ...]) -> list[dict[str, Any]]:
    assert len(ix.accounts) == len(names)
    return [
        {"name": n, "pubkey": str(a.pubkey), "isSigner": a.is_signer, "isWritable": a.is_writable}
        for n, a in zip(names, ix.accounts, strict=True)
    ]


def _layouts() -> dict[str, Any]:
    out: dict[str, Any] = {"discriminator_sha256_global_swap_v2": sw.SWAP_V2_DISCRIMINATOR.hex()}
    for name, a_to_b, tick in (("orca_usdg_to_usdc", True, 3), ("orca_usdc_to_usdg", False, -1)):
        ix = sw.orca_swap_v2(OWNER, sw.ORCA_USDG_USDC, 123_456_789, 123_000_000, a_to_b, tick)
        out[name] = {
            "program_id": str(ix.program_id),
            "data_hex": bytes(ix.data).hex(),
            "pool_tick_current": tick,
            "accounts": _named(ix, ORCA_ACCOUNT_NAMES),
        }
    for name, z, tick in (("raydium_sol_to_usdc", True, -18813), ("raydium_usdc_to_sol", False, -18813)):
        ix = sw.raydium_swap_v2(
            OWNER, sw.RAYDIUM_SOL_USDC, 1_000_000_000, 150_000_000, z, live_accounts(tick, z)
        )
        out[name] = {
            "program_id": str(ix.program_id),
            "data_hex": bytes(ix.data).hex(),
            "pool_tick_current": tick,
            "observation_is_a_test_stand_in": True,
            "accounts": _named(ix, RAYDIUM_ACCOUNT_NAMES),
        }
    # live read: the array below the current one is not initialized and no bitmap extension account exists
    gap = sw.RaydiumLiveAccounts(TEST_OBSERVATION, (-19200, -20400), None)
    ix = sw.raydium_swap_v2(OWNER, sw.RAYDIUM_SOL_USDC, 1_000_000_000, 150_000_000, True, gap)
    names = (*RAYDIUM_ACCOUNT_NAMES[:13], "remaining:tick_array_0", "remaining:tick_array_1")
    out["raydium_sol_to_usdc_gap_no_extension"] = {
        "program_id": str(ix.program_id),
        "data_hex": bytes(ix.data).hex(),
        "pool_tick_current": -18813,
        "tick_array_start_indexes": list(gap.tick_array_starts),
        "observation_is_a_test_stand_in": True,
        "accounts": _named(ix, names),
    }
    return out


def test_golden_swap_layouts() -> None:
    got = _layouts()
    if os.environ.get("UPDATE_GOLDEN"):
        GOLDEN.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    assert got == json.loads(GOLDEN.read_text())


def test_orca_swap_v2_data_and_roles_follow_the_idl() -> None:
    p = sw.ORCA_USDG_USDC
    ix = sw.orca_swap_v2(OWNER, p, 5_000_000, 4_990_000, True, 3)
    data = bytes(ix.data)
    assert data.hex().startswith("2b04ed0b1ac91e62") and len(data) == 43
    amount, threshold = struct.unpack_from("<QQ", data, 8)
    assert (amount, threshold) == (5_000_000, 4_990_000)
    assert int.from_bytes(data[24:40], "little") == sw.ORCA_MIN_SQRT_PRICE_X64
    assert data[40:] == bytes([1, 1, 0])  # exact input, a->b, remaining_accounts_info None
    assert sw.decode_orca_swap_v2(data) == (5_000_000, 4_990_000, sw.ORCA_MIN_SQRT_PRICE_X64, True, True)
    keys = [str(a.pubkey) for a in ix.accounts]
    usdg, usdc = ASSETS["solana:USDG"], ASSETS["solana:USDC"]
    assert keys[0] == str(sw.TOKEN_2022) and keys[1] == str(sw.SPL_TOKEN)  # USDG is Token-2022
    assert keys[7] == str(ak.associated_token_address(OWNER, usdg)) and keys[9] == str(
        ak.associated_token_address(OWNER, usdc)
    )
    assert [a.is_signer for a in ix.accounts] == [i == 3 for i in range(15)]
    assert [a.is_writable for a in ix.accounts] == [i in (4, 7, 8, 9, 10, 11, 12, 13, 14) for i in range(15)]
    b2a = bytes(sw.orca_swap_v2(OWNER, p, 1, 1, False, 3).data)
    assert int.from_bytes(b2a[24:40], "little") == sw.ORCA_MAX_SQRT_PRICE_X64 and b2a[41] == 0


def test_raydium_swap_v2_data_follows_the_idl() -> None:
    ix = sw.raydium_swap_v2(OWNER, sw.RAYDIUM_SOL_USDC, 10**9, 149_000_000, True, live_accounts(-18813, True))
    data = bytes(ix.data)
    assert len(data) == 41 and data[:8] == sw.SWAP_V2_DISCRIMINATOR
    assert struct.unpack_from("<QQ", data, 8) == (10**9, 149_000_000)
    assert data[24:40] == bytes(16) and data[40] == 1  # no price limit, is_base_input
    keys = [str(a.pubkey) for a in ix.accounts]
    assert keys[5:7] == [sw.RAYDIUM_SOL_USDC.vault_0, sw.RAYDIUM_SOL_USDC.vault_1]  # SOL in, USDC out
    assert keys[11:13] == [str(ak.mint(ASSETS["solana:SOL"])), str(ak.mint(ASSETS["solana:USDC"]))]
    assert all(a.is_writable for a in ix.accounts[13:])  # extension and tick arrays: writable, as the SDK
    assert keys[7] == TEST_OBSERVATION and keys[13] == sw.RAYDIUM_SOL_USDC.bitmap_extension
    # no extension account read live: none is passed (the program would try to load it)
    no_ext = sw.raydium_swap_v2(
        OWNER, sw.RAYDIUM_SOL_USDC, 10**9, 1, True, live_accounts(-18813, True, ext=False)
    )
    assert [str(a.pubkey) for a in no_ext.accounts] == keys[:13] + keys[14:]
    assert sw.decode_raydium_swap_v2(data) == (10**9, 149_000_000, 0, True)
    assert sw.decode_raydium_swap_v2(data[:40]) is None


@pytest.mark.parametrize("tick", [-200, -89, -88, -1, 0, 3, 87, 88, 500])
def test_orca_tick_arrays_walk_in_swap_direction(tick: int) -> None:
    down = sw.orca_tick_array_starts(tick, 1, True)
    assert down[0] <= tick < down[0] + 88 and down == [down[0], down[0] - 88, down[0] - 176]
    up = sw.orca_tick_array_starts(tick, 1, False)
    assert up[0] <= tick + 1 < up[0] + 88 and up == [up[0], up[0] + 88, up[0] + 176]


def test_orca_tick_arrays_clamp_at_the_price_range_end() -> None:
    starts = sw.orca_tick_array_starts(sw.ORCA_MIN_TICK + 5, 1, True)
    assert starts[1] == starts[2] == starts[0] == (sw.ORCA_MIN_TICK // 88) * 88


def test_raydium_tick_arrays_walk_in_swap_direction() -> None:
    assert sw.raydium_tick_array_starts(-18813, 10, True) == [-19200, -19800, -20400]
    assert sw.raydium_tick_array_starts(-18813, 10, False) == [-19200, -18600, -18000]


def _ray_pool(ticks: tuple[tuple[int, int], ...], liquidity: int) -> ClmmPool:
    return ClmmPool(
        venue="raydium_clmm",
        fee_pips=500,
        tick_spacing=10,
        sqrt_price=sqrt_price_at_tick("raydium_clmm", -18813),
        tick_current=-18813,
        liquidity=liquidity,
        ticks=ticks,
    )


def test_raydium_sdk_tick_arrays_follow_the_swaps_direction_and_size() -> None:
    """One position per array (-21000 .. -16800); a small swap stays in the current array, a large one walks on."""
    liq = 10**12
    ticks = ((-21000, liq), (-20390, liq), (-19190, liq), (-18590, -liq), (-17990, -liq), (-16790, -liq))
    pool = _ray_pool(ticks, 3 * liq)
    init = (-21000, -20400, -19200, -18600, -18000, -16800)
    pick = sw.raydium_sdk_tick_arrays
    # price down, small: behind = the first two initialized at/above the current array minus the first swap array
    assert pick(pool, init, True, 1000) == (-18600, -19200, -20400)
    # price up, small: target -18590 is in -18600 (k = 1): -19200, -18600 and one more
    assert pick(pool, init, False, 1000) == (-20400, -19200, -18600, -18000)
    # a large price-down swap crosses -19190 and heads for -20390 (array -20400): k = 1, plus one more
    assert pick(pool, init, True, 2 * 10**11) == (-18600, -19200, -20400, -21000)
    # no array in swap direction, or an input the known arrays cannot fill: nothing
    assert pick(pool, (-18600,), True, 1000) == ()
    assert pick(pool, init, True, 10**19) == ()
    ok = sw.raydium_tick_arrays_in_swap_direction
    assert ok([-18600, -19200, -20400], -18813, 10, True) and ok([-20400, -19200, -18600], -18813, 10, False)
    assert ok([-19200, -20400], -18813, 10, True) and ok([-18600], -18813, 10, False)
    assert not ok([-20400, -19200], -18813, 10, True)  # out of order
    assert not ok([-18600], -18813, 10, True)  # nothing in swap direction for a price-down swap
    assert not ok([-18000, -17400, -16800, -19200], -18813, 10, True)  # three behind
    assert not ok([-17400, -18000, -19200], -18813, 10, True)  # behind, walking back toward the current tick
    assert not ok([-19200, -18610], -18813, 10, False)  # not an array start
    assert not ok([], -18813, 10, False)


# ---- LiteSVM: the parts that do not touch the DEX program ---------------------------------------------


def _svm_with_usdc(wallet: Pubkey) -> LiteSVM:
    svm = LiteSVM()
    svm.airdrop(wallet, 10 * 10**9)
    usdc = ASSETS["solana:USDC"]
    mint = Mint(Pubkey.new_unique(), 10**15, usdc.decimals, True, None)
    svm.set_account(ak.mint(usdc), Account(10**9, bytes(mint), ak.token_program(usdc), False, 0))
    native = ASSETS["solana:SOL"]  # the native mint as on mainnet: no authority, 9 decimals
    svm.set_account(
        ak.mint(native),
        Account(10**9, bytes(Mint(None, 0, 9, True, None)), ak.token_program(native), False, 0),
    )
    return svm


def _send(svm: LiteSVM, kp: Keypair, ixs: list[Any]) -> None:
    msg = Message.new_with_blockhash(ixs, kp.pubkey(), svm.latest_blockhash())
    result = svm.send_transaction(Transaction([kp], msg, svm.latest_blockhash()))
    assert not hasattr(result, "err"), result


def _token_amount(svm: LiteSVM, ata: Pubkey) -> int:
    acct = svm.get_account(ata)
    assert acct is not None
    return TokenAccount.from_bytes(bytes(acct.data)[:165]).amount


def test_wsol_wrap_fee_and_output_account_execute_then_close_unwraps() -> None:
    """SOL input: create wSOL ATA, move lamports, SyncNative, fee TransferChecked of wSOL, create the USDC output
    account; then CloseAccount returns every remaining lamport. (The swap itself needs the DEX program.)"""
    kp = Keypair()
    owner, fee_owner = kp.pubkey(), Pubkey.new_unique()
    svm = _svm_with_usdc(owner)
    sol_asset, usdc = ASSETS["solana:SOL"], ASSETS["solana:USDC"]
    amount, fee = 2_000_000_000, 2_000_000_000 // 10_000
    before = svm.get_balance(owner)
    ixs = [
        *sol.wrap_sol(owner, sol_asset, amount),
        sol.create_ata_idempotent(owner, fee_owner, sol_asset),
        sol.transfer_checked(owner, fee_owner, sol_asset, fee),
        sol.create_ata_idempotent(owner, owner, usdc),
    ]
    _send(svm, kp, ixs)
    wsol = ak.associated_token_address(owner, sol_asset)
    assert _token_amount(svm, wsol) == amount - fee
    assert _token_amount(svm, ak.associated_token_address(fee_owner, sol_asset)) == fee
    assert _token_amount(svm, ak.associated_token_address(owner, usdc)) == 0
    svm.expire_blockhash()
    _send(svm, kp, [sol.close_wsol(owner, sol_asset)])
    assert svm.get_account(wsol) is None or svm.get_account(wsol).lamports == 0
    fee_ata = ak.associated_token_address(fee_owner, sol_asset)
    fee_rent = svm.get_account(fee_ata).lamports - _token_amount(
        svm, fee_ata
    )  # a wSOL account's lamports hold its amount
    usdc_rent = svm.get_account(ak.associated_token_address(owner, usdc)).lamports
    spent = before - svm.get_balance(owner)
    # the wallet paid: the fee, two rents it keeps paying for (fee recipient's wSOL, its own USDC account) and
    # the two transaction fees (5000 lamports a signature); the wrapped remainder came back on close
    assert spent == fee + fee_rent + usdc_rent + 2 * 5000


# ---- a live market whose Orca pool is the pinned account (recorded responses, re-keyed) ----------------


def pinned_orca_upstreams(clock: Any) -> FakeUpstreams:
    """The recorded Solana accounts, with the Orca pool (and its tick arrays) moved to the pinned address."""
    fake = FakeUpstreams(clock)
    pin_solana_pools(fake, raydium=False)
    return fake


def pinned_raydium_upstreams(clock: Any) -> FakeUpstreams:
    """`pinned_orca_upstreams` plus the recorded pinned Raydium SOL/USDC pool state (`pinned_raydium` in
    solana_getMultipleAccounts.json: pool, AmmConfig, tick arrays and bitmap extension at their pinned PDAs)."""
    fake = FakeUpstreams(clock)
    pin_solana_pools(fake, raydium=True)
    return fake


def pinned_live_market(clock: Any, fake: FakeUpstreams, *, raydium: bool = False) -> LiveMarket:
    """A live market reading the pinned Orca pool (and with `raydium`, the pinned Raydium pool) account."""
    import httpx

    pools = dict(fake.solana["pool_accounts"])
    pools[sw.ORCA_USDG_USDC.pool_id] = sw.ORCA_USDG_USDC.whirlpool
    if raydium:
        pools[sw.RAYDIUM_SOL_USDC.pool_id] = sw.RAYDIUM_SOL_USDC.pool
    config = live_config(solana_pools=pools)
    # the source deadline is the fakes' (no answer of theirs races a busy machine's wall clock: the 1.5 s one
    # did fail reads on CI)
    http = httpx.AsyncClient(transport=fake.transport())
    return LiveMarket(config, clock, http=http, source_deadline=fake.deadline)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()
