"""The A2A `prepare` operation: a one-shot prepare of a single-step route, checked against the caller's
hash-bound verification context before anything is prepared, and withheld unless the prepared action passes
the caller-side verifier."""

from __future__ import annotations

from typing import Any, Protocol

from routequote.core.actions.approval import check_verification_context, parse_approval
from routequote.core.bounds import BASIS_MODELLED
from routequote.core.intent import parse_quote_request
from routequote.core.routes import ROUTES
from routequote.core.verify import verify_bundle
from routequote.core.verify.handoff import caller_wallet_handoff, handoff_bounds
from routequote.errors import InvalidRequest, RouteQuoteError
from routequote.fee_recipient_check import A2A_ACCEPT_FIELD, a2a_accepts_unconfigured, fee_recipient_findings
from routequote.ports import Clock
from routequote.surfaces import guidance as g
from routequote.surfaces.a2a_operation import QUOTE_FIELDS, Operation, log, quote_body

PREPARE_FIELDS = {
    "callerApproved": "caller_approved",
    **QUOTE_FIELDS,
    "wallets": "wallets",
    "eventSignerPublic": "event_signer_public",
    "approvalV3": "approval_v3",
}


A2A_ACCEPT_MODELLED_FIELD = "acceptModelledBounds"


def a2a_accepts_modelled(data: dict[str, Any]) -> bool:
    """The A2A caller's explicit acceptance of modelled bounds (a boolean field; absent means no)."""
    value = data.get(A2A_ACCEPT_MODELLED_FIELD, False)
    if not isinstance(value, bool):
        raise InvalidRequest("wrong_type", f"{A2A_ACCEPT_MODELLED_FIELD} must be a boolean")
    return value


def bounds_verification(bundle: dict[str, Any], accepted: bool) -> dict[str, Any]:
    """The `bounds` entry of an action_verification block: what the verifier checked about the bounds'
    provenance, and whether the caller accepted modelled ones (then it is not called safe to sign on mainnet)."""
    bounds = handoff_bounds(bundle)
    modelled = bounds["basis"] == BASIS_MODELLED
    return {
        **bounds,
        "accepted_as_modelled": modelled and accepted,
        "note": (
            "accepted as modelled at your request (acceptModelledBounds): these bounds were not priced from the "
            "live market; sign only on a test or local chain"
            if modelled
            else "bounds provenance checked"
        ),
    }


class SafetyBoundaryFailed(RouteQuoteError):
    """A prepared action failed the caller-side verifier: it is withheld, never handed to a wallet."""

    error = "safety_boundary_failed"
    agent_code = "safety_boundary_failed"


class PrepareCapability(Protocol):
    deployments: dict[Any, Any]
    fee_recipients: dict[Any, str]

    async def prepare(self, body: Any) -> dict[str, Any]: ...


def same_copy(theirs: Any, ours: Any, reason: str, what: str) -> None:
    if theirs != ours:
        raise InvalidRequest(
            reason, f"verificationContext.{what} is not an exact copy of the request's {what}"
        )


def check_prepare_request(data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """Every adapter rule of a one-shot prepare, before any upstream call. Returns (REST body, parsed
    approval, verification context). Rules: approval_v3 present, for exactly the one_shot mode; the route
    is one step (multi-step quotes allow sessions only); the verification context is present, internally
    consistent (its SHA-256 recomputed, summary hash = approval's) and holds exact copies of the request's
    intent, wallets, event signer and approval."""
    raw_approval = data.get("approvalV3")
    if raw_approval is None:
        raise InvalidRequest("approval_v3_required", "prepare needs approvalV3 (selected_mode one_shot)")
    approval = parse_approval(raw_approval, mode="one_shot")
    intent = parse_quote_request(quote_body(data))
    route = ROUTES[intent.route_key]
    if len(route.steps) > 1:
        raise InvalidRequest(
            "one_shot_not_allowed_for_multi_step_route",
            f"{route.key} has {len(route.steps)} steps: multi-step quotes allow the session mode only",
            details={"route": route.key, "step_count": len(route.steps), "allowed_modes": ["session"]},
        )
    ctx = data.get("verificationContext")
    if ctx is None:
        raise InvalidRequest(
            "verification_context_required", "prepare needs the hash-bound verificationContext"
        )
    problems = check_verification_context(ctx)
    if problems:
        raise InvalidRequest(
            "verification_context_invalid",
            "the verification context does not verify",
            details={"problems": problems},
        )
    body = {snake: data[camel] for camel, snake in PREPARE_FIELDS.items() if camel in data}
    same_copy(ctx["intent"], intent.as_request(), "verification_context_intent_mismatch", "intent")
    same_copy(ctx["wallets"], body.get("wallets"), "verification_context_wallets_mismatch", "wallets")
    same_copy(
        ctx["event_signer_public"],
        body.get("event_signer_public"),
        "verification_context_event_signer_mismatch",
        "event_signer_public",
    )
    same_copy(ctx["approval_v3"], raw_approval, "verification_context_approval_mismatch", "approval_v3")
    return body, approval, ctx


def prepare_operation(prepare: PrepareCapability, clock: Clock) -> Operation:
    fee_recipients = {getattr(k, "value", k): v for k, v in prepare.fee_recipients.items()}

    async def run(data: dict[str, Any]) -> dict[str, Any]:
        body, approval, ctx = check_prepare_request(data)
        accept_unconfigured = a2a_accepts_unconfigured(data)  # checked before anything is prepared
        accept_modelled = a2a_accepts_modelled(data)
        bundle = await prepare.prepare(body)
        findings = verify_bundle(
            bundle,
            intent=ctx["intent"],
            wallets=body["wallets"],
            now_unix=int(clock.now().timestamp()),
            approval_v3=approval,
            direct_route_summary=ctx["direct_route_summary"],
            event_signer_public=body.get("event_signer_public"),
            fee_recipients=fee_recipients,
            deployments=prepare.deployments,
            accept_modelled_bounds=accept_modelled,
        )
        errors = [f.as_dict() for f in findings if f.severity == "error"]
        errors += fee_recipient_findings(bundle, accept_unconfigured=accept_unconfigured)
        if errors:
            log.error(
                "a2a_prepare_bundle_rejected", route=bundle.get("route"), codes=[e["code"] for e in errors]
            )
            raise SafetyBoundaryFailed(
                "prepared_action_failed_verification",
                "the prepared action failed verification against your bounds and was withheld",
                details={"findings": errors[:20]},
            )
        return {
            "bundle": bundle,
            "guidance": g.bundle_guidance(bundle),
            "action_verification": {
                "verified": True,
                "verifier": "routequote.verify.verify_bundle",
                "checked_against": [
                    "intent",
                    "wallets",
                    "approval_v3",
                    "direct_route_summary",
                    "fee_recipient",
                    "pinned_contracts_and_programs",
                    "deadlines",
                    "payload_hashes",
                    "bounds_provenance",
                ],
                "bounds": bounds_verification(bundle, accept_modelled),
                "warnings": [f.as_dict() for f in findings],
            },
            "caller_wallet_handoff": caller_wallet_handoff(bundle),
        }

    fields = frozenset(PREPARE_FIELDS) | {"verificationContext", A2A_ACCEPT_FIELD, A2A_ACCEPT_MODELLED_FIELD}
    return Operation("prepare", fields, run)
