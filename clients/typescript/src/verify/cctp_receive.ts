/** The CCTP v2 destination mints (ports of core/verify/cctp_receive.py, the EVM `receiveMessage`, and of
 * core/actions/cctp_solana_receive_check.py, the Solana `receive_message`): an action that spends nothing, whose
 * attested message must carry the route step's burn to your own wallet. Same codes as the Python verifier. */
import { type Hex } from "viem";
import { PINNED } from "../generated/pinned.js";
import type { PinnedRoute, PinnedStep } from "../pinned-types.js";
import {
  ATTESTATION_SIGNATURE_LENGTH,
  CCTP_V2_VERSION,
  CctpMessageError,
  MessageRefused,
  ZERO32_HEX,
  evmB32,
  parseCctpMessage,
  solanaB32,
  sourceChecks,
} from "./cctp_message.js";
import { type Checker, type Obj, Malformed, chainOf, checkTiming, get, isInt, isObj, isoToUnix, item, pyInt, sameAddress, strictEq } from "./common.js";
import { type Call, type Deployments, decodeCall } from "./evm.js";
import { actionSha256, allowlists, hexBytes, payloadSha256, rawPayloadRows } from "./payloads.js";
import { type Ix, b58, concat, createAtaIdempotent, ix, meta, mintOf, sameJson, strictB64 } from "./solana.js";
import { associatedTokenAddress, findProgramAddress, solanaKey } from "./solana_keys.js";
import { sha256 } from "@noble/hashes/sha2";

const k = () => PINNED.constants;

export function isReceive(action: Obj, receipt: Obj): boolean {
  const a = get(receipt, "action");
  const kind = isObj(a) ? a["kind"] : undefined;
  const kinds = get(action, "kinds");
  return kind === k().RECEIVE_KIND || (Array.isArray(kinds) && kinds.length === 1 && kinds[0] === k().RECEIVE_KIND) || get(action, "phase") === k().RECEIVE_PHASE;
}

export function isSolanaReceive(action: Obj): boolean {
  const kinds = get(action, "kinds");
  return get(action, "phase") === k().SOLANA_RECEIVE_PHASE || (Array.isArray(kinds) && kinds.includes(k().SOLANA_RECEIVE_KIND));
}

/** Python `==` between a JSON value and an integer (a boolean counts as 0 / 1). */
function pyEqInt(x: unknown, n: number): boolean {
  if (typeof x === "boolean") return Number(x) === n;
  return typeof x === "number" && x === n;
}

export interface ReceiveArgs {
  c: Checker;
  bundle: Obj;
  action: Obj;
  receipt: Obj;
  route: PinnedRoute;
  routeKey: string;
  step: PinnedStep;
  wallets: Record<string, string>;
  nowUnix: number;
  approval: Obj | null;
  deps: Deployments;
}

