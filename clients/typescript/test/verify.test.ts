// The verifier's refusals that the shared vectors (tests/integration/test_ts_verifier_equality.py) do not reach:
// input that is not a bundle, and the kinds this port does not check yet, which it must refuse, never pass.
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

test("a CCTP destination mint (EVM or Solana) is refused as not ported, whatever else it says", () => {
  for (const unsigned_action of [
    { phase: "cctp_destination_mint", safety_receipt: {} },
    { kinds: ["cctp_receive_message"], safety_receipt: {} },
    { phase: "cctp_destination_mint_solana", safety_receipt: {} },
  ]) {
    const findings = verifyBundle({ unsigned_action, server_signing: false }, OPTIONS);
    assert.deepEqual(findings.map((f) => [f.code, f.severity]), [[NOT_PORTED_CODE, "error"]]);
  }
});
