// The Solana wallet handoff: a verified Solana action (a swap, and a CCTP burn with its event signer) from a real
// server as a @solana/kit transaction message. The message carries the fee payer and exactly the verified
// instructions; once the caller adds a blockhash it compiles to a transaction whose signers are the action's
// required signers, within Solana's packet size. Nothing is signed; an unverified action is refused.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { type Blockhash, compileTransaction, getBase64EncodedWireTransaction, setTransactionMessageLifetimeUsingBlockhash } from "@solana/kit";
import { NotVerified, RouteQuoteClient, solanaTransactionMessage } from "../src/index.js";

const BASE_URL = process.env["RQ_TS_BASE_URL"];
const SOLANA = "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM";
const EVENT_SIGNER = "HN7cABqLq46Es1jh92dQQisAq662SmxELLLsHHe4YWrH";
const EVM = "0x1111111111111111111111111111111111111111";
const BLOCKHASH = "EETubP5AKHgjPAhzPAFcb8BAY1hMH639CWCFTqi3hq1k" as Blockhash;
const MAX_PACKET = 1232;

describe("Solana handoff against a running server", { skip: BASE_URL === undefined ? "RQ_TS_BASE_URL not set" : false }, () => {
  const rq = (): RouteQuoteClient => new RouteQuoteClient({ baseUrl: BASE_URL!, acceptModelledBounds: true, acceptUnconfiguredFeeRecipient: true, sleep: async () => {} });

  for (const [from, to, wallets, signer] of [
    ["solana:USDC", "solana:SOL", { solana: SOLANA }, undefined],
    ["solana:USDC", "base:USDC", { solana: SOLANA, base: EVM }, EVENT_SIGNER],
  ] as const) {
    test(`${from} -> ${to}: the verified instructions, your fee payer, your signers`, async () => {
      const quote = await rq().quote(from, to, 100);
      const action = await rq().prepare(quote, wallets, signer === undefined ? {} : { eventSignerPublic: signer });
      const unsigned = action.raw["unsigned_action"] as { instructions: { programId: string; keys: { pubkey: string; isSigner: boolean; isWritable: boolean }[]; data: string }[]; requiredSigners: string[] };
      const { message, requiredSigners } = solanaTransactionMessage(action);
      assert.equal(message.feePayer.address, SOLANA);
      assert.deepEqual(requiredSigners, unsigned.requiredSigners);
      assert.deepEqual(requiredSigners, signer === undefined ? [SOLANA] : [SOLANA, signer]);
      assert.equal(message.instructions.length, unsigned.instructions.length);
      message.instructions.forEach((ix, i) => {
        const want = unsigned.instructions[i]!;
        assert.equal(ix.programAddress, want.programId);
        assert.equal(Buffer.from(ix.data ?? []).toString("base64"), want.data);
        assert.deepEqual(
          (ix.accounts ?? []).map((a) => [a.address, a.role]),
          want.keys.map((k) => [k.pubkey, (k.isSigner ? 2 : 0) + (k.isWritable ? 1 : 0)]),
        );
      });
      // the caller adds the blockhash; compiled, the transaction awaits exactly the required signatures
      const tx = compileTransaction(setTransactionMessageLifetimeUsingBlockhash({ blockhash: BLOCKHASH, lastValidBlockHeight: 1n }, message));
      assert.deepEqual(Object.keys(tx.signatures).sort(), [...requiredSigners].sort());
      assert.ok(Object.values(tx.signatures).every((s) => s === null), "nothing is signed");
      const wire = Buffer.from(getBase64EncodedWireTransaction(tx), "base64");
      assert.ok(wire.length <= MAX_PACKET, `${wire.length} bytes`);
      // anything the client did not verify is refused, and a past deadline too
      assert.throws(() => solanaTransactionMessage({ ...action }), NotVerified);
      assert.throws(() => solanaTransactionMessage(action, 4_000_000_000), NotVerified);
      // and the verified instructions cannot be changed before the handoff (an account flag, here)
      assert.throws(() => {
        unsigned.instructions[0]!.keys[0]!.isWritable = !unsigned.instructions[0]!.keys[0]!.isWritable;
      }, TypeError);
    });
  }
});
