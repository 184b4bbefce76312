/** The v1 corridor's destination settlement, an ERC-4337 user operation (EntryPoint v0.7), checked against the
 * caller's own values before the wallet signs its permit or its userOpHash (port of core/verify/erc4337.py, with
 * the plan's reading and derivations of core/actions/erc4337). The callData is re-derived and compared byte for
 * byte, the permit typed data, its digest and the userOpHash recomputed (viem for ABI and keccak). Same codes as
 * the Python verifier; hostile or malformed input yields findings, never an exception. */
import { type Hex, encodeAbiParameters, encodeFunctionData, getAddress, keccak256, parseAbi, parseAbiParameters, stringToHex } from "viem";
import { canonicalJson } from "../canonical.js";
import { PINNED } from "../generated/pinned.js";
import { Checker, type Finding, isObj } from "./common.js";
import { hexBytes, toHex } from "./payloads.js";

export interface SettlementOptions {
  wallet: string;
  smartAccount: string;
  chainId: number;
  entryPoint: string;
  usdc: string;
  router: string;
  weth: string;
  minimumEthOut: bigint;
  nowUnix: number;
  amountIn?: bigint | null;
  factory?: string | null;
  salt?: bigint | null;
  permitDomain?: [string, string] | null;
  maxGasCostWei?: bigint;
}

const SECP256K1_HALF_N = 0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0n;
const ABI = parseAbi([
  "function permit(address,address,uint256,uint256,uint8,bytes32,bytes32)",
  "function transferFrom(address,address,uint256)",
  "function approve(address,uint256)",
  "function executeBatch(address[],uint256[],bytes[])",
  "function createAccount(address,uint256)",
  "function multicall(uint256,bytes[])",
  "function exactInputSingle((address,address,uint24,address,uint256,uint256,uint160))",
  "function unwrapWETH9(uint256,address)",
]);
const ZERO32: Hex = `0x${"00".repeat(32)}`;

class PlanMalformed extends Error {}

function field(o: unknown, key: string): unknown {
  if (!isObj(o) || !Object.prototype.hasOwnProperty.call(o, key)) throw new PlanMalformed(`plan: missing ${key}`);
  return o[key];
}

/** An integer field: an integer, a decimal string or a 0x quantity (never a boolean). */
function int(value: unknown, what: string): bigint {
  if (typeof value === "number" && Number.isInteger(value)) return BigInt(value);
  if (typeof value === "string" && /^[\x00-\x7f]*$/.test(value)) {
    if (value.startsWith("0x") && value.length > 2 && /^0x[0-9a-fA-F]+$/.test(value)) return BigInt(value);
    if (/^[0-9]+$/.test(value)) return BigInt(value);
  }
  throw new PlanMalformed(`${what}: not an integer`);
}

function bytesOf(value: unknown, what: string): Uint8Array {
  if (typeof value !== "string" || !value.startsWith("0x")) throw new PlanMalformed(`${what}: not 0x-hex`);
  return hexBytes(value);
}

/** Python's str() of a JSON value. */
function pyStr(x: unknown): string {
  if (x === null || x === undefined) return "None";
  if (typeof x === "boolean") return x ? "True" : "False";
  return String(x);
}

const hx = (b: Uint8Array): Hex => `0x${toHex(b)}`;
const checksum = (a: string): string => getAddress(a);
const sameBytes = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && a.every((v, i) => v === b[i]);

interface PlanView {
  chainId: bigint;
  entryPoint: string;
  wallet: string;
  smartAccount: string;
  accountDeployed: boolean;
  factory: string;
  salt: bigint;
  usdc: string;
  weth: string;
  router: string;
  poolFee: bigint;
  amountIn: bigint;
  minimumEthOut: bigint;
  deadline: bigint;
  permitNonce: bigint;
  permitName: string;
  permitVersion: string;
  sender: string;
  nonce: bigint;
  initCode: Uint8Array;
  accountGasLimits: Uint8Array;
  preVerificationGas: bigint;
  gasFees: Uint8Array;
  paymasterAndData: Uint8Array;
  callData: Uint8Array | null;
  permitSignature: string | null;
}

