"""The A2A agent (a2a-sdk 1.x, protocol 1.0, JSON-RPC binding at /a2a): a thin translator from one
camelCase DataPart to the same services the REST surface calls.

Request: `SendMessage` whose message has exactly one data part, e.g.
`{"fromChain": "solana", "fromToken": "SOL", "toChain": "base", "toToken": "USDC", "amountUsd": 1000}`
(operation absent or `quote`), or `{"operation": "prepare", ...}` when the prepare capability is mounted,
or one of the session-lifecycle operations (`session_create`, `session_get`, `observe_source`,
`refresh_action`, `session_cancel`) when the session engine is.
Reply: one agent message (no task is created) whose data part is `{quote, guidance}`,
`{bundle, guidance, action_verification, caller_wallet_handoff}`, `{session, guidance, action_verification?,
caller_wallet_handoff?}` or `{error: {code, reason_class, message, ...}}` with code one of rate_limited,
upstream_unavailable, request_rejected, reapproval_required, or safety_boundary_failed (a prepared action that
failed the caller-side verifier is withheld).

DataPart values are `google.protobuf.Value`s, so every number is a double: whole-number inputs are
narrowed back to int, and in replies every integer beyond 2**53 - 1 becomes a decimal string (base-unit
amounts always travel as decimal strings; the quote hashes substitute exactly those paths).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import structlog
from a2a.helpers import get_data_parts, new_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import DefaultServerCallContextBuilder, create_agent_card_routes
from a2a.server.tasks import InMemoryTaskStore
from a2a.types.a2a_pb2 import AgentCapabilities, AgentCard, AgentInterface, AgentProvider, AgentSkill, Part
from a2a.utils.errors import UnsupportedOperationError
from google.protobuf import struct_pb2  # type: ignore[import-untyped,unused-ignore]
from starlette.middleware.body_limit import RequestBodyLimitMiddleware
from starlette.requests import Request
from starlette.routing import Route

from routequote.config import Settings
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
from routequote.core.routes import ROUTES
from routequote.core.verify import verify_bundle
from routequote.core.verify.common import same_wallets
from routequote.core.verify.handoff import caller_wallet_handoff
from routequote.core.verify.handoff import (
    verify_handoff as verify_handoff,  # the caller-side check, re-exported
)
from routequote.errors import InvalidRequest, RouteQuoteError
from routequote.fee_recipient_check import A2A_ACCEPT_FIELD, a2a_accepts_unconfigured, fee_recipient_findings
from routequote.input_rules import looks_secret_name, name_list, safe_name
from routequote.ports import Clock
from routequote.ratelimit import RateLimiter
from routequote.service import RouteQuoteService
from routequote.surfaces import guidance as g
from routequote.surfaces.http import MAX_BODY_BYTES
from routequote.surfaces.input_guard import a2a_jsonrpc_routes
from routequote.surfaces.jsonrpc_guard import JsonRpcGuard

CARD_VERSION = "1.7.0"
PROTOCOL_VERSION = "1.0"
A2A_PATH = "/a2a"
CARD_PATH = "/.well-known/agent-card.json"
CARD_ALIAS_PATH = "/.well-known/agent.json"
MEDIA = "application/json"
MAX_SAFE_INTEGER = 2**53 - 1

QUOTE_FIELDS = {
    "fromChain": "from_chain",
    "fromToken": "from_token",
    "toChain": "to_chain",
    "toToken": "to_token",
    "amountUsd": "amount_usd",
}
# Keys that look like secrets are refused anywhere in a request: this agent only ever needs public data.
SECRET_KEY = re.compile(
    r"(private|secret|seed|mnemonic|passphrase|password|keypair|signed_?transaction|signature|raw_?tx|"
    r"api_?key|access_?token|auth_?token|bearer)",
    re.IGNORECASE,
)

log = structlog.get_logger("routequote.a2a")

Handler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


@dataclass(frozen=True, slots=True)
class Operation:
    """One operation of the agent: the fields it accepts (besides `operation`) and its handler."""

    name: str
    fields: frozenset[str]
    run: Handler
    secret_exempt: frozenset[str] = field(default_factory=frozenset)  # capability fields, e.g. sessionToken


# ---- value narrowing ------------------------------------------------------------------------------------


def narrow_numbers(value: Any) -> Any:
    """Whole-number doubles back to int (what the caller meant when it wrote 1000)."""
    if isinstance(value, float) and value.is_integer() and abs(value) <= MAX_SAFE_INTEGER:
        return int(value)
    if isinstance(value, dict):
        return {k: narrow_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [narrow_numbers(v) for v in value]
    return value


def a2a_safe(value: Any) -> Any:
    """Integers a double cannot hold exactly become decimal strings before they enter a DataPart."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and abs(value) > MAX_SAFE_INTEGER:
        return str(value)
    if isinstance(value, dict):
        return {k: a2a_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [a2a_safe(v) for v in value]
    return value


def secret_keys(value: Any, exempt: frozenset[str], path: str = "", shown: str = "") -> list[str]:
    """Paths of keys that look like secrets: a secret word or secret-shaped material in the name (names
    only; values are never looked at or reported). Reported with `safe_name` segments: never the name."""
    found: list[str] = []
    if isinstance(value, dict):
        for k, v in value.items():
            name = str(k)
            here = f"{path}.{name}" if path else name
            seen = f"{shown}.{safe_name(name)}" if shown else safe_name(name)
            if here not in exempt and (SECRET_KEY.search(name) or looks_secret_name(name)):
                found.append(seen)
            found += secret_keys(v, exempt, here, seen)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found += secret_keys(v, exempt, f"{path}[{i}]", f"{shown}[{i}]")
    return found


def quote_body(data: Mapping[str, Any]) -> dict[str, Any]:
    """camelCase quote fields -> the REST QuoteRequest body (absent fields stay absent)."""
    return {snake: data[camel] for camel, snake in QUOTE_FIELDS.items() if camel in data}


# ---- the agent ------------------------------------------------------------------------------------------


class RouteQuoteAgent:
    """Dispatch of one data part to an operation; returns the reply's data (never raises for the caller)."""

    def __init__(self, operations: Mapping[str, Operation], limiter: RateLimiter | None = None) -> None:
        self.operations = dict(operations)
        self.limiter = limiter

    async def handle(self, parts: list[Any], client: str = "unknown") -> dict[str, Any]:
        try:
            if self.limiter is not None:
                await self.limiter.check(client)
            data = self._single_data_part(parts)
            op_name = data.get("operation", "quote")
            op = self.operations.get(op_name) if isinstance(op_name, str) else None
            if op is None:
                raise InvalidRequest(
                    "operation_unsupported",
                    f"operation must be one of {sorted(self.operations)}",
                    details={"supported_operations": sorted(self.operations)},
                )
            secrets = secret_keys(data, op.secret_exempt)
            if secrets:
                raise InvalidRequest(
                    "secret_field_rejected",
                    "secret-looking fields are refused; send public addresses and approvals only",
                    details={"fields": secrets[:20]},
                )
            extra = sorted(set(data) - op.fields - {"operation"})
            if extra:
                raise InvalidRequest("unknown_field", f"fields not accepted by {op.name}: {name_list(extra)}")
            reply: dict[str, Any] = a2a_safe(await op.run(narrow_numbers(data)))
            return reply
        except RouteQuoteError as exc:
            return {"error": g.agent_error(exc)}
        except Exception as exc:  # never a traceback or caller input in a reply; the log has the type
            log.error("a2a_operation_failed", error_type=type(exc).__name__)
            return {
                "error": {
                    "code": "internal_error",
                    "error": "internal_error",
                    "reason_class": "internal_error",
                }
            }

    @staticmethod
    def _single_data_part(parts: list[Any]) -> dict[str, Any]:
        if len(parts) != 1 or not isinstance(parts[0], dict):
            raise InvalidRequest("one_data_part_required", "send exactly one data part holding a JSON object")
        return parts[0]


class AgentExecutorAdapter(AgentExecutor):
    """The SDK's executor interface over RouteQuoteAgent: one reply message per request, no task."""

    def __init__(self, agent: RouteQuoteAgent) -> None:
        self.agent = agent

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        message = context.message
        parts = list(message.parts) if message is not None else []
        try:
            data_parts = get_data_parts(parts)
            if len(data_parts) != len(parts):
                data_parts = [None]  # a non-data part: refused as not exactly one data part
        except Exception:
            data_parts = []
        client = context.call_context.state.get(
            "client_host", "unknown"
        )  # the REST key: one budget per client
        reply = await self.agent.handle(data_parts, str(client))
        await event_queue.enqueue_event(new_message(parts=[data_part(reply)], context_id=context.context_id))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise UnsupportedOperationError(message="replies are immediate; there is nothing to cancel")


def data_part(data: dict[str, Any]) -> Part:
    """A DataPart holding `data` (a JSON object, big ints already strings). Same Value as the SDK's
    `new_data_part` (ParseDict), built with `Struct.update`, which measured ~2.5x faster on a quote."""
    struct = struct_pb2.Struct()
    struct.update(data)
    return Part(data=struct_pb2.Value(struct_value=struct), media_type=MEDIA)


class _ContextBuilder(DefaultServerCallContextBuilder):
    """Adds the client host (for per-client rate limits) to the call context."""

    def build(self, request: Request) -> Any:
        ctx = super().build(request)
        ctx.state["client_host"] = request.client.host if request.client else "unknown"
        return ctx


# ---- operations -----------------------------------------------------------------------------------------


def quote_operation(service: RouteQuoteService) -> Operation:
    async def run(data: dict[str, Any]) -> dict[str, Any]:
        quote = await service.quote_request(quote_body(data))
        guidance = g.quote_guidance(quote)
        guidance["integers_beyond_2_pow_53_as_decimal_strings"] = True
        return {"quote": quote, "guidance": guidance}

    return Operation("quote", frozenset(QUOTE_FIELDS), run)


PREPARE_FIELDS = {
    "callerApproved": "caller_approved",
    **QUOTE_FIELDS,
    "wallets": "wallets",
    "eventSignerPublic": "event_signer_public",
    "approvalV3": "approval_v3",
}


class SafetyBoundaryFailed(RouteQuoteError):
    """A prepared action failed the caller-side verifier: it is withheld, never handed to a wallet."""

    error = "safety_boundary_failed"
    agent_code = "safety_boundary_failed"


class PrepareCapability(Protocol):
    deployments: dict[Any, Any]
    fee_recipients: dict[Any, str]

    async def prepare(self, body: Any) -> dict[str, Any]: ...


def _same_copy(theirs: Any, ours: Any, reason: str, what: str) -> None:
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
    _same_copy(ctx["intent"], intent.as_request(), "verification_context_intent_mismatch", "intent")
    _same_copy(ctx["wallets"], body.get("wallets"), "verification_context_wallets_mismatch", "wallets")
    _same_copy(
        ctx["event_signer_public"],
        body.get("event_signer_public"),
        "verification_context_event_signer_mismatch",
        "event_signer_public",
    )
    _same_copy(ctx["approval_v3"], raw_approval, "verification_context_approval_mismatch", "approval_v3")
    return body, approval, ctx


def prepare_operation(prepare: PrepareCapability, clock: Clock) -> Operation:
    fee_recipients = {getattr(k, "value", k): v for k, v in prepare.fee_recipients.items()}

    async def run(data: dict[str, Any]) -> dict[str, Any]:
        body, approval, ctx = check_prepare_request(data)
        accept_unconfigured = a2a_accepts_unconfigured(data)  # checked before anything is prepared
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
                ],
                "warnings": [f.as_dict() for f in findings],
            },
            "caller_wallet_handoff": caller_wallet_handoff(bundle),
        }

    return Operation("prepare", frozenset(PREPARE_FIELDS) | {"verificationContext", A2A_ACCEPT_FIELD}, run)


