// The verifier's refusals that the shared vectors (tests/integration/test_ts_verifier_equality.py) do not reach:
// input that is not a bundle, and destination mints that are not even shaped as one.
import assert from "node:assert/strict";
import { test } from "node:test";
import { NOT_PORTED_CODE, verifyBundle } from "../src/index.js";

const OPTIONS = {
  intent: { from_chain: "base", from_token: "USDC", to_chain: "arbitrum", to_token: "USDC" },
  wallets: { base: "0x1111111111111111111111111111111111111111", arbitrum: "0x2222222222222222222222222222222222222222" },
  nowUnix: 1_800_000_000,
};
const codes = (bundle: unknown): string[] => verifyBundle(bundle, OPTIONS).map((f) => f.code);

test("what is not a bundle is refused with a finding, never an exception", () => {
  assert.deepEqual(codes([1, 2]), ["bundle_not_object"]);
  assert.deepEqual(codes(null), ["bundle_not_object"]);
  assert.deepEqual(codes({ payload_sha256: "x" }), ["payload_sha256_mismatch", "unsigned_action_missing"]);
});

test("a CCTP destination mint (EVM or Solana) is checked by its own rules, never passed or refused as not ported", () => {
  for (const unsigned_action of [
    { phase: "cctp_destination_mint", safety_receipt: {} },
    { kinds: ["cctp_receive_message"], safety_receipt: {} },
    { phase: "cctp_destination_mint_solana", safety_receipt: {} },
  ]) {
    const found = codes({ unsigned_action, server_signing: false, route: "base:USDC->arbitrum:USDC", step_index: 0 });
    assert.ok(!found.includes(NOT_PORTED_CODE), found.join(","));
    assert.ok(found.includes("payload_sha256_mismatch") && found.length > 2, found.join(","));
  }
});
