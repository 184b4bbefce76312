/** Wallet handoff: a verified EVM action as viem `sendTransaction` requests, a verified Solana action as a
 * @solana/kit transaction message. Only an action this client verified (RouteQuoteClient.prepare / readSession /
 * nextAction) is handed off; anything else is refused. */
import {
  AccountRole,
  type Address as SolanaAddress,
  type Instruction,
  type TransactionMessage,
  type TransactionMessageWithFeePayer,
  address as solanaAddress,
  appendTransactionMessageInstructions,
  createTransactionMessage,
  pipe,
  setTransactionMessageFeePayer,
} from "@solana/kit";
import type { Address, Hex } from "viem";
import { isObj } from "../verify/common.js";
import { ClientError } from "./errors.js";
import type { PreparedAction } from "./client.js";

const verified = new WeakSet<PreparedAction>();

/** Freezes `value` and everything it holds, so that what was verified is what is handed off. */
function deepFreeze(value: unknown): void {
  if (typeof value !== "object" || value === null || Object.isFrozen(value)) return;
  Object.freeze(value);
  for (const inner of Object.values(value)) deepFreeze(inner);
}

/** Marks an action the verifier passed (called by the client only). The action and its raw bundle are frozen
 * all the way down: a change after verification (a transaction's target, an instruction's account) throws
 * instead of reaching the wallet. */
export function markVerified(action: PreparedAction): PreparedAction {
  deepFreeze(action);
  verified.add(action);
  return action;
}

export class NotVerified extends ClientError {
  override name = "NotVerified";
}

/** One request per transaction, in order: send each after the previous one is confirmed. Add your `account`
 * and `chain` (viem) or pass them to `walletClient.sendTransaction({ ...request, account, chain })`. */
export interface EvmSendRequest {
  to: Address;
  data: Hex;
  value: bigint;
  chainId: number;
}

export function evmSendRequests(action: PreparedAction, nowUnix = Math.floor(Date.now() / 1000)): EvmSendRequest[] {
  if (!verified.has(action)) throw new NotVerified("this action was not verified by RouteQuoteClient: refused");
  const unsigned = action.raw["unsigned_action"];
  const deadline = isObj(unsigned) ? unsigned["deadline"] : undefined;
  if (typeof deadline !== "number" || deadline <= nowUnix) throw new NotVerified("the action's deadline has passed: prepare again");
  const txs = isObj(unsigned) ? unsigned["transactions"] : undefined;
  if (!Array.isArray(txs) || txs.length === 0) throw new NotVerified("not an EVM action");
  return txs.map((tx) => {
    if (!isObj(tx)) throw new NotVerified("a transaction is not an object");
    return {
      to: tx["to"] as Address,
      data: tx["data"] as Hex,
      value: BigInt(tx["value"] as string), // verified: a decimal string
      chainId: tx["chainId"] as number,
    };
  });
}

/** A verified Solana action as a @solana/kit transaction message (version 0): the fee payer and every
 * instruction in order, with its accounts' signer / writable roles. No blockhash: add a fresh one
 * (`setTransactionMessageLifetimeUsingBlockhash`), then sign with every required signer (your wallet; for a
 * CCTP burn also your event signer) and send. Nothing here signs. */
export interface SolanaHandoff {
  message: TransactionMessage & TransactionMessageWithFeePayer;
  requiredSigners: SolanaAddress[];
}

function role(isSigner: unknown, isWritable: unknown): AccountRole {
  if (isSigner === true) return isWritable === true ? AccountRole.WRITABLE_SIGNER : AccountRole.READONLY_SIGNER;
  return isWritable === true ? AccountRole.WRITABLE : AccountRole.READONLY;
}

export function solanaTransactionMessage(action: PreparedAction, nowUnix = Math.floor(Date.now() / 1000)): SolanaHandoff {
  if (!verified.has(action)) throw new NotVerified("this action was not verified by RouteQuoteClient: refused");
  const unsigned = action.raw["unsigned_action"];
  if (!isObj(unsigned) || unsigned["family"] !== "solana") throw new NotVerified("not a Solana action");
  const deadline = unsigned["deadline"];
  if (typeof deadline !== "number" || deadline <= nowUnix) throw new NotVerified("the action's deadline has passed: prepare again");
  const ixs = unsigned["instructions"];
  const signers = unsigned["requiredSigners"];
  if (!Array.isArray(ixs) || !ixs.length || !Array.isArray(signers)) throw new NotVerified("a Solana action has instructions and required signers");
  const instructions: Instruction[] = ixs.map((one) => {
    if (!isObj(one) || !Array.isArray(one["keys"])) throw new NotVerified("an instruction is not an object with keys");
    return {
      programAddress: solanaAddress(String(one["programId"])),
      accounts: one["keys"].map((m) => {
        if (!isObj(m)) throw new NotVerified("an account is not an object");
        return { address: solanaAddress(String(m["pubkey"])), role: role(m["isSigner"], m["isWritable"]) };
      }),
      data: new Uint8Array(Buffer.from(String(one["data"]), "base64")), // verified: strict base64
    };
  });
  const message = pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayer(solanaAddress(String(unsigned["feePayer"])), m),
    (m) => appendTransactionMessageInstructions(instructions, m),
  );
  return { message, requiredSigners: signers.map((s) => solanaAddress(String(s))) };
}
