/** The Solana service fee, checked without the service's builders (port of core/verify/solana_fee.py): the
 * verifier derives the fee recipient's associated token account itself, writes its own expected fee instructions
 * and decodes every SPL transfer in the payload (program, accounts, amount), so a builder that pays a stranger
 * cannot vouch for itself. */
import { PINNED } from "../generated/pinned.js";
import { type Obj, type StepContext, Malformed, get, isObj } from "./common.js";
import { strictB64 } from "./solana.js";
import { type Ix, b58, concat, ix, meta, mintOf, tokenProgram, u64 } from "./solana.js";
import { findProgramAddress, solanaKey } from "./solana_keys.js";

const SPL_TRANSFER_TAG = 3; // Transfer: u64 amount; accounts source, destination, authority
const SPL_TRANSFER_CHECKED_TAG = 12; // TransferChecked: u64 amount, u8 decimals; source, mint, destination, owner

/** `owner`'s associated token account for the asset's mint, or null when `owner` is not a Solana address. */
export function tokenAccountOf(owner: unknown, assetKey: string): string | null {
  let key: Uint8Array;
  try {
    if (typeof owner !== "string") return null;
    key = solanaKey(owner);
  } catch {
    return null;
  }
  const seeds = [key, solanaKey(tokenProgram(assetKey)), solanaKey(mintOf(assetKey))];
  return b58(findProgramAddress(seeds, solanaKey(PINNED.constants.ATA_PROGRAM)));
}

/** The fee part as the verifier expects it: the recipient's token account created idempotently (the caller pays
 * its rent), then `TransferChecked` of `amount` from the caller's own token account to it. */
export function expectedFeeInstructions(caller: string, recipient: string, assetKey: string, amount: bigint): Ix[] {
  const source = tokenAccountOf(caller, assetKey);
  const destination = tokenAccountOf(recipient, assetKey);
  if (source === null || destination === null) return []; // refused by checkFeeTransfers; nothing can match
  const program = tokenProgram(assetKey);
  const mint = mintOf(assetKey);
  const k = PINNED.constants;
  return [
    ix(k.ATA_PROGRAM, Uint8Array.of(1), [
      meta(caller, true, true),
      meta(destination, false, true),
      meta(recipient, false, false),
      meta(mint, false, false),
      meta(k.SYSTEM_PROGRAM, false, false),
      meta(program, false, false),
    ]),
    ix(program, concat(Uint8Array.of(SPL_TRANSFER_CHECKED_TAG), u64(amount), Uint8Array.of(PINNED.assets[assetKey]!.decimals)), [
      meta(source, false, true),
      meta(mint, false, false),
      meta(destination, false, true),
      meta(caller, true, false),
    ]),
  ];
}

interface TokenTransfer {
  program: string;
  source: string;
  mint: string | null; // TransferChecked only
  destination: string;
  authority: string;
  amount: bigint; // -1 for a malformed transfer
  decimals: number | null; // TransferChecked only
}

/** Python's iteration of `x or []`. */
function iterate(x: unknown): unknown[] {
  if (Array.isArray(x)) return x;
  if (typeof x === "string") return [...x];
  if (isObj(x)) return Object.keys(x);
  if (x === null || x === undefined || x === false || x === 0) return [];
  throw new Malformed("object is not iterable");
}

/** An SPL Token / Token-2022 `Transfer` or `TransferChecked` decoded from the instruction itself; null for any
 * other instruction. A malformed transfer (short data or accounts) decodes with amount -1. */
export function decodeTokenTransfer(one: Obj): TokenTransfer | null {
  const program = get(one, "programId");
  const k = PINNED.constants;
  if (program !== k.SPL_TOKEN_PROGRAM && program !== k.TOKEN_2022_PROGRAM) return null;
  let data: Uint8Array;
  try {
    data = strictB64(get(one, "data", ""));
  } catch {
    return null;
  }
  if (!data.length || (data[0] !== SPL_TRANSFER_TAG && data[0] !== SPL_TRANSFER_CHECKED_TAG)) return null;
  const raw = iterate(get(one, "keys")).map((m) => (isObj(m) ? get(m, "pubkey") : null));
  const keys = raw.filter((m): m is string => typeof m === "string");
  const checked = data[0] === SPL_TRANSFER_CHECKED_TAG;
  const [nKeys, nData] = checked ? [4, 10] : [3, 9];
  if (raw.length < nKeys || keys.length !== raw.length || data.length !== nData) {
    return { program: String(program), source: "", mint: null, destination: "", authority: "", amount: -1n, decimals: null };
  }
  const amount = Buffer.from(data).readBigUInt64LE(1);
  if (checked) return { program: String(program), source: keys[0]!, mint: keys[1]!, destination: keys[2]!, authority: keys[3]!, amount, decimals: data[9]! };
  return { program: String(program), source: keys[0]!, mint: null, destination: keys[1]!, authority: keys[2]!, amount, decimals: null };
}

/** Every SPL transfer in the payload is the fee: from your own token account of the spent asset, to the fee
 * recipient's token account (the one you pinned, else the one the safety receipt names), and together they pay
 * exactly floor(input / 10000) on the fee step and nothing elsewhere. */
export function checkFeeTransfers(x: StepContext, action: Obj, ixs: unknown[], assetKey: string): void {
  const { c } = x;
  const want = x.step.feeStep ? x.inputBase / 10_000n : 0n;
  const program = tokenProgram(assetKey);
  const mint = mintOf(assetKey);
  const decimals = PINNED.assets[assetKey]!.decimals;
  const own = tokenAccountOf(x.caller, assetKey);
  const feeAccount = x.feeRecipient ? tokenAccountOf(x.feeRecipient, assetKey) : null;
  if (want && feeAccount === null) c.fail("fee_recipient_mismatch", `the fee recipient ${JSON.stringify(x.feeRecipient)} is not a Solana address`);
  const stated = get(action, "feeRecipientTokenAccount");
  c.expect(stated === (want ? feeAccount : null), "fee_recipient_mismatch", `feeRecipientTokenAccount ${String(stated)} is not the fee recipient's token account ${String(feeAccount)}`);
  let paid = 0n;
  ixs.forEach((one, i) => {
    if (!isObj(one)) throw new Malformed("an instruction is not an object");
    const t = decodeTokenTransfer(one);
    if (t === null) return;
    const where = `instruction ${i}`;
    if (!c.expect(t.amount >= 0n, "instruction_not_allowed", `${where}: a malformed SPL transfer`)) return;
    c.expect(t.program === program && (t.mint === null || t.mint === mint) && (t.decimals === null || t.decimals === decimals), "token_mismatch", `${where}: the transfer moves another token than ${assetKey}`);
    c.expect(t.source === own && t.authority === x.caller, "token_owner_mismatch", `${where}: the transfer must spend from your own ${assetKey} token account`);
    c.expect(want > 0n && t.destination === feeAccount, "fee_recipient_mismatch", `${where}: the transfer pays ${t.destination}, not the fee recipient's token account ${String(feeAccount)}`);
    paid += t.amount;
  });
  c.expect(paid === want, "service_fee_mismatch", `fee paid ${paid}, expected ${want}`);
}
