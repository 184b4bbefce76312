// Circle's own builder of the CCTP v2 mint on Solana, run on our inputs.
//
//   node cctp_receive_ix.cjs < request.json > response.json
//
// @circle-fin/adapter-solana builds `receive_message` in two module-private functions, `derivePdas` and
// `buildInstructions` (its public path first fetches the programs' IDLs and state over RPC). This script loads
// the package's own index.cjs unchanged, appends one line exporting those two functions, and runs them with a
// recording stand-in for the Anchor program object: it records the named accounts, the remaining accounts (order
// and flags) and the instruction arguments Circle's code passes. Nothing is fetched.
//
// request:  {"cases": [{"payer", "recipient_owner", "usdc_mint", "source_usdc" (0x EVM address),
//                       "source_domain", "message" (hex), "attestation" (hex), "event_nonce" (0x + 64 hex),
//                       "fee_recipient_token_account"}]}
// response: {"results": [{"ok", "accounts": {name: base58}, "remaining": [{pubkey, isSigner, isWritable}],
//                         "message", "attestation"}]}
"use strict";

const fs = require("fs");
const path = require("path");
const Module = require("module");
const { PublicKey } = require("@solana/web3.js");

const MT = new PublicKey("CCTPV2Sm4AdWt5296sk4P66VBZ7bEhcARwFaaS9YPbeC");
const TMM = new PublicKey("CCTPV2vPZJS2u2BBsUoscuikbYjnpFmbFsvVuJdgUMQe");

function loadCircle() {
  const file = require.resolve("@circle-fin/adapter-solana");
  const src = fs.readFileSync(file, "utf8") + "\nmodule.exports.__routequote = { derivePdas, buildInstructions };\n";
  const m = new Module(file, module);
  m.filename = file;
  m.paths = Module._nodeModulePaths(path.dirname(file));
  m._compile(src, file);
  return m.exports.__routequote;
}

function recordingProgram(programId) {
  return {
    programId,
    methods: {
      receiveMessage(args) {
        const seen = { args };
        const builder = {
          accounts(a) { seen.accounts = a; return builder; },
          remainingAccounts(r) { seen.remaining = r; return builder; },
          async instruction() { return seen; },
        };
        return builder;
      },
    },
  };
}

async function run(c, circle) {
  const payer = new PublicKey(c.payer);
  const pdas = circle.derivePdas(
    { usdcAddress: c.source_usdc, cctp: { domain: c.source_domain } },
    { usdcAddress: c.usdc_mint },
    MT,
    TMM,
  );
  const { ixs } = await circle.buildInstructions(
    {
      adapter: { getAnchorProvider: async () => ({ wallet: { publicKey: payer } }) },
      message: c.message,
      attestation: c.attestation,
      toChain: { usdcAddress: c.usdc_mint },
      destinationAddress: c.recipient_owner,
      context: {},
    },
    { messageTransmitter: recordingProgram(MT), tokenMessenger: { programId: TMM } },
    pdas,
    new PublicKey(c.fee_recipient_token_account),
    c.event_nonce,
  );
  const seen = ixs[0];
  const accounts = {};
  for (const [k, v] of Object.entries(seen.accounts)) accounts[k] = v.toBase58();
  return {
    accounts,
    remaining: seen.remaining.map((r) => ({ pubkey: r.pubkey.toBase58(), isSigner: r.isSigner, isWritable: r.isWritable })),
    message: Buffer.from(seen.args.message).toString("hex"),
    attestation: Buffer.from(seen.args.attestation).toString("hex"),
  };
}

let input = "";
process.stdin.on("data", (d) => (input += d));
process.stdin.on("end", async () => {
  const circle = loadCircle();
  const { cases } = JSON.parse(input);
  const results = [];
  for (const c of cases) {
    try {
      results.push({ ok: true, ...(await run(c, circle)) });
    } catch (e) {
      results.push({ ok: false, error: String(e && e.stack ? e.stack : e) });
    }
  }
  process.stdout.write(JSON.stringify({ results }));
});
