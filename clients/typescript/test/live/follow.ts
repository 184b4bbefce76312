// Driven by tests/integration/test_ts_events.py against a running routequote server; prints one JSON line per
// finding, which the Python test compares with the stored event log and the deliveries it received.
//   node dist/test/live/follow.js follow   env: RQ_TS_BASE_URL, RQ_SID, RQ_TOKEN, RQ_SID2, RQ_TOKEN2
//     phase "live": the events as they arrive (the test commits the later ones after the first is printed),
//     then "resume" (lastEventId `<sid>:2`), "rested" (lastEventId the last event: 204), "dropped" (through a
//     proxy that cuts the first connection after one event), "limited" (3 streams held open, the cap: 429).
//   node dist/test/live/follow.js verify <vectors.json>
//     verifyWebhook over each vector, given as bytes with a header record and as text with a Headers object.
import { request as httpRequest, createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { readFileSync } from "node:fs";
import { RouteQuoteClient, type SessionEvent, verifyWebhook } from "../../src/index.js";

const print = (line: Record<string, unknown>): void => void process.stdout.write(`${JSON.stringify(line)}\n`);
const env = (name: string): string => {
  const v = process.env[name];
  if (v === undefined || v === "") throw new Error(`${name} is not set`);
  return v;
};
const line = (phase: string, e: SessionEvent): Record<string, unknown> => ({
  phase,
  id: e.id,
  sequence: e.sequence,
  status: e.status,
  atRest: e.atRest,
  terminal: e.terminal,
  outcome: e.outcome,
  amountBase: e.funds?.amountBase === null || e.funds === null ? null : typeof e.funds.amountBase,
  data: e.data,
});

/** A proxy to `upstream` that, on its first request, passes the response only up to the end of the first SSE
 * message and then drops the connection; later requests pass whole. Records each request's Last-Event-ID. */
async function cuttingProxy(upstream: string): Promise<{ url: string; lastIds: (string | null)[]; close: () => void }> {
  const lastIds: (string | null)[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const first = lastIds.length === 0;
    const id = req.headers["last-event-id"];
    lastIds.push(typeof id === "string" ? id : null);
    const up = httpRequest(new URL(req.url ?? "/", upstream), { method: req.method ?? "GET", headers: req.headers }, (ur) => {
      const headers = { ...ur.headers };
      for (const h of ["transfer-encoding", "connection", "content-length", "keep-alive"]) delete headers[h];
      res.writeHead(ur.statusCode ?? 502, headers);
      let seen = "";
      let cut = false;
      ur.setEncoding("utf8");
      ur.on("data", (chunk: string) => {
        if (cut) return;
        if (!first) return void res.write(chunk);
        seen += chunk;
        const data = seen.search(/(^|[\r\n])data:/);
        const blank = /\r\n\r\n|\n\n|\r\r/g; // the end of the message (sse-starlette ends lines with CRLF)
        blank.lastIndex = Math.max(data, 0);
        const end = data < 0 ? null : blank.exec(seen);
        if (end === null) return;
        cut = true;
        res.write(seen.slice(0, end.index + end[0].length), () => {
          setTimeout(() => {
            ur.destroy();
            res.destroy();
          }, 50);
        });
      });
      ur.on("end", () => res.end());
    });
    up.on("error", () => res.destroy());
    req.pipe(up);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, lastIds, close: () => {
      server.close();
      server.closeAllConnections();
    },
  };
}

async function follow(): Promise<void> {
  const baseUrl = env("RQ_TS_BASE_URL");
  const handle = { sessionId: env("RQ_SID"), reveal: () => env("RQ_TOKEN") };
  const rq = new RouteQuoteClient({ baseUrl });
  let last = "";
  for await (const e of rq.events(handle)) {
    print(line("live", e));
    last = e.id;
  }
  print({ phase: "live-end" });
  for await (const e of rq.events(handle, { lastEventId: `${handle.sessionId}:2` })) print(line("resume", e));
  let rested = 0;
  for await (const _ of rq.events(handle, { lastEventId: last })) rested += 1;
  print({ phase: "rested", count: rested });

  const proxy = await cuttingProxy(baseUrl);
  const waits: number[] = [];
  const viaProxy = new RouteQuoteClient({ baseUrl: proxy.url, sleep: async (ms) => void waits.push(ms) });
  const dropped: SessionEvent[] = [];
  for await (const e of viaProxy.events(handle)) dropped.push(e);
  proxy.close();
  print({ phase: "dropped", data: dropped.map((e) => e.data), lastIds: proxy.lastIds, waits });

  // the per-client cap (3 in the test server): hold 3 streams of the second session open, then follow it
  const other = { sessionId: env("RQ_SID2"), reveal: () => env("RQ_TOKEN2") };
  const held: AbortController[] = [];
  for (let i = 0; i < 3; i++) {
    const c = new AbortController();
    const r = await fetch(`${baseUrl}/v2/session/${other.sessionId}/events`, { headers: { "X-RouteQuote-Session-Token": other.reveal() }, signal: c.signal });
    if (r.status !== 200) throw new Error(`held stream ${i}: HTTP ${r.status}`);
    held.push(c);
  }
  const limitedWaits: number[] = [];
  const limited = new RouteQuoteClient({
    baseUrl,
    sleep: async (ms) => {
      limitedWaits.push(ms);
      held.pop()?.abort(); // a slot frees while the client waits out Retry-After
      await new Promise((resolve) => setTimeout(resolve, 200));
    },
  });
  let first: number | null = null;
  for await (const e of limited.events(other, { maxReconnects: 10 })) {
    first = e.sequence;
    break;
  }
  for (const c of held) c.abort();
  print({ phase: "limited", waits: limitedWaits, first });
}

interface Vector {
  name: string;
  secret: string;
  body_b64: string;
  headers: Record<string, string>;
}

function verify(path: string): void {
  const vectors = JSON.parse(readFileSync(path, "utf8")) as Vector[];
  for (const v of vectors) {
    const body = Buffer.from(v.body_b64, "base64");
    const outcomes = [
      () => verifyWebhook(v.secret, new Uint8Array(body), v.headers),
      () => verifyWebhook(v.secret, body.toString("utf8"), new Headers(v.headers)),
    ].map((check) => {
      try {
        const e = check();
        return { ok: true, id: e.id, sequence: e.sequence, data: e.data };
      } catch (err) {
        return { ok: false, error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) };
      }
    });
    print({ phase: "verify", name: v.name, ...outcomes[0], agree: JSON.stringify(outcomes[0]) === JSON.stringify(outcomes[1]) });
  }
}

const [mode, arg] = process.argv.slice(2);
if (mode === "follow") await follow();
else if (mode === "verify" && arg !== undefined) verify(arg);
else throw new Error("usage: follow | verify <vectors.json>");
