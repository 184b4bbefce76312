/** The Solana payload checks (port of core/verify/solana.py): the CCTP burn and the Orca / Raydium swaps (signers,
 * the decoded swap against your bounds and the pinned pool, then every instruction re-derived from your inputs). */
import { canonicalJson } from "../canonical.js";
import { PINNED } from "../generated/pinned.js";
import { type Obj, type StepContext, Malformed, get } from "./common.js";
import { DEPOSIT_FOR_BURN_HEX, b64Bytes, toHex } from "./payloads.js";
import { associatedTokenAddress, findProgramAddress, solanaKey } from "./solana_keys.js";
import { base58 } from "@scure/base";
import { checkRaydiumSwap, raydiumSwapV2 } from "./raydium.js";
import { checkFeeTransfers, expectedFeeInstructions } from "./solana_fee.js";

export interface Meta {
  pubkey: string;
  isSigner: boolean;
  isWritable: boolean;
}
export interface Ix {
  programId: string;
  keys: Meta[];
  data: string;
  dataEncoding: "base64";
}

const k = () => PINNED.constants;
export const b58 = (bytes: Uint8Array): string => base58.encode(bytes);
export const meta = (pubkey: string, isSigner: boolean, isWritable: boolean): Meta => ({ pubkey, isSigner, isWritable });
export const ix = (programId: string, data: Uint8Array, keys: Meta[]): Ix => ({ programId, keys, data: Buffer.from(data).toString("base64"), dataEncoding: "base64" });

export function mintOf(assetKey: string): string {
  const a = PINNED.assets[assetKey];
  const m = a?.address ?? a?.wrappedAddress;
  if (!m) throw new Malformed(`no mint for ${assetKey}`);
  return m;
}
export const tokenProgram = (assetKey: string): string => PINNED.assets[assetKey]?.tokenProgram ?? k().SPL_TOKEN_PROGRAM;
export const ata = (owner: string, assetKey: string): string => b58(associatedTokenAddress(owner, assetKey));

export function createAtaIdempotent(payer: string, owner: string, assetKey: string): Ix {
  return ix(k().ATA_PROGRAM, Uint8Array.of(1), [
    meta(payer, true, true),
    meta(ata(owner, assetKey), false, true),
    meta(owner, false, false),
    meta(mintOf(assetKey), false, false),
    meta(k().SYSTEM_PROGRAM, false, false),
    meta(tokenProgram(assetKey), false, false),
  ]);
}

export function u64(n: bigint): Uint8Array {
  const b = Buffer.alloc(8);
  b.writeBigUInt64LE(n);
  return b;
}
function u32(n: number): Uint8Array {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n);
  return b;
}
export const concat = (...parts: Uint8Array[]): Uint8Array => new Uint8Array(Buffer.concat(parts));

export function transferChecked(owner: string, recipientOwner: string, assetKey: string, amount: bigint): Ix {
  const decimals = PINNED.assets[assetKey]!.decimals;
  return ix(tokenProgram(assetKey), concat(Uint8Array.of(12), u64(amount), Uint8Array.of(decimals)), [
    meta(ata(owner, assetKey), false, true),
    meta(mintOf(assetKey), false, false),
    meta(ata(recipientOwner, assetKey), false, true),
    meta(owner, true, false),
  ]);
}

