// verifyWebhook's refusals that need no signature (the signature checks run against the server's own and
// Python-signed deliveries in tests/integration/test_ts_events.py).
import assert from "node:assert/strict";
import { test } from "node:test";
import { WebhookInvalid, verifyWebhook } from "../src/index.js";

const SECRET = `whsec_${Buffer.alloc(32, 7).toString("base64")}`;
const HEADERS = { "webhook-id": "s:1", "webhook-timestamp": "1700000000", "webhook-signature": "v1,AAAA" };

test("a missing or repeated signature header, a body that is not UTF-8, or a secret that is not whsec_ is refused", () => {
  for (const drop of Object.keys(HEADERS)) {
    const headers: Record<string, string> = { ...HEADERS };
    delete headers[drop];
    assert.throws(() => verifyWebhook(SECRET, "{}", headers), (e: unknown) => e instanceof WebhookInvalid && e.message.includes(drop));
  }
  assert.throws(() => verifyWebhook(SECRET, "{}", { ...HEADERS, "webhook-signature": ["v1,AAAA", "v1,BBBB"] }), /given 2 times/);
  assert.throws(() => verifyWebhook(SECRET, "{}", { ...HEADERS, "Webhook-Id": "s:2" }), /given twice/);
  assert.throws(() => verifyWebhook(SECRET, new Uint8Array([0x7b, 0xff, 0x7d]), HEADERS), /not UTF-8/);
  assert.throws(() => verifyWebhook("not-a-secret", "{}", HEADERS), TypeError);
  // well-formed but not signed by this secret
  assert.throws(() => verifyWebhook(SECRET, "{}", new Headers({ ...HEADERS, "webhook-timestamp": String(Math.floor(Date.now() / 1000)) })), /No matching signature/);
});