function parsePlan(plan: unknown): PlanView {
  const k = PINNED.erc4337;
  if (field(plan, "kind") !== k.planKind || field(plan, "version") !== k.planVersion) throw new PlanMalformed("not an ERC-4337 settlement plan of this version");
  const b = field(plan, "bounds");
  const op = field(plan, "userOperation");
  const permit = field(plan, "permit");
  const domain = field(field(permit, "typedData"), "domain");
  const callData = field(op, "callData");
  const sig = field(permit, "signature");
  const deployed = field(plan, "accountDeployed");
  if (typeof deployed !== "boolean") throw new PlanMalformed("plan: accountDeployed is a boolean");
  const name = field(domain, "name");
  const version = field(domain, "version");
  if (typeof name !== "string" || typeof version !== "string") throw new PlanMalformed("plan: permit domain name/version are strings");
  if (sig !== null && typeof sig !== "string") throw new PlanMalformed("plan: permit.signature is a hex string or null");
  const addr = (o: unknown, key: string): string => checksum(pyStr(field(o, key)));
  const view: PlanView = {
    chainId: int(field(plan, "chainId"), "chainId"),
    entryPoint: addr(plan, "entryPoint"),
    wallet: addr(plan, "wallet"),
    smartAccount: addr(plan, "smartAccount"),
    accountDeployed: deployed,
    factory: addr(plan, "factory"),
    salt: int(field(plan, "salt"), "salt"),
    usdc: "",
    weth: "",
    router: "",
    poolFee: 0n,
    amountIn: 0n,
    minimumEthOut: 0n,
    deadline: 0n,
    permitNonce: 0n,
    permitName: name,
    permitVersion: version,
    sender: "",
    nonce: 0n,
    initCode: new Uint8Array(),
    accountGasLimits: new Uint8Array(),
    preVerificationGas: 0n,
    gasFees: new Uint8Array(),
    paymasterAndData: new Uint8Array(),
    callData: null,
    permitSignature: sig,
  };
  int(field(plan, "preparedAt"), "preparedAt");
  view.usdc = addr(b, "usdc");
  view.weth = addr(b, "weth");
  view.router = addr(b, "router");
  view.poolFee = int(field(b, "poolFee"), "poolFee");
  view.amountIn = int(field(b, "exactUsdcIn"), "exactUsdcIn");
  view.minimumEthOut = int(field(b, "minimumEthOut"), "minimumEthOut");
  view.deadline = int(field(b, "permitDeadline"), "permitDeadline");
  view.permitNonce = int(field(b, "permitNonce"), "permitNonce");
  view.sender = addr(op, "sender");
  view.nonce = int(field(op, "nonce"), "nonce");
  view.initCode = bytesOf(field(op, "initCode"), "initCode");
  view.accountGasLimits = bytesOf(field(op, "accountGasLimits"), "accountGasLimits");
  view.preVerificationGas = int(field(op, "preVerificationGas"), "preVerificationGas");
  view.gasFees = bytesOf(field(op, "gasFees"), "gasFees");
  view.paymasterAndData = bytesOf(field(op, "paymasterAndData"), "paymasterAndData");
  view.callData = callData === null ? null : bytesOf(callData, "callData");
  return view;
}

function unpackPair(packed: Uint8Array): [bigint, bigint] {
  const value = packed.length ? BigInt(hx(packed)) : 0n;
  return [value >> 128n, value & ((1n << 128n) - 1n)];
}

/** eth_abi's bytes32: a shorter value is right-padded, a longer one cannot be encoded. */
function word(b: Uint8Array): Hex {
  if (b.length > 32) throw new PlanMalformed("a bytes32 value is at most 32 bytes");
  const out = new Uint8Array(32);
  out.set(b);
  return hx(out);
}