# ---- session-lifecycle ----------------------------------------------------------------------------------
# One operation per message, never chained. Every call carries the hash-bound session verificationContext,
# checked before any service call; sessionToken (43 base64url characters, caller-generated) is handed to the
# engine as the capability and never echoed or logged. Every returned action is verified with
# routequote.verify before a wallet handoff is built.

SESSION_VIEWS = ("session", "workflow", "receipt", "next_action")
MAX_TRANSACTION_HASHES = MAX_TRANSACTION_IDS
SESSION_CALL_FIELDS = frozenset({"sessionToken", "sessionId", "verificationContext"})
SESSION_CREATE_FIELDS = frozenset(PREPARE_FIELDS) | {"idempotencyKey", "sessionToken", "verificationContext"}
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
    verification context, token). Rules: callerApproved true; sessionToken exactly 43 base64url characters;
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
    _same_copy(ctx["intent"], intent.as_request(), "verification_context_intent_mismatch", "intent")
    _same_copy(ctx["wallets"], body.get("wallets"), "verification_context_wallets_mismatch", "wallets")
    _same_copy(
        ctx["event_signer_public"],
        body.get("event_signer_public"),
        "verification_context_event_signer_mismatch",
        "event_signer_public",
    )
    _same_copy(ctx["approval_v3"], raw_approval, "verification_context_approval_mismatch", "approval_v3")
    body["idempotency_key"] = key
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
        answer = await sessions.create(body, token)
        return reply(
            "session_create", answer.body, ctx, approval, parse_quote_request(ctx["intent"]).route_key, token
        )

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
        token, sid, ctx, approval, route_key, read = await checked(data)
        session = read[view] if view in read else await sessions.read(sid, token, view)
        return reply("session_get", session, ctx, approval, route_key, token)

    async def observe(data: dict[str, Any]) -> dict[str, Any]:
        key = _idempotency_key(data)
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
        return reply("observe_source", answer.body, ctx, approval, route_key, token)

    def key_only(name: str, method: str) -> Handler:
        async def run(data: dict[str, Any]) -> dict[str, Any]:
            key = _idempotency_key(data)
            token, sid, ctx, approval, route_key, _ = await checked(data)
            answer = await getattr(sessions, method)(sid, token, {"idempotency_key": key})
            return reply(name, answer.body, ctx, approval, route_key, token)

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


