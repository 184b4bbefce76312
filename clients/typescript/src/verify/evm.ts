/** The EVM payload checks (port of core/verify/evm.py): each transaction's chain, sender, value and calldata,
 * decoded with viem and compared with the pinned contracts (Uniswap v3, CCTP, Across, the USDG OFT) and the
 * caller's bounds. */
import { type Hex, decodeFunctionData, encodeFunctionData, parseAbi, toFunctionSelector } from "viem";
import { PINNED } from "../generated/pinned.js";
import type { PinnedDeployment } from "../pinned-types.js";
import { type Obj, type StepContext, Malformed, chainOf, get, isNative, sameAddress, strictEq } from "./common.js";
import { NotPorted, hexBytes } from "./payloads.js";
import { associatedTokenAddress, hex, solanaKey } from "./solana_keys.js";

export type Deployments = Record<string, PinnedDeployment>;

const MAX_OFT_NATIVE_FEE_WEI = 10n ** 16n;
const UNISWAP_FEE_TIERS = new Set([100, 500, 3000, 10000]);
const ZERO_BYTES32 = `0x${"00".repeat(32)}`;

// the functions a prepared action may call (core/actions/evm.py SIGNATURES)
const ABI = parseAbi([
  "function approve(address,uint256)",
  "function transfer(address,uint256)",
  "function multicall(uint256,bytes[])",
  "function exactInputSingle((address,address,uint24,address,uint256,uint256,uint160))",
  "function unwrapWETH9(uint256,address)",
  "function depositForBurn(uint256,uint32,bytes32,address,bytes32,uint256,uint32)",
  "function deposit(bytes32,bytes32,bytes32,bytes32,uint256,uint256,uint256,bytes32,uint32,uint32,uint32,bytes)",
  "function send((uint32,bytes32,uint256,uint256,bytes,bytes,bytes),(uint256,uint256),address)",
  "function receiveMessage(bytes,bytes)",
]);
const KNOWN_SELECTORS = new Set(
  ABI.map((f) => toFunctionSelector(`${f.name}(${f.inputs.map((i) => formatType(i)).join(",")})`)),
);

function formatType(p: { type: string; components?: readonly { type: string }[] }): string {
  if (p.type.startsWith("tuple")) return `(${(p.components ?? []).map(formatType).join(",")})${p.type.slice(5)}`;
  return p.type;
}

export interface Call {
  name: string;
  args: readonly unknown[];
}

/** One of the known functions, or null for empty data (a plain value transfer); throws on anything else. */
export function decodeCall(data: Hex): Call | null {
  if (data === "0x") return null;
  const selector = data.slice(0, 10).toLowerCase();
  if (!KNOWN_SELECTORS.has(selector as Hex)) throw new Malformed(`unknown selector ${selector}`);
  const decoded = decodeFunctionData({ abi: ABI, data });
  const again = encodeFunctionData({ abi: ABI, functionName: decoded.functionName, args: decoded.args } as never);
  if (again.toLowerCase() !== data.toLowerCase()) throw new Malformed(`non-canonical calldata for ${decoded.functionName}`);
  return { name: decoded.functionName, args: decoded.args ?? [] };
}

export function addressToBytes32(address: string | undefined): string {
  if (address === undefined) throw new Malformed("no address");
  return `0x${"00".repeat(12)}${address.slice(2).toLowerCase()}`;
}

function tokenOf(dep: PinnedDeployment, assetKey: string): string {
  const key = isNative(assetKey) ? "WETH" : assetKey.split(":")[1]!;
  const found = dep.tokens[key];
  if (found === undefined) throw new Malformed(`no ${key} pinned`);
  return found;
}

const big = (x: unknown): bigint => {
  if (typeof x === "bigint") return x;
  if (typeof x === "number") return BigInt(x);
  throw new Malformed("not an integer");
};