function cctpDepositForBurn(owner: string, eventSigner: string, usdc: string, amount: bigint, domain: number, mintRecipient: Uint8Array, maxFee: bigint): Ix {
  const tmm = solanaKey(k().CCTP_TOKEN_MESSENGER_MINTER_V2);
  const mt = solanaKey(k().CCTP_MESSAGE_TRANSMITTER_V2);
  const text = (s: string): Uint8Array => new TextEncoder().encode(s);
  const pda = (seeds: Uint8Array[], program: Uint8Array): string => b58(findProgramAddress(seeds, program));
  const mint = mintOf(usdc);
  const keys = [
    meta(owner, true, false),
    meta(owner, true, true),
    meta(pda([text("sender_authority")], tmm), false, false),
    meta(ata(owner, usdc), false, true),
    meta(pda([text("denylist_account"), solanaKey(owner)], tmm), false, false),
    meta(pda([text("message_transmitter")], mt), false, true),
    meta(pda([text("token_messenger")], tmm), false, false),
    meta(pda([text("remote_token_messenger"), text(String(domain))], tmm), false, false),
    meta(pda([text("token_minter")], tmm), false, false),
    meta(pda([text("local_token"), solanaKey(mint)], tmm), false, true),
    meta(mint, false, true),
    meta(eventSigner, true, true),
    meta(k().CCTP_MESSAGE_TRANSMITTER_V2, false, false),
    meta(k().CCTP_TOKEN_MESSENGER_MINTER_V2, false, false),
    meta(tokenProgram(usdc), false, false),
    meta(k().SYSTEM_PROGRAM, false, false),
    meta(pda([text("__event_authority")], tmm), false, false),
    meta(k().CCTP_TOKEN_MESSENGER_MINTER_V2, false, false),
  ];
  const data = concat(Buffer.from(DEPOSIT_FOR_BURN_HEX, "hex"), u64(amount), u32(domain), mintRecipient, new Uint8Array(32), u64(maxFee), u32(k().CCTP_FAST_FINALITY));
  return ix(k().CCTP_TOKEN_MESSENGER_MINTER_V2, data, keys);
}

export const sameJson = (a: unknown, b: unknown): boolean => canonicalJson(a) === canonicalJson(b);

export function checkSolana(x: StepContext, action: Obj): void {
  const { c, step } = x;
  if (step.provider === "orca_whirlpool" || step.provider === "raydium_clmm") {
    checkSolanaSwap(x, action);
    return;
  }
  if (step.provider !== "circle_cctp") {
    c.fail("provider_not_verifiable", `${step.provider} instructions are not verifiable by this verifier`);
    return;
  }
  if (!c.expect(x.eventSigner !== null, "event_signer_missing", "pass your event_signer_public")) return;
  const signer = x.eventSigner!;
  c.expect(get(action, "recentBlockhash") === null, "blockhash_present", "the service must not set a blockhash");
  c.expect(sameJson(get(action, "requiredSigners"), [x.caller, signer]), "signers_mismatch", "requiredSigners must be exactly your wallet and your event signer");
  const ixs = get(action, "instructions");
  if (!Array.isArray(ixs)) {
    c.fail("instructions_missing", "no instructions");
    return;
  }
  const src = step.source;
  const expected: Ix[] = [];
  if (x.fee) {
    if (x.feeRecipient === null) {
      c.fail("fee_recipient_unknown", "cannot check the fee instruction without a fee recipient");
      return;
    }
    expected.push(...expectedFeeInstructions(x.caller, x.feeRecipient, src, x.fee));
  }
  checkFeeTransfers(x, action, ixs, src);
  const domain = PINNED.chains[step.target.split(":")[0]!]!.cctpDomain;
  if (ixs.length) {
    let data: Uint8Array;
    try {
      data = b64Bytes(get(ixs[ixs.length - 1], "data"));
    } catch {
      data = new Uint8Array();
    }
    if (c.expect(data.length === 96 && toHex(data.slice(0, 8)) === DEPOSIT_FOR_BURN_HEX, "instruction_not_allowed", "the last instruction must be CCTP v2 deposit_for_burn (96 bytes)")) {
      const view = Buffer.from(data);
      const amount = view.readBigUInt64LE(8);
      const dom = view.readUInt32LE(16);
      const mintRcpt = data.slice(20, 52);
      const destCaller = data.slice(52, 84);
      const maxFee = view.readBigUInt64LE(84);
      const finality = view.readUInt32LE(92);
      c.expect(amount === x.net, "amount_mismatch", `burn amount ${amount}, expected ${x.net}`);
      c.expect(dom === domain, "destination_mismatch", `destination_domain ${dom}`);
      c.expect(`0x${toHex(mintRcpt)}` === `0x${"00".repeat(12)}${x.recipient.slice(2).toLowerCase()}`, "recipient_mismatch", "mint_recipient is not yours");
      c.expect(destCaller.every((b) => b === 0), "destination_caller_not_allowed", "destination_caller must be empty");
      c.expect(0n < maxFee && maxFee < amount && amount - maxFee >= x.minOut, "max_fee_too_high", `max_fee ${maxFee} would let the output fall below ${x.minOut}`);
      c.expect(finality === k().CCTP_FAST_FINALITY, "finality_mismatch", `min_finality_threshold ${finality}`);
      if (domain === null || domain === undefined) throw new Malformed("no CCTP domain");
      expected.push(cctpDepositForBurn(x.caller, signer, src, amount, domain, mintRcpt, maxFee));
    }
  }
  const allowed = new Set([k().ATA_PROGRAM, tokenProgram(src), k().CCTP_TOKEN_MESSENGER_MINTER_V2]);
  ixs.forEach((one, i) => c.expect(allowed.has(get(one, "programId") as string), "program_not_allowed", `instruction ${i}: program`));
  c.expect(sameJson(ixs, expected), "instruction_mismatch", "instructions differ from the exact fee / token-account / burn instructions derived from your inputs");

}

