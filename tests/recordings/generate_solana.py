"""Regenerate the Solana `getMultipleAccounts` recordings (run by hand; needs Node + tests/reference/node_modules).

Raydium CLMM accounts are serialized with the venue's own codecs (`PoolInfoLayout`, `TickArrayLayout`,
`ClmmConfigLayout` of `@raydium-io/raydium-sdk-v2`), so our decoder is checked against Raydium's layout
and not against itself. Orca Whirlpool accounts (one fixed `TickArray`, one `DynamicTickArray`) are
serialized here from the program's IDL field list (see `routequote.market.live_solana`).

    python tests/recordings/generate_solana.py
"""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path

from routequote.core.clmm import sqrt_price_at_tick, tick_array_start, tick_at_sqrt_price
from routequote.market.live_solana import (
    D_ORCA_DYNAMIC_TICK_ARRAY,
    D_ORCA_TICK_ARRAY,
    D_RAY_AMM_CONFIG,
    D_RAY_BITMAP_EXTENSION,
    D_RAY_POOL,
    D_RAY_TICK_ARRAY,
    D_WHIRLPOOL,
    ORCA_PROGRAM,
    RAYDIUM_CLMM_PROGRAM,
    raydium_bitmap_extension_address,
    tick_array_address,
)

HERE = Path(__file__).resolve().parent
REFERENCE = HERE.parent / "reference"
SLOT = 381_442_117
WSOL = "So11111111111111111111111111111111111111112"
USDC = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"
USDG = "2u1tszSeqZ3qBWF3uNGPFc8TzMk2tdiwknnRMWGWjGWH"
RAY_POOL = "3ucNos4NbumPLZNWztqGHNFFgkHeRMBQAVemeeomsUxv"
RAY_CONFIG = "E64NGkDLLCdQ2yFNPcavaKptrEgmiQaNykUuLC1Qgwyp"
# the pinned Raydium SOL/USDC pool (routequote.core.actions.solana_swaps); its real observation account is not
# known to us, so the recorded pool state names a recording-only key (derived from a label, owned by nothing)
PINNED_RAY_POOL = "2QdhepnKRTLjjSqPL1PtKNwqrUkoLee5Gqs8bvZhRdMv"
PINNED_RAY_CONFIG = "HfERMT5DRA6C1TAqecrJQFpmkf3wsWTMncqnj3RDg5aw"
PINNED_RAY_VAULT_0 = "E2BcoCeJLTa27mAXDA4xwEq3pBUcyH6XXEHYk4KvKYTv"
PINNED_RAY_VAULT_1 = "4d35yC7C8zhCDec7JbPptL9SEb4NUddKHxURgmvD8hfo"
RECORDED_OBSERVATION = "CeJdXgFxPB2vMyCYuZGcEwBUiWM2BH2AqVZVRmE8yCSr"  # PDA of [b"routequote-recorded-observation"] under the CLMM program
ORCA_POOL = "7UwJ3T4R1ZQZ6kDeKzBFqWmLcwyHM2fgxvBaHJA7Ubzj"
ORCA_CONFIG = "2LecshUwdy9xi7meFgHtFJQNSKk4KdTrcpvaB56dP2NQ"

