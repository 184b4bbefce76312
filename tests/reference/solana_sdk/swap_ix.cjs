// Reference builder for routequote's Solana swap instructions: the venues' own SDK code builds them.
//
//   node swap_ix.cjs < request.json > response.json
//
// request:  {"cases": [case, ...]}; case is one of
//   {"venue": "orca", "owner", "whirlpool", "tick_current", "tick_spacing", "a_to_b", "amount", "threshold",
//    "mint_a", "mint_b", "vault_a", "vault_b", "token_program_a", "token_program_b"}
//   {"venue": "raydium", "owner", "pool", "amm_config", "observation", "mint_0", "mint_1", "vault_0",
//    "vault_1", "zero_for_one", "amount", "threshold", "fee_pips", "tick_spacing", "sqrt_price" (str),
//    "tick_current", "liquidity" (str), "ticks": [[tick, "liquidityNet"], ...]}
// response: {"results": [...]} in request order. Each result holds the instruction(s) the SDK built,
//   {"programId", "keys": [{"pubkey", "isSigner", "isWritable"}], "data" (hex)}; Orca cases carry two:
//   "legacy" (@orca-so/whirlpools-sdk `WhirlpoolIx.swapV2Ix`) and "client" (@orca-so/whirlpools-client
//   `getSwapV2Instruction`, Codama-generated, fed the same accounts).
"use strict";

const BN = require("bn.js");
const { Connection, Keypair, PublicKey } = require("@solana/web3.js");
const { AnchorProvider, Wallet } = require("@coral-xyz/anchor");
const { getAssociatedTokenAddressSync } = require("@solana/spl-token");
const orcaLegacy = require("@orca-so/whirlpools-sdk");
const orcaClient = require("@orca-so/whirlpools-client");
const kit = require("@solana/kit");
const raydium = require("@raydium-io/raydium-sdk-v2");

const RAY_TICK_ARRAY_SIZE = 60;
const ORCA_PROGRAM = new PublicKey("whirLbMiicVdio4qvUfM5KAg6Ct8VwpYzGff3uctyCc");
const RAYDIUM_PROGRAM = new PublicKey("CAMMCzo5YL8w4VFF8KVHrK22GGUsp5VTaW7grrKgrWqK");

function web3Ix(ix) {
  return {
    programId: ix.programId.toBase58(),
    keys: ix.keys.map((k) => ({ pubkey: k.pubkey.toBase58(), isSigner: k.isSigner, isWritable: k.isWritable })),
    data: Buffer.from(ix.data).toString("hex"),
  };
}

// ------------------------------------------------------------------------------------ Orca
const connection = new Connection("http://127.0.0.1:9"); // never called: instruction building is offline
const ctx = orcaLegacy.WhirlpoolContext.withProvider(
  new AnchorProvider(connection, new Wallet(Keypair.generate()), {}),
);

function orcaCase(c) {
  const owner = new PublicKey(c.owner);
  const whirlpool = new PublicKey(c.whirlpool);
  const [mintA, mintB] = [new PublicKey(c.mint_a), new PublicKey(c.mint_b)];
  const [progA, progB] = [new PublicKey(c.token_program_a), new PublicKey(c.token_program_b)];
  const ownerA = getAssociatedTokenAddressSync(mintA, owner, false, progA);
  const ownerB = getAssociatedTokenAddressSync(mintB, owner, false, progB);
  const arrays = orcaLegacy.SwapUtils.getTickArrayPublicKeys(
    c.tick_current, c.tick_spacing, c.a_to_b, ORCA_PROGRAM, whirlpool,
  );
  const oracle = orcaLegacy.PDAUtil.getOracle(ORCA_PROGRAM, whirlpool).publicKey;
  const limit = orcaLegacy.SwapUtils.getDefaultSqrtPriceLimit(c.a_to_b);
  const legacy = orcaLegacy.WhirlpoolIx.swapV2Ix(ctx.program, {
    amount: new BN(c.amount),
    otherAmountThreshold: new BN(c.threshold),
    sqrtPriceLimit: limit,
    amountSpecifiedIsInput: true,
    aToB: c.a_to_b,
    tickArray0: arrays[0],
    tickArray1: arrays[1],
    tickArray2: arrays[2],
    whirlpool,
    tokenMintA: mintA,
    tokenMintB: mintB,
    tokenOwnerAccountA: ownerA,
    tokenOwnerAccountB: ownerB,
    tokenVaultA: new PublicKey(c.vault_a),
    tokenVaultB: new PublicKey(c.vault_b),
    tokenProgramA: progA,
    tokenProgramB: progB,
    oracle,
    tokenAuthority: owner,
  }).instructions;
  if (legacy.length !== 1) throw new Error(`swapV2Ix built ${legacy.length} instructions`);
  const a = (pk) => kit.address(pk.toBase58());
  const client = orcaClient.getSwapV2Instruction({
    tokenProgramA: a(progA),
    tokenProgramB: a(progB),
    tokenAuthority: kit.createNoopSigner(a(owner)),
    whirlpool: a(whirlpool),
    tokenMintA: a(mintA),
    tokenMintB: a(mintB),
    tokenOwnerAccountA: a(ownerA),
    tokenVaultA: kit.address(c.vault_a),
    tokenOwnerAccountB: a(ownerB),
    tokenVaultB: kit.address(c.vault_b),
    tickArray0: a(arrays[0]),
    tickArray1: a(arrays[1]),
    tickArray2: a(arrays[2]),
    oracle: a(oracle),
    amount: BigInt(c.amount),
    otherAmountThreshold: BigInt(c.threshold),
    sqrtPriceLimit: BigInt(limit.toString()),
    amountSpecifiedIsInput: true,
    aToB: c.a_to_b,
    remainingAccountsInfo: null,
  });
  const role = kit.AccountRole;
  return {
    legacy: web3Ix(legacy[0]),
    client: {
      programId: client.programAddress,
      keys: client.accounts.map((k) => ({
        pubkey: k.address,
        isSigner: k.role === role.READONLY_SIGNER || k.role === role.WRITABLE_SIGNER,
        isWritable: k.role === role.WRITABLE || k.role === role.WRITABLE_SIGNER,
      })),
      data: Buffer.from(client.data).toString("hex"),
    },
  };
}