# ---- the card ------------------------------------------------------------------------------------------

_QUOTE_EXAMPLE = '{"fromChain":"solana","fromToken":"SOL","toChain":"base","toToken":"USDC","amountUsd":1000}'


def quote_skill() -> AgentSkill:
    return AgentSkill(
        id="quote-cross-chain-route",
        name="Quote a cross-chain route",
        description=(
            f"One fresh, fee-inclusive, non-binding quote between the nine asset endpoints ({len(ROUTES)} directed "
            "routes, USD 1 through 1,000). Send one data part with fromChain, fromToken, toChain, toToken, "
            'amountUsd (operation omitted or "quote"). Returns {quote, guidance}: an unranked_candidate that '
            "expires; never select it automatically. Read-only: does not inspect balances and never prepares, "
            "signs or submits. Base-unit amounts are decimal strings."
        ),
        tags=["quote", "cross-chain", "bridge", "swap", "read-only", "non-custodial"],
        examples=[
            _QUOTE_EXAMPLE,
            '{"operation":"quote","fromChain":"base","fromToken":"ETH","toChain":"arbitrum",'
            '"toToken":"USDC","amountUsd":50}',
        ],
        input_modes=[MEDIA],
        output_modes=[MEDIA],
    )


def prepare_skill() -> AgentSkill:
    return AgentSkill(
        id="prepare-first-unsigned-action",
        name="Prepare the first unsigned action (one-shot)",
        description=(
            "Explicit one-shot prepare (POST /v2/prepare) of a single-step route the caller approved: operation "
            '"prepare", callerApproved true, fromChain, fromToken, toChain, toToken, amountUsd, wallets (chain -> '
            "public address), eventSignerPublic (Solana CCTP burns only), approvalV3 with selected_mode one_shot "
            "and the hash-bound verificationContext. Multi-step quotes reject one-shot. The context is checked "
            "before anything is prepared; the returned action is verified against your bounds and comes with a "
            "caller-wallet handoff carrying its own SHA-256. Nothing is signed or submitted, and the agent never "
            "chains actions."
        ),
        tags=["prepare", "unsigned-action", "one-shot", "non-custodial", "caller-approved"],
        examples=[
            '{"operation":"prepare","callerApproved":true,"fromChain":"base","fromToken":"USDC","toChain":'
            '"arbitrum","toToken":"USDC","amountUsd":100,"wallets":{"base":"0x...","arbitrum":"0x..."},'
            '"approvalV3":{"version":"routequote-quote-bound-approval-v3","selected_mode":"one_shot",...},'
            '"verificationContext":{"version":"routequote-one-shot-verification-context-v1",...,'
            '"verification_context_sha256":"..."}}'
        ],
        input_modes=[MEDIA],
        output_modes=[MEDIA],
    )


