/** Following a session's events (`GET /v2/session/{id}/events`, Server-Sent Events), the port of
 * routequote/client/events.py. The stream is read with fetch (a browser EventSource cannot send the session
 * token header) and parsed by eventsource-parser (multi-line data, comments as heartbeats, the id field).
 *
 * Each event's `sequence` must follow the one before (a gap, a repeat or another session's event is
 * `ResponseInvalid`, never passed on). A dropped connection, or a stream the server ends before the session
 * rests, is resumed with `Last-Event-ID`, at most `maxReconnects` times in a row without a new event; a 429
 * is waited out for its Retry-After. Iteration ends after the event that brings the session to rest (its
 * `outcome` is set: core/sessions/event_log.py, `ends_stream`), or at once on 204 (the caller already holds
 * that event). */
import { createParser, type EventSourceMessage, type ParseError } from "eventsource-parser";
import type { components } from "../generated/v2.js";
import { isObj } from "../verify/common.js";
import { baseUnits } from "./amounts.js";
import { RateLimited, ResponseInvalid, ServiceUnreachable, UpstreamUnavailable } from "./errors.js";
import { DuplicateKey, parseStrictJson, readStrictJson } from "./strict_json.js";

const WHAT = "session events";
const SESSION_HEADER = "X-RouteQuote-Session-Token";
const MAX_EVENT_CHARS = 1 << 20; // one event is a few KB; a stream that buffers more is refused
const MAX_RETRY_MS = 60_000;

export type SessionEventJson = components["schemas"]["SessionEvent"];
export type EventOutcome = NonNullable<SessionEventJson["outcome"]>;

export interface EventTransaction {
  readonly stepIndex: number;
  readonly side: "source" | "destination";
  readonly chain: string;
  readonly txId: string;
  readonly verified: boolean;
}

/** Where the caller's value sits after the event; `amountBase` is null while a bridge message is in flight. */
export interface EventFunds {
  readonly chain: string;
  readonly token: string;
  readonly amountBase: bigint | null;
  readonly owner: string | null;
  readonly wallet: string | null;
  readonly state: string | null;
}

/** One entry of a session's event log (docs/sessions.md, "The event stream"). `data` is the JSON text as
 * received: the same bytes the stream's `data:` and a webhook's body carry. */
export interface SessionEvent {
  readonly id: string;
  readonly sessionId: string;
  readonly sequence: number;
  readonly type: string;
  readonly status: string;
  readonly previousStatus: string | null;
  readonly stepIndex: number | null;
  readonly nextOperation: string;
  readonly transactions: EventTransaction[];
  readonly funds: EventFunds | null;
  readonly outcome: EventOutcome | null;
  /** No event can follow (Across's isTerminal). */
  readonly terminal: boolean;
  /** The outcome's chain facts are final (Across's finalized); null while the session moves. */
  readonly finalOnChain: boolean | null;
  readonly at: string;
  /** The session rests after this event: the stream ends here. */
  readonly atRest: boolean;
  readonly raw: SessionEventJson;
  readonly data: string;
}

/** What `events` needs of a session: its id and token (a SessionHandle, or a page's own pair). */
export interface EventsHandle {
  readonly sessionId: string;
  reveal(): string;
}

export interface EventsOptions {
  /** The id of the last event you hold (`<session_id>:<sequence>`): the stream resumes after it. */
  lastEventId?: string;
  /** Aborts the open request and any wait; the iterator then throws the signal's reason. */
  signal?: AbortSignal;
  /** Reconnects in a row without a new event before giving up with ServiceUnreachable (default 5). */
  maxReconnects?: number;
  /** A connection that brings nothing, not even a heartbeat, for this long is dropped and resumed (default
   * 60 s; the server sends a heartbeat every 15 s on its defaults). */
  idleTimeoutMs?: number;
}

export interface StreamConnection {
  baseUrl: string;
  fetch: typeof fetch;
  sleep: (ms: number) => Promise<void>;
  maxRetryAfterSeconds: number;
  errorFor: (what: string, resp: Response, body: unknown) => Error;
}

