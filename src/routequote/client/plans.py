"""The request plans both clients share: one `Call` per operation (method, path, body, headers) and how its
answer is read, strict JSON, models and custody flags checked, quote hashes recomputed, and every prepared
action verified with routequote.verify against what the caller holds before it is returned."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Generic, TypeVar

import httpx
from pydantic import ValidationError

from routequote.client.approval import approval_for, new_idempotency_key
from routequote.client.errors import (
    ActionVerificationFailed,
    RateLimited,
    ReapprovalRequired,
    Rejected,
    ResponseInvalid,
    UpstreamUnavailable,
)
from routequote.client.models import Capabilities, PreparedAction, Quote, Session, SessionView, Status
from routequote.client.token import SessionHandle, SessionToken
from routequote.client.validate import custody_flag_problems, quote_problems
from routequote.contract.v2 import ErrorResponse
from routequote.core.actions.approval import verification_context
from routequote.core.quote import SESSION_HEADER

T = TypeVar("T")


def no_json_constant(name: str) -> Any:
    """A `parse_constant` hook: NaN and the infinities are not JSON."""
    raise ValueError(f"non-standard JSON constant {name}")


def no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An `object_pairs_hook`: a key that appears twice in one object is refused (ValueError)."""
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"duplicate key {k!r}")
        out[k] = v
    return out


def _json(resp: httpx.Response, what: str) -> Any:
    try:
        return json.loads(resp.content, object_pairs_hook=no_duplicate_keys, parse_constant=no_json_constant)
    except (ValueError, RecursionError) as exc:
        raise ResponseInvalid(
            what, [f"HTTP {resp.status_code} body is not strict JSON: {str(exc)[:120]}"]
        ) from None


def _retry_after(resp: httpx.Response, body: dict[str, Any]) -> int | None:
    header = resp.headers.get("retry-after", "")
    if header.isdigit():
        return int(header)
    value = body.get("retry_after_seconds")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _amount_json(amount_usd: int | float | str | Decimal) -> int | float:
    d = Decimal(str(amount_usd))
    if not d.is_finite():
        raise ValueError("amount_usd must be finite")
    return int(d) if d == d.to_integral_value() else float(d)


def _endpoint(text: str) -> tuple[str, str]:
    chain, sep, token = text.partition(":")
    if not sep or not chain or not token:
        raise ValueError(f"an endpoint is chain:TOKEN (e.g. base:ETH), not {text!r}")
    return chain.lower(), token.upper()


@dataclass
class Call(Generic[T]):
    what: str
    method: str
    path: str
    parse: Callable[[Any], T]
    body: Any = None
    params: dict[str, str] | None = None
    token: SessionToken | None = field(default=None, repr=False)
    ok: tuple[int, ...] = (200,)

    def headers(self) -> dict[str, str]:
        h = {"accept": "application/json"}
        if self.token is not None:
            h[SESSION_HEADER] = self.token.reveal()
        return h


