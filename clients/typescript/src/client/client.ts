/** The routequote REST client (v2): capabilities, status, quote, prepare and the session operations. Every
 * prepared action is checked by the ported verifier against what the caller holds before it is returned;
 * only idempotent calls are retried; base-unit amounts are bigint. */
import type { Deployments } from "../verify/evm.js";
import { DuplicateKey, readStrictJson } from "./strict_json.js";
import { webcrypto } from "node:crypto";
import type { components } from "../generated/v2.js";
import { type Finding, isObj } from "../verify/common.js";
import { type Intent, verifyBundle } from "../verify/bundle.js";
import { feeRecipientFindings } from "../verify/fee_recipient.js";
import { baseUnits, toDecimal } from "./amounts.js";
import { type EventsHandle, type EventsOptions, type SessionEvent, followEvents } from "./events.js";
import { markVerified } from "./handoff.js";
import {
  ActionVerificationFailed,
  ApprovalRefused,
  type ErrorBody,
  RateLimited,
  ReapprovalRequired,
  Rejected,
  ResponseInvalid,
  ServiceUnreachable,
  UpstreamUnavailable,
} from "./errors.js";

export type Capabilities = components["schemas"]["CapabilitiesResponse"];
export type Status = components["schemas"]["StatusResponse"];
type Json = Record<string, unknown>;

export const SESSION_HEADER = "X-RouteQuote-Session-Token";
const APPROVAL_VERSION = "routequote-quote-bound-approval-v3";

export interface ClientOptions {
  baseUrl: string;
  fetch?: typeof fetch;
  /** Extra attempts for an idempotent call after a network failure, a 429 or a 502/503/504 (default 2). */
  retries?: number;
  /** A Retry-After longer than this is not waited for: the error is raised (default 30 s). */
  maxRetryAfterSeconds?: number;
  sleep?: (ms: number) => Promise<void>;
  /** Your clock, in unix seconds (the verifier checks deadlines against it). */
  now?: () => number;
  /** The operator's published fee recipients, {evm, solana}; a fee to anyone else is refused. */
  feeRecipients?: Record<string, string>;
  /** Accept actions whose bounds are modelled from the embedded snapshot (tests and local chains only). */
  acceptModelledBounds?: boolean;
  /** Accept a fee going to the development placeholder (tests and local chains only). */
  acceptUnconfiguredFeeRecipient?: boolean;
  /** Contract addresses per EVM chain replacing the pinned mainnet ones (local chains, e.g. anvil, only). */
  deployments?: Deployments;
}

/** The quote's intent as the client hands it out: `estimated_input_base`, a JSON integer on the wire (the contract
 * fixes it so; wei amounts pass 2^53), is always a bigint, checked equal to its decimal twin and the summary. */
export type QuoteIntentJson = components["schemas"]["Intent"]; // generated with estimated_input_base: bigint

/** A quote answer as read: JSON, with the intent's amount (and its copy in continuation_v3) a bigint. */
export interface QuoteJson extends Json {
  intent: QuoteIntentJson;
  estimated_input_base_decimal: string;
  continuation_v3: Json & { intent: QuoteIntentJson; estimated_input_base_decimal: string };
  direct_route_summary: Json;
}

/** Where a quote answer carries an amount as a JSON integer, the only places an integer may pass 2^53. */
const QUOTE_BIG_INTEGERS = ["$.intent.estimated_input_base", "$.continuation_v3.intent.estimated_input_base"];

export interface Quote {
  readonly raw: QuoteJson;
  readonly quoteId: string;
  readonly intent: Intent;
  readonly directRouteSummary: Json;
  readonly estimatedInputBase: bigint;
  readonly maximumInputBase: bigint;
  readonly minimumOutputBase: bigint;
  readonly allowedModes: string[];
}

export interface ApprovalV3 {
  version: string;
  quote_id: string;
  quote_fingerprint: string;
  selection_status: "selected";
  selected_mode: string;
  maximum_input_base: string;
  minimum_output_base: string;
  direct_route_summary_sha256: string;
  idempotency_key: string;
}

export interface PreparedAction {
  readonly raw: Json;
  readonly stepIndex: number;
  readonly inputAmount: bigint;
  readonly routeFee: bigint;
  readonly netInputAmount: bigint;
  readonly minimumOutput: bigint;
  readonly payloadSha256: string;
  readonly warnings: Finding[];
}

