/** The bundle-level checks (port of core/verify/bundle.py): hashes, intent, route and step, amounts and bounds,
 * timing, the fee recipient and the safety receipt; then the chain family's payload checks (evm.ts, solana.ts) or
 * a CCTP destination mint (cctp_receive.ts). A kind this port does not cover is refused with
 * `verifier_kind_not_ported`. */
import { canonicalJson, canonicalSha256 } from "../canonical.js";
import { PINNED } from "../generated/pinned.js";
import type { PinnedStep } from "../pinned-types.js";
import { checkBounds } from "./bounds.js";
import { checkSolanaReceive, isReceive, isSolanaReceive, verifyReceive } from "./cctp_receive.js";
import {
  BundleRejected,
  Checker,
  type Finding,
  Malformed,
  type Obj,
  chainOf,
  checkTiming,
  get,
  isInt,
  isNative,
  isObj,
  item,
  pyInt,
  sameAddress,
  sameWallets,
  scanFlags,
  strictEq,
} from "./common.js";
import { checkEvm, type Deployments } from "./evm.js";
import { checkSolana } from "./solana.js";
import { NotPorted, actionSha256, allowlists, payloadSha256, rawPayloadRows } from "./payloads.js";

export const NOT_PORTED_CODE = "verifier_kind_not_ported";

export interface Intent {
  from_chain: string;
  from_token: string;
  to_chain: string;
  to_token: string;
  amount_usd?: number | string;
}

export interface VerifyOptions {
  intent: Intent;
  wallets: Record<string, string>;
  nowUnix: number;
  approvalV3?: Obj | null;
  directRouteSummary?: Obj | null;
  eventSignerPublic?: string | null;
  feeRecipients?: Record<string, string> | null;
  deployments?: Deployments;
  sessionActualInputBase?: bigint | null;
  acceptModelledBounds?: boolean;
}

/** All findings about `bundle` (errors and warnings). Safe to sign only if none is an error. Hostile or malformed
 * input yields findings, never an exception. */
export function verifyBundle(bundle: unknown, options: VerifyOptions): Finding[] {
  const c = new Checker();
  try {
    return run(c, bundle, options);
  } catch (e) {
    if (e instanceof NotPorted) {
      return [{ code: NOT_PORTED_CODE, message: e.message, severity: "error" }];
    }
    const name = e instanceof Error ? e.name : "Error";
    const message = e instanceof Error ? e.message : String(e);
    c.fail("bundle_malformed", `the bundle cannot be read: ${name}: ${message.slice(0, 200)}`);
    return c.findings;
  }
}

/** verifyBundle, throwing BundleRejected when any finding is an error. Returns the warnings. */
export function assertBundleOk(bundle: unknown, options: VerifyOptions): Finding[] {
  const findings = verifyBundle(bundle, options);
  if (findings.some((f) => f.severity === "error")) throw new BundleRejected(findings);
  return findings;
}

function same(a: unknown, b: unknown): boolean {
  try {
    return canonicalJson(a) === canonicalJson(b);
  } catch {
    return false;
  }
}