function checkGas(c: Checker, gas: Record<string, bigint>, maxCost: bigint): void {
  const problems: [string, string][] = [];
  for (const [name, [lo, hi]] of Object.entries(PINNED.erc4337.gasBounds)) {
    const value = gas[name]!;
    if (!(BigInt(lo) <= value && value <= BigInt(hi))) problems.push(["user_op_gas_out_of_bounds", `${name} = ${value} is outside [${lo}, ${hi}]`]);
  }
  if (!problems.length) {
    if (gas["maxPriorityFeePerGas"]! > gas["maxFeePerGas"]!) problems.push(["user_op_gas_out_of_bounds", "maxPriorityFeePerGas exceeds maxFeePerGas"]);
    const cost = gas["maxFeePerGas"]! * (gas["verificationGasLimit"]! + gas["callGasLimit"]! + gas["preVerificationGas"]!);
    if (cost > maxCost) problems.push(["user_op_gas_cost_too_high", `the operation may cost ${cost} wei, above ${maxCost}`]);
  }
  for (const [code, message] of problems) c.fail(code, message);
}

interface Permit {
  name: string;
  version: string;
  chainId: number;
  token: string;
  owner: string;
  spender: string;
  value: bigint;
  nonce: bigint;
  deadline: bigint;
}

function permitTypedData(p: Permit): unknown {
  return {
    types: {
      EIP712Domain: [
        { name: "name", type: "string" },
        { name: "version", type: "string" },
        { name: "chainId", type: "uint256" },
        { name: "verifyingContract", type: "address" },
      ],
      Permit: [
        { name: "owner", type: "address" },
        { name: "spender", type: "address" },
        { name: "value", type: "uint256" },
        { name: "nonce", type: "uint256" },
        { name: "deadline", type: "uint256" },
      ],
    },
    primaryType: "Permit",
    domain: { name: p.name, version: p.version, chainId: p.chainId, verifyingContract: checksum(p.token) },
    message: { owner: checksum(p.owner), spender: checksum(p.spender), value: String(p.value), nonce: String(p.nonce), deadline: String(p.deadline) },
  };
}

/** keccak256(0x1901 ‖ domainSeparator ‖ structHash): what the wallet's permit signature covers. */
function permitDigest(p: Permit): Hex {
  const domain = keccak256(
    encodeAbiParameters(parseAbiParameters("bytes32, bytes32, bytes32, uint256, address"), [
      keccak256(stringToHex("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)")),
      keccak256(stringToHex(p.name)),
      keccak256(stringToHex(p.version)),
      BigInt(p.chainId),
      checksum(p.token) as Hex,
    ]),
  );
  const struct = keccak256(
    encodeAbiParameters(parseAbiParameters("bytes32, address, address, uint256, uint256, uint256"), [
      keccak256(stringToHex("Permit(address owner,address spender,uint256 value,uint256 nonce,uint256 deadline)")),
      checksum(p.owner) as Hex,
      checksum(p.spender) as Hex,
      p.value,
      p.nonce,
      p.deadline,
    ]),
  );
  return keccak256(`0x1901${domain.slice(2)}${struct.slice(2)}`);
}

interface Derive {
  usdc: string;
  router: string;
  weth: string;
  wallet: string;
  account: string;
  amountIn: bigint;
  minimumEthOut: bigint;
  poolFee: bigint;
  deadline: bigint;
}

