// The event stream reader against a scripted SSE server (node:http): SSE parsing (multi-line data, comments,
// the id field, CRLF, chunks cut anywhere), the sequence check, resume with Last-Event-ID after a dropped
// connection, 429 Retry-After, 204, bounded reconnects, abort and early exit. The real server's stream is
// exercised by tests/integration/test_ts_events.py (test/live/follow.ts).
import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, test } from "node:test";
import { RateLimited, Rejected, ResponseInvalid, RouteQuoteClient, ServiceUnreachable, type SessionEvent } from "../src/index.js";

const SID = "0b6f1c2e-0000-4000-8000-00000000abcd";
const HANDLE = { sessionId: SID, reveal: () => "tok-123" };

function event(sequence: number, status = "action_ready", extra: Record<string, unknown> = {}): Record<string, unknown> {
  const outcome = status === "cancelled" ? "cancelled" : status === "complete" ? "complete" : null;
  return {
    id: `${SID}:${sequence}`,
    session_id: SID,
    sequence,
    type: sequence === 1 ? "create" : "cancel",
    status,
    previous_status: sequence === 1 ? null : "action_ready",
    step_index: 0,
    next_operation: outcome === null ? "submit_current_action" : "none",
    transactions: [],
    funds: { chain: "base", token: "ETH", amount_base: "123456789012345678901", owner: "0xabc", wallet: "0xabc", state: "in_wallet" },
    outcome,
    terminal: outcome !== null,
    final_on_chain: outcome === null ? null : outcome === "complete",
    at: "2026-11-22T05:00:00.000Z",
    ...extra,
  };
}

/** One SSE message: `id:` and the JSON spread over several `data:` lines (JSON allows a newline between tokens). */
function message(body: Record<string, unknown>, eol = "\n"): string {
  const lines = JSON.stringify(body).split(/(?<=,)/); // cut after every comma
  return [`id: ${String(body["id"])}`, ...lines.map((l) => `data: ${l}`), "", ""].join(eol);
}

type Script = (req: IncomingMessage, res: ServerResponse, hit: number) => void;

