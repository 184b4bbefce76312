// The client against a running `routequote` server (RQ_TS_BASE_URL, set by tests/integration/test_ts_client.py
// to a real server with the embedded market), plus the error tree and retry rule against a scripted server.
import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, test } from "node:test";
import {
  ActionVerificationFailed,
  NotVerified,
  RateLimited,
  ReapprovalRequired,
  Rejected,
  RouteQuoteClient,
  UpstreamUnavailable,
  approvalFor,
  baseUnits,
  evmSendRequests,
  toDecimal,
} from "../src/index.js";

const BASE_URL = process.env["RQ_TS_BASE_URL"];
const EVM = "0x1111111111111111111111111111111111111111";
const ARB = "0x2222222222222222222222222222222222222222";
const noSleep = async (): Promise<void> => {};

describe("against a running server", { skip: BASE_URL === undefined ? "RQ_TS_BASE_URL not set" : false }, () => {
  // the test server runs the `make serve` defaults: modelled bounds and the development fee recipient
  const rq = (accept = true): RouteQuoteClient =>
    new RouteQuoteClient({ baseUrl: BASE_URL!, acceptModelledBounds: accept, acceptUnconfiguredFeeRecipient: accept, sleep: noSleep });

  test("capabilities and status", async () => {
    const caps = await rq().capabilities();
    assert.equal(typeof caps, "object");
    const status = await rq().status();
    assert.equal(typeof status, "object");
  });

  test("quote then prepare: a verified action whose amounts are bigint", async () => {
    const quote = await rq().quote("base:USDC", "base:ETH", 100);
    assert.equal(typeof quote.minimumOutputBase, "bigint");
    assert.equal(quote.estimatedInputBase, 100_000_000n); // 100 USDC in base units
    const action = await rq().prepare(quote, { base: EVM });
    assert.equal(action.stepIndex, 0);
    assert.equal(action.inputAmount, 100_000_000n);
    assert.equal(action.routeFee, 10_000n); // floor(input / 10000)
    assert.equal(action.netInputAmount, action.inputAmount - action.routeFee);
    assert.ok(action.minimumOutput >= quote.minimumOutputBase);
    assert.deepEqual(
      action.warnings.map((f) => f.code).sort(),
      ["bounds_modelled_accepted", "fee_recipient_not_pinned"],
    );
    // the wallet handoff: viem sendTransaction requests of the verified action, in order
    const requests = evmSendRequests(action);
    assert.equal(requests.length, 3); // fee transfer, approve, swap
    assert.ok(requests.every((r) => r.chainId === 8453 && r.value === 0n && r.data.startsWith("0x")));
    assert.equal(requests[1]!.data.slice(0, 10), "0x095ea7b3"); // approve
    // anything the client did not verify is refused, even the same data in another object
    assert.throws(() => evmSendRequests({ ...action }), NotVerified);
    assert.throws(() => evmSendRequests(action, 4_000_000_000), NotVerified); // past its deadline
    // what was verified is what is handed off: the action cannot be changed after verification
    const unsigned = action.raw["unsigned_action"] as { transactions: { to: string }[] };
    const swapTarget = unsigned.transactions[2]!.to;
    assert.throws(() => {
      unsigned.transactions[2]!.to = "0x9999999999999999999999999999999999999999";
    }, TypeError);
    assert.throws(() => {
      unsigned.transactions.push({ to: EVM });
    }, TypeError);
    assert.equal(evmSendRequests(action)[2]!.to, swapTarget);
  });

  test("modelled bounds and a placeholder fee recipient are refused unless accepted", async () => {
    const quote = await rq(false).quote("base:USDC", "base:ETH", 100);
    await assert.rejects(rq(false).prepare(quote, { base: EVM }), (e: unknown) => {
      assert.ok(e instanceof ActionVerificationFailed);
      const errors = e.findings.filter((f) => f.severity === "error").map((f) => f.code);
      assert.deepEqual(errors, ["bounds_modelled_not_live", "fee_recipient_not_configured"]);
      return true;
    });
  });

  test("409 reapproval_required is its own error with the reason", async () => {
    const quote = await rq().quote("base:USDC", "base:ETH", 100);
    const approval = { ...approvalFor(quote, "one_shot"), quote_fingerprint: "0".repeat(64) };
    await assert.rejects(rq().prepare(quote, { base: EVM }, { approval }), (e: unknown) => {
      assert.ok(e instanceof ReapprovalRequired);
      assert.equal(e.status, 409);
      assert.equal(e.reason, "approval_v3_fingerprint_mismatch");
      return true;
    });
  });

  test("400 is Rejected with its reason class, and a weaker approval is refused before sending", async () => {
    await assert.rejects(rq().quote("base:USDC", "base:NOPE", 100), (e: unknown) => e instanceof Rejected && e.status === 400);
    const quote = await rq().quote("base:USDC", "base:ETH", 100);
    assert.throws(() => approvalFor(quote, "one_shot", { minimumOutputBase: quote.minimumOutputBase - 1n }), /weaker/);
  });

  test("a session: create, read, next action, observe, cancel", async () => {
    const quote = await rq().quote("base:USDC", "arbitrum:USDC", 100);
    let kept: string | null = null;
    const session = await rq().createSession(quote, { base: EVM, arbitrum: ARB }, { onCreated: (h) => (kept = h.sessionId) });
    assert.equal(kept, session.sessionId);
    assert.equal(String(session.handle).includes(session.handle.reveal()), false); // the token is never printed
    assert.equal(JSON.stringify(session.handle).includes(session.handle.reveal()), false);
    const read = await rq().readSession(session.handle);
    assert.equal(read.sessionId, session.sessionId);
    const next = await rq().nextAction(session.handle);
    assert.ok(next !== null);
    assert.equal(next.stepIndex, 0);
    assert.equal(typeof next.inputAmount, "bigint");
    // the test server's RPC URLs point at a closed port: an observation that reaches a chain is a 5xx
    const hashes = [`0x${"ab".repeat(32)}`];
    await assert.rejects(rq().observe(session.handle, { transactionHashes: hashes }), (e: unknown) => {
      assert.ok(e instanceof UpstreamUnavailable, String(e));
      assert.equal(e.reasonClass, "rpc_transport_error:base");
      return true;
    });
    const cancelled = await rq().cancel(session.handle);
    assert.equal(cancelled.sessionId, session.sessionId);
    assert.notEqual(cancelled.status, read.status);
  });
});

