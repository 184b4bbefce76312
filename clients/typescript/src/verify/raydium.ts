/** The Raydium CLMM swap (port of core/verify/solana.py `_check_raydium_swap` and the `raydium_swap_v2` builder):
 * the decoded swap_v2, the caller's own accounts, the pinned amm_config / pool / vaults in swap direction, and the
 * accounts the bundle states it read (observation, bitmap extension, tick arrays as the pool's PDAs in swap
 * direction). */
import { PINNED } from "../generated/pinned.js";
import { type Obj, type StepContext, Malformed, get } from "./common.js";
import { toHex } from "./payloads.js";
import { type Ix, ata, b58, concat, ix, meta, mintOf, strictB64, u64 } from "./solana.js";
import { findProgramAddress, solanaKey } from "./solana_keys.js";

export interface RaydiumLive {
  observation: string;
  starts: number[];
  extension: string | null;
}

const k = () => PINNED.constants;
const enc = (t: string): Uint8Array => new TextEncoder().encode(t);
const pda = (seeds: Uint8Array[]): string => b58(findProgramAddress(seeds, solanaKey(k().RAYDIUM_CLMM_PROGRAM)));
const isKey = (t: unknown): boolean => {
  try {
    return typeof t === "string" && solanaKey(t).length === 32;
  } catch {
    return false;
  }
};
const sameList = (a: unknown[], b: unknown[]): boolean => a.length === b.length && a.every((v, i) => v === b[i]);

function i32be(n: number): Uint8Array {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n); // throws outside i32, as Python's to_bytes(4, signed=True)
  return b;
}

export const tickArrayAddress = (pool: string, start: number): string => pda([enc("tick_array"), solanaKey(pool), i32be(start)]);
const bitmapExtensionAddress = (pool: string): string => pda([enc("pool_tick_array_bitmap_extension"), solanaKey(pool)]);

function inSwapDirection(starts: number[], tick: number, spacing: number, zeroForOne: boolean): boolean {
  const span = k().RAYDIUM_TICK_ARRAY_SIZE * spacing;
  const current = Math.floor(tick / span) * span;
  if (!(starts.length > 0 && starts.length <= k().RAYDIUM_MAX_TICK_ARRAYS) || starts.some((s) => s % span !== 0)) return false;
  const sign = zeroForOne ? -1 : 1;
  let n = 0;
  while (n < starts.length && (starts[n]! - current) * sign < 0) n++;
  const behind = starts.slice(0, n);
  const ahead = starts.slice(n);
  if (n > 2 || ahead.length === 0) return false;
  const away = behind.slice(1).every((b, i) => (b - behind[i]!) * sign < 0);
  const onward = ahead.slice(1).every((b, i) => (b - ahead[i]!) * sign > 0);
  return away && onward;
}

function decode(data: Uint8Array): [bigint, bigint, bigint, boolean] | null {
  if (data.length !== 41 || toHex(data.slice(0, 8)) !== k().SWAP_V2_DISCRIMINATOR_HEX || data[40]! > 1) return null;
  const view = Buffer.from(data);
  let limit = 0n;
  for (let i = 39; i >= 24; i--) limit = (limit << 8n) | BigInt(data[i]!);
  return [view.readBigUInt64LE(8), view.readBigUInt64LE(16), limit, data[40] === 1];
}