NODE = r"""
const r = require("@raydium-io/raydium-sdk-v2");
const { PublicKey } = require("@solana/web3.js");
const BN = require("bn.js");
const input = JSON.parse(require("fs").readFileSync(0, "utf8"));
function enc(layout, size, fill) {
  const obj = layout.decode(Buffer.alloc(size));
  fill(obj);
  const buf = Buffer.alloc(size);
  layout.encode(obj, buf);
  return buf.toString("base64");
}
const p = input.pool;
const out = {
  pool: enc(r.PoolInfoLayout, 1544, (o) => {
    o.bump = 255; o.configId = new PublicKey(p.config); o.mintA = new PublicKey(p.mint0); o.mintB = new PublicKey(p.mint1);
    if (p.vault0) { o.vaultA = new PublicKey(p.vault0); o.vaultB = new PublicKey(p.vault1); o.observationId = new PublicKey(p.observation); }
    if (p.bitmap_hex) { o.tickArrayBitmap = Buffer.from(p.bitmap_hex, "hex"); }
    o.mintDecimalsA = p.dec0; o.mintDecimalsB = p.dec1; o.tickSpacing = p.spacing;
    o.liquidity = new BN(p.liquidity); o.sqrtPriceX64 = new BN(p.sqrt_price); o.tickCurrent = p.tick; o.status = 0;
  }),
  config: enc(r.ClmmConfigLayout, 117, (o) => { o.bump = 254; o.index = p.config_index || 1; o.tradeFeeRate = p.fee; o.tickSpacing = p.spacing; o.protocolFeeRate = 120000; }),
  arrays: input.arrays.map((a) => enc(r.TickArrayLayout, 10240, (o) => {
    o.poolId = new PublicKey(p.address); o.startTickIndex = a.start;
    let n = 0;
    for (const [tick, net, gross] of a.ticks) {
      const k = (tick - a.start) / p.spacing; o.ticks[k].tick = tick;
      o.ticks[k].liquidityNet = new BN(net); o.ticks[k].liquidityGross = new BN(gross); n++;
    }
    o.initializedTickCount = n;
  })),
};
process.stdout.write(JSON.stringify(out));
"""


def positions_to_ticks(positions: list[tuple[int, int, int]]) -> dict[int, tuple[int, int]]:
    net: dict[int, list[int]] = {}
    for lo, hi, liq in positions:
        for t, d in ((lo, liq), (hi, -liq)):
            e = net.setdefault(t, [0, 0])
            e[0] += d
            e[1] += liq
    return {t: (n, g) for t, (n, g) in sorted(net.items())}


def active(positions: list[tuple[int, int, int]], tick: int) -> int:
    return sum(liq for lo, hi, liq in positions if lo <= tick < hi)


def account(data_b64: str, owner: str) -> dict[str, object]:
    return {
        "data": [data_b64, "base64"],
        "executable": False,
        "lamports": 72_161_280,
        "owner": owner,
        "rentEpoch": 18446744073709551615,
        "space": len(base64.b64decode(data_b64)),
    }