/** `receiveMessage(message, attestation)` on the step's EVM destination, against your wallets and the pins. */
export function verifyReceive(a: ReceiveArgs): void {
  const { c, bundle, action, receipt, route, step, wallets, nowUnix, approval, deps } = a;
  const src = step.source;
  const dst = step.target;
  const chain = chainOf(dst);
  if (!c.expect(step.provider === "circle_cctp" && PINNED.chains[chain]!.family === "evm", "receive_step_invalid", `step ${step.index} has no CCTP mint on an EVM chain`)) return;
  const dep = deps[chain]!;
  const domain = PINNED.chains[chain]!.cctpDomain;
  const caller = wallets[chain]!;
  const transmitter = dep.messageTransmitterV2 ?? null;
  if (!c.expect(transmitter !== null, "protocol_contract_not_pinned", `no pinned MessageTransmitterV2 on ${chain}`)) return;
  c.expect(get(action, "version") === k().EVM_ACTION_VERSION && get(action, "family") === "evm", "action_version_unsupported", "unknown unsigned action version or family");
  c.expect(strictEq(get(action, "chainId"), dep.chainId), "chain_id_mismatch", "unsigned_action.chainId differs");
  c.expect(sameAddress(get(action, "sender"), caller) && sameAddress(get(action, "recipient"), caller), "sender_mismatch", "the mint's sender and recipient must be your wallet on the destination chain");
  const signers = get(action, "requiredSigners");
  c.expect(Array.isArray(signers) && signers.length === 1 && sameAddress(signers[0], caller), "signers_mismatch", "requiredSigners must be exactly your wallet");
  c.expect(
    get(action, "inputAmount") === "0" && get(action, "routeFee") === "0" && get(action, "netInputAmount") === "0" && get(action, "feeRecipient") === null,
    "receive_spends",
    "a destination mint spends nothing and pays no fee",
  );
  const deadline = checkTiming(c, bundle, action, nowUnix);
  if (approval !== null) checkBinding(c, bundle, approval);
  // ---- the one transaction
  const txs = get(action, "transactions");
  if (!c.expect(Array.isArray(txs) && txs.length === 1 && isObj(txs[0]), "unexpected_transaction_sequence", "a destination mint is exactly one transaction")) return;
  const tx = (txs as Obj[])[0]!;
  c.expect(strictEq(get(tx, "chainId"), dep.chainId), "chain_id_mismatch", `transaction 0: chainId must be ${dep.chainId}`);
  c.expect(sameAddress(get(tx, "from"), caller), "sender_mismatch", "transaction 0: from is not your wallet");
  c.expect(sameAddress(get(tx, "to"), transmitter), "target_not_allowed", `transaction 0: target ${String(get(tx, "to"))} is not the pinned MessageTransmitterV2 ${String(transmitter)}`);
  c.expect(get(tx, "value") === "0", "native_value_not_allowed", 'transaction 0: value must be "0"');
  let call: Call | null;
  try {
    const text = get(tx, "data", "0x");
    const raw = typeof text === "string" ? text : String(text);
    hexBytes(raw); // Python's bytes.fromhex: the text after the first two characters is hex
    call = decodeCall(`0x${raw.slice(2)}` as Hex);
  } catch (e) {
    c.fail("calldata_undecodable", `transaction 0: ${e instanceof Error ? e.message.split("\n")[0] : String(e)}`);
    return;
  }
  if (!c.expect(call !== null && call.name === "receiveMessage", "selector_not_allowed", "transaction 0: expected MessageTransmitterV2.receiveMessage")) return;
  const message = hexBytes(call!.args[0]);
  const attestation = hexBytes(call!.args[1]);
  let m;
  try {
    m = parseCctpMessage(message);
  } catch (e) {
    if (!(e instanceof CctpMessageError)) throw e;
    c.fail("cctp_message_malformed", `transaction 0: ${e.message}`);
    return;
  }
  const burn = m.burn;
  c.expect(m.version === CCTP_V2_VERSION && burn.version === CCTP_V2_VERSION, "cctp_message_version_unsupported", "not a CCTP v2 burn message");
  c.expect(m.destinationDomain === domain, "destination_mismatch", `the message is for domain ${m.destinationDomain}, ${chain} is ${String(domain)}`);
  const srcChain = chainOf(src);
  c.expect(m.sourceDomain === PINNED.chains[srcChain]!.cctpDomain, "source_domain_mismatch", `the message comes from domain ${m.sourceDomain}, not ${srcChain}`);
  const mine = evmB32(caller);
  c.expect(burn.mintRecipient === mine, "recipient_mismatch", "the message mints to someone else than your wallet");
  c.expect(m.destinationCaller === ZERO32_HEX || m.destinationCaller === mine, "destination_caller_not_allowed", "destinationCaller must be zero or your wallet");
  const messenger = dep.contracts["circle_cctp"];
  if (messenger !== undefined) c.expect(m.recipient === evmB32(messenger), "message_handler_mismatch", "the message is not addressed to the destination's TokenMessengerV2");
  const srcWallet = wallets[srcChain]!;
  if (PINNED.chains[srcChain]!.family === "evm") {
    const key = PINNED.assets[src]?.address === null ? "WETH" : src.split(":")[1]!;
    const token = deps[srcChain]!.tokens[key];
    if (token === undefined) throw new Malformed(`no ${key} pinned`);
    c.expect(burn.burnToken === evmB32(token), "token_mismatch", "the burned token is not the step's USDC");
    c.expect(burn.messageSender === evmB32(srcWallet), "depositor_mismatch", "the burn was not made by your source wallet");
  } else {
    c.expect(burn.burnToken === solanaB32(PINNED.assets[src]?.address ?? ""), "token_mismatch", "the burned token is not the step's USDC");
    let sender = "";
    try {
      sender = solanaB32(srcWallet);
    } catch {
      sender = "";
    }
    c.expect(sender !== "" && burn.messageSender === sender, "depositor_mismatch", "the burn was not made by your source wallet");
  }
  const { amount, maxFee, feeExecuted } = burn;
  c.expect(0n <= feeExecuted && feeExecuted <= maxFee && maxFee < amount, "max_fee_too_high", "feeExecuted <= maxFee < amount must hold");
  c.expect(attestation.length > 0 && attestation.length % ATTESTATION_SIGNATURE_LENGTH === 0, "attestation_malformed", "the attestation must be one or more 65-byte signatures");
  const expected = amount - feeExecuted;
  const minimum = amount - maxFee;
  c.expect(get(action, "expectedOutput") === String(expected) && get(action, "minimumOutput") === String(minimum), "receive_amount_mismatch", "expectedOutput / minimumOutput differ from the message's amount and fees");
  if (approval !== null && route.steps.length === 1) {
    c.expect(minimum >= pyInt(item(approval, "minimum_output_base")), "minimum_output_below_bound", "amount - maxFee is below your approved minimum output");
  }
  // ---- the receipt
  c.expect(get(bundle, "version") === k().BUNDLE_VERSION, "bundle_version_unsupported", "unknown bundle version");
  c.expect(get(receipt, "schema") === k().RECEIPT_SCHEMA && strictEq(get(receipt, "schema_version"), 1), "receipt_schema_unsupported", "unknown safety receipt schema");
  const kinds = get(action, "kinds");
  c.expect(
    get(get(receipt, "action", {}), "kind") === k().RECEIVE_KIND && Array.isArray(kinds) && kinds.length === 1 && kinds[0] === k().RECEIVE_KIND,
    "receipt_action_mismatch",
    "the receipt and the action must both name cctp_receive_message",
  );
  const net = get(receipt, "network", {});
  c.expect(
    get(net, "source_chain") === chain && chain === get(net, "destination_chain") && strictEq(get(net, "source_chain_id"), dep.chainId),
    "receipt_network_mismatch",
    "the receipt names other chains",
  );
  const spend = get(receipt, "spend", {});
  c.expect(get(spend, "exact_amount_base") === "0" && get(spend, "maximum_amount_base") === "0", "receipt_spend_mismatch", "the receipt must state a zero spend");
  c.expect(get(get(receipt, "approval", {}), "required") === false, "receipt_approval_mismatch", "no approval is due");
  const cap = get(receipt, "native_value_cap", {});
  c.expect(get(cap, "maximum_base") === "0" && sameJson(get(cap, "per_transaction_base"), ["0"]), "receipt_native_value_mismatch", "the receipt's native value cap must be zero");
  const fee = get(receipt, "service_fee", {});
  c.expect(get(fee, "exact_amount_base") === "0" && pyEqInt(get(fee, "bps"), 0) && get(fee, "recipient") === null, "receipt_fee_mismatch", "no service fee is due on a destination mint");
  const receive = get(receipt, "receive", {});
  c.expect(
    get(receive, "token") === dst && get(receive, "expected_amount_base") === String(expected) && get(receive, "minimum_amount_base") === String(minimum),
    "receipt_receive_mismatch",
    "the receipt's receive statement differs from the message",
  );
  const timing = get(receipt, "timing", {});
  c.expect(
    deadline !== null && strictEq(get(timing, "action_deadline_unix"), deadline) && get(timing, "bundle_expires_at") === get(bundle, "expires_at"),
    "receipt_timing_mismatch",
    "the receipt's timing differs from the action",
  );
}