/** Python's base64.b64decode(validate=True): only the alphabet, correct padding. */
export function strictB64(text: unknown): Uint8Array {
  if (typeof text !== "string" || !/^[A-Za-z0-9+/]*={0,2}$/.test(text) || text.length % 4 !== 0) throw new Malformed("bad base64");
  return new Uint8Array(Buffer.from(text, "base64"));
}

const floorDiv = (a: number, b: number): number => Math.floor(a / b);

function orcaTickArrayStarts(tick: number, spacing: number, aToB: boolean): number[] {
  const span = k().ORCA_TICK_ARRAY_SIZE * spacing;
  const first = floorDiv(tick + (aToB ? 0 : spacing), span) * span;
  const lo = floorDiv(k().ORCA_MIN_TICK, span) * span;
  const hi = floorDiv(k().ORCA_MAX_TICK, span) * span;
  const step = aToB ? -span : span;
  return [0, 1, 2].map((i) => Math.min(hi, Math.max(lo, first + i * step)));
}

const orcaPda = (seeds: Uint8Array[]): string => b58(findProgramAddress(seeds, solanaKey(k().ORCA_WHIRLPOOL_PROGRAM)));
const enc = (t: string): Uint8Array => new TextEncoder().encode(t);

function u128(n: bigint): Uint8Array {
  const out = new Uint8Array(16);
  for (let i = 0; i < 16; i++) out[i] = Number((n >> BigInt(8 * i)) & 0xffn);
  return out;
}

function orcaSwapV2(owner: string, poolId: string, amount: bigint, minimumOut: bigint, aToB: boolean, tick: number): Ix {
  const pool = PINNED.orcaPools[poolId]!;
  const a = pool.tokenA;
  const b = pool.tokenB;
  const arrays = orcaTickArrayStarts(tick, pool.tickSpacing, aToB).map((start) =>
    orcaPda([enc("tick_array"), solanaKey(pool.whirlpool), enc(String(start))]),
  );
  const limit = BigInt(aToB ? k().ORCA_MIN_SQRT_PRICE_X64 : k().ORCA_MAX_SQRT_PRICE_X64);
  const data = concat(Buffer.from(k().SWAP_V2_DISCRIMINATOR_HEX, "hex"), u64(amount), u64(minimumOut), u128(limit), Uint8Array.of(1, aToB ? 1 : 0, 0));
  return ix(k().ORCA_WHIRLPOOL_PROGRAM, data, [
    meta(tokenProgram(a), false, false),
    meta(tokenProgram(b), false, false),
    meta(k().MEMO_PROGRAM, false, false),
    meta(owner, true, false),
    meta(pool.whirlpool, false, true),
    meta(mintOf(a), false, false),
    meta(mintOf(b), false, false),
    meta(ata(owner, a), false, true),
    meta(pool.vaultA, false, true),
    meta(ata(owner, b), false, true),
    meta(pool.vaultB, false, true),
    ...arrays.map((t) => meta(t, false, true)),
    meta(pool.oracle, false, true),
  ]);
}

