// Reference oracle for routequote's CLMM math: runs the venues' own SDK code.
//
//   node clmm_ref.cjs < request.json > response.json
//
// request:  {"ops": [op, ...]} with op one of
//   {"op": "swap", "venue": "orca_whirlpool"|"raydium_clmm", "pool": POOL, "swaps": [[zeroForOne, "amountIn"], ...]}
//   {"op": "tick", "venue": ..., "ticks": [int, ...], "sqrt_prices": ["int", ...]}
// POOL: {"fee_pips", "tick_spacing", "sqrt_price" (str), "tick_current", "liquidity" (str),
//        "ticks": [[tick, "liquidityNet"], ...], "tick_array_range": [first, last] | null}
// response: {"results": [...]} in request order; big integers are decimal strings.
"use strict";

const orca = require("@orca-so/whirlpools-core");
const raydium = require("@raydium-io/raydium-sdk-v2");
const BN = require("bn.js");
const { PublicKey } = require("@solana/web3.js");

const ORCA_TICK_ARRAY_SIZE = 88;
const RAY_TICK_ARRAY_SIZE = 60;

function floorDiv(a, b) {
  return Math.floor(a / b);
}

function errText(e) {
  return typeof e === "string" ? e : e && e.message ? e.message : String(e);
}

// ------------------------------------------------------------------------------------ Orca
function orcaTickArrays(pool) {
  const span = ORCA_TICK_ARRAY_SIZE * pool.tick_spacing;
  const nets = new Map(pool.ticks.map(([t, n]) => [t, BigInt(n)]));
  let [first, last] = pool.tick_array_range || [null, null];
  if (first === null) {
    const lo = Math.min(pool.tick_current, ...pool.ticks.map((x) => x[0]));
    const hi = Math.max(pool.tick_current, ...pool.ticks.map((x) => x[0]));
    first = floorDiv(lo, span) * span;
    last = floorDiv(hi, span) * span;
  }
  const arrays = [];
  for (let start = first; start <= last; start += span) {
    const ticks = [];
    for (let i = 0; i < ORCA_TICK_ARRAY_SIZE; i++) {
      const t = start + i * pool.tick_spacing;
      const net = nets.get(t);
      ticks.push({
        initialized: net !== undefined,
        liquidityNet: net === undefined ? 0n : net,
        liquidityGross: net === undefined ? 0n : (net < 0n ? -net : net) + 1n,
        feeGrowthOutsideA: 0n,
        feeGrowthOutsideB: 0n,
        rewardGrowthsOutside: [0n, 0n, 0n],
      });
    }
    arrays.push({ startTickIndex: start, ticks });
  }
  return arrays;
}

function orcaWhirlpool(pool) {
  const seed = new Uint8Array([pool.tick_spacing & 0xff, (pool.tick_spacing >> 8) & 0xff]);
  return {
    feeTierIndexSeed: seed,
    tickSpacing: pool.tick_spacing,
    feeRate: pool.fee_pips,
    protocolFeeRate: 0,
    liquidity: BigInt(pool.liquidity),
    sqrtPrice: BigInt(pool.sqrt_price),
    tickCurrentIndex: pool.tick_current,
    feeGrowthGlobalA: 0n,
    feeGrowthGlobalB: 0n,
    rewardLastUpdatedTimestamp: 0n,
    rewardInfos: [0, 1, 2].map(() => ({ emissionsPerSecondX64: 0n, growthGlobalX64: 0n })),
  };
}

function orcaSwap(pool, swaps) {
  const whirlpool = orcaWhirlpool(pool);
  const arrays = orcaTickArrays(pool);
  return swaps.map(([zeroForOne, amount]) => {
    try {
      const q = orca.swapQuoteByInputToken(BigInt(amount), zeroForOne, 0, whirlpool, undefined, arrays, 0n);
      return {
        ok: true,
        amount_in: q.tokenIn.toString(),
        amount_out: q.tokenEstOut.toString(),
        fee_amount: q.tradeFee.toString(),
      };
    } catch (e) {
      return { ok: false, error: errText(e), stack: process.env.RQ_STACK ? String(e.stack) : undefined };
    }
  });
}

// --------------------------------------------------------------------------------- Raydium
function raydiumTickArrayMap(pool) {
  const span = RAY_TICK_ARRAY_SIZE * pool.tick_spacing;
  const byStart = new Map();
  const range = pool.tick_array_range;
  for (const [t, n] of pool.ticks) {
    const start = floorDiv(t, span) * span;
    if (range && (start < range[0] || start > range[1])) continue;
    if (!byStart.has(start)) byStart.set(start, new Map());
    byStart.get(start).set(t, new BN(n));
  }
  const arrays = [];
  for (const [start, nets] of byStart) {
    const ticks = [];
    for (let i = 0; i < RAY_TICK_ARRAY_SIZE; i++) {
      const t = start + i * pool.tick_spacing;
      const net = nets.get(t);
      ticks.push({
        tick: t,
        liquidityNet: net === undefined ? new BN(0) : net,
        liquidityGross: net === undefined ? new BN(0) : net.abs().addn(1),
        feeGrowthOutsideX64A: new BN(0),
        feeGrowthOutsideX64B: new BN(0),
        rewardGrowthsOutsideX64: [new BN(0), new BN(0), new BN(0)],
        ordersAmount: new BN(0),
        partFilledOrdersRemaining: new BN(0),
        unfilledRatioX64: new BN(0),
        orderPhase: new BN(0),
      });
    }
    arrays.push({ address: PublicKey.default, value: { startTickIndex: start, ticks } });
  }
  return arrays;
}

