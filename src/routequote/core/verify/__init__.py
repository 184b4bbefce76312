"""The caller-side safety verifier, run by an agent before it signs anything (pure: the core only).

`verify_bundle` re-derives every hash, decodes every EVM calldata and Solana instruction and checks them
against what the caller itself knows (its intent, its wallets, its approval_v3 bounds and the quote's
direct_route_summary), against the pinned contracts and programs, the 1 bp fee formula and the deadlines.
It returns findings; an empty list of errors means "nothing found wrong". By part:

- `bundle`: hashes, intent / route / step, amounts and bounds, timing, fee recipient (`receipt`: the safety
  receipt against the payloads);
- `evm`, `solana`: the payloads of each chain family (`solana_fee`: the Solana fee, decoded on its own);
  `cctp_receive`: a CCTP destination mint;
- `erc4337`: the v1 corridor's settlement plan (`verify_settlement_plan`);
- `handoff`: A2A's caller wallet handoff, bound to a verified bundle by hash;
- `common`: findings, the checker, strict comparisons, timing.
"""

from __future__ import annotations

from routequote.core.actions.approval import check_verification_context, verification_context
from routequote.core.verify.bundle import assert_bundle_ok, verify_bundle
from routequote.core.verify.common import BundleRejected, Finding
from routequote.core.verify.erc4337 import verify_settlement_plan
from routequote.core.verify.handoff import caller_wallet_handoff, verify_handoff

__all__ = [
    "BundleRejected",
    "Finding",
    "assert_bundle_ok",
    "caller_wallet_handoff",
    "check_verification_context",
    "verification_context",
    "verify_bundle",
    "verify_handoff",
    "verify_settlement_plan",
]
