/** The shape of generated/pinned.ts: data rendered from the Python core (never rules). */
export type ChainFamily = "evm" | "solana";

export interface PinnedStep {
  index: number;
  provider: string;
  source: string;
  target: string;
  feeStep: boolean;
  poolId: string | null;
}

export interface PinnedRoute {
  requiredWalletChains: string[];
  steps: PinnedStep[];
}

export interface PinnedAsset {
  chain: string;
  token: string;
  decimals: number;
  address: string | null;
  wrappedAddress: string | null;
  tokenProgram: string | null;
}

export interface PinnedDeployment {
  chainId: number;
  tokens: Record<string, string>;
  contracts: Record<string, string>;
  /** CCTP v2 MessageTransmitterV2 (the destination mint's target), or null where not pinned. */
  messageTransmitterV2?: string | null;
}

/** The ERC-4337 settlement's limits (core/actions/erc4337/plan.py, permit.py); integers past 2^53 as strings. */
export interface PinnedErc4337 {
  planKind: string;
  planVersion: string;
  maxPermitWindowSeconds: number;
  uniswapFeeTiers: number[];
  gasBounds: Record<string, [string, string]>;
  maxGasCostWei: string;
  usdcPermitDomain: Record<string, [string, string]>;
}

export interface Pinned {
  constants: {
    BUNDLE_VERSION: string;
    EVM_ACTION_VERSION: string;
    SOLANA_ACTION_VERSION: string;
    RECEIPT_SCHEMA: string;
    FEE_FORMULA: string;
    BUNDLE_TTL_SECONDS: number;
    ONCHAIN_DEADLINE_SECONDS: number;
    MAX_DEADLINE_WINDOW_SECONDS: number;
    MAX_ACROSS_FILL_DEADLINE_SECONDS: number;
    CCTP_FAST_FINALITY: number;
    CLOCK_SKEW_SECONDS: number;
    ROUTER_ADDRESS_THIS: string;
    RECEIVE_KIND: string;
    RECEIVE_PHASE: string;
    SOLANA_RECEIVE_KIND: string;
    SOLANA_RECEIVE_PHASE: string;
    SOLANA_RECEIVE_KINDS: string[];
    SPL_TOKEN_PROGRAM: string;
    ATA_PROGRAM: string;
    SYSTEM_PROGRAM: string;
    CCTP_MESSAGE_TRANSMITTER_V2: string;
    CCTP_TOKEN_MESSENGER_MINTER_V2: string;
    ORCA_WHIRLPOOL_PROGRAM: string;
    RAYDIUM_CLMM_PROGRAM: string;
    SWAP_V2_DISCRIMINATOR_HEX: string;
    MEMO_PROGRAM: string;
    TOKEN_2022_PROGRAM: string;
    RAYDIUM_TICK_ARRAY_SIZE: number;
    RAYDIUM_MAX_TICK_ARRAYS: number;
    RAYDIUM_FIXED_ACCOUNTS: number;
    ORCA_TICK_ARRAY_SIZE: number;
    ORCA_MIN_TICK: number;
    ORCA_MAX_TICK: number;
    ORCA_MIN_SQRT_PRICE_X64: string;
    ORCA_MAX_SQRT_PRICE_X64: string;
  };
  chains: Record<string, { family: ChainFamily; chainId: number | null; cctpDomain: number | null }>;
  lzEid: Record<string, number>;
  assets: Record<string, PinnedAsset>;
  deployments: Record<string, PinnedDeployment>;
  orcaPools: Record<string, OrcaPool>;
  raydiumPools: Record<string, RaydiumPool>;
  erc4337: PinnedErc4337;
  routes: Record<string, PinnedRoute>;
}

export interface OrcaPool {
  whirlpool: string;
  tokenA: string;
  tokenB: string;
  vaultA: string;
  vaultB: string;
  oracle: string;
  tickSpacing: number;
}

export interface RaydiumPool {
  pool: string;
  ammConfig: string;
  token0: string;
  token1: string;
  vault0: string;
  vault1: string;
  bitmapExtension: string;
  tickSpacing: number;
}