def session_skill() -> AgentSkill:
    return AgentSkill(
        id="session-lifecycle",
        name="Quote-bound, receipt-driven session lifecycle",
        description=(
            "Carry an approved quote through every step of its route (POST /v2/session and its reads and "
            "operations). One data part per message, one operation per message; the agent never chains. "
            "operation session_create: callerApproved true, fromChain, fromToken, toChain, toToken, amountUsd, "
            "wallets, eventSignerPublic (Solana CCTP burns only), approvalV3 with selected_mode session and "
            "idempotency_key equal to idempotencyKey, idempotencyKey, sessionToken (32 random bytes you generate, "
            "base64url, exactly 43 characters; never returned, never logged) and the hash-bound session "
            "verificationContext. session_get (sessionToken, sessionId, view session|workflow|receipt|"
            "next_action), observe_source (idempotencyKey, transactionHashes: 1..8 hashes or signatures you "
            "submitted; used for every observe, source or destination: the service reads the chain itself), "
            "refresh_action and session_cancel (idempotencyKey): each with sessionToken, sessionId and the same "
            "verificationContext, checked before any call and against the session's route and wallets. Returns "
            "{session, guidance} plus, when the session holds an action, action_verification (routequote.verify) "
            "and a caller_wallet_handoff carrying its own SHA-256. A next step priced below your approval is "
            "reapproval_required with where the funds are (funds) and the intent to quote from there."
        ),
        tags=[
            "session",
            "receipt-driven",
            "unsigned-action",
            "non-custodial",
            "caller-approved",
            "multi-step",
        ],
        examples=[
            '{"operation":"session_create","callerApproved":true,"fromChain":"base","fromToken":"ETH","toChain":'
            '"arbitrum","toToken":"USDC","amountUsd":100,"wallets":{"base":"0x...","arbitrum":"0x..."},'
            '"idempotencyKey":"k-0001abcd","sessionToken":"<43 base64url characters>","approvalV3":{"version":'
            '"routequote-quote-bound-approval-v3","selected_mode":"session","idempotency_key":"k-0001abcd",...},'
            '"verificationContext":{"version":"routequote-session-verification-context-v1",...}}',
            '{"operation":"observe_source","sessionToken":"<43 base64url characters>","sessionId":"<uuid>",'
            '"idempotencyKey":"obs-0001","transactionHashes":["0x..."],"verificationContext":{...}}',
        ],
        input_modes=[MEDIA],
        output_modes=[MEDIA],
    )


