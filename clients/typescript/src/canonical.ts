/** The canonical JSON every routequote hash is taken over (core/hashing.py `canonical_json`): UTF-8 JSON with
 * keys sorted and compact separators. Numbers are written as JavaScript writes them, which equals Python's
 * output for the integers a bundle carries; amounts travel as decimal strings and never as numbers. */
import { sha256 } from "@noble/hashes/sha2";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils";

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

function compareCodePoints(a: string, b: string): number {
  // Python sorts str keys by code point; JavaScript's default sort compares UTF-16 units.
  const x = Array.from(a);
  const y = Array.from(b);
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = (x[i]!.codePointAt(0) ?? 0) - (y[i]!.codePointAt(0) ?? 0);
    if (d !== 0) return d;
  }
  return x.length - y.length;
}

export function canonicalJson(value: unknown): string {
  if (value === null || typeof value === "boolean" || typeof value === "string") return JSON.stringify(value);
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new RangeError("non-finite number");
    return JSON.stringify(value);
  }
  if (typeof value === "bigint") throw new TypeError("a bigint has no canonical JSON form; use a decimal string");
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => compareCodePoints(a, b));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  throw new TypeError(`cannot encode ${typeof value}`);
}

export function sha256Hex(data: Uint8Array): string {
  return bytesToHex(sha256(data));
}

export function canonicalSha256(value: unknown): string {
  return sha256Hex(utf8ToBytes(canonicalJson(value)));
}
