"""approval_v3 rules, the 409 reapproval body, and the caller-held verification context.

Pure: the current time is handed in. Shape errors are InvalidRequest (400); an approval that no longer
binds the issued quote is ReapprovalRequired (409), raised before any action is built.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from routequote.core.field_rules import check_idempotency_key
from routequote.core.hashing import canonical_sha256
from routequote.core.quote import APPROVAL_FIELDS, APPROVAL_VERSION
from routequote.core.routes import Route
from routequote.errors import InvalidRequest, ReapprovalRequired
from routequote.input_rules import looks_secret_value, name_list

ONE_SHOT_CONTEXT_VERSION = "routequote-one-shot-verification-context-v1"
SESSION_CONTEXT_VERSION = "routequote-session-verification-context-v1"
MIN_TTL_REMAINING_SECONDS = 15
# validating patterns are always applied with fullmatch (`$` alone would accept a trailing newline)
HEX64_RE = re.compile(r"[0-9a-f]{64}")
BASE_RE = re.compile(r"[1-9][0-9]*")
UINT256_MAX = 2**256 - 1  # an EVM amount field
U64_MAX = 2**64 - 1  # a Solana amount field
MODES = ("one_shot", "session")
SERVER_FLAGS = {"server_signing": False, "server_submission": False}
QUOTE_NOT_FOUND = "approval_v3_quote_not_found_or_process_restarted"


def parse_approval(value: Any, *, max_base: int = UINT256_MAX, mode: str | None = None) -> dict[str, Any]:
    """Strict shape of approval_v3 (exactly the nine fields). Returns a normalized copy.

    `max_base`: the widest amount the bounds may end up in (UINT256_MAX on EVM; U64_MAX where a Solana
    instruction takes them): a bound that does not fit is refused here, never met by an encoder.
    `mode`: the mode of the operation that consumes the approval (prepare: one_shot, session create:
    session); an approval for the other mode is refused, so one approval never serves both."""
    if not isinstance(value, dict):
        raise InvalidRequest("approval_v3_not_object", "approval_v3 must be an object")
    keys = set(value)
    extra = sorted(keys - set(APPROVAL_FIELDS))
    missing = sorted(set(APPROVAL_FIELDS) - keys)
    if extra:
        raise InvalidRequest(
            "approval_v3_unknown_field", f"approval_v3 properties not allowed: {name_list(extra)}"
        )
    if missing:
        raise InvalidRequest("approval_v3_missing_field", f"approval_v3 requires: {', '.join(missing)}")
    for k in APPROVAL_FIELDS:
        if not isinstance(value[k], str):
            raise InvalidRequest("approval_v3_wrong_type", f"approval_v3.{k} must be a string")
    if value["version"] != APPROVAL_VERSION:
        raise InvalidRequest(
            "approval_v3_version_unsupported", f"approval_v3.version must be {APPROVAL_VERSION}"
        )
    if value["selection_status"] != "selected":
        raise InvalidRequest("approval_v3_not_selected", "approval_v3.selection_status must be 'selected'")
    if value["selected_mode"] not in MODES:
        raise InvalidRequest(
            "approval_v3_mode_invalid", "approval_v3.selected_mode must be one_shot or session"
        )
    if mode is not None and value["selected_mode"] != mode:
        raise InvalidRequest(
            "approval_v3_mode_mismatch",
            f"this operation takes a {mode} approval; this approval selects {value['selected_mode']}",
            details={"selected_mode": value["selected_mode"], "required_mode": mode},
        )
    for k in ("quote_fingerprint", "direct_route_summary_sha256"):
        if not HEX64_RE.fullmatch(value[k]):
            raise InvalidRequest(
                "approval_v3_hash_invalid", f"approval_v3.{k} must be 64 lower-case hex characters"
            )
    for k in ("maximum_input_base", "minimum_output_base"):
        if not BASE_RE.fullmatch(value[k]) or len(value[k]) > 78:
            raise InvalidRequest(
                "approval_v3_amount_invalid", f"approval_v3.{k} must be a positive decimal string"
            )
        if int(value[k]) > max_base:
            width = "u64" if max_base == U64_MAX else "uint256" if max_base == UINT256_MAX else str(max_base)
            raise InvalidRequest(
                "approval_v3_amount_out_of_range",
                f"approval_v3.{k} must fit the {width} amount field it binds",
            )
    key = value["idempotency_key"]
    check_idempotency_key(key, "approval_v3.idempotency_key")
    if looks_secret_value(key):
        raise InvalidRequest(
            "invalid_idempotency_key",
            "approval_v3.idempotency_key looks like secret material (a key in hex); use a random id",
        )
    if not 1 <= len(value["quote_id"]) <= 128:
        raise InvalidRequest("approval_v3_quote_id_invalid", "approval_v3.quote_id has an invalid length")
    return {k: value[k] for k in APPROVAL_FIELDS}


def reapproval_body(reason: str, route: Route | None) -> dict[str, Any]:
    """The 409 body fields (besides error/reason_class/message): why, and what to do next."""
    return {
        "reason": reason,
        "action_created": False,
        "fresh_read_only_quote_required": True,
        "new_quote_is_not_action_authority": True,
        "do_not_repeat_confirmed_steps": True,
        "do_not_start_new_session": False,
        "recover_current_session": False,
        "recovery_operation": "obtain_new_quote_and_make_new_selection",
        "replacement_approval_endpoint_available": False,
        "selection_status": "unranked_candidate",
        "automatic_selection_forbidden": True,
        "caller_approved_boolean_is_not_human_proof": True,
        "required_wallet_chains": list(route.required_wallet_chains) if route else [],
        "event_signer_public_required": route.event_signer_required if route else False,
        **SERVER_FLAGS,
    }


def reapproval(reason: str, message: str, route: Route | None) -> ReapprovalRequired:
    return ReapprovalRequired(reason, message, details=reapproval_body(reason, route))


def _parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def check_approval(
    approval: dict[str, Any],
    quote: dict[str, Any] | None,
    route: Route | None,
    request_intent: dict[str, Any],
    *,
    now: datetime,
) -> None:
    """Raise ReapprovalRequired unless `approval` (parsed) still binds the issued `quote` exactly."""
    if quote is None:
        raise reapproval(
            QUOTE_NOT_FOUND,
            "the approved quote is unknown, expired, or was issued before a restart; nothing was created",
            route,
        )
    cont = quote["continuation_v3"]
    if approval["quote_id"] != quote["quote_id"]:
        raise reapproval("approval_v3_quote_id_mismatch", "approval_v3.quote_id does not match", route)
    if approval["quote_fingerprint"] != cont["quote_fingerprint"]:
        raise reapproval(
            "approval_v3_fingerprint_mismatch", "quote_fingerprint does not match the issued quote", route
        )
    if approval["direct_route_summary_sha256"] != cont["direct_route_summary_sha256"]:
        raise reapproval(
            "approval_v3_route_summary_mismatch",
            "direct_route_summary_sha256 does not match the issued quote",
            route,
        )
    q_intent = quote["intent"]
    req_from = f"{request_intent['from_chain']}:{request_intent['from_token']}"
    req_to = f"{request_intent['to_chain']}:{request_intent['to_token']}"
    if (req_from, req_to) != (q_intent["from"], q_intent["to"]) or request_intent["amount_usd"] != q_intent[
        "amount_usd"
    ]:
        raise reapproval(
            "approval_v3_intent_mismatch",
            "the request's route or amount differs from the approved quote",
            route,
        )
    if approval["selected_mode"] not in cont["allowed_modes"]:
        raise reapproval(
            "approval_v3_mode_not_allowed",
            f"selected_mode {approval['selected_mode']} is not allowed for this route (allowed: {cont['allowed_modes']})",
            route,
        )
    quoted_max = int(cont["input_base_bounds"]["maximum"])
    quoted_min_out = int(cont["minimum_output_base"])
    exact_input = int(cont["input_base_bounds"]["minimum"])
    if (
        int(approval["maximum_input_base"]) > quoted_max
        or int(approval["minimum_output_base"]) < quoted_min_out
    ):
        raise reapproval(
            "approval_v3_bounds_weaker_than_quote",
            "approval bounds may only get stricter: maximum_input_base <= quoted, minimum_output_base >= quoted",
            route,
        )
    if int(approval["maximum_input_base"]) < exact_input:
        raise reapproval(
            "approval_v3_maximum_input_below_exact_input",
            "the action spends exactly the quoted input, which exceeds the approved maximum_input_base",
            route,
        )
    remaining = (_parse_time(cont["expires_at"]) - now).total_seconds()
    if remaining < MIN_TTL_REMAINING_SECONDS:
        raise reapproval(
            "approval_v3_quote_ttl_below_minimum",
            f"the approved quote has {max(0, int(remaining))} s left; at least {MIN_TTL_REMAINING_SECONDS} s are required",
            route,
        )


def verification_context(
    *,
    intent: dict[str, Any],
    wallets: dict[str, str],
    event_signer_public: str | None,
    approval_v3: dict[str, Any],
    direct_route_summary: dict[str, Any],
) -> dict[str, Any]:
    """The caller-held context; `verification_context_sha256` = sha256 of its canonical JSON without that field."""
    mode = approval_v3.get("selected_mode")
    ctx: dict[str, Any] = {
        "version": SESSION_CONTEXT_VERSION if mode == "session" else ONE_SHOT_CONTEXT_VERSION,
        "intent": dict(intent),
        "wallets": dict(wallets),
        "event_signer_public": event_signer_public,
        "approval_v3": dict(approval_v3),
        "direct_route_summary": direct_route_summary,
    }
    ctx["verification_context_sha256"] = canonical_sha256(ctx)
    return ctx


def check_verification_context(ctx: Any) -> list[str]:
    """Problems with a verification context (empty when it is internally consistent)."""
    if not isinstance(ctx, dict):
        return ["verification_context_not_object"]
    problems: list[str] = []
    expected_keys = {
        "version",
        "intent",
        "wallets",
        "event_signer_public",
        "approval_v3",
        "direct_route_summary",
        "verification_context_sha256",
    }
    if set(ctx) != expected_keys:
        return ["verification_context_fields_invalid"]
    approval = ctx["approval_v3"]
    if not isinstance(approval, dict):
        return ["verification_context_approval_not_object"]
    want_version = (
        SESSION_CONTEXT_VERSION if approval.get("selected_mode") == "session" else ONE_SHOT_CONTEXT_VERSION
    )
    if ctx["version"] != want_version:
        problems.append("verification_context_version_mismatch")
    body = {k: v for k, v in ctx.items() if k != "verification_context_sha256"}
    if canonical_sha256(body) != ctx["verification_context_sha256"]:
        problems.append("verification_context_sha256_mismatch")
    summary = ctx["direct_route_summary"]
    if not isinstance(summary, dict) or canonical_sha256(summary) != approval.get(
        "direct_route_summary_sha256"
    ):
        problems.append("direct_route_summary_sha256_mismatch")
    intent = ctx["intent"]
    if isinstance(intent, dict) and isinstance(summary, dict):
        route = f"{intent.get('from_chain')}:{intent.get('from_token')}->{intent.get('to_chain')}:{intent.get('to_token')}"
        if summary.get("route") != route:
            problems.append("intent_route_mismatch")
    return problems