class Plans:
    """Request plans and answer checks, shared by the sync and the async client."""

    def __init__(
        self,
        *,
        now: Callable[[], float] = time.time,
        fee_recipients: dict[str, str] | None = None,
        deployments: dict[Any, Any] | None = None,
        accept_unconfigured_fee_recipient: bool = False,
        accept_modelled_bounds: bool = False,
    ) -> None:
        self._now = now
        self.fee_recipients = fee_recipients
        self.deployments = deployments
        # a fee going to a development placeholder is refused unless the caller says so (tests, local chains)
        self.accept_unconfigured_fee_recipient = accept_unconfigured_fee_recipient
        # an action whose bounds are modelled from the embedded snapshot is refused unless the caller says so
        self.accept_modelled_bounds = accept_modelled_bounds

    # ---- answers ------------------------------------------------------------------------------------
    def _finish(self, call: Call[T], resp: httpx.Response) -> T:
        body = _json(resp, call.what)
        if resp.status_code in call.ok:
            if not isinstance(body, dict):
                raise ResponseInvalid(call.what, ["the answer is not a JSON object"])
            return call.parse(body)
        self._raise_error(call.what, resp, body)
        raise AssertionError("unreachable")

    @staticmethod
    def _raise_error(what: str, resp: httpx.Response, body: Any) -> None:
        status = resp.status_code
        if not isinstance(body, dict):
            raise ResponseInvalid(what, [f"HTTP {status} with a body that is not an error object"])
        try:
            ErrorResponse.model_validate(body)
        except ValidationError as exc:
            raise ResponseInvalid(
                what, [f"HTTP {status} error body: {e['msg']}" for e in exc.errors()[:4]]
            ) from None
        if status == 429:
            raise RateLimited(status, body, _retry_after(resp, body))
        if status in (502, 503, 504):
            raise UpstreamUnavailable(status, body, _retry_after(resp, body))
        if status == 409 and body.get("error") == "reapproval_required":
            raise ReapprovalRequired(status, body)
        if 400 <= status < 500:
            raise Rejected(status, body)
        raise UpstreamUnavailable(status, body, _retry_after(resp, body))

    @staticmethod
    def _model(cls: Any, body: dict[str, Any], what: str) -> Any:
        try:
            model = cls.from_raw(body)
        except ValidationError as exc:
            problems = [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:8]]
            raise ResponseInvalid(what, problems) from None
        flags = custody_flag_problems(body)
        if flags:
            raise ResponseInvalid(what, flags)
        return model

    def verified_action(
        self,
        raw: Any,
        context: dict[str, Any],
        *,
        actual_input_base: int | None = None,
        what: str = "prepared action",
    ) -> PreparedAction:
        """`raw` as a PreparedAction after routequote.verify.verify_bundle found no error against `context`
        (the caller-held verification context). Raises ActionVerificationFailed otherwise."""
        from routequote.fee_recipient_check import fee_recipient_findings
        from routequote.verify import Finding, verify_bundle

        if not isinstance(raw, dict):
            raise ResponseInvalid(what, ["the action is not a JSON object"])
        findings = verify_bundle(
            raw,
            intent=context["intent"],
            wallets=context["wallets"],
            approval_v3=context["approval_v3"],
            direct_route_summary=context["direct_route_summary"],
            event_signer_public=context.get("event_signer_public"),
            now_unix=int(self._now()),
            fee_recipients=self.fee_recipients,
            deployments=self.deployments,
            session_actual_input_base=actual_input_base,
            accept_modelled_bounds=self.accept_modelled_bounds,
        )
        findings += [
            Finding(**f)
            for f in fee_recipient_findings(raw, accept_unconfigured=self.accept_unconfigured_fee_recipient)
        ]
        if any(f.severity == "error" for f in findings):
            raise ActionVerificationFailed(findings)
        action: PreparedAction = self._model(PreparedAction, raw, what)
        action.keep_warnings([f for f in findings if f.severity != "error"])
        return action

    # ---- plans --------------------------------------------------------------------------------------
    def plan_capabilities(self) -> Call[Capabilities]:
        return Call(
            "capabilities", "GET", "/v2/capabilities", lambda b: self._model(Capabilities, b, "capabilities")
        )

    def plan_status(self) -> Call[Status]:
        return Call("status", "GET", "/v2/status", lambda b: self._model(Status, b, "status"))

    def plan_quote(self, source: str, target: str, amount_usd: int | float | str | Decimal) -> Call[Quote]:
        fc, ft = _endpoint(source)
        tc, tt = _endpoint(target)
        asked = {
            "from_chain": fc,
            "from_token": ft,
            "to_chain": tc,
            "to_token": tt,
            "amount_usd": _amount_json(amount_usd),
        }

        def parse(body: dict[str, Any]) -> Quote:
            quote: Quote = self._model(Quote, body, "quote")
            problems = quote_problems(body, asked)
            if problems:
                raise ResponseInvalid("quote", problems)
            return quote

        return Call("quote", "POST", "/v2/quote", parse, body=asked)

    @staticmethod
    def context_for(
        quote: Quote, wallets: dict[str, str], approval: dict[str, str], event_signer_public: str | None
    ) -> dict[str, Any]:
        return verification_context(
            intent=quote.request_intent(),
            wallets=dict(wallets),
            event_signer_public=event_signer_public,
            approval_v3=dict(approval),
            direct_route_summary=quote.raw["direct_route_summary"],
        )

    def _action_body(
        self, quote: Quote, wallets: dict[str, str], approval: dict[str, str], signer: str | None
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "caller_approved": True,
            **quote.request_intent(),
            "wallets": dict(wallets),
            "approval_v3": dict(approval),
        }
        if signer is not None:
            body["event_signer_public"] = signer
        return body

    def plan_prepare(
        self,
        quote: Quote,
        wallets: dict[str, str],
        approval: dict[str, str] | None,
        event_signer_public: str | None,
    ) -> Call[PreparedAction]:
        approval = approval or approval_for(quote, quote.continuation_v3.allowed_modes[0])
        context = self.context_for(quote, wallets, approval, event_signer_public)

        def parse(body: dict[str, Any]) -> PreparedAction:
            action = self.verified_action(body, context)
            if action.step_index != 0:
                raise ResponseInvalid(
                    "prepared action", [f"prepare answered step {action.step_index}, not 0"]
                )
            return action

        return Call(
            "prepare",
            "POST",
            "/v2/prepare",
            parse,
            body=self._action_body(quote, wallets, approval, event_signer_public),
        )

    def _session_parser(
        self, handle_of: Callable[[dict[str, Any]], SessionHandle], what: str
    ) -> Callable[[Any], Session]:
        def parse(body: dict[str, Any]) -> Session:
            handle = handle_of(body)
            session: Session = self._model(Session, body, what)
            ctx = handle.context
            problems = []
            if session.session_id != handle.session_id:
                problems.append(f"answer is for session {session.session_id}, not {handle.session_id}")
            intent = ctx["intent"]
            assert isinstance(intent, dict)
            route = (
                f"{intent['from_chain']}:{intent['from_token']}->{intent['to_chain']}:{intent['to_token']}"
            )
            if session.route != route:
                problems.append(f"session route {session.route} is not the approved {route}")
            approval = ctx["approval_v3"]
            assert isinstance(approval, dict)
            qb = session.quote_binding
            for k in (
                "quote_id",
                "quote_fingerprint",
                "direct_route_summary_sha256",
                "maximum_input_base",
                "minimum_output_base",
            ):
                if qb.get(k) != approval[k]:
                    problems.append(f"quote_binding.{k} differs from your approval")
            if session.action_available and session.current_action is None:
                problems.append("action_available is true but there is no current_action")
            if problems:
                raise ResponseInvalid(what, problems)
            action = body.get("current_action")
            if action is not None:
                actual = None
                if session.current_step > 0 and session.funds.amount_base is not None:
                    actual = int(session.funds.amount_base)
                session.current_action = self.verified_action(
                    action, ctx, actual_input_base=actual, what="session action"
                )
            session.attach(handle)
            return session

        return parse

    def plan_create_session(
        self,
        quote: Quote,
        wallets: dict[str, str],
        approval: dict[str, str] | None,
        event_signer_public: str | None,
        token: SessionToken | None,
        on_created: Callable[[SessionHandle], None] | None = None,
    ) -> Call[Session]:
        approval = approval or approval_for(quote, "session")
        if approval.get("selected_mode") != "session":
            raise ValueError("a session takes an approval_v3 with selected_mode 'session'")
        token = token or SessionToken.generate()
        context = self.context_for(quote, wallets, approval, event_signer_public)
        body = {
            **self._action_body(quote, wallets, approval, event_signer_public),
            "idempotency_key": approval["idempotency_key"],
        }

        def handle_of(answer: dict[str, Any]) -> SessionHandle:
            sid = answer.get("session_id")
            if not isinstance(sid, str):
                raise ResponseInvalid("session", ["the answer has no session_id"])
            handle = SessionHandle(sid, token, context)
            # the session exists on the server from here on: the caller keeps its id before anything is
            # checked, so an answer refused below (an action the verifier rejects) never loses the session
            if on_created is not None:
                on_created(handle)
            return handle

        return Call(
            "session create",
            "POST",
            "/v2/session",
            self._session_parser(handle_of, "session"),
            body=body,
            token=token,
            ok=(201,),
        )

    @staticmethod
    def _path(handle: SessionHandle, op: str = "") -> str:
        sid = handle.session_id
        if not all(c.isalnum() or c == "-" for c in sid):
            raise ValueError("a session id is letters, digits and dashes")
        return f"/v2/session/{sid}" + (f"/{op}" if op else "")

    def plan_read_session(self, handle: SessionHandle) -> Call[Session]:
        return Call(
            "session",
            "GET",
            self._path(handle),
            self._session_parser(lambda _: handle, "session"),
            params={"view": "session"},
            token=handle.token,
        )

    def plan_session_view(self, handle: SessionHandle, view: str) -> Call[SessionView]:
        if view not in ("workflow", "receipt"):
            raise ValueError(
                "view is workflow or receipt (the session view is read_session; the action next_action)"
            )

        def parse(body: dict[str, Any]) -> SessionView:
            out: SessionView = self._model(SessionView, body, f"session {view}")
            if out.session_id != handle.session_id or out.view != view:
                raise ResponseInvalid(f"session {view}", ["answer is for another session or view"])
            return out

        return Call(
            f"session {view}", "GET", self._path(handle), parse, params={"view": view}, token=handle.token
        )

    def plan_observe(
        self, handle: SessionHandle, transaction_hashes: list[str] | None, key: str | None
    ) -> Call[Session]:
        body: dict[str, Any] = {"idempotency_key": key or new_idempotency_key("obs")}
        if transaction_hashes:
            body["transaction_hashes"] = list(transaction_hashes)
        return Call(
            "session observe",
            "POST",
            self._path(handle, "observe"),
            self._session_parser(lambda _: handle, "session"),
            body=body,
            token=handle.token,
        )

    def plan_key_only(self, handle: SessionHandle, op: str, key: str | None) -> Call[Session]:
        body = {"idempotency_key": key or new_idempotency_key(op[:3])}
        return Call(
            f"session {op}",
            "POST",
            self._path(handle, op),
            self._session_parser(lambda _: handle, "session"),
            body=body,
            token=handle.token,
        )