function run(c: Checker, bundle: unknown, o: VerifyOptions): Finding[] {
  if (!isObj(bundle)) return [{ code: "bundle_not_object", message: "the bundle must be a JSON object", severity: "error" }];
  const deps: Deployments = { ...PINNED.deployments, ...(o.deployments ?? {}) };
  const approval = o.approvalV3 ?? null;
  const summary = o.directRouteSummary ?? null;
  scanFlags(bundle, "bundle", c);
  // ---- hashes
  c.expect(
    get(bundle, "payload_sha256") === payloadSha256(bundle),
    "payload_sha256_mismatch",
    "payload_sha256 does not equal sha256 of the canonical bundle without it",
  );
  const action = get(bundle, "unsigned_action");
  if (!isObj(action) || !isObj(get(action, "safety_receipt"))) {
    c.fail("unsigned_action_missing", "bundle.unsigned_action with a safety_receipt is required");
    return c.findings;
  }
  const receipt = get(action, "safety_receipt") as Obj;
  const binding = get(receipt, "payload_binding", {});
  c.expect(
    get(binding, "action_sha256") === actionSha256(action),
    "action_sha256_mismatch",
    "safety_receipt.payload_binding.action_sha256 does not match the unsigned action",
  );
  let rows: Obj[];
  let targets: string[];
  let selectors: string[];
  try {
    rows = rawPayloadRows(action);
    [targets, selectors] = allowlists(action);
  } catch (e) {
    if (!(e instanceof Malformed)) throw e;
    c.fail("payload_malformed", `cannot read the payloads: ${e.message}`);
    return c.findings;
  }
  c.expect(same(get(binding, "raw_payloads"), rows), "raw_payload_hash_mismatch", "per-payload raw_sha256 / data_sha256 rows do not match the payloads");
  c.expect(same(get(receipt, "target_or_program_allowlist"), targets), "receipt_allowlist_mismatch", "the receipt's target allowlist does not list exactly the payload targets");
  c.expect(same(get(receipt, "selector_or_instruction_allowlist"), selectors), "receipt_allowlist_mismatch", "the receipt's selector allowlist does not list exactly the payload selectors");
  // ---- intent, route, step
  const i = o.intent;
  const routeKey = `${String(i.from_chain)}:${String(i.from_token)}->${String(i.to_chain)}:${String(i.to_token)}`;
  const route = Object.prototype.hasOwnProperty.call(PINNED.routes, routeKey) ? PINNED.routes[routeKey] : undefined;
  if (route === undefined) {
    c.fail("intent_route_unknown", `no route ${routeKey}`);
    return c.findings;
  }
  c.expect(get(bundle, "route") === routeKey, "route_mismatch", "bundle.route differs from the intent");
  const idx = get(bundle, "step_index");
  if (!isInt(idx) || !(idx >= 0 && idx < route.steps.length)) {
    c.fail("step_index_invalid", "bundle.step_index is not a step of the route");
    return c.findings;
  }
  const step: PinnedStep = route.steps[idx]!;
  c.expect(strictEq(get(action, "step_index"), idx), "step_index_mismatch", "unsigned_action.step_index differs");
  c.expect(get(action, "provider") === step.provider, "provider_mismatch", `step ${idx} must use ${step.provider}`);
  c.expect(
    get(action, "source") === step.source && get(action, "destination") === step.target,
    "step_endpoints_mismatch",
    "unsigned action endpoints differ from the route step",
  );
  const walletChains = Object.keys(o.wallets).sort();
  if (walletChains.join(",") !== [...route.requiredWalletChains].sort().join(",")) {
    c.fail("wallet_chains_mismatch", `the route needs wallets on exactly ${JSON.stringify(route.requiredWalletChains)}`);
    return c.findings;
  }
  const receiveArgs = { c, bundle, action, receipt, route, routeKey, step, wallets: o.wallets, nowUnix: o.nowUnix, approval, deps };
  if (isSolanaReceive(action)) {
    checkSolanaReceive(receiveArgs); // the CCTP mint on Solana: its own rule, re-deriving both instructions
    return c.findings;
  }
  if (isReceive(action, receipt)) {
    verifyReceive(receiveArgs);
    return c.findings;
  }
  const family = PINNED.chains[chainOf(step.source)]!.family;
  const caller = o.wallets[chainOf(step.source)]!;
  const recipient = o.wallets[chainOf(step.target)]!;
  c.expect(sameAddress(get(action, "sender"), caller), "sender_mismatch", "unsigned_action.sender is not your wallet");
  c.expect(sameAddress(get(action, "recipient"), recipient), "recipient_mismatch", "unsigned_action.recipient is not your wallet on the step's target chain");
  const wf = get(bundle, "workflow", {});
  c.expect(isObj(wf) && sameWallets(get(wf, "wallets"), o.wallets), "workflow_wallets_mismatch", "workflow.wallets differs from your wallets");
  // ---- amounts and bounds
  let inputBase: bigint;
  let fee: bigint;
  let net: bigint;
  let minOut: bigint;
  try {
    inputBase = pyInt(item(action, "inputAmount"));
    fee = pyInt(item(action, "routeFee"));
    net = pyInt(item(action, "netInputAmount"));
    minOut = pyInt(item(action, "minimumOutput"));
  } catch (e) {
    if (!(e instanceof Malformed)) throw e;
    c.fail("amounts_malformed", "inputAmount / routeFee / netInputAmount / minimumOutput must be decimal strings");
    return c.findings;
  }
  const wantFee = step.feeStep ? inputBase / 10_000n : 0n;
  c.expect(fee === wantFee, "service_fee_mismatch", `the fee must be floor(input/10000) = ${wantFee} on the fee step and 0 elsewhere, not ${fee}`);
  c.expect(net === inputBase - fee, "net_input_mismatch", "netInputAmount must be inputAmount - routeFee");
  let minBound = 1n;
  const max = (a: bigint, b: bigint): bigint => (a > b ? a : b);
  if (summary !== null) {
    if (approval !== null) {
      c.expect(canonicalSha256(summary) === get(approval, "direct_route_summary_sha256"), "summary_hash_mismatch", "direct_route_summary does not hash to approval_v3's summary hash");
    }
    c.expect(get(summary, "route") === routeKey, "summary_route_mismatch", "summary is for another route");
    const sSteps = get(summary, "steps") || [];
    if (!Array.isArray(sSteps)) throw new Malformed("summary steps must be a list");
    if (idx < sSteps.length) {
      const ss = sSteps[idx];
      c.expect(get(ss, "provider") === step.provider, "summary_provider_mismatch", "summary provider differs");
      if (o.sessionActualInputBase !== undefined && o.sessionActualInputBase !== null && idx > 0) {
        c.expect(inputBase === o.sessionActualInputBase, "input_amount_mismatch", `inputAmount ${inputBase} differs from the verified actual input ${o.sessionActualInputBase}`);
      } else {
        c.expect(String(inputBase) === get(ss, "expected_input_base"), "input_amount_mismatch", `inputAmount ${inputBase} differs from the quoted ${String(get(ss, "expected_input_base"))}`);
      }
      minBound = max(minBound, pyInt(get(ss, "minimum_output_base", "1")));
    }
  }
  if (approval !== null) {
    if (idx === 0) {
      c.expect(inputBase <= pyInt(item(approval, "maximum_input_base")), "input_above_approved_maximum", "inputAmount exceeds approval_v3.maximum_input_base");
    }
    const lastOfSession = o.sessionActualInputBase !== undefined && o.sessionActualInputBase !== null && idx === route.steps.length - 1;
    if (route.steps.length === 1 || lastOfSession) minBound = max(minBound, pyInt(item(approval, "minimum_output_base")));
    const qb = get(bundle, "quote_binding", {});
    c.expect(
      isObj(qb) && get(qb, "quote_id") === get(approval, "quote_id") && get(qb, "quote_fingerprint") === get(approval, "quote_fingerprint"),
      "quote_binding_mismatch",
      "the bundle is not bound to your approved quote",
    );
  } else {
    c.warn("no_approval_v3", "no approval_v3 given: the bundle is legacy_advisory and not bound to your quote");
  }
  c.expect(minOut >= minBound, "minimum_output_below_bound", `minimumOutput ${minOut} is below the bound ${minBound}`);
  // ---- timing
  const deadline = checkTiming(c, bundle, action, o.nowUnix);
  if (deadline === null) return c.findings;
  // ---- fee recipient
  const rawFeeRecipient = get(action, "feeRecipient");
  // unpinned, the payloads must pay the recipient the receipt names (the receipt must name the action's)
  const stated = get(get(receipt, "service_fee", {}), "recipient");
  let feeRecipient: string | null = stated === null ? null : typeof stated === "string" ? stated : "";
  if (o.feeRecipients !== undefined && o.feeRecipients !== null) {
    const pinned = o.feeRecipients[family];
    if (fee && !sameAddress(rawFeeRecipient, pinned)) c.fail("fee_recipient_mismatch", "the fee goes to another recipient than the one you pinned");
    feeRecipient = fee ? (pinned ?? null) : null;
  } else if (fee) {
    c.warn("fee_recipient_not_pinned", "no fee recipient pinned by the caller; checked for consistency only");
  }
  if (get(get(receipt, "service_fee", {}), "exact_amount_base") !== String(fee)) c.fail("receipt_fee_mismatch", "the receipt's fee differs from the action's");
  checkReceipt(c, bundle, action, receipt, step, inputBase, fee, net, minOut, deadline, family === "evm", deps);
  checkBounds(c, action, receipt, step, o.acceptModelledBounds === true);
  // ---- payloads
  const ctx = { c, route, step, caller, recipient, inputBase, fee, net, minOut, deadline, now: o.nowUnix, feeRecipient, eventSigner: o.eventSignerPublic ?? null };
  if (family === "evm") checkEvm(ctx, action, deps);
  else checkSolana(ctx, action);
  return c.findings;
}