/** executeBatch(permit, transferFrom, approve, multicall(exactInputSingle, unwrapWETH9)). */
function settlementCallData(d: Derive, vrs: [number, Hex, Hex] = [0, ZERO32, ZERO32]): Uint8Array {
  const [usdc, router, weth, wallet, account] = [d.usdc, d.router, d.weth, d.wallet, d.account].map(checksum) as [Hex, Hex, Hex, Hex, Hex];
  const routerThis = PINNED.constants.ROUTER_ADDRESS_THIS as Hex;
  const swap = encodeFunctionData({ abi: ABI, functionName: "exactInputSingle", args: [[usdc, weth, Number(d.poolFee), routerThis, d.amountIn, d.minimumEthOut, 0n]] });
  const unwrap = encodeFunctionData({ abi: ABI, functionName: "unwrapWETH9", args: [d.minimumEthOut, wallet] });
  const calls: Hex[] = [
    encodeFunctionData({ abi: ABI, functionName: "permit", args: [wallet, account, d.amountIn, d.deadline, vrs[0], vrs[1], vrs[2]] }),
    encodeFunctionData({ abi: ABI, functionName: "transferFrom", args: [wallet, account, d.amountIn] }),
    encodeFunctionData({ abi: ABI, functionName: "approve", args: [router, d.amountIn] }),
    encodeFunctionData({ abi: ABI, functionName: "multicall", args: [d.deadline, [swap, unwrap]] }),
  ];
  return hexBytes(encodeFunctionData({ abi: ABI, functionName: "executeBatch", args: [[usdc, usdc, usdc, router], [0n, 0n, 0n, 0n], calls] }));
}

/** (v, r, s) of a 65-byte r ‖ s ‖ v signature (v 0/1 read as 27/28; s in the lower half, r and s non-zero). */
function splitSignature(signature: string): [number, Hex, Hex] {
  const raw = hexBytes(signature.startsWith("0x") ? signature : `0x${signature}`);
  if (raw.length !== 65) throw new PlanMalformed("a signature is 65 bytes (r ‖ s ‖ v)");
  let v = raw[64]!;
  if (v === 0 || v === 1) v += 27;
  if (v !== 27 && v !== 28) throw new PlanMalformed("signature v must be 27 or 28");
  const r = raw.slice(0, 32);
  const s = raw.slice(32, 64);
  const sn = BigInt(hx(s));
  if (!(0n < sn && sn <= SECP256K1_HALF_N) || BigInt(hx(r)) === 0n) throw new PlanMalformed("signature s must be in the lower half of the curve order (and r, s non-zero)");
  return [v, hx(r), hx(s)];
}

function userOpHash(v: PlanView, callData: Uint8Array): string {
  const inner = keccak256(
    encodeAbiParameters(parseAbiParameters("address, uint256, bytes32, bytes32, bytes32, uint256, bytes32, bytes32"), [
      checksum(v.sender) as Hex,
      v.nonce,
      keccak256(hx(v.initCode)),
      keccak256(hx(callData)),
      word(v.accountGasLimits),
      v.preVerificationGas,
      word(v.gasFees),
      keccak256(hx(v.paymasterAndData)),
    ]),
  );
  return keccak256(encodeAbiParameters(parseAbiParameters("bytes32, address, uint256"), [inner, checksum(v.entryPoint) as Hex, v.chainId]));
}

function sameJson(a: unknown, b: unknown): boolean {
  try {
    return canonicalJson(a) === canonicalJson(b);
  } catch {
    return false;
  }
}

/** Python `==` of a JSON value with an integer. */
function eqInt(x: unknown, n: bigint): boolean {
  if (typeof x === "boolean") return BigInt(Number(x)) === n;
  return typeof x === "number" && Number.isInteger(x) && BigInt(x) === n;
}

/** Python's `x or []` iterated: a list, the characters of a string, the keys of an object. */
function items(x: unknown): unknown[] {
  if (Array.isArray(x)) return x;
  if (typeof x === "string") return [...x];
  if (isObj(x)) return Object.keys(x);
  if (x === null || x === undefined || x === false || x === 0) return [];
  throw new PlanMalformed("not iterable");
}

/** Findings about an unsigned ERC-4337 settlement plan; safe to sign only if none is an error. */
export function verifySettlementPlan(plan: unknown, o: SettlementOptions): Finding[] {
  const c = new Checker();
  try {
    run(c, plan, o);
  } catch (e) {
    c.fail("settlement_plan_malformed", `the plan could not be checked: ${e instanceof Error ? e.message.split("\n")[0] : String(e)}`);
  }
  return c.findings;
}