function raydiumPoolInfo(pool) {
  return {
    sqrtPriceX64: new BN(pool.sqrt_price),
    tickCurrent: pool.tick_current,
    liquidity: new BN(pool.liquidity),
    tickSpacing: pool.tick_spacing,
    feeGrowthGlobalX64A: new BN(0),
    feeGrowthGlobalX64B: new BN(0),
    feeOn: 0,
    dynamicFeeInfo: {
      filterPeriod: 0,
      decayPeriod: 0,
      reductionFactor: 0,
      dynamicFeeControl: 0,
      maxVolatilityAccumulator: 0,
      tickSpacingIndexReference: 0,
      volatilityReference: 0,
      volatilityAccumulator: 0,
      lastUpdateTimestamp: new BN(0),
    },
  };
}

function raydiumSwap(pool, swaps) {
  const poolInfo = raydiumPoolInfo(pool);
  const all = raydiumTickArrayMap(pool);
  const currentStart = raydium.TickArrayUtil.getTickArrayStartIndex(pool.tick_current, pool.tick_spacing);
  const configInfo = { tradeFeeRate: pool.fee_pips, protocolFeeRate: 120000, fundFeeRate: 40000 };
  return swaps.map(([zeroForOne, amount]) => {
    // Same selection and ordering as PoolUtils.getOutputAmountAndRemainAccounts.
    const tickArrays = all
      .filter((a) => (zeroForOne ? a.value.startTickIndex <= currentStart : a.value.startTickIndex >= currentStart))
      .sort((a, b) => (zeroForOne ? b.value.startTickIndex - a.value.startTickIndex : a.value.startTickIndex - b.value.startTickIndex));
    try {
      const r = raydium.swapInternal({
        programId: PublicKey.default,
        poolId: PublicKey.default,
        poolInfo,
        tickArrays,
        configInfo,
        tickarrayBitmapExtension: undefined,
        amountSpecified: new BN(amount),
        sqrtPriceLimitX64: new BN(0),
        zeroForOne,
        isBaseInput: true,
        blockTimestamp: 0,
        includeExtraTickArrays: false,
      });
      return {
        ok: true,
        all_trade: r.allTrade,
        amount_in: new BN(amount).sub(r.amountSpecifiedRemaining).toString(),
        amount_out: r.amountCalculated.toString(),
        fee_amount: r.feeAmount.toString(),
        sqrt_price_after: r.sqrtPriceX64.toString(),
        tick_after: r.tickCurrent,
        liquidity_after: r.liquidity.toString(),
      };
    } catch (e) {
      return { ok: false, error: errText(e), stack: process.env.RQ_STACK ? String(e.stack) : undefined };
    }
  });
}

// ------------------------------------------------------------------------------- tick math
function tickOp(op) {
  const out = { sqrt_at_tick: [], tick_at_sqrt: [] };
  for (const t of op.ticks || []) {
    try {
      out.sqrt_at_tick.push(
        op.venue === "orca_whirlpool"
          ? orca.tickIndexToSqrtPrice(t).toString()
          : raydium.TickUtil.getSqrtPriceAtTick(t).toString(),
      );
    } catch (e) {
      out.sqrt_at_tick.push(null);
    }
  }
  for (const p of op.sqrt_prices || []) {
    try {
      out.tick_at_sqrt.push(
        op.venue === "orca_whirlpool" ? orca.sqrtPriceToTickIndex(BigInt(p)) : raydium.TickUtil.getTickAtSqrtPrice(new BN(p)),
      );
    } catch (e) {
      out.tick_at_sqrt.push(null);
    }
  }
  return out;
}

function answer(req) {
  return req.ops.map((op) => {
    if (op.op === "tick") return tickOp(op);
    if (op.venue === "orca_whirlpool") return orcaSwap(op.pool, op.swaps);
    if (op.venue === "raydium_clmm") return raydiumSwap(op.pool, op.swaps);
    throw new Error(`unsupported op ${JSON.stringify(op).slice(0, 80)}`);
  });
}

// `--lines`: one request per stdin line, one `{"results": [...]}` per stdout line (a long-lived oracle for the
// route suite's Solana swap simulator, tests/e2e/_venue_model.py).
function serveLines() {
  const rl = require("readline").createInterface({ input: process.stdin });
  rl.on("line", (line) => {
    let out;
    try {
      out = { results: answer(JSON.parse(line)) };
    } catch (e) {
      out = { error: errText(e) };
    }
    process.stdout.write(JSON.stringify(out) + "\n");
  });
}

function main() {
  if (process.argv.includes("--lines")) return serveLines();
  const chunks = [];
  process.stdin.on("data", (c) => chunks.push(c));
  process.stdin.on("end", () => {
    const results = answer(JSON.parse(Buffer.concat(chunks).toString("utf8")));
    process.stdout.write(JSON.stringify({ results }));
  });
}

main();
