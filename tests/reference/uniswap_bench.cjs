// Times @uniswap/v3-sdk Pool.getOutputAmount on a pool given as JSON on stdin; prints JSON results.
// stdin: {"pool": {fee, tick_spacing, sqrt_price, tick_current, liquidity, ticks: [[tick, net, gross]]},
//         "swaps": [[zeroForOne, "amountIn"]], "rounds": 7, "iters": 2000}
"use strict";
const { Pool, TickListDataProvider } = require("@uniswap/v3-sdk");
const { Token, CurrencyAmount } = require("@uniswap/sdk-core");
const JSBI = require("jsbi");

const A = new Token(1, "0x1000000000000000000000000000000000000001", 6, "T0");
const B = new Token(1, "0x2000000000000000000000000000000000000002", 18, "T1");

async function main() {
  const chunks = [];
  for await (const c of process.stdin) chunks.push(c);
  const req = JSON.parse(Buffer.concat(chunks).toString("utf8"));
  const p = req.pool;
  const ticks = p.ticks.map(([index, net, gross]) => ({ index, liquidityNet: net, liquidityGross: gross }));
  const pool = new Pool(A, B, p.fee, p.sqrt_price, p.liquidity, p.tick_current, new TickListDataProvider(ticks, p.tick_spacing));
  const inputs = req.swaps.map(([zfo, amt]) => CurrencyAmount.fromRawAmount(zfo ? pool.token0 : pool.token1, JSBI.BigInt(amt)));
  const outputs = [];
  for (const x of inputs) {
    const [out, next] = await pool.getOutputAmount(x);
    outputs.push({ amount_out: out.quotient.toString(), sqrt_price_after: next.sqrtRatioX96.toString(), tick_after: next.tickCurrent });
  }
  for (let w = 0; w < 3000; w++) await pool.getOutputAmount(inputs[w % inputs.length]);
  const perCase = inputs.map(() => []);
  for (let r = 0; r < req.rounds; r++) {
    for (let i = 0; i < inputs.length; i++) {
      const samples = [];
      for (let k = 0; k < req.iters; k++) {
        const t0 = process.hrtime.bigint();
        await pool.getOutputAmount(inputs[i]);
        samples.push(Number(process.hrtime.bigint() - t0));
      }
      samples.sort((a, b) => a - b);
      perCase[i].push(samples[samples.length >> 1] / 1000);
    }
  }
  const med = (xs) => xs.slice().sort((a, b) => a - b)[xs.length >> 1];
  process.stdout.write(JSON.stringify({ outputs, us_per_call: perCase.map(med) }));
}
main().catch((e) => { console.error(e); process.exit(1); });