function checkBinding(c: Checker, bundle: Obj, approval: Obj): void {
  const qb = get(bundle, "quote_binding", {});
  c.expect(
    isObj(qb) && get(qb, "quote_id") === get(approval, "quote_id") && get(qb, "quote_fingerprint") === get(approval, "quote_fingerprint"),
    "quote_binding_mismatch",
    "the bundle is not bound to your approved quote",
  );
}

// ---- the mint on Solana --------------------------------------------------------------------------------------

const FEE_ACCOUNT_INDEX = 14; // fee_recipient_token_account in receive_message's account list
const SOLANA_DOMAIN = 5;
const enc = (t: string): Uint8Array => new TextEncoder().encode(t);
const RECEIVE_MESSAGE_DISCRIMINATOR = sha256(enc("global:receive_message")).slice(0, 8);

function u32le(n: number): Uint8Array {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n);
  return b;
}

/** (message, attestation) of a `receive_message` instruction's data, or null if it is not one exactly. */
export function decodeReceiveMessageData(data: Uint8Array): [Uint8Array, Uint8Array] | null {
  if (data.length < 16 || !RECEIVE_MESSAGE_DISCRIMINATOR.every((b, i) => data[i] === b)) return null;
  const view = Buffer.from(data);
  const n = view.readUInt32LE(8);
  if (data.length < 16 + n) return null;
  const message = data.slice(12, 12 + n);
  const kLen = view.readUInt32LE(12 + n);
  const attestation = data.slice(16 + n, 16 + n + kLen);
  if (data.length !== 16 + n + kLen) return null;
  return [message, attestation];
}