async function scripted(script: Script): Promise<{ url: string; seen: IncomingMessage["headers"][]; closed: () => number; close: () => Promise<void> }> {
  const seen: IncomingMessage["headers"][] = [];
  let closed = 0;
  const server = createServer((req, res) => {
    seen.push(req.headers);
    res.on("close", () => (closed += 1));
    script(req, res, seen.length);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  server.unref(); // a failed assertion that skips close() must not keep the test process alive
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    closed: () => closed,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function sse(res: ServerResponse): void {
  res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-store" });
}

async function collect(it: AsyncIterable<SessionEvent>): Promise<SessionEvent[]> {
  const out: SessionEvent[] = [];
  for await (const e of it) out.push(e);
  return out;
}

const rq = (url: string, waits: number[] = []): RouteQuoteClient => new RouteQuoteClient({ baseUrl: url, sleep: async (ms) => void waits.push(ms) });

describe("events (scripted SSE server)", () => {
  test("multi-line data, comments, ids, CRLF and chunks cut anywhere; ends at rest", async () => {
    const text = `: heartbeat\r\nretry: 2000\r\n\r\n${message(event(1), "\r\n")}: heartbeat\n\n${message(event(2, "cancelled"))}`;
    const s = await scripted((req, res) => {
      sse(res);
      // one byte at a time, then hold the connection open: the reader must stop on its own at rest
      let i = 0;
      const tick = setInterval(() => {
        if (i >= text.length) return clearInterval(tick);
        res.write(text.slice(i, i + 7));
        i += 7;
      }, 1);
      res.on("close", () => clearInterval(tick));
    });
    const events = await collect(rq(s.url).events(HANDLE));
    assert.deepEqual(
      events.map((e) => [e.id, e.sequence, e.status, e.atRest]),
      [
        [`${SID}:1`, 1, "action_ready", false],
        [`${SID}:2`, 2, "cancelled", true],
      ],
    );
    assert.equal(events[0]!.funds?.amountBase, 123456789012345678901n); // bigint, exact past 2^53
    assert.equal(events[1]!.outcome, "cancelled");
    assert.deepEqual(JSON.parse(events[0]!.data), event(1)); // the data lines joined by "\n"
    assert.equal(s.seen[0]!["x-routequote-session-token"], "tok-123");
    assert.equal(s.seen[0]!["accept"], "text/event-stream");
    assert.equal(s.seen[0]!["last-event-id"], undefined);
    await s.close();
  });

  test("a dropped connection is resumed with Last-Event-ID, after the server's retry delay", async () => {
    const s = await scripted((req, res, hit) => {
      sse(res);
      if (hit === 1) {
        res.write(`retry: 1500\n\n${message(event(1))}`);
        setTimeout(() => res.destroy(), 20); // the connection drops mid-stream
      } else {
        res.end(message(event(2, "complete")));
      }
    });
    const waits: number[] = [];
    const events = await collect(rq(s.url, waits).events(HANDLE));
    assert.deepEqual(events.map((e) => e.sequence), [1, 2]);
    assert.equal(s.seen[1]!["last-event-id"], `${SID}:1`);
    assert.deepEqual(waits, [1500]);
    await s.close();
  });

  test("a stream the server ends before the session rests is resumed too", async () => {
    const s = await scripted((req, res, hit) => {
      sse(res);
      res.end(hit === 1 ? message(event(1)) : hit === 2 ? ": heartbeat\n\n" : message(event(2, "cancelled")));
    });
    const events = await collect(rq(s.url).events(HANDLE));
    assert.deepEqual(events.map((e) => e.sequence), [1, 2]);
    assert.deepEqual(s.seen.map((h) => h["last-event-id"]), [undefined, `${SID}:1`, `${SID}:1`]);
    await s.close();
  });

  test("lastEventId: only later events are asked for and accepted", async () => {
    const s = await scripted((req, res) => {
      sse(res);
      res.end(message(event(3, "cancelled")));
    });
    const events = await collect(rq(s.url).events(HANDLE, { lastEventId: `${SID}:2` }));
    assert.deepEqual(events.map((e) => e.sequence), [3]);
    assert.equal(s.seen[0]!["last-event-id"], `${SID}:2`);
    await assert.rejects(rq(s.url).events(HANDLE, { lastEventId: "another-session:2" }).next(), TypeError);
    assert.equal(s.seen.length, 1); // refused before asking
    await s.close();
  });

  test("a gap, a repeat, another session's event, a mismatched id or a repeated key is refused", async () => {
    const bad: [string, string][] = [
      [message(event(2)), "event sequence 2 where 1 follows"],
      [message(event(1)) + message(event(1)), "event sequence 1 where 2 follows"],
      [message(event(1, "action_ready", { session_id: "x" })), "another session"],
      [`id: ${SID}:9\ndata: ${JSON.stringify(event(1))}\n\n`, "SSE id"],
      [`data: {"id": "a", "id": "b"}\n\n`, "duplicate key"],
      [`data: ${JSON.stringify(event(1, "action_ready", { funds: { chain: "base", token: "ETH", amount_base: 5 } }))}\n\n`, "amount_base"],
    ];
    for (const [body, why] of bad) {
      const s = await scripted((req, res) => {
        sse(res);
        res.end(body);
      });
      await assert.rejects(collect(rq(s.url).events(HANDLE)), (e: unknown) => e instanceof ResponseInvalid && e.message.includes(why), why);
      await s.close();
    }
  });

  test("429 waits for Retry-After, 204 ends at once, 404 is Rejected", async () => {
    const limited = { error: "rate_limited", reason_class: "event_streams_limit_reached", message: "close one first" };
    const s = await scripted((req, res, hit) => {
      if (hit === 1) {
        res.writeHead(429, { "content-type": "application/json", "retry-after": "5" });
        res.end(JSON.stringify(limited));
      } else if (hit === 2) {
        res.writeHead(204);
        res.end();
      } else {
        res.writeHead(404, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: "not_found", reason_class: "session_not_found", message: "no such session" }));
      }
    });
    const waits: number[] = [];
    assert.deepEqual(await collect(rq(s.url, waits).events(HANDLE)), []);
    assert.deepEqual(waits, [5000]);
    await assert.rejects(collect(rq(s.url).events(HANDLE)), (e: unknown) => e instanceof Rejected && e.status === 404);
    await s.close();
    const always = await scripted((req, res) => {
      res.writeHead(429, { "content-type": "application/json", "retry-after": "120" });
      res.end(JSON.stringify(limited));
    });
    await assert.rejects(collect(rq(always.url).events(HANDLE)), (e: unknown) => e instanceof RateLimited && e.retryAfter === 120);
    assert.equal(always.seen.length, 1); // longer than maxRetryAfterSeconds: not waited for
    await always.close();
  });

  test("reconnects are bounded: ServiceUnreachable after maxReconnects without a new event", async () => {
    const s = await scripted((req, res) => {
      sse(res);
      res.end(": heartbeat\n\n");
    });
    await assert.rejects(collect(rq(s.url).events(HANDLE, { maxReconnects: 3 })), ServiceUnreachable);
    assert.equal(s.seen.length, 4);
    await s.close();
  });

  test("a connection silent past idleTimeoutMs (no event, no heartbeat) is dropped and resumed", async () => {
    const s = await scripted((req, res, hit) => {
      sse(res);
      if (hit === 1) res.write(message(event(1))); // then silence, the connection left open
      else res.end(message(event(2, "cancelled")));
    });
    const events = await collect(rq(s.url).events(HANDLE, { idleTimeoutMs: 100 }));
    assert.deepEqual(events.map((e) => e.sequence), [1, 2]);
    assert.equal(s.seen[1]!["last-event-id"], `${SID}:1`);
    await s.close();
  });

  test("aborting while Retry-After is waited out ends at once with the signal's reason", async () => {
    const s = await scripted((req, res) => {
      res.writeHead(429, { "content-type": "application/json", "retry-after": "20" });
      res.end(JSON.stringify({ error: "rate_limited", reason_class: "event_streams_limit_reached", message: "later" }));
    });
    const controller = new AbortController();
    const never = new RouteQuoteClient({ baseUrl: s.url, sleep: () => new Promise<void>(() => undefined) });
    const following = collect(never.events(HANDLE, { signal: controller.signal }));
    setTimeout(() => controller.abort(new Error("user stop")), 50);
    await assert.rejects(following, /user stop/);
    assert.equal(s.seen.length, 1);
    await s.close();
  });

  test("breaking out of the loop or aborting closes the connection", async () => {
    const s = await scripted((req, res) => {
      sse(res);
      res.write(message(event(1)) + message(event(2, "action_ready", { type: "refresh" })));
    });
    for await (const e of rq(s.url).events(HANDLE)) {
      assert.equal(e.sequence, 1);
      break;
    }
    const controller = new AbortController();
    const seen: number[] = [];
    await assert.rejects(
      (async () => {
        for await (const e of rq(s.url).events(HANDLE, { signal: controller.signal })) {
          seen.push(e.sequence);
          if (e.sequence === 2) controller.abort(new Error("stop"));
        }
      })(),
      /stop/,
    );
    assert.deepEqual(seen, [1, 2]);
    for (let i = 0; i < 200 && s.closed() < 2; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(s.closed(), 2); // both connections were closed by the client
    assert.equal(s.seen.length, 2); // and neither was reopened
    await s.close();
  });
});
