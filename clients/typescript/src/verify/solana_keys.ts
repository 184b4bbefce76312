/** Solana public keys for the EVM checks that name a Solana account: base58 (@scure/base), program-derived
 * addresses (sha256 from @noble/hashes, the off-curve test from @noble/curves) and associated token accounts,
 * as solders / the SPL programs derive them. */
import { ed25519 } from "@noble/curves/ed25519";
import { sha256 } from "@noble/hashes/sha2";
import { base58 } from "@scure/base";
import { PINNED } from "../generated/pinned.js";
import { Malformed } from "./common.js";

const PDA_MARKER = new TextEncoder().encode("ProgramDerivedAddress");

export function solanaKey(text: string): Uint8Array {
  const bytes = base58.decode(text);
  if (bytes.length !== 32) throw new Malformed("a Solana public key is 32 bytes");
  return bytes;
}

function onCurve(bytes: Uint8Array): boolean {
  try {
    ed25519.ExtendedPoint.fromHex(bytes);
    return true;
  } catch {
    return false;
  }
}

/** find_program_address: the first bump from 255 down whose hash is off the curve. */
export function findProgramAddress(seeds: Uint8Array[], programId: Uint8Array): Uint8Array {
  for (let bump = 255; bump >= 0; bump--) {
    const h = sha256.create();
    for (const seed of seeds) h.update(seed);
    h.update(Uint8Array.of(bump)).update(programId).update(PDA_MARKER);
    const candidate = h.digest();
    if (!onCurve(candidate)) return candidate;
  }
  throw new Malformed("no viable program address");
}

/** The owner's associated token account for the asset's mint under the mint's token program. */
export function associatedTokenAddress(owner: string, assetKey: string): Uint8Array {
  const asset = PINNED.assets[assetKey];
  const mint = asset?.address ?? asset?.wrappedAddress;
  if (asset === undefined || mint === null || mint === undefined) throw new Malformed(`no mint for ${assetKey}`);
  const program = solanaKey(asset.tokenProgram ?? PINNED.constants.SPL_TOKEN_PROGRAM);
  return findProgramAddress([solanaKey(owner), program, solanaKey(mint)], solanaKey(PINNED.constants.ATA_PROGRAM));
}

export function hex(bytes: Uint8Array): string {
  return `0x${Buffer.from(bytes).toString("hex")}`;
}