export interface VerificationContext {
  intent: Intent;
  wallets: Record<string, string>;
  approvalV3: ApprovalV3;
  directRouteSummary: Json;
  eventSignerPublic: string | null;
}

/** What the caller keeps to drive a session. The token is never printed (toString / JSON / inspect). */
export class SessionHandle {
  readonly #token: string;
  constructor(
    readonly sessionId: string,
    token: string,
    readonly context: VerificationContext,
  ) {
    this.#token = token;
  }
  reveal(): string {
    return this.#token;
  }
  toJSON(): Json {
    return { sessionId: this.sessionId };
  }
  toString(): string {
    return `SessionHandle(${this.sessionId})`;
  }
  [Symbol.for("nodejs.util.inspect.custom")](): string {
    return this.toString();
  }
}

export interface Session {
  readonly raw: Json;
  readonly sessionId: string;
  readonly status: string;
  readonly currentStep: number;
  readonly fundsAmountBase: bigint | null;
  readonly currentAction: PreparedAction | null;
  readonly handle: SessionHandle;
}

interface Call<T> {
  what: string;
  method: "GET" | "POST";
  path: string;
  body?: unknown;
  token?: string;
  ok?: number[];
  idempotent: boolean;
  /** The paths where the answer may hold an integer beyond 2^53 (read as bigint); anywhere else is refused. */
  bigIntegers?: string[];
  parse: (body: Json) => T;
}

export function newIdempotencyKey(prefix = "rq"): string {
  const bytes = webcrypto.getRandomValues(new Uint8Array(12));
  return `${prefix}-${Buffer.from(bytes).toString("hex")}`;
}

/** A fresh session token: 32 random bytes, base64url without padding. */
export function newSessionToken(): string {
  return Buffer.from(webcrypto.getRandomValues(new Uint8Array(32))).toString("base64url");
}

function endpoint(text: string): [string, string] {
  const [chain, token, ...rest] = text.split(":");
  if (!chain || !token || rest.length) throw new TypeError(`an endpoint is chain:TOKEN (e.g. base:ETH), not ${text}`);
  return [chain.toLowerCase(), token.toUpperCase()];
}

function retryAfter(resp: Response, body: Json): number | null {
  const header = resp.headers.get("retry-after") ?? "";
  if (/^[0-9]+$/.test(header)) return Number(header);
  const value = body["retry_after_seconds"];
  return typeof value === "number" && Number.isInteger(value) ? value : null;
}

/** The error tree of an ErrorResponse answer. */
export function errorFor(what: string, resp: Response, body: unknown): Error {
  const status = resp.status;
  if (!isObj(body) || typeof body["error"] !== "string") {
    return new ResponseInvalid(what, [`HTTP ${status} with a body that is not an ErrorResponse`]);
  }
  const err = body as ErrorBody;
  if (status === 429) return new RateLimited(status, err, retryAfter(resp, body));
  if (status === 409 && body["error"] === "reapproval_required") return new ReapprovalRequired(status, err);
  if (status >= 400 && status < 500) return new Rejected(status, err);
  return new UpstreamUnavailable(status, err, retryAfter(resp, body));
}

export class RouteQuoteClient {
  readonly #o: Required<Omit<ClientOptions, "feeRecipients" | "deployments">> & { feeRecipients: Record<string, string> | null; deployments: Deployments };

