/** Wallet handoff: a verified EVM action as viem `sendTransaction` requests. Only an action this client
 * verified (RouteQuoteClient.prepare / readSession / nextAction) is handed off; anything else is refused. */
import type { Address, Hex } from "viem";
import { isObj } from "../verify/common.js";
import { ClientError } from "./errors.js";
import type { PreparedAction } from "./client.js";

const verified = new WeakSet<PreparedAction>();

/** Marks an action the verifier passed (called by the client only). */
export function markVerified(action: PreparedAction): PreparedAction {
  verified.add(Object.freeze(action));
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
