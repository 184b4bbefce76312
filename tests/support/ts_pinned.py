"""The TypeScript verifier's pinned data (routes, chains, deployments, limits), rendered from the Python core so
the two verifiers check against the same allowlist. `python -m tests.support.ts_pinned` rewrites
clients/typescript/src/generated/pinned.ts; tests/integration/test_ts_client.py fails when it has drifted.
Only data crosses over: every rule is written in TypeScript."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from routequote.core.actions import erc4337 as aa
from routequote.core.actions import solana_swaps as sw
from routequote.core.actions.bundle import (
    BUNDLE_VERSION,
    EVM_ACTION_VERSION,
    FEE_FORMULA,
    RECEIPT_SCHEMA,
    SOLANA_ACTION_VERSION,
)
from routequote.core.actions.cctp_receive import RECEIVE_KIND, RECEIVE_PHASE
from routequote.core.actions.cctp_solana_receive import (
    SOLANA_RECEIVE_KIND,
    SOLANA_RECEIVE_KINDS,
    SOLANA_RECEIVE_PHASE,
)
from routequote.core.actions.evm import DEFAULT_DEPLOYMENTS, LZ_EID, ROUTER_ADDRESS_THIS, EvmDeployment
from routequote.core.actions.plan import (
    BUNDLE_TTL_SECONDS,
    CCTP_FAST_FINALITY,
    MAX_ACROSS_FILL_DEADLINE_SECONDS,
    MAX_DEADLINE_WINDOW_SECONDS,
    ONCHAIN_DEADLINE_SECONDS,
)
from routequote.core.actions.solana import (
    ATA_PROGRAM,
    CCTP_MESSAGE_TRANSMITTER_V2,
    CCTP_TOKEN_MESSENGER_MINTER_V2,
    SYSTEM_PROGRAM,
)
from routequote.core.assets import ASSETS, CHAINS, SPL_TOKEN_PROGRAM, TOKEN_2022_PROGRAM
from routequote.core.routes import ROUTES, Provider
from routequote.core.verify.common import CLOCK_SKEW_SECONDS

TARGET = Path(__file__).resolve().parents[2] / "clients" / "typescript" / "src" / "generated" / "pinned.ts"


def deployment_json(d: EvmDeployment) -> dict[str, Any]:
    """One chain's contract addresses in the TypeScript verifier's shape (`PinnedDeployment`); also what a
    caller passes as `deployments` to point the client at local chains."""
    return {
        "chainId": d.chain_id,
        "tokens": dict(sorted(d.tokens.items())),
        "contracts": {p.value: d.contract(p) for p in Provider if d.contract(p) is not None},
        "messageTransmitterV2": d.message_transmitter_v2,
    }


def pinned() -> dict[str, Any]:
    return {
        "constants": {
            "BUNDLE_VERSION": BUNDLE_VERSION,
            "EVM_ACTION_VERSION": EVM_ACTION_VERSION,
            "SOLANA_ACTION_VERSION": SOLANA_ACTION_VERSION,
            "RECEIPT_SCHEMA": RECEIPT_SCHEMA,
            "FEE_FORMULA": FEE_FORMULA,
            "BUNDLE_TTL_SECONDS": BUNDLE_TTL_SECONDS,
            "ONCHAIN_DEADLINE_SECONDS": ONCHAIN_DEADLINE_SECONDS,
            "MAX_DEADLINE_WINDOW_SECONDS": MAX_DEADLINE_WINDOW_SECONDS,
            "MAX_ACROSS_FILL_DEADLINE_SECONDS": MAX_ACROSS_FILL_DEADLINE_SECONDS,
            "CCTP_FAST_FINALITY": CCTP_FAST_FINALITY,
            "CLOCK_SKEW_SECONDS": CLOCK_SKEW_SECONDS,
            "ROUTER_ADDRESS_THIS": ROUTER_ADDRESS_THIS,
            "RECEIVE_KIND": RECEIVE_KIND,
            "RECEIVE_PHASE": RECEIVE_PHASE,
            "SOLANA_RECEIVE_KIND": SOLANA_RECEIVE_KIND,
            "SOLANA_RECEIVE_PHASE": SOLANA_RECEIVE_PHASE,
            "SOLANA_RECEIVE_KINDS": list(SOLANA_RECEIVE_KINDS),
            "SPL_TOKEN_PROGRAM": SPL_TOKEN_PROGRAM,
            "ATA_PROGRAM": str(ATA_PROGRAM),
            "SYSTEM_PROGRAM": str(SYSTEM_PROGRAM),
            "CCTP_MESSAGE_TRANSMITTER_V2": str(CCTP_MESSAGE_TRANSMITTER_V2),
            "CCTP_TOKEN_MESSENGER_MINTER_V2": str(CCTP_TOKEN_MESSENGER_MINTER_V2),
            "ORCA_WHIRLPOOL_PROGRAM": str(sw.ORCA_WHIRLPOOL_PROGRAM),
            "RAYDIUM_CLMM_PROGRAM": str(sw.RAYDIUM_CLMM_PROGRAM),
            "SWAP_V2_DISCRIMINATOR_HEX": sw.SWAP_V2_DISCRIMINATOR.hex(),
            "MEMO_PROGRAM": str(sw.MEMO_PROGRAM),
            "TOKEN_2022_PROGRAM": TOKEN_2022_PROGRAM,
            "RAYDIUM_TICK_ARRAY_SIZE": sw.RAYDIUM_TICK_ARRAY_SIZE,
            "RAYDIUM_MAX_TICK_ARRAYS": sw.RAYDIUM_MAX_TICK_ARRAYS,
            "RAYDIUM_FIXED_ACCOUNTS": sw.RAYDIUM_FIXED_ACCOUNTS,
            "ORCA_TICK_ARRAY_SIZE": sw.ORCA_TICK_ARRAY_SIZE,
            "ORCA_MIN_TICK": sw.ORCA_MIN_TICK,
            "ORCA_MAX_TICK": sw.ORCA_MAX_TICK,
            "ORCA_MIN_SQRT_PRICE_X64": str(sw.ORCA_MIN_SQRT_PRICE_X64),
            "ORCA_MAX_SQRT_PRICE_X64": str(sw.ORCA_MAX_SQRT_PRICE_X64),
        },
        "chains": {
            c.value: {"family": i.family.value, "chainId": i.chain_id, "cctpDomain": i.cctp_domain}
            for c, i in CHAINS.items()
        },
        "lzEid": {c.value: eid for c, eid in LZ_EID.items()},
        "assets": {
            key: {
                "chain": a.chain.value,
                "token": a.token.value,
                "decimals": a.decimals,
                "address": a.address,
                "wrappedAddress": a.wrapped_address,
                "tokenProgram": a.token_program,
            }
            for key, a in sorted(ASSETS.items())
        },
        "deployments": {c.value: deployment_json(d) for c, d in DEFAULT_DEPLOYMENTS.items()},
        "orcaPools": {
            pool_id: {
                "whirlpool": p.whirlpool,
                "tokenA": p.token_a,
                "tokenB": p.token_b,
                "vaultA": p.vault_a,
                "vaultB": p.vault_b,
                "oracle": p.oracle,
                "tickSpacing": p.tick_spacing,
            }
            for pool_id, p in sorted(sw.ORCA_POOLS.items())
        },
        "raydiumPools": {
            pool_id: {
                "pool": p.pool,
                "ammConfig": p.amm_config,
                "token0": p.token_0,
                "token1": p.token_1,
                "vault0": p.vault_0,
                "vault1": p.vault_1,
                "bitmapExtension": p.bitmap_extension,
                "tickSpacing": p.tick_spacing,
            }
            for pool_id, p in sorted(sw.RAYDIUM_POOLS.items())
        },
        "erc4337": {
            "planKind": aa.PLAN_KIND,
            "planVersion": aa.PLAN_VERSION,
            "maxPermitWindowSeconds": aa.MAX_PERMIT_WINDOW_SECONDS,
            "uniswapFeeTiers": sorted(aa.UNISWAP_FEE_TIERS),
            "gasBounds": {k: [str(lo), str(hi)] for k, (lo, hi) in aa.GAS_BOUNDS.items()},
            "maxGasCostWei": str(aa.MAX_GAS_COST_WEI),
            "usdcPermitDomain": {str(c): list(d) for c, d in sorted(aa.USDC_PERMIT_DOMAIN.items())},
        },
        "routes": {
            r.key: {
                "requiredWalletChains": list(r.required_wallet_chains),
                "steps": [
                    {
                        "index": s.index,
                        "provider": s.provider.value,
                        "source": s.source.key,
                        "target": s.target.key,
                        "feeStep": s.fee_step,
                        "poolId": s.pool_id,
                    }
                    for s in r.steps
                ],
            }
            for r in sorted(ROUTES.values(), key=lambda r: r.key)
        },
    }


def render() -> str:
    body = json.dumps(pinned(), indent=2, sort_keys=False)
    return (
        "// Generated by `python -m tests.support.ts_pinned` from the Python core; do not edit.\n"
        'import type { Pinned } from "../pinned-types.js";\n\n'
        f"export const PINNED: Pinned = {body};\n"
    )


if __name__ == "__main__":
    TARGET.write_text(render())