describe("error tree and retries (scripted server)", () => {
  async function scripted(answers: [number, Record<string, string>, unknown][]): Promise<{ url: string; hits: string[]; close: () => void }> {
    const hits: string[] = [];
    const server = createServer((req: IncomingMessage, res: ServerResponse) => {
      hits.push(`${req.method} ${req.url}`);
      const [status, headers, body] = answers[Math.min(hits.length - 1, answers.length - 1)]!;
      res.writeHead(status, { "content-type": "application/json", ...headers });
      res.end(JSON.stringify(body));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    return { url: `http://127.0.0.1:${port}`, hits, close: () => server.close() };
  }
  const limited = { error: "rate_limited", reason_class: "rate_limited", message: "slow down" };

  test("an idempotent call waits Retry-After and retries; RateLimited carries it when attempts run out", async () => {
    const s = await scripted([[429, { "retry-after": "3" }, limited], [200, {}, { ok: 1 }]]);
    const waits: number[] = [];
    const rq = new RouteQuoteClient({ baseUrl: s.url, sleep: async (ms) => void waits.push(ms) });
    assert.deepEqual(await rq.status(), { ok: 1 });
    assert.deepEqual(waits, [3000]);
    assert.equal(s.hits.length, 2);
    s.close();
    const t = await scripted([[429, { "retry-after": "7" }, limited]]);
    const rq2 = new RouteQuoteClient({ baseUrl: t.url, sleep: noSleep, retries: 1 });
    await assert.rejects(rq2.status(), (e: unknown) => e instanceof RateLimited && e.retryAfter === 7);
    assert.equal(t.hits.length, 2);
    t.close();
  });

  test("a quote (not idempotent) is never retried", async () => {
    const s = await scripted([[429, { "retry-after": "1" }, limited]]);
    const rq = new RouteQuoteClient({ baseUrl: s.url, sleep: noSleep });
    await assert.rejects(rq.quote("base:USDC", "base:ETH", 100), RateLimited);
    assert.deepEqual(s.hits, ["POST /v2/quote"]);
    s.close();
  });

  test("409 reapproval_required carries funds and quote_from_here", async () => {
    const body = { error: "reapproval_required", reason: "session_requote_below_approved_minimum", funds: { chain: "arbitrum", amount_base: "5" }, quote_from_here: { from_chain: "arbitrum" } };
    const s = await scripted([[409, {}, body]]);
    const rq = new RouteQuoteClient({ baseUrl: s.url, sleep: noSleep });
    await assert.rejects(rq.status(), (e: unknown) => {
      assert.ok(e instanceof ReapprovalRequired);
      assert.equal(e.reason, "session_requote_below_approved_minimum");
      assert.deepEqual(e.funds, body.funds);
      assert.deepEqual(e.quoteFromHere, body.quote_from_here);
      return true;
    });
    assert.equal(s.hits.length, 1); // a 4xx is never retried
    s.close();
  });
});

test("base units are bigint: decimal strings in, never numbers", () => {
  assert.equal(baseUnits("123456789012345678901234567890"), 123456789012345678901234567890n);
  assert.throws(() => baseUnits(5));
  assert.throws(() => baseUnits("1.5"));
  assert.throws(() => baseUnits("-1"));
  assert.equal(toDecimal(2n ** 70n), "1180591620717411303424");
  assert.throws(() => toDecimal(5 as unknown as bigint), TypeError);
});
