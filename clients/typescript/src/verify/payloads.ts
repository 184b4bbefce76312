/** The hashes that bind a bundle (port of core/actions/bundle.py's hash functions), re-derived here. */
import { sha256 } from "@noble/hashes/sha2";
import { canonicalSha256, sha256Hex } from "../canonical.js";
import { PINNED } from "../generated/pinned.js";
import { type Obj, Malformed, get, item } from "./common.js";

const RESPONSE_ONLY_KEYS = new Set(["payload_sha256", "idempotent_replay", "preflight"]);

/** Thrown for an action kind this port does not check (a provider added to the service before the port): refused, never passed. */
export class NotPorted extends Error {}

export function payloadSha256(bundle: Obj): string {
  return canonicalSha256(Object.fromEntries(Object.entries(bundle).filter(([k]) => !RESPONSE_ONLY_KEYS.has(k))));
}

export function actionSha256(action: Obj): string {
  return canonicalSha256(Object.fromEntries(Object.entries(action).filter(([k]) => k !== "safety_receipt")));
}

export function hexBytes(text: unknown): Uint8Array {
  if (typeof text !== "string") throw new Malformed("hex data must be a string");
  const hex = text.slice(2);
  if (hex.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(hex)) throw new Malformed("non-hexadecimal number found in fromhex()");
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return out;
}

export function toHex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function listOf(action: Obj, key: string): unknown[] {
  const v = get(action, key);
  if (v === undefined || v === null || v === false || v === 0 || v === "") return [];
  if (!Array.isArray(v)) throw new Malformed(`${key} must be a list`);
  return v;
}

export function rawPayloadRows(action: Obj): Obj[] {
  const rows: Obj[] = [];
  listOf(action, "transactions").forEach((tx, i) => {
    const data = hexBytes(item(tx, "data"));
    rows.push({
      index: i,
      kind: "evm_transaction",
      chain_id: item(tx, "chainId"),
      target: item(tx, "to"),
      selector: data.length ? "0x" + toHex(data.slice(0, 4)) : null,
      native_value_base: item(tx, "value"),
      raw_sha256: canonicalSha256(tx),
      data_sha256: sha256Hex(data),
    });
  });
  listOf(action, "instructions").forEach((ix, i) => {
    const programId = item(ix, "programId");
    const data = b64Bytes(item(ix, "data"));
    rows.push({
      index: i,
      kind: "solana_instruction",
      program_id: programId,
      instruction_type: instructionType(programId, data),
      data_prefix_hex: toHex(data.slice(0, 8)),
      raw_sha256: canonicalSha256(ix),
      data_sha256: sha256Hex(data),
    });
  });
  return rows;
}

/** Python's lenient base64.b64decode (non-alphabet characters are discarded; bad padding raises). */
export function b64Bytes(text: unknown): Uint8Array {
  if (typeof text !== "string") throw new Malformed("base64 data must be a string");
  const clean = text.replace(/[^A-Za-z0-9+/=]/g, "");
  const body = clean.replace(/=+$/, "");
  if (body.includes("=") || clean.length % 4 !== 0) throw new Malformed("Incorrect padding");
  return new Uint8Array(Buffer.from(clean, "base64"));
}

const k = () => PINNED.constants;
const eq = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && a.every((v, i) => v === b[i]);

/** The row's instruction type (core/actions/bundle.py instruction_type); SPL tags: 1 CreateIdempotent (ATA),
 * 12 TransferChecked, 17 SyncNative, 9 CloseAccount; system transfer = u32 LE 2. */
function instructionType(programId: unknown, data: Uint8Array): string {
  const prefix = toHex(data.slice(0, 8));
  if (programId === k().ATA_PROGRAM && eq(data, Uint8Array.of(1))) return "associated_token_account_create_idempotent";
  if (data[0] === 12 && data.length === 10) return "spl_transfer_checked";
  if (programId === k().CCTP_TOKEN_MESSENGER_MINTER_V2 && prefix === DEPOSIT_FOR_BURN_HEX) return "cctp_v2_deposit_for_burn";
  if (programId === k().ORCA_WHIRLPOOL_PROGRAM && prefix === k().SWAP_V2_DISCRIMINATOR_HEX) return "orca_whirlpool_swap_v2";
  if (programId === k().RAYDIUM_CLMM_PROGRAM && prefix === k().SWAP_V2_DISCRIMINATOR_HEX) return "raydium_clmm_swap_v2";
  if (programId === k().SYSTEM_PROGRAM && eq(data.slice(0, 4), Uint8Array.of(2, 0, 0, 0)) && data.length === 12) return "system_transfer";
  if (eq(data, Uint8Array.of(17))) return "spl_sync_native";
  if (eq(data, Uint8Array.of(9))) return "spl_close_account";
  return "unknown";
}

/** Anchor's discriminator of `deposit_for_burn`: sha256("global:deposit_for_burn")[:8]. */
export const DEPOSIT_FOR_BURN_HEX = toHex(sha256(new TextEncoder().encode("global:deposit_for_burn")).slice(0, 8));

export function allowlists(action: Obj): [string[], string[]] {
  const targets = new Set<string>();
  const selectors = new Set<string>();
  for (const tx of listOf(action, "transactions")) {
    const to = item(tx, "to");
    const dataText = item(tx, "data");
    if (typeof to !== "string" || typeof dataText !== "string") throw new Malformed("to / data must be strings");
    targets.add(to);
    const data = dataText.slice(2);
    selectors.add(data ? `${to}:0x${data.slice(0, 8)}` : `${to}:native_transfer`);
  }
  for (const ix of listOf(action, "instructions")) {
    const programId = item(ix, "programId");
    if (typeof programId !== "string") throw new Malformed("programId must be a string");
    targets.add(programId);
    selectors.add(`${programId}:${toHex(b64Bytes(item(ix, "data")).slice(0, 8))}`);
  }
  // Python's sorted() over str compares code points; these are ASCII
  return [[...targets].sort(), [...selectors].sort()];
}
