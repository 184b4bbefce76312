/** Base units are bigint: a decimal string becomes a bigint, and a number never carries an amount. */
import { ResponseInvalid } from "./errors.js";

const DECIMAL = /^(0|[1-9][0-9]*)$/;

/** A base-unit amount from its wire form, a non-negative decimal string; anything else is refused. */
export function baseUnits(text: unknown, what = "amount"): bigint {
  if (typeof text !== "string" || !DECIMAL.test(text)) {
    throw new ResponseInvalid(what, [`${what} must be a decimal string of base units, not ${typeof text}`]);
  }
  return BigInt(text);
}

/** A base-unit amount to its wire form. Only a bigint is accepted: a JavaScript number cannot carry one exactly. */
export function toDecimal(amount: bigint, what = "amount"): string {
  if (typeof amount !== "bigint") throw new TypeError(`${what} must be a bigint of base units`);
  if (amount < 0n) throw new RangeError(`${what} must not be negative`);
  return amount.toString(10);
}
