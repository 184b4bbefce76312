// JSON integers beyond Number.MAX_SAFE_INTEGER (2^53 - 1). The served answers carry one amount as a JSON integer:
// `intent.estimated_input_base` of a quote (and its copy `continuation_v3.intent.estimated_input_base`), which the
// contract fixes as an integer and which for wei passes 2^53 above about $28 of ETH. JSON.parse rounds such an
// integer to the nearest binary64, silently. The client reads every integer literal exactly, as Python's json
// does: the quote's amount is always a bigint, equal to its decimal twin and to the summary (else ResponseInvalid,
// as the Python client), and an integer beyond 2^53 anywhere a number is expected is refused (ResponseInvalid).
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ResponseInvalid, RouteQuoteClient, parseSessionEvent, parseStrictJson, readStrictJson } from "../src/index.js";

const BASE_URL = process.env["RQ_TS_BASE_URL"];
const EVM = "0x1111111111111111111111111111111111111111";
const noSleep = async (): Promise<void> => {};
const TWO_53 = 2n ** 53n;

/** A fetch that passes everything through the real server, rewriting the body of answers to `path`. */
function rewriting(path: string, edit: (text: string) => string, count: { n: number }): typeof globalThis.fetch {
  return (async (url: string | URL | Request, init?: RequestInit) => {
    const resp = await globalThis.fetch(url, init);
    const text = await resp.text();
    if (!String(url).endsWith(path)) return new Response(text, { status: resp.status, headers: resp.headers });
    const changed = edit(text);
    if (changed !== text) count.n++;
    return new Response(changed, { status: resp.status, headers: resp.headers });
  }) as typeof globalThis.fetch;
}

const scripted = (body: string): typeof globalThis.fetch =>
  (async () => new Response(body, { status: 200, headers: { "content-type": "application/json" } })) as typeof globalThis.fetch;

test("an integer literal beyond 2^53 is read exactly, as a bigint; every other number as JSON.parse reads it", () => {
  const text = '{"a": 9007199254740993, "b": [-9007199254740993, 9007199254740991, 12], "c": 1.5, "d": 1e20, "e": 12345678901234567890.0, "f": "9007199254740993"}';
  assert.deepEqual(parseStrictJson(text), {
    a: 9007199254740993n,
    b: [-9007199254740993n, 9007199254740991, 12],
    c: 1.5,
    d: 1e20, // not an integer literal: a float, as Python's json reads it
    e: 12345678901234567890.0,
    f: "9007199254740993",
  });
  assert.deepEqual(readStrictJson(text).bigIntegers, ["$.a", "$.b[0]"]);
  assert.equal(parseStrictJson("320456329813654644"), 320456329813654644n);
  // a key named __proto__ stays an own key (JSON.parse's rule), and its big integer is still exact
  const proto = parseStrictJson('{"__proto__": {"x": 9007199254740993}}') as Record<string, unknown>;
  assert.equal(Object.getPrototypeOf(proto), Object.prototype);
  assert.deepEqual(Object.getOwnPropertyDescriptor(proto, "__proto__")?.value, { x: 9007199254740993n });
});

test("an integer beyond 2^53 where the contract has a number is ResponseInvalid (scripted capabilities)", async () => {
  const rq = new RouteQuoteClient({ baseUrl: "http://127.0.0.1:9", fetch: scripted('{"status": "capped_public_agent_release", "directed_conversion_routes": 72000000000000000001}'), sleep: noSleep });
  await assert.rejects(rq.capabilities(), (e: unknown) => e instanceof ResponseInvalid && /\$\.directed_conversion_routes is an integer beyond 2\^53/.test(e.message));
});

test("an event's integers are counts: one beyond 2^53 is ResponseInvalid, where JSON.parse gave a rounded number", () => {
  const event = '{"id": "s-1:1", "session_id": "s-1", "sequence": 1, "type": "create", "status": "action_ready", "previous_status": null, "step_index": 0, "next_operation": "submit_current_action", "transactions": [], "funds": null, "outcome": null, "terminal": false, "final_on_chain": null, "at": "2026-11-22T05:00:00.000Z"';
  assert.equal(parseSessionEvent(`${event}}`).sequence, 1);
  assert.throws(() => parseSessionEvent(`${event}, "attempt": 9007199254740993}`), (e: unknown) => e instanceof ResponseInvalid && /\$\.attempt is an integer beyond 2\^53/.test(e.message));
});

