// "Follow a session": the session's event log, live, from GET /v2/session/{id}/events (Server-Sent Events).
// The token goes only in the X-RouteQuote-Session-Token header of that request, so the stream is read with
// fetch and parsed by sse.js (EventSource cannot send a header). The token is never put in a URL, never stored
// (no localStorage, no cookie) and never logged: it lives in the password field and in the one call that uses it.
// A dropped connection is resumed with Last-Event-ID (never a gap, never a repeat); following ends after the
// event whose `outcome` is set (the server ends the stream there), or on 204 (that event is already held).
"use strict";

globalThis.RouteQuoteFollow = (() => {
  const SESSION_HEADER = "X-RouteQuote-Session-Token";
  const IDLE_MS = 60_000; // nothing at all, not even a heartbeat (15 s by default): the connection is dead
  const MAX_RECONNECTS = 5; // in a row without a new event
  const MAX_WAIT_MS = 60_000;

  /** A reason to stop following that is not the user's Stop: `kind` is "http" (status and the server's body),
   * "invalid" (the stream broke the protocol) or "unreachable" (reconnects in a row without a new event). */
  class FollowError extends Error {
    constructor(kind, message, status = 0) {
      super(message);
      this.kind = kind;
      this.status = status;
    }
  }

  function wait(ms, signal) {
    return new Promise((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason);
      const timer = setTimeout(() => { signal.removeEventListener("abort", stop); resolve(); }, ms);
      const stop = () => { clearTimeout(timer); reject(signal.reason); };
      signal.addEventListener("abort", stop, { once: true });
    });
  }

  /** Seconds of a Retry-After header (delta seconds or an HTTP date), or the body's retry_after_seconds. */
  function retryAfterMs(response, body) {
    const header = (response.headers.get("retry-after") || "").trim();
    let seconds = /^\d+$/.test(header) ? Number(header) : (Date.parse(header) - Date.now()) / 1000;
    if (!Number.isFinite(seconds) && body && Number.isInteger(body.retry_after_seconds)) seconds = body.retry_after_seconds;
    if (!Number.isFinite(seconds)) seconds = 5;
    return Math.min(MAX_WAIT_MS, Math.max(1000, Math.ceil(seconds) * 1000));
  }

  async function errorBody(response) {
    try {
      return await response.json();
    } catch {
      return null;
    }
  }

  /** "HTTP 404 not_found (session_not_found): <the server's message>" */
  function describe(status, body) {
    const field = (name) => (body && typeof body[name] === "string" ? body[name] : "");
    const why = field("reason_class") && field("reason_class") !== field("error") ? ` (${field("reason_class")})` : "";
    return `HTTP ${status}${field("error") ? ` ${field("error")}` : ""}${why}${field("message") ? `: ${field("message")}` : ""}`;
  }

  /** Follows one session until it rests. Options: sessionId, token, signal (Stop), onEvent(event),
   * onState({kind, message, waitMs}); fetch and sleep can be given (a test's fakes). Resolves with "rest" (the
   * resting event arrived) or "held" (204); rejects with a FollowError, or the signal's reason on Stop. */
  async function follow({ sessionId, token, signal, onEvent, onState = () => {}, fetch: fetchImpl, sleep = wait }) {
    const request = fetchImpl || globalThis.fetch.bind(globalThis);
    const path = `/v2/session/${encodeURIComponent(sessionId)}/events`;
    let lastEventId = "";
    let lastSequence = 0;
    let retryMs = 2000; // until the server's `retry:` says otherwise
    let failures = 0; // connections in a row that brought no new event

    async function again(message, waitMs = retryMs) {
      failures += 1;
      if (failures > MAX_RECONNECTS) {
        throw new FollowError("unreachable", `gave up after ${MAX_RECONNECTS} reconnects without a new event: ${message}`);
      }
      onState({ kind: "retrying", message, waitMs });
      await sleep(waitMs, signal);
    }

    for (;;) {
      const connection = new AbortController(); // the user's Stop, or the idle timer, ends this connection
      const abort = () => connection.abort(signal.reason);
      signal.addEventListener("abort", abort, { once: true });
      let idleTimer = null;
      let rested = false;
      try {
        const headers = { [SESSION_HEADER]: token, accept: "text/event-stream" };
        if (lastEventId) headers["Last-Event-ID"] = lastEventId;
        onState({ kind: "connecting", message: lastEventId ? `resuming after ${lastEventId}` : "connecting" });
        let response;
        try {
          response = await request(path, { headers, signal: connection.signal, cache: "no-store" });
        } catch (error) {
          if (signal.aborted) throw signal.reason;
          await again(`network error: ${error.message}`);
          continue;
        }
        if (response.status === 204) return "held";
        if (response.status === 429 || response.status === 503) {
          const body = await errorBody(response);
          const waitMs = retryAfterMs(response, body);
          onState({ kind: "rate_limited", message: describe(response.status, body), waitMs });
          await again(describe(response.status, body), waitMs);
          continue;
        }
        if (!response.ok) throw new FollowError("http", describe(response.status, await errorBody(response)), response.status);
        if (!(response.headers.get("content-type") || "").startsWith("text/event-stream")) {
          throw new FollowError("invalid", `HTTP ${response.status} without an event stream`);
        }
        onState({ kind: "open", message: "following" });
        const parser = RouteQuoteSSE.createParser({
          onMessage(message) {
            if (rested) return;
            let event;
            try {
              event = JSON.parse(message.data);
            } catch {
              throw new FollowError("invalid", "an event that is not JSON");
            }
            if (!event || event.session_id !== sessionId || !Number.isInteger(event.sequence)) {
              throw new FollowError("invalid", "an event of another session, or without a sequence");
            }
            if (event.sequence <= lastSequence) return; // already shown (a replay overlapping a resume)
            if (event.sequence !== lastSequence + 1) {
              throw new FollowError("invalid", `a gap in the event log: ${event.sequence} after ${lastSequence}`);
            }
            lastSequence = event.sequence;
            lastEventId = message.id || event.id;
            failures = 0;
            onEvent(event);
            if (event.outcome) rested = true; // the session rests: the server ends the stream here
          },
          onComment() { onState({ kind: "heartbeat", message: "following (heartbeat)" }); },
          onRetry(ms) { retryMs = Math.min(MAX_WAIT_MS, Math.max(250, ms)); },
        });
        const reader = response.body.getReader();
        // Stop or the idle timer end the read whatever the fetch does with its signal once the body streams
        connection.signal.addEventListener("abort", () => reader.cancel().catch(() => {}), { once: true });
        let dropped = "";
        try {
          for (;;) {
            idleTimer = setTimeout(() => connection.abort(new Error("no data, not even a heartbeat")), IDLE_MS);
            const { value, done } = await reader.read();
            clearTimeout(idleTimer);
            if (done) break;
            parser.feed(value);
            if (rested) break;
          }
        } catch (error) {
          if (error instanceof FollowError && !signal.aborted) throw error;
          dropped = error.message;
        }
        if (signal.aborted) throw signal.reason;
        if (rested) {
          reader.cancel().catch(() => {});
          return "rest";
        }
        if (connection.signal.aborted) dropped = connection.signal.reason.message;
        if (dropped) {
          await again(`the connection dropped (${dropped})`);
          continue;
        }
        parser.end();
        await again("the stream ended before the session came to rest");
      } finally {
        clearTimeout(idleTimer);
        signal.removeEventListener("abort", abort);
      }
    }
  }

  // ---- the panel ---------------------------------------------------------------------------------------

  const el = (id) => document.getElementById(id);

  function cell(text, className) {
    const td = document.createElement("td");
    td.className = className;
    td.textContent = text;
    return td;
  }

  function fundsText(funds) {
    if (!funds) return "—";
    const amount = funds.amount_base === null || funds.amount_base === undefined ? "amount not known yet"
      : `${funds.amount_base} base units`;
    const where = [funds.owner && `held by ${funds.owner}`, funds.state].filter(Boolean).join(", ");
    return `${funds.token} on ${funds.chain}: ${amount}${where ? ` (${where})` : ""}`;
  }

  function statusText(event) {
    const step = event.step_index == null ? "" : `, step ${event.step_index}`;
    if (!event.outcome) return `${event.status}${step}, next: ${event.next_operation}`;
    const rest = event.terminal ? "terminal" : "at rest, not terminal";
    const final = event.final_on_chain === true ? ", final on chain" : event.final_on_chain === false ? ", not final on chain yet" : "";
    return `${event.status}${step}: ${event.outcome} (${rest}${final})`;
  }

  function showEvent(event) {
    const row = document.createElement("tr");
    row.dataset.sequence = String(event.sequence);
    row.append(cell(String(event.sequence), "seq"), cell(event.type, "type"), cell(event.status, "status"),
      cell(event.step_index == null ? "—" : String(event.step_index), "step-index"), cell(fundsText(event.funds), "funds"),
      cell(event.at, "at"));
    el("follow-events").tBodies[0].append(row);
    const status = el("follow-status");
    status.textContent = statusText(event);
    status.dataset.status = event.status;
    status.dataset.outcome = event.outcome || "";
  }

  /** One preflight finding as a line: "BLOCKS gas (base, step 2): you need about … [needed N, has M] (estimate)". */
  function findingText(f) {
    const mark = f.blocking ? "BLOCKS" : f.code === "unknown" ? "unread" : "ok";
    const where = f.step_index == null ? f.chain || "" : `${f.chain}, step ${f.step_index + 1}`;
    const amounts = f.needed == null ? "" : ` [needed ${f.needed}, has ${f.has}]`;
    return `${mark} ${f.code} (${where}): ${f.message}${amounts}${f.estimate ? " (estimate)" : ""}`;
  }

  /** The session's preflight for its current action (null: no action to sign now). Advice: nothing is refused. */
  function showPreflight(preflight) {
    const box = el("follow-preflight");
    const summary = el("follow-preflight-summary");
    const list = el("follow-preflight-findings");
    list.replaceChildren();
    box.hidden = false;
    box.dataset.checked = preflight ? String(preflight.checked) : "";
    box.dataset.ok = preflight ? String(preflight.ok) : "";
    if (!preflight) {
      summary.textContent = "No action to sign now.";
      return;
    }
    const findings = preflight.findings || [];
    const blocking = findings.filter((f) => f.blocking).length;
    const unread = findings.filter((f) => f.code === "unknown").length;
    summary.textContent = !preflight.checked ? `Not checked: ${preflight.reason}`
      : blocking ? `${blocking} finding(s) would stop this route before it completes (advice: nothing is refused).`
        : unread ? `Nothing that was read stops this route, but ${unread} read(s) failed (advice: nothing is refused).`
          : "The wallets cover this route's input, gas, rent and time (advice: nothing is refused).";
    for (const f of findings) {
      const item = document.createElement("li");
      item.textContent = findingText(f);
      item.dataset.code = f.code;
      item.dataset.chain = f.chain || "";
      item.dataset.blocking = String(f.blocking);
      list.append(item);
    }
  }

  let preflightReads = 0; // only the newest read is shown (events can come faster than reads answer)

  /** Reads the session (its token only in the header, as for the stream) and shows its preflight. */
  async function readPreflight(sessionId, token, signal) {
    const mine = ++preflightReads;
    let text = "";
    try {
      const response = await globalThis.fetch(`/v2/session/${encodeURIComponent(sessionId)}`, {
        headers: { [SESSION_HEADER]: token, accept: "application/json" }, signal, cache: "no-store",
      });
      const body = await errorBody(response);
      if (mine !== preflightReads) return;
      if (response.ok && body) return showPreflight(body.action_available ? body.preflight || null : null);
      text = `Could not read the session's preflight: ${describe(response.status, body)}`;
    } catch {
      if (signal.aborted || mine !== preflightReads) return;
      text = "Could not read the session's preflight.";
    }
    showPreflight(null);
    el("follow-preflight-summary").textContent = text;
  }

  function showError(message) {
    const box = el("follow-error");
    box.textContent = message;
    box.hidden = !message;
  }

  function showState(text) {
    el("follow-state").textContent = text;
  }

  let running = null; // the AbortController of the follow in progress

  async function start() {
    const sessionId = el("follow-session").value.trim();
    const token = el("follow-token").value.trim();
    if (!sessionId || !token) return showError("Paste the session id and its token.");
    running = new AbortController();
    const mine = running;
    el("follow-button").textContent = "Stop";
    el("follow-events").tBodies[0].replaceChildren();
    el("follow-status").textContent = "—";
    el("follow-preflight").hidden = true;
    showError("");
    try {
      const ended = await follow({
        sessionId, token, signal: mine.signal,
        onEvent(event) {
          showEvent(event);
          readPreflight(sessionId, token, mine.signal); // the action this event leaves, checked before signing
        },
        onState(state) {
          if (state.kind === "rate_limited") showError(`Refused for now (${state.message}); retrying in ${Math.round(state.waitMs / 1000)} s.`);
          else if (state.kind === "retrying") showState(`${state.message}; reconnecting in ${Math.round(state.waitMs / 1000)} s…`);
          else {
            if (state.kind === "open") showError("");
            showState(state.message);
          }
        },
      });
      showState(ended === "held" ? "The session already rests: nothing more will come." : "The session rests: following ended.");
    } catch (error) {
      if (mine.signal.aborted) showState("Stopped.");
      else {
        showError(`Could not follow the session: ${error.message}`);
        showState("Not following.");
      }
    } finally {
      if (running === mine) {
        running = null;
        el("follow-button").textContent = "Follow";
      }
    }
  }

  function wire() {
    el("follow-form").addEventListener("submit", (event) => {
      event.preventDefault(); // never a navigation: the form has no action, and its fields have no names
      if (running) running.abort(new DOMException("stopped", "AbortError"));
      else start();
    });
  }

  document.addEventListener("DOMContentLoaded", wire);
  return Object.freeze({ follow, FollowError });
})();