// --------------------------------------------------------------------------------- Raydium
function raydiumTickArrayCache(c) {
  const span = RAY_TICK_ARRAY_SIZE * c.tick_spacing;
  const byStart = new Map();
  for (const [t, n] of c.ticks) {
    const start = Math.floor(t / span) * span;
    if (!byStart.has(start)) byStart.set(start, new Map());
    byStart.get(start).set(t, new BN(n));
  }
  const cache = {};
  for (const [start, nets] of byStart) {
    const ticks = [];
    for (let i = 0; i < RAY_TICK_ARRAY_SIZE; i++) {
      const t = start + i * c.tick_spacing;
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
    const address = raydium.getPdaTickArrayAddress(RAYDIUM_PROGRAM, new PublicKey(c.pool), start).publicKey;
    cache[start] = { address, startTickIndex: start, ticks };
  }
  return { cache, starts: [...byStart.keys()] };
}

function raydiumPoolBitmap(starts, tickSpacing) {
  // the pool's default tick-array bitmap ([u64; 16], bit = array index + 512), as a byte buffer
  const buf = Buffer.alloc(128);
  for (const s of starts) {
    const bit = s / (RAY_TICK_ARRAY_SIZE * tickSpacing) + 512;
    if (bit < 0 || bit >= 1024) throw new Error(`array ${s} outside the default bitmap`);
    buf[bit >> 3] |= 1 << (bit & 7);
  }
  return buf;
}

function raydiumCase(c) {
  const { cache, starts } = raydiumTickArrayCache(c);
  const owner = new PublicKey(c.owner);
  const pool = new PublicKey(c.pool);
  const accInfo = {
    sqrtPriceX64: new BN(c.sqrt_price),
    tickCurrent: c.tick_current,
    liquidity: new BN(c.liquidity),
    tickSpacing: c.tick_spacing,
    tickArrayBitmap: raydiumPoolBitmap(starts, c.tick_spacing),
    feeGrowthGlobalX64A: new BN(0),
    feeGrowthGlobalX64B: new BN(0),
    feeOn: 0,
    dynamicFeeInfo: {
      filterPeriod: 0, decayPeriod: 0, reductionFactor: 0, dynamicFeeControl: 0, maxVolatilityAccumulator: 0,
      tickSpacingIndexReference: 0, volatilityReference: 0, volatilityAccumulator: 0, lastUpdateTimestamp: new BN(0),
    },
  };
  const poolInfo = {
    programId: RAYDIUM_PROGRAM,
    id: pool,
    mintA: { address: c.mint_0 },
    mintB: { address: c.mint_1 },
    accInfo,
    ammConfig: { tradeFeeRate: c.fee_pips, protocolFeeRate: 120000, fundFeeRate: 40000 },
  };
  const emptyExtension = { positiveTickArrayBitmap: Buffer.alloc(14 * 64), negativeTickArrayBitmap: Buffer.alloc(14 * 64) };
  const inputMint = new PublicKey(c.zero_for_one ? c.mint_0 : c.mint_1);
  const out = raydium.PoolUtils.getOutputAmountAndRemainAccounts(
    poolInfo, emptyExtension, cache, inputMint, new BN(c.amount), 0, new BN(0),
  );
  if (!out.allTrade) return { all_trade: false };
  const tokenProgram = new PublicKey("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA");
  const ata = (mint) => raydium.getATAAddress(owner, new PublicKey(mint), tokenProgram).publicKey;
  const made = raydium.ClmmInstrument.makeSwapBaseInInstructions({
    poolInfo: {
      programId: RAYDIUM_PROGRAM.toBase58(),
      id: pool.toBase58(),
      mintA: { address: c.mint_0 },
      mintB: { address: c.mint_1 },
      config: { id: c.amm_config },
    },
    poolKeys: { vault: { A: c.vault_0, B: c.vault_1 } },
    observationId: new PublicKey(c.observation),
    ownerInfo: { wallet: owner, tokenAccountA: ata(c.mint_0), tokenAccountB: ata(c.mint_1) },
    inputMint,
    amountIn: new BN(c.amount),
    amountOutMin: new BN(c.threshold),
    sqrtPriceLimitX64: new BN(0),
    remainingAccounts: out.remainingAccounts,
  });
  if (made.instructions.length !== 1) throw new Error(`makeSwapBaseInInstructions built ${made.instructions.length}`);
  return { all_trade: true, sdk: web3Ix(made.instructions[0]), amount_out: out.expectedAmountOut.toString() };
}

let input = "";
process.stdin.on("data", (d) => (input += d));
process.stdin.on("end", () => {
  const { cases } = JSON.parse(input);
  const results = cases.map((c) => {
    try {
      return { ok: true, ...(c.venue === "orca" ? orcaCase(c) : raydiumCase(c)) };
    } catch (e) {
      return { ok: false, error: String(e && e.stack ? e.stack : e) };
    }
  });
  process.stdout.write(JSON.stringify({ results }));
});
