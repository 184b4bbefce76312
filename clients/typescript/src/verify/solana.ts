/** The Solana payload checks (port of core/verify/solana.py): the CCTP burn (fee payer, signers, the fee
 * instructions and deposit_for_burn re-derived from your inputs). The Orca / Raydium swaps, which the Python
 * verifier re-derives from the pool state, are not ported yet and are refused (`verifier_kind_not_ported`). */
import { canonicalJson } from "../canonical.js";
import { PINNED } from "../generated/pinned.js";
import { type Obj, type StepContext, Malformed, get } from "./common.js";
import { DEPOSIT_FOR_BURN_HEX, NotPorted, b64Bytes, toHex } from "./payloads.js";
import { associatedTokenAddress, findProgramAddress, solanaKey } from "./solana_keys.js";
import { base58 } from "@scure/base";

interface Meta {
  pubkey: string;
  isSigner: boolean;
  isWritable: boolean;
}
interface Ix {
  programId: string;
  keys: Meta[];
  data: string;
  dataEncoding: "base64";
}

const k = () => PINNED.constants;
const b58 = (bytes: Uint8Array): string => base58.encode(bytes);
const meta = (pubkey: string, isSigner: boolean, isWritable: boolean): Meta => ({ pubkey, isSigner, isWritable });
const ix = (programId: string, data: Uint8Array, keys: Meta[]): Ix => ({ programId, keys, data: Buffer.from(data).toString("base64"), dataEncoding: "base64" });

function mintOf(assetKey: string): string {
  const a = PINNED.assets[assetKey];
  const m = a?.address ?? a?.wrappedAddress;
  if (!m) throw new Malformed(`no mint for ${assetKey}`);
  return m;
}
const tokenProgram = (assetKey: string): string => PINNED.assets[assetKey]?.tokenProgram ?? k().SPL_TOKEN_PROGRAM;
const ata = (owner: string, assetKey: string): string => b58(associatedTokenAddress(owner, assetKey));

function createAtaIdempotent(payer: string, owner: string, assetKey: string): Ix {
  return ix(k().ATA_PROGRAM, Uint8Array.of(1), [
    meta(payer, true, true),
    meta(ata(owner, assetKey), false, true),
    meta(owner, false, false),
    meta(mintOf(assetKey), false, false),
    meta(k().SYSTEM_PROGRAM, false, false),
    meta(tokenProgram(assetKey), false, false),
  ]);
}

function u64(n: bigint): Uint8Array {
  const b = Buffer.alloc(8);
  b.writeBigUInt64LE(n);
  return b;
}
function u32(n: number): Uint8Array {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n);
  return b;
}
const concat = (...parts: Uint8Array[]): Uint8Array => new Uint8Array(Buffer.concat(parts));

function transferChecked(owner: string, recipientOwner: string, assetKey: string, amount: bigint): Ix {
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

const sameJson = (a: unknown, b: unknown): boolean => canonicalJson(a) === canonicalJson(b);

export function checkSolana(x: StepContext, action: Obj): void {
  const { c, step } = x;
  if (step.provider === "orca_whirlpool" || step.provider === "raydium_clmm") {
    throw new NotPorted(`the ${step.provider} swap is not checked by this port yet`);
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
    expected.push(createAtaIdempotent(x.caller, x.feeRecipient, src));
    expected.push(transferChecked(x.caller, x.feeRecipient, src, x.fee));
  }
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