const OUTCOMES: readonly (EventOutcome | null)[] = ["complete", "cancelled", "failed", "refund_on_origin", "reapproval_required", null];

function str(v: unknown): v is string {
  return typeof v === "string";
}
function strOrNull(v: unknown): v is string | null {
  return v === null || typeof v === "string";
}
function intOrNull(v: unknown): v is number | null {
  return v === null || Number.isSafeInteger(v);
}

function readFunds(v: unknown, problems: string[]): EventFunds | null {
  if (v === null) return null;
  if (!isObj(v) || !str(v["chain"]) || !str(v["token"])) {
    problems.push("funds is neither null nor {chain, token, ...}");
    return null;
  }
  for (const k of ["owner", "wallet", "state", "amount_base"] as const) {
    if (v[k] !== undefined && !strOrNull(v[k])) problems.push(`funds.${k} is not a string or null`);
  }
  const amount = v["amount_base"];
  let amountBase: bigint | null = null;
  if (amount !== null && amount !== undefined) {
    try {
      amountBase = baseUnits(amount, "funds.amount_base");
    } catch {
      problems.push("funds.amount_base is not a decimal string of base units");
    }
  }
  const opt = (k: string): string | null => (str(v[k]) ? v[k] : null);
  return { chain: v["chain"], token: v["token"], amountBase, owner: opt("owner"), wallet: opt("wallet"), state: opt("state") };
}

function readTransactions(v: unknown, problems: string[]): EventTransaction[] {
  if (!Array.isArray(v)) {
    problems.push("transactions is not an array");
    return [];
  }
  const out: EventTransaction[] = [];
  for (const t of v) {
    if (!isObj(t) || !Number.isSafeInteger(t["step_index"]) || (t["side"] !== "source" && t["side"] !== "destination") || !str(t["chain"]) || !str(t["tx_id"]) || typeof t["verified"] !== "boolean") {
      problems.push("a transaction is not {step_index, side, chain, tx_id, verified}");
      continue;
    }
    out.push({ stepIndex: t["step_index"] as number, side: t["side"], chain: t["chain"], txId: t["tx_id"], verified: t["verified"] });
  }
  return out;
}

/** An event's JSON text, read strictly (a repeated key is refused) and checked against the SessionEvent
 * shape; the amounts become bigint. Throws ResponseInvalid (`what` names the reader). */
export function parseSessionEvent(data: string, what = WHAT): SessionEvent {
  let raw: unknown;
  let bigIntegers: string[];
  try {
    ({ value: raw, bigIntegers } = readStrictJson(data));
  } catch (e) {
    throw new ResponseInvalid(what, [e instanceof DuplicateKey ? `an event with a ${e.message}` : "an event that is not JSON"]);
  }
  if (!isObj(raw)) throw new ResponseInvalid(what, ["an event that is not a JSON object"]);
  // an event carries no amount as an integer (funds.amount_base is a decimal string): its integers are counts
  const problems: string[] = bigIntegers.map((p) => `${p} is an integer beyond 2^53 - 1 where the contract has a number`);
  const r = raw;
  if (!str(r["id"]) || !str(r["session_id"]) || !str(r["type"]) || !str(r["status"]) || !str(r["next_operation"]) || !str(r["at"])) {
    problems.push("an event without its id, session_id, type, status, next_operation and at");
  }
  if (!Number.isSafeInteger(r["sequence"]) || (r["sequence"] as number) < 1) problems.push("an event whose sequence is not a positive integer");
  if (!strOrNull(r["previous_status"]) || !intOrNull(r["step_index"])) problems.push("previous_status or step_index of the wrong type");
  const outcome = r["outcome"];
  if (!OUTCOMES.includes(outcome as EventOutcome | null)) problems.push(`outcome ${JSON.stringify(outcome)} is not one of the resting outcomes or null`);
  if (typeof r["terminal"] !== "boolean" || (r["final_on_chain"] !== null && typeof r["final_on_chain"] !== "boolean")) problems.push("terminal or final_on_chain of the wrong type");
  if (r["terminal"] === true && outcome === null) problems.push("a terminal event without an outcome");
  const funds = readFunds(r["funds"], problems);
  const transactions = readTransactions(r["transactions"], problems);
  if (problems.length) throw new ResponseInvalid(what, problems);
  const ev = raw as SessionEventJson;
  return {
    id: ev.id,
    sessionId: ev.session_id,
    sequence: ev.sequence,
    type: ev.type,
    status: ev.status,
    previousStatus: ev.previous_status,
    stepIndex: ev.step_index,
    nextOperation: ev.next_operation,
    transactions,
    funds,
    outcome: ev.outcome,
    terminal: ev.terminal,
    finalOnChain: ev.final_on_chain,
    at: ev.at,
    atRest: ev.outcome !== null,
    raw: ev,
    data,
  };
}