/** MessageTransmitterV2 `receive_message` with Circle's PDAs (core/actions/cctp_solana_receive.py). */
function receiveMessageIx(payer: string, message: Uint8Array, attestation: Uint8Array, feeAccount: string): Ix {
  const m = parseCctpMessage(message);
  const mt = solanaKey(k().CCTP_MESSAGE_TRANSMITTER_V2);
  const tmm = solanaKey(k().CCTP_TOKEN_MESSENGER_MINTER_V2);
  const pda = (seeds: Uint8Array[], program: Uint8Array): string => b58(findProgramAddress(seeds, program));
  const domain = enc(String(m.sourceDomain));
  const usdc = solanaKey(mintOf("solana:USDC"));
  const keys = [
    meta(payer, true, true),
    meta(payer, true, false),
    meta(pda([enc("message_transmitter_authority"), tmm], mt), false, false),
    meta(pda([enc("message_transmitter")], mt), false, false),
    meta(pda([enc("used_nonce"), message.slice(12, 44)], mt), false, true),
    meta(k().CCTP_TOKEN_MESSENGER_MINTER_V2, false, false),
    meta(k().SYSTEM_PROGRAM, false, false),
    meta(pda([enc("__event_authority")], mt), false, false),
    meta(k().CCTP_MESSAGE_TRANSMITTER_V2, false, false),
    meta(pda([enc("token_messenger")], tmm), false, false),
    meta(pda([enc("remote_token_messenger"), domain], tmm), false, false),
    meta(pda([enc("token_minter")], tmm), false, true),
    meta(pda([enc("local_token"), usdc], tmm), false, true),
    meta(pda([enc("token_pair"), domain, hexBytes(m.burn.burnToken)], tmm), false, false),
    meta(feeAccount, false, true),
    meta(b58(associatedTokenAddress(payer, "solana:USDC")), false, true),
    meta(pda([enc("custody"), usdc], tmm), false, true),
    meta(k().SPL_TOKEN_PROGRAM, false, false),
    meta(pda([enc("__event_authority")], tmm), false, false),
    meta(k().CCTP_TOKEN_MESSENGER_MINTER_V2, false, false),
  ];
  const data = concat(RECEIVE_MESSAGE_DISCRIMINATOR, u32le(message.length), message, u32le(attestation.length), attestation);
  return ix(k().CCTP_MESSAGE_TRANSMITTER_V2, data, keys);
}

/** check_solana_receive_message: the message may be minted by `caller` on Solana; else MessageRefused. */
function checkSolanaReceiveMessage(caller: string, message: Uint8Array, attestation: Uint8Array): void {
  let m;
  try {
    m = parseCctpMessage(message);
  } catch (e) {
    if (e instanceof CctpMessageError) throw new MessageRefused("cctp_message_malformed", e.message);
    throw e;
  }
  const burn = m.burn;
  const callerB32 = solanaB32(caller);
  const recipientAta = `0x${Buffer.from(associatedTokenAddress(caller, "solana:USDC")).toString("hex")}`;
  const checks: [boolean, string, string][] = [
    [m.version === CCTP_V2_VERSION && burn.version === CCTP_V2_VERSION, "cctp_message_version_unsupported", `versions ${m.version}/${burn.version}, expected 1/1`],
    [m.destinationDomain === SOLANA_DOMAIN && PINNED.chains["solana"]!.cctpDomain === SOLANA_DOMAIN, "cctp_message_destination_mismatch", `the message is for domain ${m.destinationDomain}, Solana is ${SOLANA_DOMAIN}`],
    [m.recipient === solanaB32(k().CCTP_TOKEN_MESSENGER_MINTER_V2), "cctp_message_handler_mismatch", "the message is not addressed to TokenMessengerMinterV2"],
    [burn.mintRecipient === recipientAta, "cctp_message_recipient_mismatch", "the message mints to another account than your USDC token account on Solana"],
    [m.destinationCaller === ZERO32_HEX || m.destinationCaller === callerB32, "cctp_message_destination_caller_mismatch", "only another address may relay this message"],
    [0n <= burn.feeExecuted && burn.feeExecuted <= burn.maxFee && burn.maxFee < burn.amount, "cctp_message_fee_invalid", "feeExecuted <= maxFee < amount does not hold"],
    [attestation.length > 0 && attestation.length % ATTESTATION_SIGNATURE_LENGTH === 0, "cctp_attestation_malformed", "the attestation must be one or more 65-byte signatures"],
  ];
  for (const [ok, code, detail] of checks) if (!ok) throw new MessageRefused(code, detail);
}