  constructor(options: ClientOptions) {
    this.#o = {
      baseUrl: options.baseUrl.replace(/\/+$/, ""),
      fetch: options.fetch ?? globalThis.fetch,
      retries: options.retries ?? 2,
      maxRetryAfterSeconds: options.maxRetryAfterSeconds ?? 30,
      sleep: options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms))),
      now: options.now ?? (() => Math.floor(Date.now() / 1000)),
      feeRecipients: options.feeRecipients ?? null,
      acceptModelledBounds: options.acceptModelledBounds ?? false,
      acceptUnconfiguredFeeRecipient: options.acceptUnconfiguredFeeRecipient ?? false,
      deployments: options.deployments ?? {},
    };
  }

  capabilities(): Promise<Capabilities> {
    return this.#run({ what: "capabilities", method: "GET", path: "/v2/capabilities", idempotent: true, parse: (b) => b as Capabilities });
  }

  status(): Promise<Status> {
    return this.#run({ what: "status", method: "GET", path: "/v2/status", idempotent: true, parse: (b) => b as Status });
  }

  /** A fresh quote. Not retried: each call issues a new quote. `amountUsd` is USD notional, not an amount. */
  quote(source: string, target: string, amountUsd: number | string): Promise<Quote> {
    const [fc, ft] = endpoint(source);
    const [tc, tt] = endpoint(target);
    const amount = typeof amountUsd === "string" ? Number(amountUsd) : amountUsd;
    if (!Number.isFinite(amount)) throw new TypeError("amountUsd must be finite");
    const intent: Intent = { from_chain: fc, from_token: ft, to_chain: tc, to_token: tt, amount_usd: amount };
    return this.#run({ what: "quote", method: "POST", path: "/v2/quote", body: intent, idempotent: false, bigIntegers: QUOTE_BIG_INTEGERS, parse: (b) => readQuote(b, intent) });
  }

  /** The first unsigned action of the quote's route, verified against your intent, wallets and approval. */
  prepare(quote: Quote, wallets: Record<string, string>, opts: { approval?: ApprovalV3; eventSignerPublic?: string } = {}): Promise<PreparedAction> {
    const approval = opts.approval ?? approvalFor(quote, quote.allowedModes[0] ?? "one_shot");
    const context = contextFor(quote, wallets, approval, opts.eventSignerPublic ?? null);
    return this.#run({
      what: "prepare",
      method: "POST",
      path: "/v2/prepare",
      body: actionBody(context),
      idempotent: true, // the approval's idempotency_key makes a replay return the same bundle
      parse: (b) => {
        const action = this.verifiedAction(b, context, null);
        if (action.stepIndex !== 0) throw new ResponseInvalid("prepared action", [`prepare answered step ${action.stepIndex}, not 0`]);
        return action;
      },
    });
  }

  /** Opens a session. `onCreated` receives the handle as soon as the server names the session, before its
   * answer is checked, so a refused answer never loses the session. */
  createSession(
    quote: Quote,
    wallets: Record<string, string>,
    opts: { approval?: ApprovalV3; eventSignerPublic?: string; token?: string; onCreated?: (h: SessionHandle) => void } = {},
  ): Promise<Session> {
    const approval = opts.approval ?? approvalFor(quote, "session");
    if (approval.selected_mode !== "session") throw new TypeError("a session takes an approval_v3 with selected_mode 'session'");
    const token = opts.token ?? newSessionToken();
    const context = contextFor(quote, wallets, approval, opts.eventSignerPublic ?? null);
    return this.#run({
      what: "session create",
      method: "POST",
      path: "/v2/session",
      body: { ...actionBody(context), idempotency_key: approval.idempotency_key },
      token,
      ok: [201],
      idempotent: true,
      parse: (b) => {
        const sid = b["session_id"];
        if (typeof sid !== "string") throw new ResponseInvalid("session", ["the answer has no session_id"]);
        const handle = new SessionHandle(sid, token, context);
        opts.onCreated?.(handle);
        return this.#session(b, handle);
      },
    });
  }

  readSession(handle: SessionHandle): Promise<Session> {
    return this.#run({ what: "session", method: "GET", path: `${sessionPath(handle)}?view=session`, token: handle.reveal(), idempotent: true, parse: (b) => this.#session(b, handle) });
  }

  /** The session's receipt (quoted and actual amounts per step and for the route), as the server states it. */
  readReceipt(handle: SessionHandle): Promise<Json> {
    return this.#run({
      what: "session receipt",
      method: "GET",
      path: `${sessionPath(handle)}?view=receipt`,
      token: handle.reveal(),
      idempotent: true,
      parse: (b) => {
        if (b["session_id"] !== handle.sessionId || !isObj(b["receipt"])) throw new ResponseInvalid("session receipt", ["not this session's receipt"]);
        return b["receipt"];
      },
    });
  }

  /** The session's current unsigned action, verified, or null when there is nothing to sign. */
  async nextAction(handle: SessionHandle): Promise<PreparedAction | null> {
    return (await this.readSession(handle)).currentAction;
  }

  observe(handle: SessionHandle, opts: { transactionHashes?: string[]; idempotencyKey?: string } = {}): Promise<Session> {
    const body: Json = { idempotency_key: opts.idempotencyKey ?? newIdempotencyKey("obs") };
    if (opts.transactionHashes?.length) body["transaction_hashes"] = [...opts.transactionHashes];
    return this.#keyed(handle, "observe", body);
  }

  cancel(handle: SessionHandle, opts: { idempotencyKey?: string } = {}): Promise<Session> {
    return this.#keyed(handle, "cancel", { idempotency_key: opts.idempotencyKey ?? newIdempotencyKey("can") });
  }

  refresh(handle: SessionHandle, opts: { idempotencyKey?: string } = {}): Promise<Session> {
    return this.#keyed(handle, "refresh", { idempotency_key: opts.idempotencyKey ?? newIdempotencyKey("ref") });
  }

  /** The session's events, in order, from the first (or after `opts.lastEventId`), ending after the event that
   * brings the session to rest (or at once when you already hold it). Read over fetch streaming with the token
   * header; a dropped connection is resumed with Last-Event-ID (src/client/events.ts). Break out of the loop,
   * or abort `opts.signal`, to stop following: the connection is closed. */
  events(handle: EventsHandle, opts: EventsOptions = {}): AsyncGenerator<SessionEvent, void, undefined> {
    const { baseUrl, fetch, sleep, maxRetryAfterSeconds } = this.#o;
    return followEvents({ baseUrl, fetch, sleep, maxRetryAfterSeconds, errorFor }, handle, opts);
  }

  /** `raw` as a PreparedAction once the verifier found no error against `context`; throws otherwise. */
  verifiedAction(raw: unknown, context: VerificationContext, actualInputBase: bigint | null): PreparedAction {
    if (!isObj(raw)) throw new ResponseInvalid("prepared action", ["the action is not a JSON object"]);
    const findings = verifyBundle(raw, {
      intent: context.intent,
      wallets: context.wallets,
      nowUnix: this.#o.now(),
      approvalV3: { ...context.approvalV3 },
      directRouteSummary: context.directRouteSummary,
      eventSignerPublic: context.eventSignerPublic,
      feeRecipients: this.#o.feeRecipients,
      sessionActualInputBase: actualInputBase,
      acceptModelledBounds: this.#o.acceptModelledBounds,
      deployments: this.#o.deployments,
    });
    findings.push(...feeRecipientFindings(raw, this.#o.acceptUnconfiguredFeeRecipient));
    if (findings.some((f) => f.severity === "error")) throw new ActionVerificationFailed(findings);
    const action = raw["unsigned_action"] as Json;
    return markVerified({
      raw,
      stepIndex: raw["step_index"] as number,
      inputAmount: baseUnits(action["inputAmount"], "inputAmount"),
      routeFee: baseUnits(action["routeFee"], "routeFee"),
      netInputAmount: baseUnits(action["netInputAmount"], "netInputAmount"),
      minimumOutput: baseUnits(action["minimumOutput"], "minimumOutput"),
      payloadSha256: String(raw["payload_sha256"]),
      warnings: findings,
    });
  }

  #keyed(handle: SessionHandle, op: string, body: Json): Promise<Session> {
    return this.#run({ what: `session ${op}`, method: "POST", path: `${sessionPath(handle)}/${op}`, body, token: handle.reveal(), idempotent: true, parse: (b) => this.#session(b, handle) });
  }

  #session(body: Json, handle: SessionHandle): Session {
    const problems: string[] = [];
    if (body["session_id"] !== handle.sessionId) problems.push(`answer is for session ${String(body["session_id"])}, not ${handle.sessionId}`);
    const i = handle.context.intent;
    const route = `${i.from_chain}:${i.from_token}->${i.to_chain}:${i.to_token}`;
    if (body["route"] !== route) problems.push(`session route ${String(body["route"])} is not the approved ${route}`);
    const qb = isObj(body["quote_binding"]) ? body["quote_binding"] : {};
    const approval = handle.context.approvalV3;
    for (const k of ["quote_id", "quote_fingerprint", "direct_route_summary_sha256", "maximum_input_base", "minimum_output_base"] as const) {
      if (qb[k] !== approval[k]) problems.push(`quote_binding.${k} differs from your approval`);
    }
    if (body["action_available"] === true && !isObj(body["current_action"])) problems.push("action_available is true but there is no current_action");
    if (body["server_signing"] !== false || body["server_submission"] !== false) problems.push("custody flags must be false");
    if (problems.length) throw new ResponseInvalid("session", problems);
    const currentStep = typeof body["current_step"] === "number" ? body["current_step"] : 0;
    const funds = isObj(body["funds"]) ? body["funds"] : {};
    const fundsAmountBase = funds["amount_base"] === null || funds["amount_base"] === undefined ? null : baseUnits(funds["amount_base"], "funds.amount_base");
    const raw = body["current_action"];
    const currentAction = isObj(raw) ? this.verifiedAction(raw, handle.context, currentStep > 0 ? fundsAmountBase : null) : null;
    return { raw: body, sessionId: handle.sessionId, status: String(body["status"]), currentStep, fundsAmountBase, currentAction, handle };
  }

  async #run<T>(call: Call<T>): Promise<T> {
    const attempts = call.idempotent ? 1 + this.#o.retries : 1;
    for (let attempt = 1; ; attempt++) {
      let resp: Response;
      try {
        const headers: Record<string, string> = { accept: "application/json" };
        if (call.body !== undefined) headers["content-type"] = "application/json";
        if (call.token !== undefined) headers[SESSION_HEADER] = call.token;
        const init: RequestInit = { method: call.method, headers };
        if (call.body !== undefined) init.body = JSON.stringify(call.body);
        resp = await this.#o.fetch(`${this.#o.baseUrl}${call.path}`, init);
      } catch (e) {
        if (attempt < attempts) {
          await this.#o.sleep(250 * 2 ** (attempt - 1));
          continue;
        }
        throw new ServiceUnreachable(`${call.what}: ${e instanceof Error ? e.name : "error"}`);
      }
      const text = await resp.text();
      let body: unknown;
      let bigIntegers: string[];
      try {
        ({ value: body, bigIntegers } = readStrictJson(text));
      } catch (e) {
        const why = e instanceof DuplicateKey ? e.message : "not JSON";
        throw new ResponseInvalid(call.what, [`HTTP ${resp.status} body is not strict JSON: ${why}`]);
      }
      if ((call.ok ?? [200]).includes(resp.status)) {
        if (!isObj(body)) throw new ResponseInvalid(call.what, ["the answer is not a JSON object"]);
        // outside the amounts the contract carries as integers, every integer is a count, an index, a chain id
        // or seconds, typed number: one beyond 2^53 cannot be handed out as what its type says, so it is refused
        const unexpected = bigIntegers.filter((p) => !(call.bigIntegers ?? []).includes(p));
        if (unexpected.length) {
          throw new ResponseInvalid(call.what, unexpected.map((p) => `${p} is an integer beyond 2^53 - 1 where the contract has a number (amounts travel as decimal strings)`));
        }
        return call.parse(body);
      }
      const error = errorFor(call.what, resp, body);
      const wait = error instanceof RateLimited || error instanceof UpstreamUnavailable ? error.retryAfter : null;
      const retryable = error instanceof RateLimited || (error instanceof UpstreamUnavailable && [502, 503, 504].includes(resp.status));
      if (!retryable || attempt >= attempts || (wait ?? 0) > this.#o.maxRetryAfterSeconds) throw error;
      await this.#o.sleep(1000 * (wait ?? 2 ** (attempt - 1)));
    }
  }
}