def agent_card(base_url: str, skills: list[AgentSkill]) -> AgentCard:
    return AgentCard(
        name="routequote",
        description=(
            "Non-custodial route quotes for agents moving value across solana, base, arbitrum and robinhood "
            "(SOL, ETH, USDC, USDG). Quotes are unranked candidates; the agent never auto-selects, never "
            "signs and never submits."
        ),
        version=CARD_VERSION,
        supported_interfaces=[
            AgentInterface(
                url=f"{base_url}{A2A_PATH}", protocol_binding="JSONRPC", protocol_version=PROTOCOL_VERSION
            )
        ],
        provider=AgentProvider(organization="routequote (self-hosted)", url=base_url),
        documentation_url=f"{base_url}/v2/openapi.json",
        capabilities=AgentCapabilities(streaming=False, push_notifications=False),
        default_input_modes=[MEDIA],
        default_output_modes=[MEDIA],
        skills=skills,
    )


@dataclass
class A2aSurface:
    card: AgentCard
    agent: RouteQuoteAgent
    routes: list[Route]
    task_store: InMemoryTaskStore


def build_a2a(
    service: RouteQuoteService,
    settings: Settings,
    *,
    limiter: RateLimiter | None = None,
    extra: list[tuple[Operation, AgentSkill]] | None = None,
) -> A2aSurface:
    """The agent card routes (and alias) and the JSON-RPC route, over `service` (+ extra operations)."""
    operations = {"quote": quote_operation(service)}
    skills = [quote_skill()]
    for op, skill in extra or []:
        operations[op.name] = op
        if skill.id not in {s.id for s in skills}:
            skills.append(skill)
    card = agent_card(settings.resolved_base_url(), skills)
    agent = RouteQuoteAgent(operations, limiter)
    store = InMemoryTaskStore()
    handler = DefaultRequestHandler(
        agent_executor=AgentExecutorAdapter(agent), task_store=store, agent_card=card
    )
    rpc = a2a_jsonrpc_routes(
        handler, A2A_PATH, _ContextBuilder()
    )  # errors: code + fixed message, no SDK text
    for route in rpc:  # the same 1 MiB body limit as every REST POST; protocol errors bounded and limited
        route.app = RequestBodyLimitMiddleware(JsonRpcGuard(route.app, limiter), MAX_BODY_BYTES)
    routes: list[Route] = [
        *create_agent_card_routes(card, card_url=CARD_PATH),
        *create_agent_card_routes(card, card_url=CARD_ALIAS_PATH),
        *rpc,
    ]
    return A2aSurface(card=card, agent=agent, routes=routes, task_store=store)


def mount_a2a(app: Any) -> A2aSurface:
    """Mount /a2a and the agent card on the composition root's app (call last: reads app.state)."""
    state = app.state
    extra = []
    prepare = getattr(state, "prepare", None)
    if prepare is not None:  # the prepare capability is mounted: its skill joins the card
        extra.append((prepare_operation(prepare, state.service.clock), prepare_skill()))
    sessions = getattr(state, "sessions", None)
    if sessions is not None:  # the session engine is mounted: its operations share one skill on the card
        skill = session_skill()
        extra.extend((op, skill) for op in session_operations(sessions, state.service.clock))
    surface = build_a2a(state.service, state.settings, limiter=state.limiter, extra=extra)
    app.router.routes.extend(surface.routes)
    state.a2a = surface
    return surface
