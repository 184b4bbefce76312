// Runs the TypeScript verifier over a shared-vector corpus written by tests/support/ts_vectors.py and prints
// {"<id>": [[code, severity], ...]} as JSON. Amounts in options stay decimal strings / bigint, never numbers.
// Usage: node scripts/verify-corpus.mjs <corpus.json>   (after `npm run build`)
import { readFile } from "node:fs/promises";
import { verifyBundle } from "../dist/src/index.js";

const corpus = JSON.parse(await readFile(process.argv[2], "utf8"));
const out = {};
for (const entry of corpus) {
  const { sessionActualInputBase, ...options } = entry.options;
  if (sessionActualInputBase !== null && sessionActualInputBase !== undefined) {
    options.sessionActualInputBase = BigInt(sessionActualInputBase); // a decimal string: base units are bigint
  }
  out[entry.id] = verifyBundle(entry.bundle, options).map((f) => [f.code, f.severity]);
}
process.stdout.write(JSON.stringify(out));