function sessionPath(handle: SessionHandle): string {
  if (!/^[A-Za-z0-9-]+$/.test(handle.sessionId)) throw new TypeError("a session id is letters, digits and dashes");
  return `/v2/session/${handle.sessionId}`;
}

function readQuote(body: Json, asked: Intent): Quote {
  const c = body["continuation_v3"];
  const summary = body["direct_route_summary"];
  const quoteId = body["quote_id"];
  if (!isObj(c) || !isObj(summary) || typeof quoteId !== "string") {
    throw new ResponseInvalid("quote", ["quote_id, continuation_v3 and direct_route_summary are required"]);
  }
  if (body["server_signing"] !== false || body["server_submission"] !== false) throw new ResponseInvalid("quote", ["custody flags must be false"]);
  const bounds = isObj(c["input_base_bounds"]) ? c["input_base_bounds"] : {};
  const modes = Array.isArray(c["allowed_modes"]) ? c["allowed_modes"].filter((m): m is string => typeof m === "string") : [];
  const estimatedInputBase = inputBaseAgreement(body, c, summary);
  return {
    raw: body as QuoteJson,
    quoteId,
    intent: asked,
    directRouteSummary: summary,
    estimatedInputBase,
    maximumInputBase: baseUnits(bounds["maximum"], "input_base_bounds.maximum"),
    minimumOutputBase: baseUnits(c["minimum_output_base"], "minimum_output_base"),
    allowedModes: modes,
  };
}

