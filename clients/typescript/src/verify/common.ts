/** What every part of the verifier shares (port of core/verify/common.py): findings, the checker, strict
 * comparisons that behave as the Python ones, the bundle's timing and the per-step context. */
import { PINNED } from "../generated/pinned.js";
import type { PinnedRoute, PinnedStep } from "../pinned-types.js";

export type Severity = "error" | "warning";

export interface Finding {
  code: string;
  message: string;
  severity: Severity;
}

export class BundleRejected extends Error {
  readonly findings: Finding[];
  constructor(findings: Finding[]) {
    super(
      findings
        .filter((f) => f.severity === "error")
        .map((f) => `${f.code}: ${f.message}`)
        .join("; "),
    );
    this.findings = findings;
  }
}

/** Raised where Python raises KeyError / TypeError / ValueError: the bundle cannot be read. */
export class Malformed extends Error {}

export class Checker {
  readonly findings: Finding[] = [];
  fail(code: string, message: string): void {
    this.findings.push({ code, message, severity: "error" });
  }
  warn(code: string, message: string): void {
    this.findings.push({ code, message, severity: "warning" });
  }
  expect(ok: boolean, code: string, message: string): boolean {
    if (!ok) this.fail(code, message);
    return ok;
  }
}

const SECRET_WORDS = ["private", "secret", "seed", "mnemonic", "signature", "signed_transaction", "keypair"];
const CUSTODY_FLAGS = ["server_signing", "server_submission", "signed", "submitted"];

export type Obj = Record<string, unknown>;

export function isObj(x: unknown): x is Obj {
  return typeof x === "object" && x !== null && !Array.isArray(x);
}

/** Python's `d.get(key, default)`: reading a key of something that is not a dict cannot be done. */
export function get(o: unknown, key: string, fallback: unknown = null): unknown {
  if (!isObj(o)) throw new Malformed(`'${typeof o}' object has no attribute 'get'`);
  return Object.prototype.hasOwnProperty.call(o, key) ? o[key] : fallback;
}

/** Python's `d[key]`. */
export function item(o: unknown, key: string): unknown {
  if (!isObj(o)) throw new Malformed(`not subscriptable by '${key}'`);
  if (!Object.prototype.hasOwnProperty.call(o, key)) throw new Malformed(`missing key '${key}'`);
  return o[key];
}

export function scanFlags(value: unknown, path: string, c: Checker): void {
  if (isObj(value)) {
    for (const [k, v] of Object.entries(value)) {
      const lk = k.toLowerCase();
      if (CUSTODY_FLAGS.includes(lk) && v !== false) c.fail("custody_flag_not_false", `${path}.${k} must be false`);
      if (SECRET_WORDS.some((w) => lk.includes(w))) c.fail("secret_looking_field", `${path}.${k} looks like secret material`);
      scanFlags(v, `${path}.${k}`, c);
    }
  } else if (Array.isArray(value)) {
    value.forEach((v, i) => scanFlags(v, `${path}[${i}]`, c));
  }
}

/** An integer as the bundle carries it (a JSON integer, never a boolean). */
export function isInt(x: unknown): x is number {
  return typeof x === "number" && Number.isInteger(x);
}

export function strictEq(a: unknown, b: unknown): boolean {
  return typeof a === typeof b && a === b;
}

/** Python's `int(x)` for the values a bundle holds: an integer, or a decimal string (base units). */
export function pyInt(x: unknown): bigint {
  if (typeof x === "bigint") return x;
  if (typeof x === "boolean") return x ? 1n : 0n;
  if (typeof x === "number") {
    if (!Number.isFinite(x)) throw new Malformed("cannot convert to integer");
    return BigInt(Math.trunc(x));
  }
  if (typeof x === "string") {
    const t = x.trim();
    if (/^[+-]?\d+(_\d+)*$/.test(t)) return BigInt(t.replace(/_/g, ""));
    throw new Malformed(`invalid literal for int(): '${x.slice(0, 50)}'`);
  }
  throw new Malformed(`int() argument must be a string or a number, not '${x === null ? "NoneType" : typeof x}'`);
}

export function sameAddress(a: unknown, b: unknown): boolean {
  if (typeof a !== "string" || typeof b !== "string") return false;
  if (a.startsWith("0x") && b.startsWith("0x")) return a.toLowerCase() === b.toLowerCase();
  return a === b;
}

export function sameWallets(a: unknown, b: unknown): boolean {
  if (!isObj(a) || !isObj(b)) return false;
  const ka = Object.keys(a).sort();
  const kb = Object.keys(b).sort();
  if (ka.length !== kb.length || ka.some((k, i) => k !== kb[i])) return false;
  return ka.every((k) => a[k] === b[k] || sameAddress(a[k], b[k]));
}

export function isoToUnix(text: unknown): number {
  if (typeof text !== "string") throw new Malformed("a timestamp must be a string");
  const ms = Date.parse(text);
  if (Number.isNaN(ms)) throw new Malformed(`invalid isoformat string: '${text.slice(0, 40)}'`);
  return Math.trunc(ms / 1000);
}

/** Bundle lifetime and action deadline against your clock; the deadline, or null when unreadable. */
export function checkTiming(c: Checker, bundle: Obj, action: Obj, nowUnix: number): number | null {
  let prepared: number;
  let expires: number;
  let deadline: unknown;
  try {
    prepared = isoToUnix(item(bundle, "prepared_at"));
    expires = isoToUnix(item(bundle, "expires_at"));
    deadline = item(action, "deadline");
    if (!isInt(deadline)) throw new Malformed("deadline must be an integer");
  } catch (e) {
    if (!(e instanceof Malformed)) throw e;
    c.fail("timing_malformed", "prepared_at / expires_at / deadline are required");
    return null;
  }
  const k = PINNED.constants;
  c.expect(prepared <= nowUnix + k.CLOCK_SKEW_SECONDS, "prepared_in_future", "prepared_at is in the future");
  c.expect(expires - prepared <= k.BUNDLE_TTL_SECONDS, "bundle_ttl_too_long", "the bundle lives longer than 180 s");
  c.expect(nowUnix < expires, "bundle_expired", "the bundle has expired; prepare again");
  c.expect(
    deadline <= prepared + k.ONCHAIN_DEADLINE_SECONDS && deadline <= nowUnix + k.MAX_DEADLINE_WINDOW_SECONDS,
    "deadline_too_late",
    `deadline ${deadline} is later than allowed`,
  );
  c.expect(deadline > nowUnix, "deadline_passed", "the action deadline has passed");
  return deadline;
}

export interface StepContext {
  c: Checker;
  route: PinnedRoute;
  step: PinnedStep;
  caller: string;
  recipient: string;
  inputBase: bigint;
  fee: bigint;
  net: bigint;
  minOut: bigint;
  deadline: number;
  now: number;
  feeRecipient: string | null;
  eventSigner: string | null;
}

export function chainOf(assetKey: string): string {
  return assetKey.split(":")[0]!;
}

export function isNative(assetKey: string): boolean {
  const asset = PINNED.assets[assetKey];
  if (asset === undefined) throw new Malformed(`unknown asset ${assetKey}`);
  return asset.address === null;
}