/** The live accounts for rebuilding, or null after recording why the swap is refused. */
export function checkRaydiumSwap(x: StepContext, action: Obj, swapIx: Obj | undefined, tick: number): RaydiumLive | null {
  const { c, step } = x;
  const src = step.source;
  const dst = step.target;
  const rp = PINNED.raydiumPools[step.poolId ?? ""]!;
  const zeroForOne = src === rp.token0;
  if (!c.expect(swapIx !== undefined && swapIx["programId"] === k().RAYDIUM_CLMM_PROGRAM, "program_not_allowed", `the swap must be an instruction of the pinned program ${k().RAYDIUM_CLMM_PROGRAM}`)) return null;
  let data: Uint8Array;
  try {
    data = strictB64(get(swapIx!, "data"));
  } catch {
    data = new Uint8Array();
  }
  const args = decode(data);
  c.expect(args !== null, "instruction_not_allowed", "the swap must be Raydium CLMM swap_v2 (41 bytes)");
  if (args === null) return null;
  const [amount, threshold, limit, baseInput] = args;
  c.expect(amount === x.net, "amount_mismatch", `swap amount ${amount}, expected ${x.net}`);
  c.expect(threshold === x.minOut, "minimum_output_mismatch", `other_amount_threshold ${threshold} differs from minimumOutput ${x.minOut}`);
  c.expect(baseInput, "direction_mismatch", "the swap must be exact input (is_base_input)");
  c.expect(limit === 0n, "price_limit_mismatch", "the sqrt price limit must be 0 (none: no partial fill)");
  const rawKeys = get(swapIx!, "keys", []);
  const keys = (Array.isArray(rawKeys) ? rawKeys : []).filter((m) => typeof m === "object" && m !== null && !Array.isArray(m)).map((m) => get(m, "pubkey"));
  const live = Object.prototype.hasOwnProperty.call(action, "poolAccountsFromLiveChainState") ? action["poolAccountsFromLiveChainState"] : get(action, "poolAccountsFromSnapshotState");
  if (!c.expect(typeof live === "object" && live !== null && !Array.isArray(live), "live_pool_accounts_missing", "a Raydium swap action must state poolAccountsFromLiveChainState")) return null;
  const obs = get(live, "observationState");
  const ext = get(live, "tickArrayBitmapExtension");
  const starts = get(live, "tickArrayStartIndexes");
  if (!(isKey(obs) && (ext === null || typeof ext === "string") && Array.isArray(starts) && starts.every((v) => typeof v === "number" && Number.isInteger(v)))) {
    c.fail("live_pool_accounts_malformed", "poolAccountsFromLiveChainState is malformed");
    return null;
  }
  const startList = starts as number[];
  const nFixed = k().RAYDIUM_FIXED_ACCOUNTS + (ext !== null ? 1 : 0);
  if (!c.expect(keys.length === nFixed + startList.length, "pool_accounts_mismatch", "the swap's account count differs from the stated live accounts")) return null;
  const own = [ata(x.caller, src), ata(x.caller, dst)];
  c.expect(keys[0] === x.caller && sameList(keys.slice(3, 5), own), "token_owner_mismatch", "the swap's payer and token accounts must be your wallet's own");
  const vaults = zeroForOne ? [rp.vault0, rp.vault1] : [rp.vault1, rp.vault0];
  c.expect(keys[1] === rp.ammConfig && keys[2] === rp.pool && sameList(keys.slice(5, 7), vaults), "pool_accounts_mismatch", "the swap's amm_config, pool or vaults are not the pinned ones in swap direction");
  c.expect(sameList(keys.slice(11, 13), [mintOf(src), mintOf(dst)]), "direction_mismatch", "the swap's input / output mints do not follow your direction");
  c.expect(keys[7] === obs, "observation_mismatch", "the swap's observation account is not the one stated");
  if (ext !== null) {
    c.expect(ext === rp.bitmapExtension && rp.bitmapExtension === bitmapExtensionAddress(rp.pool) && keys[13] === ext, "bitmap_extension_mismatch", "the bitmap extension is not the pinned pool's PDA");
  }
  const pdas = startList.map((v) => tickArrayAddress(rp.pool, v));
  const stated = get(live, "tickArrays");
  c.expect(
    sameList(keys.slice(nFixed), pdas) && Array.isArray(stated) && sameList(stated, pdas) && get(live, "pool") === rp.pool,
    "tick_array_mismatch",
    "a tick array is not the pinned pool's PDA for its stated start index",
  );
  c.expect(inSwapDirection(startList, tick, rp.tickSpacing, zeroForOne), "tick_arrays_not_in_swap_direction", "the stated tick arrays are not array starts ordered in swap direction from poolTickCurrent");
  return { observation: obs as string, starts: startList, extension: ext as string | null };
}

export function raydiumSwapV2(owner: string, poolId: string, amount: bigint, minimumOut: bigint, zeroForOne: boolean, live: RaydiumLive): Ix {
  const pool = PINNED.raydiumPools[poolId];
  if (pool === undefined) throw new Malformed(`no pinned pool ${poolId}`);
  const [src, dst] = zeroForOne ? [pool.token0, pool.token1] : [pool.token1, pool.token0];
  const [vIn, vOut] = zeroForOne ? [pool.vault0, pool.vault1] : [pool.vault1, pool.vault0];
  const data = concat(Buffer.from(k().SWAP_V2_DISCRIMINATOR_HEX, "hex"), u64(amount), u64(minimumOut), new Uint8Array(16), Uint8Array.of(1));
  return ix(k().RAYDIUM_CLMM_PROGRAM, data, [
    meta(owner, true, false),
    meta(pool.ammConfig, false, false),
    meta(pool.pool, false, true),
    meta(ata(owner, src), false, true),
    meta(ata(owner, dst), false, true),
    meta(vIn, false, true),
    meta(vOut, false, true),
    meta(live.observation, false, true),
    meta(k().SPL_TOKEN_PROGRAM, false, false),
    meta(k().TOKEN_2022_PROGRAM, false, false),
    meta(k().MEMO_PROGRAM, false, false),
    meta(mintOf(src), false, false),
    meta(mintOf(dst), false, false),
    ...(live.extension ? [meta(live.extension, false, true)] : []),
    ...live.starts.map((s) => meta(tickArrayAddress(pool.pool, s), false, true)),
  ]);
}