describe("against a running server", { skip: BASE_URL === undefined ? "RQ_TS_BASE_URL not set" : false }, () => {
  const options = { baseUrl: BASE_URL!, acceptModelledBounds: true, acceptUnconfiguredFeeRecipient: true, sleep: noSleep };

  test("a wei quote above 2^53 reaches the caller exact: raw.intent.estimated_input_base is the decimal twin's bigint", async () => {
    const quote = await new RouteQuoteClient(options).quote("base:ETH", "base:USDC", 1000);
    const raw = quote.raw;
    const twin = BigInt(raw.estimated_input_base_decimal as string);
    assert.ok(twin > TWO_53, `the test needs an amount above 2^53, got ${twin}`);
    const typed: bigint = raw.intent.estimated_input_base; // the type says so too (a number would not compile)
    assert.equal(typeof typed, "bigint");
    assert.equal(raw.intent.estimated_input_base, twin);
    assert.equal(raw.continuation_v3.intent.estimated_input_base, twin);
    assert.equal(quote.estimatedInputBase, twin);
    // a small one is a bigint too: the amount's type does not depend on its size
    const small = await new RouteQuoteClient(options).quote("base:ETH", "base:USDC", 1);
    assert.ok(small.estimatedInputBase < TWO_53);
    assert.equal(small.raw.intent.estimated_input_base, small.estimatedInputBase);
  });

  test("the integer and its decimal twin must agree with the summary (ResponseInvalid, as the Python client)", async () => {
    for (const [edit, problem] of [
      // the integer one more than its twin, in the quote's own intent (the first occurrence)
      [(t: string) => t.replace(/"estimated_input_base":([0-9]+)/, (_m, d: string) => `"estimated_input_base":${BigInt(d) + 1n}`), /^intent\.estimated_input_base = [0-9]+ differs from the summary's [0-9]+$/],
      // the copy in continuation_v3 (the second occurrence)
      [(t: string) => { let i = 0; return t.replace(/"estimated_input_base":([0-9]+)/g, (m, d: string) => (i++ === 1 ? `"estimated_input_base":${BigInt(d) - 1n}` : m)); }, /^continuation_v3\.intent\.estimated_input_base = [0-9]+ differs from the summary's [0-9]+$/],
      // the decimal twin beside intent
      [(t: string) => t.replace(/"estimated_input_base_decimal":"([0-9]+)"/, (_m, d: string) => `"estimated_input_base_decimal":"${BigInt(d) + 64n}"`), /^estimated_input_base_decimal = '[0-9]+' differs from the summary's [0-9]+$/],
      // a fraction where the integer belongs
      [(t: string) => t.replace(/"estimated_input_base":([0-9]+)/, (_m, d: string) => `"estimated_input_base":${d}.5`), /^intent\.estimated_input_base = [0-9.e+]+ differs from the summary's [0-9]+$/],
    ] as const) {
      const count = { n: 0 };
      const rq = new RouteQuoteClient({ ...options, fetch: rewriting("/v2/quote", edit, count) });
      await assert.rejects(rq.quote("base:ETH", "base:USDC", 1000), (e: unknown) => {
        assert.ok(e instanceof ResponseInvalid, String(e));
        assert.equal(e.what, "quote");
        assert.ok(e.problems.some((p) => problem.test(p)), e.problems.join(" | "));
        return true;
      });
      assert.equal(count.n, 1);
    }
  });

  test("an integer beyond 2^53 in a prepared action is ResponseInvalid, not a rounded number for the verifier", async () => {
    const quote = await new RouteQuoteClient(options).quote("base:USDC", "base:ETH", 100);
    const count = { n: 0 };
    const edit = (t: string): string => t.replace(/"chainId":8453/, '"chainId":9007199254748453');
    const rq = new RouteQuoteClient({ ...options, fetch: rewriting("/v2/prepare", edit, count) });
    await assert.rejects(rq.prepare(quote, { base: EVM }), (e: unknown) => e instanceof ResponseInvalid && /\$\.unsigned_action\.chainId is an integer beyond 2\^53/.test(e.message));
    assert.equal(count.n, 1);
  });
});
