/** Circle CCTP v2 burn messages, read (port of core/actions/cctp_message.py parse_cctp_message) and the rules
 * both destination mints share: the message is the route step's burn (core/actions/cctp_receive.py
 * _source_checks). Layout (circlefin/evm-cctp-contracts MessageV2.sol, BurnMessageV2.sol; big-endian):
 * header 148 bytes (version u32 @0, sourceDomain u32 @4, destinationDomain u32 @8, nonce @12, sender @44,
 * recipient @76, destinationCaller @108, minFinalityThreshold u32 @140, finalityThresholdExecuted u32 @144),
 * then the burn body 228 bytes + hookData (version u32 @0, burnToken @4, mintRecipient @36, amount u256 @68,
 * messageSender @100, maxFee u256 @132, feeExecuted u256 @164, expirationBlock u256 @196). */
import { PINNED } from "../generated/pinned.js";
import type { PinnedStep } from "../pinned-types.js";
import { chainOf } from "./common.js";
import type { Deployments } from "./evm.js";
import { toHex } from "./payloads.js";
import { solanaKey } from "./solana_keys.js";

export const HEADER_LENGTH = 148;
export const BURN_BODY_LENGTH = 228;
export const CCTP_V2_VERSION = 1; // message and burn-body version
export const ATTESTATION_SIGNATURE_LENGTH = 65;
export const ZERO32_HEX = `0x${"00".repeat(32)}`;

/** The bytes are not a CCTP v2 burn message (Python's CctpMessageError). */
export class CctpMessageError extends Error {}

/** A rule of the message broken (Python's ActionUnavailable raised by the builders' checks): code and detail. */
export class MessageRefused extends Error {
  constructor(
    readonly code: string,
    detail: string,
  ) {
    super(detail);
  }
}

export interface BurnBody {
  version: number;
  burnToken: string;
  mintRecipient: string;
  amount: bigint;
  messageSender: string;
  maxFee: bigint;
  feeExecuted: bigint;
  expirationBlock: bigint;
}

export interface CctpMessage {
  version: number;
  sourceDomain: number;
  destinationDomain: number;
  nonce: string;
  sender: string;
  recipient: string;
  destinationCaller: string;
  minFinalityThreshold: number;
  finalityThresholdExecuted: number;
  burn: BurnBody;
}

const hex32 = (b: Uint8Array): string => `0x${toHex(b)}`;
const uint = (b: Uint8Array): bigint => (b.length ? BigInt(`0x${toHex(b)}`) : 0n);

export function parseCctpMessage(data: Uint8Array): CctpMessage {
  if (data.length < HEADER_LENGTH) throw new CctpMessageError(`a CCTP v2 message is at least ${HEADER_LENGTH} bytes, got ${data.length}`);
  const body = data.slice(HEADER_LENGTH);
  if (body.length < BURN_BODY_LENGTH) throw new CctpMessageError(`a CCTP v2 burn message body is at least ${BURN_BODY_LENGTH} bytes, got ${body.length}`);
  const at = (d: Uint8Array, offset: number, size: number): Uint8Array => d.slice(offset, offset + size);
  const u32 = (d: Uint8Array, offset: number): number => Number(uint(at(d, offset, 4)));
  return {
    version: u32(data, 0),
    sourceDomain: u32(data, 4),
    destinationDomain: u32(data, 8),
    nonce: hex32(at(data, 12, 32)),
    sender: hex32(at(data, 44, 32)),
    recipient: hex32(at(data, 76, 32)),
    destinationCaller: hex32(at(data, 108, 32)),
    minFinalityThreshold: u32(data, 140),
    finalityThresholdExecuted: u32(data, 144),
    burn: {
      version: u32(body, 0),
      burnToken: hex32(at(body, 4, 32)),
      mintRecipient: hex32(at(body, 36, 32)),
      amount: uint(at(body, 68, 32)),
      messageSender: hex32(at(body, 100, 32)),
      maxFee: uint(at(body, 132, 32)),
      feeExecuted: uint(at(body, 164, 32)),
      expirationBlock: uint(at(body, 196, 32)),
    },
  };
}

/** An EVM address as CCTP's bytes32 (lower-case 0x-hex). */
export function evmB32(address: string): string {
  if (!/^0x[0-9a-fA-F]{40}$/.test(address)) throw new CctpMessageError(`not an EVM address: ${address.slice(0, 50)}`);
  return `0x${"00".repeat(12)}${address.slice(2).toLowerCase()}`;
}

export const solanaB32 = (key: string): string => hex32(solanaKey(key));

function evmToken(deps: Deployments, assetKey: string): string {
  const key = PINNED.assets[assetKey]?.address === null ? "WETH" : assetKey.split(":")[1]!;
  const found = deps[chainOf(assetKey)]?.tokens[key];
  if (found === undefined) throw new CctpMessageError(`no ${key} pinned on ${chainOf(assetKey)}`);
  return found;
}

/** The message is the step's burn: from its source domain, of the source USDC, by your source wallet (and, for an
 * EVM source, sent by that chain's TokenMessengerV2). Throws MessageRefused with the first rule broken. */
export function sourceChecks(step: PinnedStep, wallets: Record<string, string>, m: CctpMessage, deps: Deployments): void {
  const src = step.source;
  const srcChain = chainOf(src);
  const senderWallet = wallets[srcChain] ?? "";
  let wantToken: string;
  let wantDepositor: string;
  let wantSender: string | null;
  if (PINNED.chains[srcChain]!.family === "evm") {
    const dep = deps[srcChain]!;
    wantToken = evmB32(evmToken(deps, src));
    wantDepositor = evmB32(senderWallet);
    const messenger = dep.contracts["circle_cctp"];
    wantSender = messenger === undefined ? null : evmB32(messenger);
  } else {
    wantToken = solanaB32(PINNED.assets[src]!.address!);
    wantDepositor = solanaB32(senderWallet);
    wantSender = null;
  }
  const checks: [boolean, string, string][] = [
    [m.sourceDomain === PINNED.chains[srcChain]!.cctpDomain, "cctp_message_source_mismatch", `the message comes from domain ${m.sourceDomain}, the step burns on ${srcChain}`],
    [m.burn.burnToken === wantToken, "cctp_message_token_mismatch", "the burned token is not the step's USDC"],
    [m.burn.messageSender === wantDepositor, "cctp_message_depositor_mismatch", "the burn was not made by the caller's wallet on the source chain"],
    [wantSender === null || m.sender === wantSender, "cctp_message_sender_mismatch", "the message was not sent by the source chain's TokenMessengerV2"],
  ];
  for (const [ok, code, detail] of checks) if (!ok) throw new MessageRefused(code, detail);
}
