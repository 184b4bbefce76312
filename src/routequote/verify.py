"""`routequote.verify`: the caller-side verifier's public name. It lives in the core (`routequote.core.verify`)
and imports no server stack; this module only re-exports it.

`verify_bundle(bundle, intent=..., wallets=..., now_unix=..., approval_v3=..., direct_route_summary=...,
event_signer_public=..., fee_recipients=..., deployments=..., session_actual_input_base=...,
accept_modelled_bounds=False)` returns the findings (a bundle whose bounds are modelled from the embedded
snapshot is refused with `bounds_modelled_not_live` unless `accept_modelled_bounds=True`); `assert_bundle_ok` raises `BundleRejected` on an error; `verify_settlement_plan` checks the v1
corridor's ERC-4337 plan; `verification_context` / `check_verification_context` build and check the
hash-bound context a caller keeps.
"""

from __future__ import annotations

from routequote.core.verify import (
    BundleRejected,
    Finding,
    assert_bundle_ok,
    check_verification_context,
    verification_context,
    verify_bundle,
    verify_settlement_plan,
)

__all__ = [
    "BundleRejected",
    "Finding",
    "assert_bundle_ok",
    "check_verification_context",
    "verification_context",
    "verify_bundle",
    "verify_settlement_plan",
]