export function checkEvm(x: StepContext, action: Obj, deps: Deployments): void {
  const { c, step } = x;
  const srcChain = chainOf(step.source);
  const dep = deps[srcChain]!;
  const protocol = dep.contracts[step.provider];
  if (protocol === undefined) {
    c.fail("protocol_contract_not_pinned", `no pinned ${step.provider} contract on ${srcChain}`);
    return;
  }
  const srcNative = isNative(step.source);
  const srcToken = srcNative ? null : tokenOf(dep, step.source);
  const txs = get(action, "transactions");
  if (!Array.isArray(txs) || txs.length === 0) {
    c.fail("transactions_missing", "no transactions");
    return;
  }
  const kinds: string[] = [];
  let feePaid = 0n;
  txs.forEach((tx: unknown, i) => {
    const where = `transaction ${i}`;
    c.expect(strictEq(get(tx, "chainId"), dep.chainId), "chain_id_mismatch", `${where}: chainId must be ${dep.chainId}`);
    c.expect(sameAddress(get(tx, "from"), x.caller), "sender_mismatch", `${where}: from is not your wallet`);
    const to = get(tx, "to", "");
    const rawValue = get(tx, "value");
    const valueOk = typeof rawValue === "string" && /^[0-9]+$/.test(rawValue);
    c.expect(valueOk, "native_value_malformed", `${where}: value must be a decimal string`);
    const value = valueOk ? BigInt(rawValue) : -1n;
    let call: Call | null;
    try {
      const dataText = get(tx, "data", "0x");
      const bytes = hexBytes(typeof dataText === "string" ? dataText : String(dataText));
      call = decodeCall(`0x${Buffer.from(bytes).toString("hex")}`);
    } catch (e) {
      c.fail("calldata_undecodable", `${where}: ${e instanceof Error ? e.message.split("\n")[0] : String(e)}`);
      return;
    }
    if (call === null) {
      kinds.push("native_fee");
      const ok = srcNative && x.feeRecipient !== null && sameAddress(to, x.feeRecipient);
      c.expect(ok, "unexpected_native_transfer", `${where}: a plain value transfer that is not the fee`);
      feePaid += value;
      return;
    }
    if (call.name === "transfer") {
      kinds.push("fee");
      c.expect(sameAddress(to, srcToken), "target_not_allowed", `${where}: transfer on another token`);
      c.expect(x.feeRecipient !== null && sameAddress(call.args[0], x.feeRecipient), "fee_recipient_mismatch", `${where}: the transfer does not go to the fee recipient`);
      c.expect(value === 0n, "native_value_not_allowed", `${where}: value must be 0`);
      feePaid += big(call.args[1]);
      return;
    }
    if (call.name === "approve") {
      kinds.push("approve");
      c.expect(sameAddress(to, srcToken), "target_not_allowed", `${where}: approve on another token`);
      c.expect(sameAddress(call.args[0], protocol), "approval_target_mismatch", `${where}: approval to ${String(call.args[0])}, expected the pinned ${protocol}`);
      c.expect(big(call.args[1]) === x.net, "approval_amount_mismatch", `${where}: allowance must be exactly ${x.net}`);
      c.expect(value === 0n, "native_value_not_allowed", `${where}: value must be 0`);
      return;
    }
    kinds.push("protocol");
    c.expect(sameAddress(to, protocol), "target_not_allowed", `${where}: target ${String(to)} is not the pinned ${protocol}`);
    let expectedValue = step.provider === "uniswap_v3" && srcNative ? x.net : 0n;
    if (step.provider === "paxos_usdg_layerzero_oft" && call.name === "send") {
      expectedValue = big((call.args[1] as readonly unknown[])[0]);
      c.expect(expectedValue <= MAX_OFT_NATIVE_FEE_WEI, "native_value_above_cap", `${where}: LayerZero fee above ${MAX_OFT_NATIVE_FEE_WEI} wei`);
    }
    c.expect(value === expectedValue, "native_value_not_allowed", `${where}: value ${value}, expected ${expectedValue}`);
    checkProtocolCall(x, call, dep, deps, where);
  });
  const want = [...(x.fee ? ["fee"] : []), ...(srcNative ? [] : ["approve"]), "protocol"];
  if (srcNative && x.fee) want[0] = "native_fee";
  c.expect(kinds.join(",") === want.join(","), "unexpected_transaction_sequence", `transactions ${JSON.stringify(kinds)}, expected ${JSON.stringify(want)}`);
  c.expect(feePaid === x.fee, "service_fee_mismatch", `fee paid ${feePaid}, expected ${x.fee}`);
}

