/** The hashes that bind a bundle (port of core/actions/bundle.py's hash functions), re-derived here. */
import { canonicalSha256, sha256Hex } from "../canonical.js";
import { type Obj, Malformed, get, item } from "./common.js";

const RESPONSE_ONLY_KEYS = new Set(["payload_sha256", "idempotent_replay"]);

/** Thrown for a payload kind this port does not check yet (Solana instructions): refused, never passed. */
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

function toHex(bytes: Uint8Array): string {
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
  if (listOf(action, "instructions").length) throw new NotPorted("Solana instructions are not checked by this port yet");
  return rows;
}

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
  if (listOf(action, "instructions").length) throw new NotPorted("Solana instructions are not checked by this port yet");
  // Python's sorted() over str compares code points; these are ASCII
  return [[...targets].sort(), [...selectors].sort()];
}
