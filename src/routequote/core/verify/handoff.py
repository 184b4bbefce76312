"""The caller's wallet handoff (A2A): what the caller's wallet needs from a verified bundle, bound to it by
hash, and the caller-side check that a handoff is exactly that."""

from __future__ import annotations

from typing import Any

from routequote.core.actions.bundle import payload_sha256
from routequote.core.bounds import BASIS_LIVE, BASIS_MODELLED, bounds_sentence, receipt_bounds
from routequote.core.hashing import CANONICAL_JSON_SPEC, canonical_sha256
from routequote.core.quote import SERVER_FLAGS

HANDOFF_VERSION = "routequote-caller-wallet-handoff-v1"
HANDOFF_HASH_SPEC = "sha256 of " + CANONICAL_JSON_SPEC + " of the handoff without handoff_sha256"


def handoff_bounds(bundle: dict[str, Any]) -> dict[str, Any]:
    """Where the bounds the wallet would sign came from: a modelled basis says so, and never passes for live."""
    bounds = receipt_bounds(bundle)
    if bounds is None:
        return {
            "basis": "none",
            "statement": "no bounds priced from a market (a CCTP mint of the attested amount)",
        }
    if bounds.get("basis") == BASIS_LIVE:
        return {"basis": BASIS_LIVE, "statement": bounds_sentence(bounds)}
    return {
        "basis": BASIS_MODELLED,
        "statement": bounds_sentence(bounds),
        "modelled_not_live": True,
        "sign_only_on_a_test_or_local_chain": True,
    }


def caller_wallet_handoff(bundle: dict[str, Any]) -> dict[str, Any]:
    """What the caller's wallet needs, bound to the bundle by hash; its own SHA-256 makes it self-verifying.
    EVM: EIP-1193 `eth_sendTransaction` requests, sent one at a time, each after the previous is confirmed.
    Solana: Wallet Standard `solana:signAndSendTransaction` data; the caller adds a fresh blockhash."""
    action = bundle["unsigned_action"]
    handoff: dict[str, Any] = {
        "version": HANDOFF_VERSION,
        "route": bundle["route"],
        "step_index": bundle["step_index"],
        "bundle_payload_sha256": bundle["payload_sha256"],
        "action_sha256": action["safety_receipt"]["payload_binding"]["action_sha256"],
        "expires_at": bundle["expires_at"],
        "automatic_invocation_forbidden": True,
        "caller_must_verify_sign_and_submit": True,
        "adapter_chains_actions": False,
        "next_step_requires_fresh_quote_and_verified_receipt": True,
        "bounds": handoff_bounds(bundle),
        **SERVER_FLAGS,
    }
    if action["family"] == "evm":
        handoff["kind"] = "eip1193_eth_sendTransaction"
        handoff["submission"] = "sequential_in_order_each_after_the_previous_is_confirmed"
        handoff["requests"] = [
            {
                "method": "eth_sendTransaction",
                "params": [
                    {
                        "from": tx["from"],
                        "to": tx["to"],
                        "data": tx["data"],
                        "value": hex(int(tx["value"])),
                        "chainId": hex(int(tx["chainId"])),
                    }
                ],
            }
            for tx in action["transactions"]
        ]
    else:
        handoff["kind"] = "solana_wallet_standard"
        handoff["chain"] = "solana:mainnet"
        handoff["feature"] = "solana:signAndSendTransaction"
        handoff["transaction"] = {
            "message_version": 0,
            "fee_payer": action["feePayer"],
            "recent_blockhash": None,
            "instructions": action["instructions"],
            "required_signers": action["requiredSigners"],
        }
        handoff["note"] = (
            "compile a v0 message with a fresh recent blockhash; every required signer (your wallet and, for a "
            "CCTP burn, your fresh event signer) signs locally"
        )
    handoff["handoff_sha256_spec"] = HANDOFF_HASH_SPEC
    handoff["handoff_sha256"] = canonical_sha256(handoff)
    return handoff


def verify_handoff(handoff: dict[str, Any], bundle: dict[str, Any]) -> list[str]:
    """Caller-side check of a handoff: its own hash, and exactly the wallet requests derived from `bundle`."""
    problems = []
    body = {k: v for k, v in handoff.items() if k != "handoff_sha256"}
    if canonical_sha256(body) != handoff.get("handoff_sha256"):
        problems.append("handoff_sha256_mismatch")
    if handoff.get("bundle_payload_sha256") != payload_sha256(bundle):
        problems.append("handoff_not_bound_to_bundle")
    if caller_wallet_handoff(bundle) != handoff:
        problems.append("handoff_differs_from_bundle_actions")
    return problems
