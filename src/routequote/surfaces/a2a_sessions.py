"""The A2A session-lifecycle operations (session_create, session_get, observe_source, refresh_action,
session_cancel): each call's rules checked before any service call, the session held to the caller's
verification context, and every returned action verified before a wallet handoff is built."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from routequote.core.actions.approval import (
    SESSION_CONTEXT_VERSION,
    check_verification_context,
    parse_approval,
)
from routequote.core.field_rules import (
    MAX_TRANSACTION_IDS,
    SESSION_ID_RE,
    check_idempotency_key,
    check_session_token,
)
from routequote.core.intent import parse_quote_request
from routequote.core.preflight import preflight_summary
from routequote.core.verify import verify_bundle
from routequote.core.verify.common import same_wallets
from routequote.core.verify.handoff import caller_wallet_handoff
from routequote.errors import InvalidRequest
from routequote.ports import Clock
from routequote.surfaces.a2a_operation import Handler, Operation, log, quote_body
from routequote.surfaces.a2a_prepare import (
    A2A_ACCEPT_MODELLED_FIELD,
    PREPARE_FIELDS,
    SafetyBoundaryFailed,
    a2a_accepts_modelled,
    bounds_verification,
    same_copy,
)

# ---- session-lifecycle ----------------------------------------------------------------------------------
# One operation per message, never chained. Every call carries the hash-bound session verificationContext,
# checked before any service call; sessionToken (43 base64url characters, caller-generated) is handed to the
# engine as the capability and never echoed or logged. Every returned action is verified with
# routequote.verify before a wallet handoff is built.

SESSION_VIEWS = ("session", "workflow", "receipt", "next_action")
MAX_TRANSACTION_HASHES = MAX_TRANSACTION_IDS
SESSION_CALL_FIELDS = frozenset(
    {"sessionToken", "sessionId", "verificationContext", A2A_ACCEPT_MODELLED_FIELD}
)
SESSION_CREATE_FIELDS = frozenset(PREPARE_FIELDS) | {
    "idempotencyKey",
    "sessionToken",
    "verificationContext",
    "webhook",
    A2A_ACCEPT_MODELLED_FIELD,
}
RECEIVE_PHASE = "cctp_destination_mint"  # a CCTP destination mint (receiveMessage): spends nothing
SESSION_CHECKED_AGAINST = [
    "intent",
    "wallets",
    "approval_v3",
    "direct_route_summary",
    "fee_recipient",
    "pinned_contracts_and_programs",
    "deadlines",
    "payload_hashes",
    "bounds_provenance",
]


class SessionCapability(Protocol):
    prepare: Any  # the PrepareService: deployments and fee_recipients for the verifier

    async def create(self, body: Any, token: str | None) -> Any: ...
    async def read(self, session_id: Any, token: str | None, view: Any = "session") -> dict[str, Any]: ...
    async def observe(self, session_id: Any, token: str | None, body: Any) -> Any: ...
    async def refresh(self, session_id: Any, token: str | None, body: Any) -> Any: ...
    async def cancel(self, session_id: Any, token: str | None, body: Any) -> Any: ...


def _session_token(data: Mapping[str, Any]) -> str:
    token = data.get("sessionToken")
    if token is None:
        raise InvalidRequest(
            "session_token_required",
            "send sessionToken: 32 random bytes you generated, base64url "
            "without padding (43 characters); keep it, never log it",
        )
    return check_session_token(token)


def _idempotency_key(data: Mapping[str, Any]) -> str:
    return check_idempotency_key(data.get("idempotencyKey"), "idempotencyKey")


def _session_context(data: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any], str]:
    """The session verification context, internally consistent and for the session mode. Returns (context,
    its parsed approval, the route key of its intent)."""
    ctx = data.get("verificationContext")
    if ctx is None:
        raise InvalidRequest(
            "verification_context_required",
            "every session call needs the hash-bound verificationContext (session version)",
        )
    problems = check_verification_context(ctx)
    if problems:
        raise InvalidRequest(
            "verification_context_invalid",
            "the verification context does not verify",
            details={"problems": problems},
        )
    approval = parse_approval(ctx["approval_v3"])
    if approval["selected_mode"] != "session" or ctx["version"] != SESSION_CONTEXT_VERSION:
        raise InvalidRequest(
            "verification_context_mode_mismatch",
            "session calls take the session verification context (approval_v3.selected_mode session)",
            details={"selected_mode": approval["selected_mode"], "required_mode": "session"},
        )
    if not isinstance(ctx["wallets"], dict):
        raise InvalidRequest("verification_context_invalid", "verificationContext.wallets must be an object")
    intent = parse_quote_request(ctx["intent"] if isinstance(ctx["intent"], dict) else {})
    return ctx, approval, intent.route_key


def check_session_create(data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], str]:
    """Every adapter rule of session_create, before any service call. Returns (REST create body, parsed approval,
    verification context, token). An optional `webhook` ({url}) goes into the body as sent: the session service
    checks it, as for REST. Rules: callerApproved true; sessionToken exactly 43 base64url characters;
    idempotencyKey valid; approvalV3 present, selected_mode session, its idempotency_key == idempotencyKey; the
    session verification context consistent and holding exact copies of the request's intent, wallets, event
    signer and approval."""
    if data.get("callerApproved") is not True:
        raise InvalidRequest(
            "caller_approval_required", "callerApproved must be true: the caller selected this quote"
        )
    token = _session_token(data)
    key = _idempotency_key(data)
    raw_approval = data.get("approvalV3")
    if raw_approval is None:
        raise InvalidRequest(
            "approval_v3_required", "session_create needs approvalV3 (selected_mode session)"
        )
    approval = parse_approval(raw_approval, mode="session")
    if approval["idempotency_key"] != key:
        raise InvalidRequest(
            "idempotency_key_mismatch", "idempotencyKey must equal approvalV3.idempotency_key"
        )
    intent = parse_quote_request(quote_body(data))
    ctx, _, _ = _session_context(data)
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
    body["idempotency_key"] = key
    if "webhook" in data:  # passed on as sent: the engine checks it by the same rule as REST (webhook_*)
        body["webhook"] = data["webhook"]
    return body, approval, ctx, token


def check_session_call(data: dict[str, Any]) -> tuple[str, str, dict[str, Any], dict[str, Any], str]:
    """The rules shared by session_get / observe_source / refresh_action / session_cancel, before any service
    call. Returns (token, session id, context, approval, the context's route key)."""
    token = _session_token(data)
    sid = data.get("sessionId")
    if not isinstance(sid, str) or not SESSION_ID_RE.fullmatch(sid):
        raise InvalidRequest("session_id_invalid", "sessionId must be the session_id session_create returned")
    ctx, approval, route_key = _session_context(data)
    return token, sid, ctx, approval, route_key


def _session_matches_context(
    workflow: dict[str, Any],
    session: dict[str, Any],
    ctx: dict[str, Any],
    approval: dict[str, Any],
    route_key: str,
) -> None:
    """The session the token opens must be the one the context describes: same route, same wallets (workflow
    view), bound to the same approved quote (session view)."""
    if workflow.get("route") != route_key or session.get("route") != route_key:
        raise InvalidRequest(
            "verification_context_route_mismatch",
            "this session carries another route than your verificationContext",
        )
    if not same_wallets(workflow.get("wallets"), ctx["wallets"]):
        raise InvalidRequest(
            "verification_context_wallets_mismatch",
            "this session's wallets are not your verificationContext's wallets",
        )
    binding = session.get("quote_binding") or {}
    if (binding.get("quote_id"), binding.get("quote_fingerprint")) != (
        approval["quote_id"],
        approval["quote_fingerprint"],
    ):
        raise InvalidRequest(
            "verification_context_quote_mismatch",
            "this session is bound to another quote than your verificationContext's approval",
        )


def _withheld(reason: str, message: str, session: Mapping[str, Any], **details: Any) -> SafetyBoundaryFailed:
    where = {k: session.get(k) for k in ("session_id", "status", "session_version", "next_operation")}
    return SafetyBoundaryFailed(
        reason, message, details={"session": where, "action_withheld": True, **details}
    )


def _actual_input(session: Mapping[str, Any], bundle: dict[str, Any], idx: int) -> int:
    """The verified actual input of step `idx` > 0 (the previous step's verified output): the action's own
    workflow entry, cross-checked against the session's funds when the view carries them."""
    try:
        actual = bundle["workflow"]["steps"][idx]["actual_input_base"]
        value = int(actual)
    except (KeyError, IndexError, TypeError, ValueError):
        raise _withheld(
            "session_actual_input_unknown",
            "the action does not state the verified input of its step",
            session,
        ) from None
    funds = session.get("funds")
    if isinstance(funds, dict):
        step = bundle["workflow"]["steps"][idx]
        if str(funds.get("amount_base")) != str(actual) or funds.get("endpoint") != step.get("from"):
            raise _withheld(
                "session_actual_input_mismatch",
                "the action's input is not the session's verified funds for this step",
                session,
            )
    return value


def verify_session_action(
    bundle: dict[str, Any],
    session: Mapping[str, Any],
    ctx: dict[str, Any],
    approval: dict[str, Any],
    *,
    now_unix: int,
    fee_recipients: dict[str, str],
    deployments: dict[Any, Any],
    accept_modelled_bounds: bool = False,
) -> dict[str, Any]:
    """verify_bundle against the caller's context; the action_verification block, or SafetyBoundaryFailed."""
    kwargs: dict[str, Any] = {
        "intent": ctx["intent"],
        "wallets": ctx["wallets"],
        "now_unix": now_unix,
        "approval_v3": approval,
        "direct_route_summary": ctx["direct_route_summary"],
        "event_signer_public": ctx["event_signer_public"],
        "fee_recipients": fee_recipients,
        "deployments": deployments,
        "accept_modelled_bounds": accept_modelled_bounds,
    }
    raw_idx = bundle.get("step_index")
    idx = (
        raw_idx if isinstance(raw_idx, int) and not isinstance(raw_idx, bool) else 0
    )  # a bad index: verifier's
    action = bundle.get("unsigned_action")
    receive = isinstance(action, dict) and action.get("phase") == RECEIVE_PHASE
    later_step = idx > 0 and not receive
    if later_step:
        kwargs["session_actual_input_base"] = _actual_input(session, bundle, idx)
    try:
        findings = verify_bundle(bundle, **kwargs)
    except TypeError:
        findings = None
    unsupported = findings is None or (
        later_step
        and any(f.code == "bundle_malformed" and "session_actual_input_base" in f.message for f in findings)
    )
    if unsupported:
        raise _withheld(
            "verifier_lacks_session_actual_input_base",
            "this verifier cannot check an action whose "
            "input is the previous step's verified output; the action was withheld",
            session,
        )
    assert findings is not None
    errors = [f.as_dict() for f in findings if f.severity == "error"]
    if errors:
        log.error("a2a_session_action_rejected", route=bundle.get("route"), codes=[e["code"] for e in errors])
        raise _withheld(
            "prepared_action_failed_verification",
            "the session's action failed verification against your bounds and was withheld",
            session,
            findings=errors[:20],
        )
    return {
        "verified": True,
        "verifier": "routequote.verify.verify_bundle",
        "checked_against": SESSION_CHECKED_AGAINST + (["session_actual_input_base"] if later_step else []),
        "step_index": raw_idx,
        "bounds": bounds_verification(bundle, accept_modelled_bounds),
        "warnings": [f.as_dict() for f in findings],
    }


def session_guidance(session: Mapping[str, Any], operation: str, handoff: bool) -> dict[str, Any]:
    return {
        "operation": operation,
        "selection_status": "selected_by_caller",
        "automatic_selection_forbidden": True,
        "automatic_invocation_forbidden": True,
        "adapter_chains_actions": False,
        "one_operation_per_message": True,
        "session_created": operation == "session_create" and not session.get("idempotent_replay"),
        "action_available": handoff,
        # what each chain of the route will need from the caller before this action is signed (advice only)
        "preflight": preflight_summary(session.get("preflight")) if handoff else None,
        "next_operation": session.get("next_operation"),
        "transaction_signed": False,
        "transaction_submitted": False,
        "session_token_echoed": False,
        "note": (
            "The service never signs or submits. Verify the action, sign and submit it yourself, then send "
            "observe_source with its transaction hashes (for every observe, source or destination). Each next "
            "step is re-quoted from the verified actual output and held to your approval; below it the session "
            "stops with reapproval_required. Keep sessionToken secret; it is never returned."
        ),
    }


def _holds_token(value: Any, token: str) -> bool:
    if isinstance(value, dict):
        return any(
            k in ("session_token", "sessionToken") or token in str(k) or _holds_token(v, token)
            for k, v in value.items()
        )
    if isinstance(value, list):
        return any(_holds_token(v, token) for v in value)
    return isinstance(value, str) and token in value


def session_operations(sessions: SessionCapability, clock: Clock) -> list[Operation]:
    fee_recipients = {getattr(k, "value", k): v for k, v in sessions.prepare.fee_recipients.items()}
    deployments = sessions.prepare.deployments
    exempt = frozenset({"sessionToken"})

    def reply(
        operation: str,
        session: dict[str, Any],
        ctx: dict[str, Any],
        approval: dict[str, Any],
        route_key: str,
        token: str,
        accept_modelled: bool,
    ) -> dict[str, Any]:
        if session.get("route") != route_key:
            raise _withheld("session_route_mismatch", "the session answered for another route", session)
        binding = session.get("quote_binding")
        if isinstance(binding, dict) and (binding.get("quote_id"), binding.get("quote_fingerprint")) != (
            approval["quote_id"],
            approval["quote_fingerprint"],
        ):
            raise _withheld(
                "session_not_bound_to_your_approval", "the session is bound to another quote", session
            )
        out: dict[str, Any] = {"session": session}
        bundle = session.get("current_action") or session.get("next_action")
        if isinstance(bundle, dict):
            out["action_verification"] = verify_session_action(
                bundle,
                session,
                ctx,
                approval,
                now_unix=int(clock.now().timestamp()),
                fee_recipients=fee_recipients,
                deployments=deployments,
                accept_modelled_bounds=accept_modelled,
            )
            out["caller_wallet_handoff"] = caller_wallet_handoff(bundle)
        out["guidance"] = session_guidance(session, operation, "caller_wallet_handoff" in out)
        if _holds_token(out, token):  # the engine never echoes it; if it ever did, nothing leaves
            raise _withheld(
                "session_token_echo_blocked", "the answer held your session token and was withheld", {}
            )
        log.info(
            "a2a_session_operation",
            operation=operation,
            session_id=session.get("session_id"),
            status=session.get("status"),
            session_version=session.get("session_version"),
        )
        return out

    async def create(data: dict[str, Any]) -> dict[str, Any]:
        body, approval, ctx, token = check_session_create(data)
        accept = a2a_accepts_modelled(data)  # checked before the session is created
        answer = await sessions.create(body, token)
        route_key = parse_quote_request(ctx["intent"]).route_key
        return reply("session_create", answer.body, ctx, approval, route_key, token, accept)

    async def checked(
        data: dict[str, Any],
    ) -> tuple[str, str, dict[str, Any], dict[str, Any], str, dict[str, Any]]:
        """The call's rules, then reads of the session (workflow and session views; reads change nothing but a
        due expiry): its route, wallets and quote binding must be the context's before anything is asked of it.
        Returns (token, id, context, approval, route key, {view: what was read})."""
        token, sid, ctx, approval, route_key = check_session_call(data)
        read = {"workflow": await sessions.read(sid, token, "workflow")}
        read["session"] = await sessions.read(sid, token, "session")
        _session_matches_context(read["workflow"], read["session"], ctx, approval, route_key)
        return token, sid, ctx, approval, route_key, read

    async def get(data: dict[str, Any]) -> dict[str, Any]:
        view = data.get("view", "session")
        if view not in SESSION_VIEWS:
            raise InvalidRequest("invalid_view", f"view must be one of {', '.join(SESSION_VIEWS)}")
        accept = a2a_accepts_modelled(data)
        token, sid, ctx, approval, route_key, read = await checked(data)
        session = read[view] if view in read else await sessions.read(sid, token, view)
        return reply("session_get", session, ctx, approval, route_key, token, accept)

    async def observe(data: dict[str, Any]) -> dict[str, Any]:
        key = _idempotency_key(data)
        accept = a2a_accepts_modelled(data)
        hashes = data.get("transactionHashes")
        if (
            not isinstance(hashes, list)
            or not 1 <= len(hashes) <= MAX_TRANSACTION_HASHES
            or not all(isinstance(h, str) for h in hashes)
        ):
            raise InvalidRequest(
                "transaction_hashes_invalid",
                f"transactionHashes must list 1..{MAX_TRANSACTION_HASHES} transaction hashes or signatures",
            )
        token, sid, ctx, approval, route_key, _ = await checked(data)
        answer = await sessions.observe(sid, token, {"idempotency_key": key, "transaction_hashes": hashes})
        return reply("observe_source", answer.body, ctx, approval, route_key, token, accept)

    def key_only(name: str, method: str) -> Handler:
        async def run(data: dict[str, Any]) -> dict[str, Any]:
            key = _idempotency_key(data)
            accept = a2a_accepts_modelled(data)
            token, sid, ctx, approval, route_key, _ = await checked(data)
            answer = await getattr(sessions, method)(sid, token, {"idempotency_key": key})
            return reply(name, answer.body, ctx, approval, route_key, token, accept)

        return run

    return [
        Operation("session_create", SESSION_CREATE_FIELDS, create, exempt),
        Operation("session_get", SESSION_CALL_FIELDS | {"view"}, get, exempt),
        Operation(
            "observe_source", SESSION_CALL_FIELDS | {"idempotencyKey", "transactionHashes"}, observe, exempt
        ),
        Operation(
            "refresh_action",
            SESSION_CALL_FIELDS | {"idempotencyKey"},
            key_only("refresh_action", "refresh"),
            exempt,
        ),
        Operation(
            "session_cancel",
            SESSION_CALL_FIELDS | {"idempotencyKey"},
            key_only("session_cancel", "cancel"),
            exempt,
        ),
    ]