function checkReceipt(
  c: Checker,
  bundle: Obj,
  action: Obj,
  receipt: Obj,
  step: PinnedStep,
  inputBase: bigint,
  fee: bigint,
  net: bigint,
  minOut: bigint,
  deadline: number,
  isEvm: boolean,
  deps: Deployments,
): void {
  const k = PINNED.constants;
  const chain = chainOf(step.source);
  c.expect(get(bundle, "version") === k.BUNDLE_VERSION, "bundle_version_unsupported", "unknown bundle version");
  const wantVersion = isEvm ? k.EVM_ACTION_VERSION : k.SOLANA_ACTION_VERSION;
  c.expect(get(action, "version") === wantVersion && get(action, "family") === (isEvm ? "evm" : "solana"), "action_version_unsupported", "unknown unsigned action version or family");
  const wantChainId: number | string = isEvm ? deps[chain]!.chainId : "mainnet-beta";
  c.expect(strictEq(get(action, "chainId"), wantChainId), "chain_id_mismatch", "unsigned_action.chainId differs");
  c.expect(get(receipt, "schema") === k.RECEIPT_SCHEMA && strictEq(get(receipt, "schema_version"), 1), "receipt_schema_unsupported", "unknown safety receipt schema");
  const netBlock = get(receipt, "network", {});
  c.expect(
    get(netBlock, "source_chain") === chain && get(netBlock, "destination_chain") === chainOf(step.target) && strictEq(get(netBlock, "source_chain_id"), wantChainId),
    "receipt_network_mismatch",
    "the receipt names other chains",
  );
  const spend = get(receipt, "spend", {});
  c.expect(
    get(spend, "exact_amount_base") === String(inputBase) && String(inputBase) === get(spend, "maximum_amount_base"),
    "receipt_spend_mismatch",
    "the receipt's spend differs from inputAmount",
  );
  const txsRaw = get(action, "transactions") || [];
  const txs = Array.isArray(txsRaw) ? txsRaw : [];
  const values = txs.map((tx) => pyStr(get(tx, "value")));
  const cap = get(receipt, "native_value_cap", {});
  const maxValue = values.reduce((m, v) => {
    const n = pyInt(v);
    return n > m ? n : m;
  }, 0n);
  c.expect(
    same(get(cap, "per_transaction_base"), values) && get(cap, "maximum_base") === String(maxValue),
    "receipt_native_value_mismatch",
    "the receipt's native value cap differs from the transactions",
  );
  const approvalBlock = get(receipt, "approval", {});
  if (isEvm && !isNative(step.source)) {
    const dep = deps[chain]!;
    const index = txs.findIndex((tx) => pyStr(get(tx, "data", "")).slice(0, 10) === "0x095ea7b3");
    c.expect(
      get(approvalBlock, "required") === true &&
        sameAddress(get(approvalBlock, "token"), tokenOf(dep, step.source)) &&
        sameAddress(get(approvalBlock, "target"), dep.contracts[step.provider]) &&
        get(approvalBlock, "exact_allowance_base") === String(net) &&
        strictEq(get(approvalBlock, "transaction_index"), index === -1 ? null : index),
      "receipt_approval_mismatch",
      "the receipt's approval statement differs from the approve call",
    );
  } else {
    c.expect(get(approvalBlock, "required") === false, "receipt_approval_mismatch", "no approval is due");
  }
  const feeBlock = get(receipt, "service_fee", {});
  c.expect(
    get(feeBlock, "formula") === k.FEE_FORMULA &&
      strictEq(get(feeBlock, "bps"), step.feeStep ? 1 : 0) &&
      get(get(feeBlock, "basis", {}), "amount_base") === String(inputBase) &&
      get(feeBlock, "recipient") === get(action, "feeRecipient"),
    "receipt_fee_mismatch",
    "the receipt's fee statement differs from the action",
  );
  const receive = get(receipt, "receive", {});
  c.expect(get(receive, "minimum_amount_base") === String(minOut) && get(receive, "token") === step.target, "receipt_receive_mismatch", "the receipt's receive bound differs from minimumOutput");
  const timing = get(receipt, "timing", {});
  c.expect(
    strictEq(get(timing, "action_deadline_unix"), deadline) && get(timing, "bundle_expires_at") === get(bundle, "expires_at") && get(timing, "recent_blockhash") === null,
    "receipt_timing_mismatch",
    "the receipt's timing differs from the action",
  );
  c.expect(fee + net === inputBase && strictEq(get(bundle, "step_index"), step.index), "receipt_internal", "inconsistent");
}

/** Python's str() of a JSON value, for the decimal strings and small integers a transaction holds. */
function pyStr(x: unknown): string {
  if (x === null || x === undefined) return "None";
  if (typeof x === "boolean") return x ? "True" : "False";
  return String(x);
}

export function tokenOf(dep: { tokens: Record<string, string> }, assetKey: string): string | undefined {
  const key = isNative(assetKey) ? "WETH" : assetKey.split(":")[1]!;
  return dep.tokens[key];
}
