import assert from "node:assert/strict";
import { test } from "node:test";
import { canonicalJson, canonicalSha256 } from "../src/index.js";

// expected values written by Python's json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
// and hashlib.sha256: an implementation independent of the one under test
const VALUE = { b: [1, true, null, "é\u2028"], a: { z: "x", y: -3 }, "\u{1F600}": 1, "\uFF5E": 2 };

test("canonical JSON sorts keys by code point as Python does", () => {
  assert.equal(canonicalJson(VALUE), '{"a":{"y":-3,"z":"x"},"b":[1,true,null,"é\u2028"],"\uFF5E":2,"\u{1F600}":1}');
  assert.equal(canonicalSha256(VALUE), "b640cee22d6de32c46b3d53b91245ad53d97b927194f9c9b28abbc10d8f1fb76");
});

test("a bigint or a non-finite number has no canonical form", () => {
  assert.throws(() => canonicalJson({ amount: 1n }), TypeError);
  assert.throws(() => canonicalJson([Number.NaN]), RangeError);
});