function run(c: Checker, plan: unknown, o: SettlementOptions): void {
  const k = PINNED.erc4337;
  let v: PlanView;
  try {
    v = parsePlan(plan);
  } catch (e) {
    c.fail("settlement_plan_malformed", e instanceof Error ? e.message.split("\n")[0]! : String(e));
    return;
  }
  const p = plan as Record<string, unknown>;
  const wallet = checksum(o.wallet);
  const account = checksum(o.smartAccount);
  const [usdc, router, weth] = [o.usdc, o.router, o.weth].map(checksum) as [string, string, string];
  for (const key of ["serverSigning", "serverSubmission"]) c.expect(p[key] === false, "custody_flag_not_false", `${key} must be false`);
  c.expect(v.chainId === BigInt(o.chainId), "settlement_wrong_chain", `chainId ${v.chainId}, expected ${o.chainId}`);
  c.expect(v.entryPoint === checksum(o.entryPoint), "settlement_wrong_entry_point", `EntryPoint ${v.entryPoint}`);
  c.expect(v.wallet === wallet, "settlement_wrong_wallet", `the plan's wallet ${v.wallet} is not yours`);
  c.expect(account !== wallet, "settlement_wrong_account", "the smart account cannot be the wallet");
  c.expect(v.smartAccount === account && v.sender === account, "settlement_wrong_account", `the operation's sender ${v.sender} is not your smart account ${account}`);
  c.expect(v.usdc === usdc && v.router === router && v.weth === weth, "settlement_wrong_target", "the plan's USDC / router / WETH are not the ones you named");
  const b = field(p, "bounds") as Record<string, unknown>;
  const get = (key: string): unknown => (Object.prototype.hasOwnProperty.call(b, key) ? b[key] : null);
  const targets = items(get("targets")).map(pyStr);
  c.expect(targets.length === 2 && targets[0] === usdc && targets[1] === router, "settlement_wrong_target", "targets must be exactly [USDC, router]");
  c.expect(pyStr(get("ethRecipient")) === wallet, "settlement_wrong_recipient", "the ETH must go to your wallet");
  c.expect(pyStr(get("serviceFee")) === "0", "settlement_service_fee", "the settlement takes no service fee");
  if (o.amountIn !== undefined && o.amountIn !== null) c.expect(v.amountIn === o.amountIn, "settlement_amount_mismatch", `the plan spends ${v.amountIn} USDC, expected exactly ${o.amountIn}`);
  c.expect(v.amountIn > 0n, "settlement_amount_mismatch", "the USDC amount must be positive");
  c.expect(v.minimumEthOut >= o.minimumEthOut && o.minimumEthOut > 0n, "settlement_minimum_below_yours", `minimum ETH out ${v.minimumEthOut} is below your ${o.minimumEthOut}`);
  c.expect(k.uniswapFeeTiers.some((t) => BigInt(t) === v.poolFee), "settlement_pool_fee_unknown", `pool fee ${v.poolFee}`);
  c.expect(["permitDeadline", "swapDeadline", "validUntil"].every((key) => eqInt(get(key), v.deadline)), "settlement_deadline_out_of_bounds", "permit, swap and validity deadlines differ");
  const now = BigInt(o.nowUnix);
  const window = BigInt(k.maxPermitWindowSeconds + PINNED.constants.CLOCK_SKEW_SECONDS);
  c.expect(now < v.deadline && v.deadline <= now + window, "settlement_deadline_out_of_bounds", `deadline ${v.deadline} must be in the future and at most ${k.maxPermitWindowSeconds} s ahead`);
  // initCode: empty for a deployed account, else exactly factory ‖ createAccount(your wallet, salt)
  if (o.factory !== undefined && o.factory !== null) c.expect(v.factory === checksum(o.factory), "settlement_init_code_mismatch", `factory ${v.factory}`);
  if (o.salt !== undefined && o.salt !== null) c.expect(v.salt === o.salt, "settlement_init_code_mismatch", `salt ${v.salt}`);
  const wantInit = v.accountDeployed
    ? new Uint8Array()
    : hexBytes(`0x${v.factory.slice(2)}${encodeFunctionData({ abi: ABI, functionName: "createAccount", args: [wallet as Hex, v.salt] }).slice(2)}`);
  c.expect(sameBytes(v.initCode, wantInit), "settlement_init_code_mismatch", "initCode must be empty (deployed account) or factory ‖ createAccount(your wallet, salt)");
  c.expect(v.paymasterAndData.length === 0, "settlement_paymaster_not_empty", "paymasterAndData must be empty");
  const [vgl, cgl] = unpackPair(v.accountGasLimits);
  const [prio, maxFee] = unpackPair(v.gasFees);
  c.expect(v.accountGasLimits.length === 32 && v.gasFees.length === 32, "user_op_gas_out_of_bounds", "accountGasLimits and gasFees are bytes32");
  const gas = { verificationGasLimit: vgl, callGasLimit: cgl, preVerificationGas: v.preVerificationGas, maxFeePerGas: maxFee, maxPriorityFeePerGas: prio };
  checkGas(c, gas, o.maxGasCostWei ?? BigInt(k.maxGasCostWei));
  // the permit: typed data and digest re-derived from your values
  const domain = o.permitDomain ?? k.usdcPermitDomain[String(o.chainId)] ?? null;
  if (c.expect(domain !== null, "settlement_permit_mismatch", `no pinned USDC permit domain on ${o.chainId}`)) {
    c.expect(v.permitName === domain![0] && v.permitVersion === domain![1], "settlement_permit_mismatch", `permit domain (${v.permitName}, ${v.permitVersion}), expected ${String(domain)}`);
  }
  const permit: Permit = { name: v.permitName, version: v.permitVersion, chainId: o.chainId, token: usdc, owner: wallet, spender: account, value: v.amountIn, nonce: v.permitNonce, deadline: v.deadline };
  const permitBlock = field(p, "permit") as Record<string, unknown>;
  c.expect(sameJson(permitBlock["typedData"] ?? null, permitTypedData(permit)), "settlement_permit_mismatch", "the permit typed data is not permit(your wallet -> your account, exact amount, deadline)");
  c.expect(pyStr(permitBlock["digest"] ?? null) === permitDigest(permit), "settlement_permit_mismatch", "the permit digest does not match its typed data");
  // the callData, byte for byte
  const derive: Derive = { usdc, router, weth, wallet, account, amountIn: v.amountIn, minimumEthOut: v.minimumEthOut, poolFee: v.poolFee, deadline: v.deadline };
  c.expect(pyStr(p["callDataTemplate"] ?? null) === hx(settlementCallData(derive)), "settlement_calldata_mismatch", "callDataTemplate differs from permit / transferFrom / approve / swap derived from your values");
  const opSig = (field(p, "userOperation") as Record<string, unknown>)["signature"] ?? null;
  c.expect(opSig === null || opSig === "0x", "settlement_owner_signature_present", "an unsigned plan carries no owner signature");
  if (v.permitSignature === null) {
    c.expect(v.callData === null && (p["userOpHash"] ?? null) === null, "settlement_calldata_mismatch", "without a permit signature callData and userOpHash must be null");
    return;
  }
  let vrs: [number, Hex, Hex];
  try {
    vrs = splitSignature(v.permitSignature);
  } catch (e) {
    c.fail("settlement_permit_signature_malformed", e instanceof Error ? e.message : String(e));
    return;
  }
  const callData = settlementCallData(derive, vrs);
  if (!c.expect(v.callData !== null && sameBytes(v.callData, callData), "settlement_calldata_mismatch", "callData differs from the batch derived from your values and the permit signature")) return;
  c.expect(pyStr(p["userOpHash"] ?? null).toLowerCase() === userOpHash(v, callData), "settlement_user_op_hash_mismatch", "userOpHash is not the EntryPoint v0.7 hash of this operation");
}