def raydium(pinned: bool = False) -> tuple[dict[str, object], dict[str, object]]:
    """The recorded Raydium pool (another account, spacing 8); with `pinned`, a pool state at the pinned
    SOL/USDC account (AmmConfig index 2: 500 pips, spacing 10, the pinned vaults, an observation key, a bitmap
    extension account) whose liquidity leaves the array below the current one empty (no account) and the one
    holding the current tick initialized, so the swap's tick arrays must skip the gap."""
    spacing, fee = (10, 500) if pinned else (8, 400)
    pool_addr, config = (PINNED_RAY_POOL, PINNED_RAY_CONFIG) if pinned else (RAY_POOL, RAY_CONFIG)
    sqrt_price = 7_201_498_815_602_734_080  # ~152.4 USDC per SOL in base units, Q64.64
    tick = tick_at_sqrt_price("raydium_clmm", sqrt_price)
    start = tick_array_start("raydium_clmm", tick, spacing)
    if pinned:
        span = 60 * spacing
        positions = [(start + 10 * k, start + span + 20 * k, 10**11 * (k + 2)) for k in range(0, 20, 3)]
        positions += [
            (start - 2 * span + 30, start + 2 * span + 40, 3 * 10**12),
            (tick // 10 * 10 - 20, tick // 10 * 10 + 30, 7 * 10**12),
        ]
    else:
        positions = [
            (start - 480 + 8 * k, start + 472 - 8 * (k % 7), 10**11 * (k + 1)) for k in range(0, 50, 3)
        ]
        positions += [(tick // 8 * 8 - 16, tick // 8 * 8 + 24, 7 * 10**12)]
    ticks = positions_to_ticks(positions)
    arrays = []
    for s in sorted({tick_array_start("raydium_clmm", t, spacing) for t in ticks}):
        arrays.append(
            {
                "start": s,
                "ticks": [
                    [t, str(n), str(g)]
                    for t, (n, g) in ticks.items()
                    if tick_array_start("raydium_clmm", t, spacing) == s
                ],
            }
        )
    pool = {
        "address": pool_addr,
        "config": config,
        "mint0": WSOL,
        "mint1": USDC,
        "dec0": 9,
        "dec1": 6,
        "spacing": spacing,
        "fee": fee,
        "liquidity": str(active(positions, tick)),
        "sqrt_price": str(sqrt_price),
        "tick": tick,
    }
    if (
        pinned
    ):  # the default tick-array bitmap marks each array holding a tick (bit floor(start / span) + 512)
        bitmap = sum(1 << (a["start"] // (60 * spacing) + 512) for a in arrays)
        pool.update(
            vault0=PINNED_RAY_VAULT_0,
            vault1=PINNED_RAY_VAULT_1,
            observation=RECORDED_OBSERVATION,
            config_index=2,
            bitmap_hex=bitmap.to_bytes(128, "little").hex(),
        )
    enc = json.loads(
        subprocess.run(
            ["node", "-e", NODE],
            input=json.dumps({"pool": pool, "arrays": arrays}),
            capture_output=True,
            text=True,
            check=True,
            cwd=REFERENCE,
        ).stdout
    )
    for key, disc in (("pool", D_RAY_POOL), ("config", D_RAY_AMM_CONFIG)):
        raw = bytearray(base64.b64decode(enc[key]))
        raw[:8] = disc
        enc[key] = base64.b64encode(bytes(raw)).decode()
    enc["arrays"] = [
        base64.b64encode(D_RAY_TICK_ARRAY + base64.b64decode(a)[8:]).decode() for a in enc["arrays"]
    ]
    accounts = {
        pool_addr: account(enc["pool"], RAYDIUM_CLMM_PROGRAM),
        config: account(enc["config"], RAYDIUM_CLMM_PROGRAM),
    }
    for a, data in zip(arrays, enc["arrays"], strict=True):
        accounts[tick_array_address("raydium_clmm", pool_addr, a["start"])] = account(
            data, RAYDIUM_CLMM_PROGRAM
        )
    if pinned:  # TickArrayBitmapExtension: discriminator, pool_id, two empty [[u64; 8]; 14] bitmaps
        from solders.pubkey import Pubkey

        ext = D_RAY_BITMAP_EXTENSION + bytes(Pubkey.from_string(pool_addr)) + bytes(2 * 14 * 8 * 8)
        accounts[raydium_bitmap_extension_address(pool_addr)] = account(
            base64.b64encode(ext).decode(), RAYDIUM_CLMM_PROGRAM
        )
    expected = {
        "pool_id": "solana:raydium_clmm:SOL-USDC",
        "fee_pips": fee,
        "tick_spacing": spacing,
        "sqrt_price": str(sqrt_price),
        "tick_current": tick,
        "liquidity": pool["liquidity"],
        "ticks": [[t, str(n)] for t, (n, _) in ticks.items() if n],
    }
    if pinned:
        expected.update(
            observation=RECORDED_OBSERVATION, initialized_tick_arrays=[a["start"] for a in arrays]
        )
    return accounts, expected


def orca() -> tuple[dict[str, object], dict[str, object]]:
    spacing, fee = 1, 100
    sqrt_price = sqrt_price_at_tick("orca_whirlpool", 3) + 987_654_321  # USDG/USDC ~1.0003
    tick = tick_at_sqrt_price("orca_whirlpool", sqrt_price)
    positions = [(-40 + 3 * k, 50 + 11 * k, 10**10 * (3 + k)) for k in range(12)] + [(0, 8, 9 * 10**11)]
    ticks = positions_to_ticks(positions)
    liquidity = active(positions, tick)
    whirl = bytearray(653)
    whirl[:8] = D_WHIRLPOOL
    from solders.pubkey import Pubkey

    whirl[8:40] = bytes(Pubkey.from_string(ORCA_CONFIG))
    whirl[40] = 254
    whirl[41:43] = spacing.to_bytes(2, "little")
    whirl[43:45] = spacing.to_bytes(2, "little")
    whirl[45:47] = fee.to_bytes(2, "little")
    whirl[47:49] = (1300).to_bytes(2, "little")
    whirl[49:65] = liquidity.to_bytes(16, "little")
    whirl[65:81] = sqrt_price.to_bytes(16, "little")
    whirl[81:85] = tick.to_bytes(4, "little", signed=True)
    whirl[101:133] = bytes(Pubkey.from_string(USDG))
    whirl[181:213] = bytes(Pubkey.from_string(USDC))
    accounts: dict[str, object] = {ORCA_POOL: account(base64.b64encode(bytes(whirl)).decode(), ORCA_PROGRAM)}
    starts = sorted({tick_array_start("orca_whirlpool", t, spacing) for t in ticks})
    for i, s in enumerate(starts):
        in_arr = {t: v for t, v in ticks.items() if tick_array_start("orca_whirlpool", t, spacing) == s}
        if i % 2 == 0:  # fixed TickArray
            raw = bytearray(9988)
            raw[:8] = D_ORCA_TICK_ARRAY
            raw[8:12] = s.to_bytes(4, "little", signed=True)
            for t, (n, g) in in_arr.items():
                off = 12 + (t - s) // spacing * 113
                raw[off] = 1
                raw[off + 1 : off + 17] = n.to_bytes(16, "little", signed=True)
                raw[off + 17 : off + 33] = g.to_bytes(16, "little")
            raw[9956:9988] = bytes(Pubkey.from_string(ORCA_POOL))
        else:  # DynamicTickArray
            raw = bytearray(
                D_ORCA_DYNAMIC_TICK_ARRAY
                + s.to_bytes(4, "little", signed=True)
                + bytes(Pubkey.from_string(ORCA_POOL))
            )
            bitmap = 0
            body = bytearray()
            for k in range(88):
                t = s + k * spacing
                if t in in_arr:
                    n, g = in_arr[t]
                    bitmap |= 1 << k
                    body += (
                        b"\x01" + n.to_bytes(16, "little", signed=True) + g.to_bytes(16, "little") + bytes(80)
                    )
                else:
                    body += b"\x00"
            raw += bitmap.to_bytes(16, "little") + body
        accounts[tick_array_address("orca_whirlpool", ORCA_POOL, s)] = account(
            base64.b64encode(bytes(raw)).decode(), ORCA_PROGRAM
        )
    expected = {
        "pool_id": "solana:orca_whirlpool:USDC-USDG",
        "fee_pips": fee,
        "tick_spacing": spacing,
        "sqrt_price": str(sqrt_price),
        "tick_current": tick,
        "liquidity": str(liquidity),
        "ticks": [[t, str(n)] for t, (n, _) in ticks.items() if n],
    }
    return accounts, expected


def main() -> None:
    r_acc, r_exp = raydium()
    o_acc, o_exp = orca()
    p_acc, p_exp = raydium(pinned=True)
    doc = {
        "call": "getMultipleAccounts",
        "documentation": "https://solana.com/docs/rpc/http/getmultipleaccounts",
        "note": "account states built from the venues' layouts (see generate_solana.py); one response per requested "
        "key list is assembled from these accounts: a key not listed here is answered with null",
        "context": {"apiVersion": "2.3.6", "slot": SLOT},
        "accounts": {**o_acc, **r_acc},
        "expected_pools": [o_exp, r_exp],
        "pool_accounts": {
            "solana:orca_whirlpool:USDC-USDG": ORCA_POOL,
            "solana:raydium_clmm:SOL-USDC": RAY_POOL,
        },
        "pinned_raydium": {
            "note": "the pinned Raydium SOL/USDC pool account (2QdhepnK...) with its pinned AmmConfig and vaults; the "
            "observation key is a recording-only stand-in; merged into accounts only by the tests that need it",
            "accounts": p_acc,
            "expected": p_exp,
        },
    }
    (HERE / "solana_getMultipleAccounts.json").write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
