"""Agent guidance and agent-channel error codes shared by the MCP tools and the A2A agent.

Guidance is advice to the calling agent, added *next to* the REST JSON (never inside it, so the quote's
hashes still verify). It states what did and did not happen: a quote is an unranked candidate,
automatic selection is forbidden, nothing was signed, nothing was submitted.
"""

from __future__ import annotations

from typing import Any

from routequote.core.preflight import preflight_summary
from routequote.core.verify.handoff import handoff_bounds
from routequote.errors import (
    RateLimited,
    ReapprovalRequired,
    RouteQuoteError,
    UpstreamError,
)

# Stable agent-channel error codes (MCP tool errors and A2A `{error: {code}}`).
RATE_LIMITED = "rate_limited"
UPSTREAM_UNAVAILABLE = "upstream_unavailable"
REQUEST_REJECTED = "request_rejected"
REAPPROVAL_REQUIRED = "reapproval_required"
SAFETY_BOUNDARY_FAILED = "safety_boundary_failed"  # A2A prepare: the returned action failed verification

_NOTHING_DONE = {
    "wallet_authentication_performed": False,
    "session_created": False,
    "action_prepared": False,
    "transaction_signed": False,
    "transaction_submitted": False,
}


def agent_error_code(exc: RouteQuoteError) -> str:
    override = getattr(exc, "agent_code", None)
    if isinstance(override, str):
        return override
    if isinstance(exc, RateLimited):
        return RATE_LIMITED
    if isinstance(exc, UpstreamError):
        return UPSTREAM_UNAVAILABLE
    if isinstance(exc, ReapprovalRequired):
        return REAPPROVAL_REQUIRED
    return REQUEST_REJECTED


def agent_error(exc: RouteQuoteError) -> dict[str, Any]:
    """`{code, error, reason_class, message, retry_after_seconds?, ...details}`: the REST ErrorResponse
    body plus the stable agent code. Carries no caller input."""
    body = exc.body()
    return {"code": agent_error_code(exc), **body}


def quote_guidance(quote: dict[str, Any]) -> dict[str, Any]:
    """Short guidance for one issued quote."""
    continuation = quote.get("continuation_v3") or {}
    return {
        "selection_status": "unranked_candidate",
        "automatic_selection_forbidden": True,
        "compare_with_other_routes": True,
        "requote_before_selection": True,
        "quote_expires_at": quote.get("expires_at"),
        "allowed_modes": continuation.get("allowed_modes", []),
        "first_unsigned_action_supported": bool(
            quote.get("execution", {}).get("first_unsigned_action_supported")
        ),
        **_NOTHING_DONE,
        "note": (
            "An unranked, non-binding estimate that expires. Do not select it automatically: a human or the "
            "caller's own policy must approve a route (approval_v3) before any action is prepared. Nothing was "
            "signed or submitted; the caller alone signs and submits."
        ),
    }


def read_guidance(kind: str) -> dict[str, Any]:
    """Guidance for the read-only tools (capabilities, status, manifest)."""
    return {
        "read_only": True,
        "kind": kind,
        **_NOTHING_DONE,
        "note": "Read-only service information. Quotes are unranked candidates; the service never signs or submits.",
    }


def bundle_guidance(bundle: dict[str, Any]) -> dict[str, Any]:
    """Guidance next to a prepared (unsigned) action bundle."""
    return {
        "selection_status": "selected_by_caller",
        "automatic_selection_forbidden": True,
        "automatic_invocation_forbidden": True,
        "adapter_chains_actions": False,
        "wallet_authentication_performed": False,
        "session_created": False,
        "action_prepared": True,
        "transaction_signed": False,
        "transaction_submitted": False,
        "expires_at": bundle.get("expires_at"),
        # live or modelled, from the bundle's own hashed receipt: a modelled bound is never called safe to sign
        "bounds": handoff_bounds(bundle),
        # what each chain of the route will need from the caller, read before signing (advice only)
        "preflight": preflight_summary(bundle.get("preflight")),
        "note": (
            "An unsigned action for the caller's wallet. Verify it (payload_sha256, targets, amounts, "
            "deadline) before signing; only verified actual output may advance a multi-step route, and every "
            "later step needs a fresh quote. The service never signs or submits."
        ),
    }