function checkProtocolCall(x: StepContext, call: Call, dep: PinnedDeployment, deps: Deployments, where: string): void {
  const { c, step } = x;
  const src = step.source;
  const dst = step.target;
  const dstChain = chainOf(dst);
  const { name, args } = call;
  const k = PINNED.constants;
  switch (step.provider) {
    case "uniswap_v3": {
      if (!c.expect(name === "multicall", "selector_not_allowed", `${where}: expected SwapRouter02 multicall`)) return;
      c.expect(big(args[0]) === BigInt(x.deadline), "deadline_mismatch", `${where}: multicall deadline differs`);
      let inner: (Call | null)[];
      try {
        inner = (args[1] as readonly Hex[]).map((d) => decodeCall(d));
      } catch (e) {
        c.fail("calldata_undecodable", `${where}: inner call: ${e instanceof Error ? e.message.split("\n")[0] : String(e)}`);
        return;
      }
      const names = inner.map((d) => (d ? d.name : null));
      const want = isNative(dst) ? ["exactInputSingle", "unwrapWETH9"] : ["exactInputSingle"];
      if (!c.expect(names.join(",") === want.join(","), "selector_not_allowed", `${where}: inner calls ${JSON.stringify(names)}, expected ${JSON.stringify(want)}`)) return;
      const params = inner[0]!.args[0] as readonly unknown[];
      const [tIn, tOut, feeTier, rcpt, amountIn, amountMin, limit] = params;
      c.expect(sameAddress(tIn, tokenOf(dep, src)) && sameAddress(tOut, tokenOf(dep, dst)), "token_mismatch", `${where}: tokens`);
      c.expect(UNISWAP_FEE_TIERS.has(Number(feeTier)), "pool_fee_invalid", `${where}: fee tier ${String(feeTier)}`);
      const wantRcpt = isNative(dst) ? k.ROUTER_ADDRESS_THIS : x.recipient;
      c.expect(sameAddress(rcpt, wantRcpt), "recipient_mismatch", `${where}: swap recipient ${String(rcpt)}`);
      c.expect(big(amountIn) === x.net, "amount_mismatch", `${where}: amountIn ${String(amountIn)}, expected ${x.net}`);
      c.expect(big(amountMin) === x.minOut, "minimum_output_mismatch", `${where}: amountOutMinimum differs`);
      c.expect(big(limit) === 0n, "price_limit_not_allowed", `${where}: sqrtPriceLimitX96 must be 0`);
      if (isNative(dst)) {
        const unwrap = inner[1]!.args;
        c.expect(big(unwrap[0]) === x.minOut && sameAddress(unwrap[1], x.recipient), "recipient_mismatch", `${where}: unwrapWETH9 must pay at least the minimum to your wallet`);
      }
      return;
    }
    case "circle_cctp": {
      if (!c.expect(name === "depositForBurn", "selector_not_allowed", `${where}: expected depositForBurn`)) return;
      const [amount, domain, mintRcpt, burnToken, callerB32, maxFee, finality] = args;
      c.expect(big(amount) === x.net, "amount_mismatch", `${where}: burn amount ${String(amount)}, expected ${x.net}`);
      c.expect(domain === PINNED.chains[dstChain]!.cctpDomain, "destination_mismatch", `${where}: domain ${String(domain)}`);
      const wantB32 = dstChain === "solana" ? hex(associatedTokenAddress(x.recipient, dst)) : addressToBytes32(x.recipient);
      c.expect(String(mintRcpt).toLowerCase() === wantB32, "recipient_mismatch", `${where}: mintRecipient is not yours`);
      c.expect(sameAddress(burnToken, tokenOf(dep, src)), "token_mismatch", `${where}: burnToken`);
      c.expect(String(callerB32).toLowerCase() === ZERO_BYTES32, "destination_caller_not_allowed", `${where}: destinationCaller`);
      c.expect(0n < big(maxFee) && big(maxFee) < big(amount) && big(amount) - big(maxFee) >= x.minOut, "max_fee_too_high", `${where}: maxFee ${String(maxFee)} would let the output fall below ${x.minOut}`);
      c.expect(finality === k.CCTP_FAST_FINALITY, "finality_mismatch", `${where}: minFinalityThreshold ${String(finality)}`);
      return;
    }
    case "across_intent_bridge": {
      if (!c.expect(name === "deposit", "selector_not_allowed", `${where}: expected SpokePool deposit`)) return;
      const [depositor, rcpt, tIn, tOut, amount, outAmount, destId, excl, quoteTs, fillDeadline, exclParam, message] = args;
      const dstDep = deps[dstChain]!;
      const b = (v: unknown): string => String(v).toLowerCase();
      c.expect(b(depositor) === addressToBytes32(x.caller), "depositor_mismatch", `${where}: depositor`);
      c.expect(b(rcpt) === addressToBytes32(x.recipient), "recipient_mismatch", `${where}: recipient`);
      c.expect(b(tIn) === addressToBytes32(tokenOf(dep, src)), "token_mismatch", `${where}: inputToken`);
      c.expect(b(tOut) === addressToBytes32(tokenOf(dstDep, dst)), "token_mismatch", `${where}: outputToken`);
      c.expect(big(amount) === x.net, "amount_mismatch", `${where}: inputAmount ${String(amount)}, expected ${x.net}`);
      c.expect(big(outAmount) === x.minOut, "minimum_output_mismatch", `${where}: outputAmount differs`);
      c.expect(big(destId) === BigInt(dstDep.chainId), "destination_mismatch", `${where}: destinationChainId ${String(destId)}`);
      c.expect(b(excl) === ZERO_BYTES32 && exclParam === 0, "exclusivity_not_allowed", `${where}: exclusivity`);
      const qts = Number(quoteTs);
      c.expect(x.now - 3600 <= qts && qts <= x.now + k.CLOCK_SKEW_SECONDS, "quote_timestamp_invalid", `${where}: quoteTimestamp`);
      const fd = Number(fillDeadline);
      c.expect(fd <= x.now + k.MAX_ACROSS_FILL_DEADLINE_SECONDS, "deadline_too_late", `${where}: fillDeadline later than ${k.MAX_ACROSS_FILL_DEADLINE_SECONDS} s`);
      c.expect(fd > x.now, "deadline_passed", `${where}: fillDeadline passed`);
      c.expect(message === "0x", "message_not_allowed", `${where}: message must be empty`);
      return;
    }
    case "paxos_usdg_layerzero_oft": {
      if (!c.expect(name === "send", "selector_not_allowed", `${where}: expected OFT send`)) return;
      const [sendParam, fees, refund] = args as readonly [readonly unknown[], readonly unknown[], unknown];
      const [eid, to, amountLd, minLd, options, compose, cmd] = sendParam;
      const lzFee = fees[1];
      c.expect(eid === PINNED.lzEid[dstChain], "destination_mismatch", `${where}: dstEid ${String(eid)}`);
      c.expect(String(to).toLowerCase() === hex(solanaKey(x.recipient)), "recipient_mismatch", `${where}: to`);
      c.expect(big(amountLd) === x.net, "amount_mismatch", `${where}: amountLD ${String(amountLd)}, expected ${x.net}`);
      c.expect(big(minLd) === x.minOut, "minimum_output_mismatch", `${where}: minAmountLD differs`);
      c.expect(compose === "0x" && cmd === "0x" && options === "0x", "compose_not_allowed", `${where}: extraOptions/composeMsg/oftCmd must be empty`);
      c.expect(big(lzFee) === 0n, "lz_token_fee_not_allowed", `${where}: lzTokenFee`);
      c.expect(sameAddress(refund, x.caller), "refund_address_mismatch", `${where}: refundAddress is not your wallet`);
      return;
    }
    default:
      throw new NotPorted(`provider ${step.provider} is not checked by this port yet`);
  }
}

