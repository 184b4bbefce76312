// Runs the TypeScript verifier over a shared-vector corpus written by tests/support/ts_vectors.py and prints
// {"<id>": [[code, severity], ...]} as JSON. Amounts in options stay decimal strings / bigint, never numbers.
// Usage: node scripts/verify-corpus.mjs <corpus.json>   (after `npm run build`)
import { readFile } from "node:fs/promises";
import { parseStrictJson, verifyBundle, verifySettlementPlan } from "../dist/src/index.js";

// a settlement plan's options: the integers that may pass 2^53 arrive as decimal strings and become bigint
const BIGINT_OPTIONS = ["minimumEthOut", "amountIn", "salt", "maxGasCostWei"];

// read as the client reads an answer: an integer beyond 2^53 stays exact (a bigint) instead of being rounded
const corpus = parseStrictJson(await readFile(process.argv[2], "utf8"));
const out = {};
for (const entry of corpus) {
  if (entry.check === "settlement") {
    const options = { ...entry.options };
    for (const key of BIGINT_OPTIONS) if (typeof options[key] === "string") options[key] = BigInt(options[key]);
    out[entry.id] = verifySettlementPlan(entry.plan, options).map((f) => [f.code, f.severity]);
    continue;
  }
  const { sessionActualInputBase, ...options } = entry.options;
  if (sessionActualInputBase !== null && sessionActualInputBase !== undefined) {
    options.sessionActualInputBase = BigInt(sessionActualInputBase); // a decimal string: base units are bigint
  }
  out[entry.id] = verifyBundle(entry.bundle, options).map((f) => [f.code, f.severity]);
}
process.stdout.write(JSON.stringify(out));
