/** The receipt's `bounds` block (port of core/verify/bounds.py): consistent with what the action shows, and
 * refused when modelled unless the caller explicitly accepts modelled bounds. */
import type { PinnedStep } from "../pinned-types.js";
import { type Checker, type Obj, get, isObj } from "./common.js";

export const REFUSAL_CODE = "bounds_modelled_not_live";
export const ACCEPTED_CODE = "bounds_modelled_accepted";
const BASIS_LIVE = "live";
const BASIS_MODELLED = "modelled";
const SNAPSHOT_SOURCE = "embedded_snapshot";
const SNAPSHOT_POOL_STATE = "snapshot";
const ACCEPT_HINT = "--accept-modelled-bounds / accept_modelled_bounds=True / acceptModelledBounds";

function boundsSentence(bounds: Obj): string {
  if (get(bounds, "basis") === BASIS_LIVE) return `bounds are from live market data as of ${String(get(bounds, "data_as_of"))}`;
  const parts = get(bounds, "modelled_parts");
  const named = Array.isArray(parts) && parts.length ? ` (${parts.map(String).join(", ")})` : "";
  const asOf = get(bounds, "snapshot_as_of");
  return `bounds are modelled from the embedded snapshot of ${typeof asOf === "string" && asOf ? asOf : "an unknown date"}, not live market data${named}`;
}

export function checkBounds(c: Checker, action: Obj, receipt: Obj, step: PinnedStep, acceptModelled: boolean): void {
  const bounds = get(receipt, "bounds");
  if (bounds === undefined || bounds === null) {
    modelled(c, { basis: BASIS_MODELLED, modelled_parts: ["unknown: the receipt has no bounds block"] }, acceptModelled);
    return;
  }
  const parts = isObj(bounds) ? get(bounds, "modelled_parts") : undefined;
  if (
    !isObj(bounds) ||
    (get(bounds, "basis") !== BASIS_LIVE && get(bounds, "basis") !== BASIS_MODELLED) ||
    !Array.isArray(parts) ||
    !parts.every((p) => typeof p === "string")
  ) {
    c.fail("bounds_provenance_malformed", "safety_receipt.bounds must state basis and modelled_parts");
    return;
  }
  const isModelled = get(bounds, "basis") === BASIS_MODELLED;
  const shown: string[] = [];
  if (get(action, "pool_state_source") === SNAPSHOT_POOL_STATE || "poolAccountsFromSnapshotState" in action) {
    shown.push(`solana_tick_arrays:${String(step.poolId)}`);
  }
  if (get(bounds, "market_source") === SNAPSHOT_SOURCE) shown.push("market:embedded_snapshot");
  c.expect(
    isModelled === parts.length > 0 &&
      !(shown.length > 0 && !isModelled) &&
      shown.filter((p) => p.startsWith("solana_tick_arrays:")).every((p) => parts.includes(p)) &&
      !(get(bounds, "live") === true && get(bounds, "market_source") === SNAPSHOT_SOURCE),
    "bounds_provenance_inconsistent",
    "safety_receipt.bounds contradicts the action (a snapshot source or snapshot pool state under a live " +
      "basis, or a basis that does not match its modelled_parts)",
  );
  if (isModelled) modelled(c, bounds, acceptModelled);
}

function modelled(c: Checker, bounds: Obj, acceptModelled: boolean): void {
  if (acceptModelled) {
    c.warn(ACCEPTED_CODE, `accepted as modelled (${ACCEPT_HINT}): ${boundsSentence(bounds)}`);
  } else {
    c.fail(
      REFUSAL_CODE,
      `${boundsSentence(bounds)}. A modelled minimum may be worse than the market justifies (the difference can be ` +
        `taken from you) or revert (the gas is lost). Refused; accept it explicitly only for tests and local chains (${ACCEPT_HINT})`,
    );
  }
}