function sequenceOf(sessionId: string, lastEventId: string | undefined): number {
  if (lastEventId === undefined || lastEventId === "") return 0;
  const cut = lastEventId.lastIndexOf(":");
  const tail = cut < 0 ? lastEventId : lastEventId.slice(cut + 1);
  if ((cut >= 0 && lastEventId.slice(0, cut) !== sessionId) || !/^[0-9]{1,9}$/.test(tail)) {
    throw new TypeError("lastEventId is the id of an event of this session (`<session_id>:<sequence>`)");
  }
  return Number(tail);
}

function aborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw signal.reason ?? new DOMException("aborted", "AbortError");
}

/** `p`, or the signal's reason as soon as it aborts. */
function abortable(p: Promise<void>, signal: AbortSignal | undefined): Promise<void> {
  if (signal === undefined) return p;
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(
      () => {
        signal.removeEventListener("abort", onAbort);
        resolve();
      },
      (e: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}

class IdleTimeout extends Error {
  override name = "IdleTimeout";
}

async function errorBody(resp: Response): Promise<unknown> {
  try {
    return parseStrictJson(await resp.text());
  } catch {
    return null;
  }
}

/** The session's events in order, from the first (or after `opts.lastEventId`), until it rests. */
export async function* followEvents(conn: StreamConnection, handle: EventsHandle, opts: EventsOptions = {}): AsyncGenerator<SessionEvent, void, undefined> {
  if (!/^[A-Za-z0-9-]+$/.test(handle.sessionId)) throw new TypeError("a session id is letters, digits and dashes");
  const maxReconnects = opts.maxReconnects ?? 5;
  const idleTimeoutMs = opts.idleTimeoutMs ?? 60_000;
  const signal = opts.signal;
  const url = `${conn.baseUrl}/v2/session/${handle.sessionId}/events`;
  let sequence = sequenceOf(handle.sessionId, opts.lastEventId);
  let lastId = opts.lastEventId ?? "";
  let retryMs = 1000; // until the server says (SSE `retry:`)
  let failures = 0;
  const dropped = async (detail: string, waitMs = retryMs): Promise<void> => {
    failures += 1;
    if (failures > maxReconnects) throw new ServiceUnreachable(`${WHAT}: ${detail} (${maxReconnects} reconnects without a new event)`);
    await abortable(conn.sleep(waitMs), signal);
    aborted(signal);
  };

  for (;;) {
    aborted(signal);
    const headers: Record<string, string> = { accept: "text/event-stream", [SESSION_HEADER]: handle.reveal() };
    if (lastId) headers["last-event-id"] = lastId;
    // this connection's own abort: the idle watchdog's, and the caller's signal
    const connection = new AbortController();
    const onAbort = (): void => connection.abort(signal?.reason);
    signal?.addEventListener("abort", onAbort, { once: true });
    let idle: ReturnType<typeof setTimeout> | undefined;
    const watch = (): void => {
      clearTimeout(idle);
      idle = setTimeout(() => connection.abort(new IdleTimeout(`no data for ${idleTimeoutMs} ms`)), idleTimeoutMs);
    };
    const init: RequestInit = { method: "GET", headers, signal: connection.signal };
    watch();
    let resp: Response;
    try {
      resp = await conn.fetch(url, init);
    } catch (e) {
      clearTimeout(idle);
      signal?.removeEventListener("abort", onAbort);
      aborted(signal);
      await dropped(e instanceof Error ? e.name : "network error");
      continue;
    }
    if (resp.status !== 200) {
      clearTimeout(idle);
      signal?.removeEventListener("abort", onAbort);
    }
    if (resp.status === 204) return; // the caller holds the event the session came to rest with
    if (resp.status !== 200) {
      const error = conn.errorFor(WHAT, resp, await errorBody(resp));
      const retryable = error instanceof RateLimited || (error instanceof UpstreamUnavailable && [502, 503, 504].includes(resp.status));
      const wait = error instanceof RateLimited || error instanceof UpstreamUnavailable ? error.retryAfter : null;
      if (!retryable || failures >= maxReconnects || (wait ?? 0) > conn.maxRetryAfterSeconds) throw error;
      await dropped(`HTTP ${resp.status}`, wait === null ? retryMs : wait * 1000);
      continue;
    }
    const type = resp.headers.get("content-type") ?? "";
    if (!type.toLowerCase().startsWith("text/event-stream") || resp.body === null) {
      clearTimeout(idle);
      signal?.removeEventListener("abort", onAbort);
      await resp.body?.cancel();
      throw new ResponseInvalid(WHAT, [`HTTP 200 with content-type ${JSON.stringify(type)}, not text/event-stream`]);
    }

    const messages: EventSourceMessage[] = [];
    let parseError: ParseError | null = null;
    const parser = createParser({
      onEvent: (m) => messages.push(m),
      onRetry: (ms) => {
        retryMs = Math.min(Math.max(ms, 0), MAX_RETRY_MS);
      },
      onError: (e) => {
        parseError ??= e;
      },
      maxBufferSize: MAX_EVENT_CHARS,
    });
    const reader = resp.body.getReader();
    const decoder = new TextDecoder("utf-8", { fatal: true });
    let failure = "the stream ended before the session rested";
    try {
      for (;;) {
        let chunk: Awaited<ReturnType<typeof reader.read>>;
        try {
          chunk = await reader.read();
        } catch (e) {
          aborted(signal);
          const reason: unknown = connection.signal.reason;
          failure = reason instanceof IdleTimeout ? reason.message : e instanceof Error ? e.name : "read error";
          break;
        }
        watch(); // bytes arrived (an event or a heartbeat): the connection is alive
        if (chunk.done) break;
        let text: string;
        try {
          text = decoder.decode(chunk.value, { stream: true });
        } catch {
          throw new ResponseInvalid(WHAT, ["the stream is not UTF-8"]);
        }
        parser.feed(text);
        if (parseError !== null) {
          const pe: ParseError = parseError;
          if (pe.type === "max-buffer-size-exceeded") throw new ResponseInvalid(WHAT, [`an event longer than ${MAX_EVENT_CHARS} characters`]);
          parseError = null; // an unknown field is ignored, as the SSE rules say
        }
        while (messages.length) {
          const m = messages.shift()!;
          if (m.data === "") continue;
          const event = parseSessionEvent(m.data);
          const problems: string[] = [];
          if (event.sessionId !== handle.sessionId) problems.push("an event of another session");
          if (event.sequence !== sequence + 1) problems.push(`event sequence ${event.sequence} where ${sequence + 1} follows`);
          if (m.id !== undefined && m.id !== event.id) problems.push(`the SSE id ${JSON.stringify(m.id)} is not the event's id`);
          if (problems.length) throw new ResponseInvalid(WHAT, problems);
          sequence = event.sequence;
          lastId = event.id;
          failures = 0;
          yield event;
          if (event.atRest) return;
        }
      }
    } finally {
      // the consumer stopped, the session rested or the stream failed: close this connection
      clearTimeout(idle);
      signal?.removeEventListener("abort", onAbort);
      await reader.cancel().catch(() => undefined);
    }
    await dropped(failure);
  }
}