/** (amount, threshold, sqrt price limit, exact input, a_to_b), or null (core/actions/solana_swaps.py). */
function decodeOrcaSwapV2(data: Uint8Array): [bigint, bigint, bigint, boolean, boolean] | null {
  if (data.length !== 43 || toHex(data.slice(0, 8)) !== k().SWAP_V2_DISCRIMINATOR_HEX || data[42] !== 0) return null;
  if (data[40]! > 1 || data[41]! > 1) return null;
  const view = Buffer.from(data);
  let limit = 0n;
  for (let i = 39; i >= 24; i--) limit = (limit << 8n) | BigInt(data[i]!);
  return [view.readBigUInt64LE(8), view.readBigUInt64LE(16), limit, data[40] === 1, data[41] === 1];
}

function checkSolanaSwap(x: StepContext, action: Obj): void {
  const { c, step } = x;
  const src = step.source;
  const dst = step.target;
  c.expect(get(action, "recentBlockhash") === null, "blockhash_present", "the service must not set a blockhash");
  c.expect(sameJson(get(action, "requiredSigners"), [x.caller]), "signers_mismatch", "requiredSigners must be exactly your wallet");
  const ixs = get(action, "instructions");
  const tick = get(action, "poolTickCurrent");
  if (!Array.isArray(ixs) || ixs.length === 0 || !ixs.every((i) => typeof i === "object" && i !== null && !Array.isArray(i))) {
    c.fail("instructions_missing", "no instructions");
    return;
  }
  if (typeof tick !== "number" || !Number.isInteger(tick)) {
    c.fail("pool_tick_missing", "a Solana swap action must state the poolTickCurrent its tick arrays follow");
    return;
  }
  if (x.fee && x.feeRecipient === null) {
    c.fail("fee_recipient_unknown", "cannot check the fee instruction without a fee recipient");
    return;
  }
  const poolId = step.poolId ?? "";
  const swapIx = (ixs as Obj[]).find((i) => i["programId"] === k().ORCA_WHIRLPOOL_PROGRAM || i["programId"] === k().RAYDIUM_CLMM_PROGRAM);
  if (step.provider === "raydium_clmm" && PINNED.raydiumPools[poolId] !== undefined) {
    const live = checkRaydiumSwap(x, action, swapIx, tick);
    if (live === null) return;
    finishSwap(x, action, ixs, () => [raydiumSwapV2(x.caller, poolId, x.net, x.minOut, src === PINNED.raydiumPools[poolId]!.token0, live)], k().RAYDIUM_CLMM_PROGRAM);
    return;
  }
  const pool = PINNED.orcaPools[poolId];
  if (step.provider !== "orca_whirlpool" || pool === undefined) {
    c.fail("provider_not_verifiable", `no pinned, buildable pool for ${step.provider} ${poolId}`);
    return;
  }
  const aToB = src === pool.tokenA;
  if (!c.expect(swapIx !== undefined && swapIx["programId"] === k().ORCA_WHIRLPOOL_PROGRAM, "program_not_allowed", `the swap must be an instruction of the pinned program ${k().ORCA_WHIRLPOOL_PROGRAM}`)) return;
  let data: Uint8Array;
  try {
    data = strictB64(get(swapIx!, "data"));
  } catch {
    data = new Uint8Array();
  }
  const args = decodeOrcaSwapV2(data);
  c.expect(args !== null, "instruction_not_allowed", "the swap must be Orca Whirlpool swap_v2 (43 bytes)");
  if (args === null) return;
  const [amount, threshold, limit, exactIn, gotAToB] = args;
  c.expect(amount === x.net, "amount_mismatch", `swap amount ${amount}, expected ${x.net}`);
  c.expect(threshold === x.minOut, "minimum_output_mismatch", `other_amount_threshold ${threshold} differs from minimumOutput ${x.minOut}`);
  c.expect(exactIn && gotAToB === aToB, "direction_mismatch", "the swap direction / exact-input flag differ");
  c.expect(limit === BigInt(aToB ? k().ORCA_MIN_SQRT_PRICE_X64 : k().ORCA_MAX_SQRT_PRICE_X64), "price_limit_mismatch", "the sqrt price limit must be the program's bound");
  const rawKeys = get(swapIx!, "keys", []);
  const keys = (Array.isArray(rawKeys) ? rawKeys : []).filter((m) => typeof m === "object" && m !== null && !Array.isArray(m)).map((m) => get(m, "pubkey"));
  const own = [ata(x.caller, pool.tokenA), ata(x.caller, pool.tokenB)];
  c.expect(keys.length === 15 && keys[3] === x.caller && keys[7] === own[0] && keys[9] === own[1], "token_owner_mismatch", "the swap's authority and token accounts must be your wallet's own");
  c.expect(
    keys.length === 15 && keys[4] === pool.whirlpool && keys[8] === pool.vaultA && keys[10] === pool.vaultB && keys[14] === pool.oracle && pool.oracle === orcaPda([enc("oracle"), solanaKey(pool.whirlpool)]),
    "pool_accounts_mismatch",
    "the swap's pool, vaults or oracle are not the pinned ones",
  );
  // as the Python verifier: the swap re-derived from the stated net input (checked against input - fee apart)
  finishSwap(x, action, ixs, () => [orcaSwapV2(x.caller, poolId, x.net, x.minOut, aToB, tick)], k().ORCA_WHIRLPOOL_PROGRAM);
}

