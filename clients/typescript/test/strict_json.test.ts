// Duplicate JSON keys: the client reads every answer strictly, as the Python client does (object_pairs_hook
// refusing a repeated key), so an answer or an action document naming a key twice is refused before anything
// reads it: a last-value reader and a first-value reader would otherwise act on different documents.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { DuplicateKey, ResponseInvalid, RouteQuoteClient, parseStrictJson } from "../src/index.js";

const BASE_URL = process.env["RQ_TS_BASE_URL"];
const EVM = "0x1111111111111111111111111111111111111111";
const STRANGER = "0x9999999999999999999999999999999999999999";
const noSleep = async (): Promise<void> => {};

test("a repeated key is refused at any depth, also when written with escapes", () => {
  assert.deepEqual(parseStrictJson('{"a": 1, "b": [{"a": 2}, {"c": {"a": 3}}]}'), { a: 1, b: [{ a: 2 }, { c: { a: 3 } }] });
  assert.throws(() => parseStrictJson('{"a": 1, "a": 2}'), (e: unknown) => e instanceof DuplicateKey && /duplicate key \$\.a$/.test(e.message));
  assert.throws(() => parseStrictJson('{"x": [{"k": 1}, {"k": 1, "k": 1}]}'), /duplicate key \$\.x\[1\]\.k/);
  assert.throws(() => parseStrictJson('{"recipient": "a", "recipi\\u0065nt": "b"}'), DuplicateKey);
  // not JSON at all: JSON.parse's own error (NaN, comments and trailing commas are not JSON either)
  for (const bad of ["{", '{"a": NaN}', '{"a": 1,}', '{"a": 1 /* c */}']) assert.throws(() => parseStrictJson(bad), SyntaxError);
});

test("an answer with a repeated key is ResponseInvalid (scripted answer)", async () => {
  const fetch = (async () => new Response('{"versions": ["v2"], "versions": ["v9"]}', { status: 200, headers: { "content-type": "application/json" } })) as typeof globalThis.fetch;
  const rq = new RouteQuoteClient({ baseUrl: "http://127.0.0.1:9", fetch, sleep: noSleep });
  await assert.rejects(rq.capabilities(), (e: unknown) => e instanceof ResponseInvalid && /duplicate key \$\.versions/.test(e.message));
});

describe("against a running server", { skip: BASE_URL === undefined ? "RQ_TS_BASE_URL not set" : false }, () => {
  test("a prepared action whose unsigned_action names its recipient twice is refused before verification", async () => {
    let tampered = 0;
    // a proxy that repeats `recipient` inside the action, the stranger last (what JSON.parse would keep)
    const fetch = (async (url: string | URL | Request, init?: RequestInit) => {
      const resp = await globalThis.fetch(url, init);
      const text = await resp.text();
      if (!String(url).endsWith("/v2/prepare")) return new Response(text, { status: resp.status, headers: resp.headers });
      const doubled = text.replace(/"recipient":("0x[0-9a-fA-F]{40}")/, (_m, own: string) => `"recipient":${own},"recipient":"${STRANGER}"`);
      if (doubled !== text) tampered++;
      return new Response(doubled, { status: resp.status, headers: resp.headers });
    }) as typeof globalThis.fetch;
    const options = { baseUrl: BASE_URL!, acceptModelledBounds: true, acceptUnconfiguredFeeRecipient: true, sleep: noSleep };
    const quote = await new RouteQuoteClient(options).quote("base:USDC", "base:ETH", 100);
    await assert.rejects(new RouteQuoteClient({ ...options, fetch }).prepare(quote, { base: EVM }), (e: unknown) => e instanceof ResponseInvalid && /duplicate key \$\.unsigned_action\.recipient/.test(e.message));
    assert.equal(tampered, 1);
  });
});