/** Python's `repr` of a JSON value, for problems worded as the Python client words them. */
function pyRepr(v: unknown): string {
  if (v === undefined || v === null) return "None";
  if (typeof v === "string") return `'${v}'`;
  if (typeof v === "boolean") return v ? "True" : "False";
  return typeof v === "bigint" || typeof v === "number" ? String(v) : JSON.stringify(v);
}

/** An integer amount as Python's client reads one (routequote/client/validate.py `_int`): a JSON integer (a
 * bigint beyond 2^53) or a decimal string; null for anything else (a fraction, a bool, a missing value). */
function integerAmount(v: unknown): bigint | null {
  if (typeof v === "bigint") return v;
  if (typeof v === "number") return Number.isSafeInteger(v) ? BigInt(v) : null;
  return typeof v === "string" && /^[0-9]+$/.test(v) ? BigInt(v) : null;
}

/** The quote's estimated input, checked as the Python client checks it (validate.py `quote_problems`): the
 * intent's JSON integer and its decimal twin each equal the summary's first expected input, else ResponseInvalid
 * ("quote", with Python's wording); the copies in continuation_v3 too. The integers become bigint in `body`. */
function inputBaseAgreement(body: Json, c: Json, summary: Json): bigint {
  const steps = summary["steps"];
  const first = Array.isArray(steps) && isObj(steps[0]) ? steps[0]["expected_input_base"] : undefined;
  if (typeof first !== "string" || !/^[0-9]+$/.test(first)) {
    throw new ResponseInvalid("quote", ["direct_route_summary.steps[0].expected_input_base is not a decimal string"]);
  }
  const want = BigInt(first);
  const intent = isObj(body["intent"]) ? body["intent"] : {};
  const cIntent = isObj(c["intent"]) ? c["intent"] : {};
  const problems: string[] = [];
  const check = (name: string, got: unknown, decimal: boolean): void => {
    if (integerAmount(got) !== want) problems.push(`${name} = ${pyRepr(got)} differs from the summary's ${want}`);
    else if (decimal && typeof got !== "string") problems.push(`${name} = ${pyRepr(got)} is not a decimal string`);
  };
  check("intent.estimated_input_base", intent["estimated_input_base"], false);
  check("estimated_input_base_decimal", body["estimated_input_base_decimal"], true);
  check("continuation_v3.intent.estimated_input_base", cIntent["estimated_input_base"], false);
  check("continuation_v3.estimated_input_base_decimal", c["estimated_input_base_decimal"], true);
  if (problems.length) throw new ResponseInvalid("quote", problems);
  intent["estimated_input_base"] = want;
  cIntent["estimated_input_base"] = want;
  return want;
}