function tsOrNull(text: unknown): number | null {
  try {
    return isoToUnix(text);
  } catch {
    return null;
  }
}

/** The CCTP mint on Solana: everything re-derived from the bundle's own message and attestation and your
 * wallets; each rule broken is reported as an error finding. */
export function checkSolanaReceive(a: ReceiveArgs): void {
  const { c, bundle, action, receipt, route, routeKey, step, wallets, nowUnix, approval, deps } = a;
  const caller = wallets["solana"];
  if (!c.expect(step.provider === "circle_cctp" && chainOf(step.target) === "solana" && caller !== undefined, "step_mismatch", "this bundle is a CCTP mint on Solana: the step must be a CCTP step to Solana and you need a Solana wallet")) return;
  const me = caller!;
  // ---- hashes and custody flags
  c.expect(get(bundle, "payload_sha256") === payloadSha256(bundle), "payload_sha256_mismatch", "payload hash");
  const binding = get(receipt, "payload_binding", {});
  c.expect(get(binding, "action_sha256") === actionSha256(action), "action_sha256_mismatch", "action hash");
  c.expect(sameJson(get(binding, "raw_payloads"), rawPayloadRows(action)), "raw_payload_mismatch", "payload rows");
  const [targets, selectors] = allowlists(action);
  c.expect(sameJson(get(receipt, "target_or_program_allowlist"), targets), "allowlist_mismatch", "the receipt's program allowlist differs from the instructions");
  c.expect(sameJson(get(receipt, "selector_or_instruction_allowlist"), selectors), "allowlist_mismatch", "selectors");
  const flags: [Obj, string][] = [...["server_signing", "server_submission", "signed", "submitted"].map((f): [Obj, string] => [bundle, f]), [action, "signed"], [action, "submitted"]];
  for (const [obj, flag] of flags) c.expect(get(obj, flag) === false, "custody_flag_not_false", `${flag} must be false`);
  // ---- shape
  c.expect(
    get(bundle, "version") === k().BUNDLE_VERSION && get(action, "version") === k().SOLANA_ACTION_VERSION && get(action, "family") === "solana" && get(action, "chainId") === "mainnet-beta",
    "bundle_version_unsupported",
    "unknown bundle or action version",
  );
  c.expect(
    get(bundle, "route") === routeKey && pyEqInt(get(bundle, "step_index"), step.index) && pyEqInt(get(action, "step_index"), step.index),
    "route_mismatch",
    "the bundle is for another route or step",
  );
  c.expect(get(action, "phase") === k().SOLANA_RECEIVE_PHASE && sameJson(get(action, "kinds"), k().SOLANA_RECEIVE_KINDS), "receipt_action_mismatch", "the action must be exactly: create your USDC account, receive_message");
  c.expect(
    get(action, "recentBlockhash") === null && get(action, "feePayer") === me && sameJson(get(action, "requiredSigners"), [me]),
    "signers_mismatch",
    "your wallet alone signs and pays; no blockhash is set by the service",
  );
  // ---- the instructions, re-derived
  const ixs = get(action, "instructions");
  if (!c.expect(Array.isArray(ixs) && ixs.length === 2 && ixs.every(isObj), "instructions_missing", "exactly two instructions are expected")) return;
  const receive = (ixs as Obj[])[1]!;
  let decoded: [Uint8Array, Uint8Array] | null = null;
  let feeAccount = "";
  try {
    decoded = decodeReceiveMessageData(strictB64(get(receive, "data", "")));
    // Python: Pubkey.from_string(keys[14]["pubkey"]) with keys = receive.get("keys") or []
    const keys = get(receive, "keys");
    if (!Array.isArray(keys) || keys.length <= FEE_ACCOUNT_INDEX) throw new Malformed("no fee recipient account");
    const pubkey = item(keys[FEE_ACCOUNT_INDEX], "pubkey");
    if (typeof pubkey !== "string") throw new Malformed("a public key is a string");
    feeAccount = b58(solanaKey(pubkey));
  } catch {
    decoded = null;
    feeAccount = "";
  }
  if (!c.expect(get(receive, "programId") === k().CCTP_MESSAGE_TRANSMITTER_V2 && decoded !== null && feeAccount !== "", "instruction_not_allowed", "the second instruction must be MessageTransmitterV2 receive_message")) return;
  const [message, attestation] = decoded!;
  let expected: Ix[];
  let m;
  try {
    checkSolanaReceiveMessage(me, message, attestation);
    expected = [createAtaIdempotent(me, me, "solana:USDC"), receiveMessageIx(me, message, attestation, feeAccount)];
    m = parseCctpMessage(message);
    sourceChecks(step, wallets, m, deps);
  } catch (e) {
    if (!(e instanceof MessageRefused)) throw e;
    c.fail(e.code, e.message);
    return;
  }
  c.expect(sameJson(ixs, expected), "instruction_mismatch", "the instructions differ from those derived from the message");
  c.expect(
    get(action, "sender") === me && get(action, "recipient") === me && get(action, "recipientTokenAccount") === expected[1]!.keys[15]!.pubkey,
    "recipient_mismatch",
    "the action must name your Solana wallet as sender and recipient, and its own USDC account",
  );
  c.expect(feeAccount !== expected[1]!.keys[15]!.pubkey, "fee_account_is_your_token_account", "the CCTP fee recipient account must not be your own token account");
  // ---- amounts and times
  const burn = m.burn;
  const want = burn.amount - burn.feeExecuted;
  const minimum = burn.amount - burn.maxFee;
  c.expect(
    get(action, "inputAmount") === "0" && get(action, "netInputAmount") === "0" && get(action, "expectedOutput") === String(want) && get(action, "minimumOutput") === String(minimum),
    "amount_mismatch",
    "the mint spends nothing and receives amount - feeExecuted (at least amount - maxFee)",
  );
  c.expect(
    get(action, "routeFee") === "0" && get(action, "feeRecipient") === null && get(action, "feeRecipientTokenAccount") === null,
    "receive_spends",
    "a destination mint spends nothing and pays no fee",
  );
  const spend = get(receipt, "spend", {});
  const recv = get(receipt, "receive", {});
  c.expect(
    get(spend, "exact_amount_base") === "0" &&
      get(spend, "maximum_amount_base") === "0" &&
      get(recv, "expected_amount_base") === String(want) &&
      get(recv, "minimum_amount_base") === String(minimum) &&
      get(get(receipt, "approval", {}), "required") === false &&
      get(get(receipt, "service_fee", {}), "exact_amount_base") === "0",
    "receipt_mismatch",
    "the receipt must state a zero spend, no approval, no fee and the message's amounts",
  );
  if (approval !== null && route.steps.length === 1) {
    c.expect(minimum >= pyInt(item(approval, "minimum_output_base")), "minimum_output_below_bound", "amount - maxFee is below your approved minimum output");
  }
  const prepared = tsOrNull(get(bundle, "prepared_at"));
  const expires = tsOrNull(get(bundle, "expires_at"));
  const deadline = get(action, "deadline");
  const deadlineInt = isInt(deadline) ? deadline : typeof deadline === "boolean" ? Number(deadline) : null;
  if (!c.expect(prepared !== null && expires !== null && deadlineInt !== null, "timing_malformed", "prepared_at / expires_at / deadline are malformed")) return;
  c.expect(expires! - prepared! === k().BUNDLE_TTL_SECONDS, "bundle_lifetime_mismatch", "a bundle lives 180 s");
  c.expect(nowUnix < expires!, "bundle_expired", "the bundle has expired");
  c.expect(deadlineInt! <= prepared! + k().ONCHAIN_DEADLINE_SECONDS && deadlineInt! <= nowUnix + k().MAX_DEADLINE_WINDOW_SECONDS, "deadline_too_late", "the deadline is later than allowed");
}