/** build_solana_swap's instruction list: wSOL wrap for SOL input, the fee, the caller's output account, the swap,
 * wSOL close for SOL output; then the program allowlist and exact equality. */
function finishSwap(x: StepContext, action: Obj, ixs: unknown[], swap: () => Ix[], program: string): void {
  const { c, step } = x;
  const src = step.source;
  const dst = step.target;
  // your own wrap and fee instructions, your output token account, the swap re-derived, the unwrap
  const expected: Ix[] = [];
  if (src === "solana:SOL") expected.push(...wrapSol(x.caller, src, x.inputBase));
  if (x.fee) expected.push(...expectedFeeInstructions(x.caller, x.feeRecipient ?? "", src, x.fee));
  expected.push(createAtaIdempotent(x.caller, x.caller, dst));
  try {
    expected.push(...swap());
  } catch (e) {
    c.fail("instruction_mismatch", `cannot derive the expected swap instruction: ${e instanceof Error ? e.message : String(e)}`);
    return;
  }
  if (dst === "solana:SOL") expected.push(closeWsol(x.caller, dst));
  checkFeeTransfers(x, action, ixs, src);
  const allowed = new Set([k().ATA_PROGRAM, tokenProgram(src), tokenProgram(dst), k().SYSTEM_PROGRAM, program]);
  ixs.forEach((one, i) => c.expect(allowed.has(get(one, "programId") as string), "program_not_allowed", `instruction ${i}: program`));
  c.expect(sameJson(ixs, expected), "instruction_mismatch", "instructions differ from the exact fee / token-account / swap instructions derived from your inputs");
}

function wrapSol(owner: string, sol: string, lamports: bigint): Ix[] {
  const account = ata(owner, sol);
  return [
    createAtaIdempotent(owner, owner, sol),
    ix(k().SYSTEM_PROGRAM, concat(Uint8Array.of(2, 0, 0, 0), u64(lamports)), [meta(owner, true, true), meta(account, false, true)]),
    ix(tokenProgram(sol), Uint8Array.of(17), [meta(account, false, true)]),
  ];
}

function closeWsol(owner: string, sol: string): Ix {
  return ix(tokenProgram(sol), Uint8Array.of(9), [meta(ata(owner, sol), false, true), meta(owner, false, true), meta(owner, true, false)]);
}