/** The approval_v3 for `quote` in `mode`, optionally with a stricter minimum output (never a weaker one). */
export function approvalFor(quote: Quote, mode: string, opts: { minimumOutputBase?: bigint; idempotencyKey?: string } = {}): ApprovalV3 {
  if (!quote.allowedModes.includes(mode)) throw new ApprovalRefused("approval_v3_mode_not_allowed", `mode ${mode} is not one of ${quote.allowedModes.join(", ")}`);
  const minimum = opts.minimumOutputBase ?? quote.minimumOutputBase;
  if (minimum < quote.minimumOutputBase) throw new ApprovalRefused("approval_v3_bounds_weaker_than_quote", "minimumOutputBase is below the quote's");
  const c = quote.raw["continuation_v3"] as Json;
  return {
    version: APPROVAL_VERSION,
    quote_id: quote.quoteId,
    quote_fingerprint: String(c["quote_fingerprint"]),
    selection_status: "selected",
    selected_mode: mode,
    maximum_input_base: toDecimal(quote.maximumInputBase),
    minimum_output_base: toDecimal(minimum),
    direct_route_summary_sha256: String(c["direct_route_summary_sha256"]),
    idempotency_key: opts.idempotencyKey ?? newIdempotencyKey(),
  };
}

function contextFor(quote: Quote, wallets: Record<string, string>, approval: ApprovalV3, signer: string | null): VerificationContext {
  return { intent: quote.intent, wallets: { ...wallets }, approvalV3: approval, directRouteSummary: quote.directRouteSummary, eventSignerPublic: signer };
}

function actionBody(context: VerificationContext): Json {
  const body: Json = { caller_approved: true, ...context.intent, wallets: context.wallets, approval_v3: context.approvalV3 };
  if (context.eventSignerPublic !== null) body["event_signer_public"] = context.eventSignerPublic;
  return body;
}
