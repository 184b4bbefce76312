"""The caller-side MCP (`routequote mcp --remote https://...`): the v2 tools over stdio, on the caller's own
machine, against a remote instance over HTTP, for agents that cannot run code.

It is `routequote.client` behind MCP tools. The agent quotes, then approves a quote by its `quote_id`; this
process keeps the full quote it fetched (hashes recomputed by the client), builds `approval_v3` and the
hash-bound `verification_context` from it (`routequote.verify.verification_context`), generates and keeps the
session token, and verifies every returned action with the same verifier (`routequote.verify.verify_bundle`,
in `_Plans.verified_action`) before anything is handed back. An action that fails is refused
(`safety_boundary_failed` with the findings) and no wallet handoff is built for it; a verified action comes
back as the caller-wallet handoff, bound to it by hash. The remote `/mcp/v2` stays as it is for hosts that
build the context themselves. Nothing here signs or submits.

What this process holds (quotes, session tokens and their contexts) lives in its memory only: the token is
never shown to the agent, and a restart forgets the sessions it drove.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import httpx
from pydantic import Field

from routequote.client import errors as ce
from routequote.client.approval import approval_for, new_idempotency_key
from routequote.client.client import AsyncRouteQuoteClient
from routequote.client.models import PreparedAction, Quote, Session
from routequote.client.token import SessionHandle
from routequote.contract.v2 import ChainName
from routequote.core.field_rules import MAX_TRANSACTION_IDS, TRANSACTION_ID_PATTERN, UUID_PATTERN
from routequote.core.verify.handoff import caller_wallet_handoff
from routequote.errors import RouteQuoteError
from routequote.surfaces import guidance as g
from routequote.surfaces.mcp_inputs import (
    QUOTE_RULES,
    NoArguments,
    ToolInput,
    V2ProfileQuoteArguments,
)
from routequote.surfaces.mcp_tools import QUOTE, READ_ONLY, STATEFUL, ToolDef, build_server
from routequote.surfaces.mcp_v2 import PublicAddress
from routequote.surfaces.quote_result import quote_detail, quote_result

QuoteId = Annotated[
    str, Field(pattern=UUID_PATTERN, description="quote_id of a quote fetched by this server")
]
SessionId = Annotated[str, Field(pattern=UUID_PATTERN)]
BaseUnits = Annotated[str, Field(pattern=r"^[1-9][0-9]{0,77}$", description="Base units, a decimal string")]
MAX_QUOTES_KEPT = 256  # the approved quote is looked up by id; quotes expire within minutes anyway


class ApproveArguments(ToolInput):
    """Your approval of one quote this server fetched: the bounds default to the quote's and may only be
    stricter."""

    caller_approved: Literal[True] = Field(description="True only when you (or your human) chose this quote")
    quote_id: QuoteId
    wallets: dict[ChainName, PublicAddress] = Field(
        min_length=1, max_length=4, description="chain -> your public address, for the quote's wallet_chains"
    )
    event_signer_public: PublicAddress | None = Field(
        None, description="Solana CCTP burns: a fresh keypair's public key"
    )
    maximum_input_base: BaseUnits | None = None
    minimum_output_base: BaseUnits | None = None


class SessionArguments(ToolInput):
    session_id: SessionId


class SessionGetArguments(SessionArguments):
    view: Literal["session", "workflow", "receipt", "next_action"] = "session"


class SessionObserveArguments(SessionArguments):
    transaction_hashes: list[Annotated[str, Field(pattern=TRANSACTION_ID_PATTERN)]] = Field(
        min_length=1, max_length=MAX_TRANSACTION_IDS
    )


# ---- errors: the client's, as the agent channel's one error tree ---------------------------------------


class CallerSideError(RouteQuoteError):
    """A refusal by this process or an error answer of the remote instance, as an MCP tool error."""

    def __init__(self, error: str, agent_code: str, body: dict[str, Any]) -> None:
        detail = {k: v for k, v in body.items() if k not in ("error", "reason_class", "message")}
        super().__init__(str(body.get("reason_class") or error), str(body.get("message", "")), details=detail)
        self.error = error
        self.agent_code = agent_code


def _agent_error(exc: ce.ClientError) -> CallerSideError:
    if isinstance(exc, ce.ActionVerificationFailed):
        findings = [{"code": f.code, "message": f.message, "severity": f.severity} for f in exc.findings]
        return CallerSideError(
            "safety_boundary_failed",
            g.SAFETY_BOUNDARY_FAILED,
            {
                "reason_class": "prepared_action_failed_verification",
                "message": "the returned action failed verification on this machine; it was withheld",
                "findings": findings[:20],
            },
        )
    if isinstance(exc, ce.ResponseInvalid):
        return CallerSideError(
            "remote_answer_invalid",
            g.SAFETY_BOUNDARY_FAILED,
            {
                "reason_class": "remote_answer_invalid",
                "message": str(exc)[:400],
                "problems": exc.problems[:8],
            },
        )
    if isinstance(exc, ce.ServerError):
        code = (
            g.RATE_LIMITED
            if isinstance(exc, ce.RateLimited)
            else g.UPSTREAM_UNAVAILABLE
            if isinstance(exc, ce.UpstreamUnavailable)
            else g.REAPPROVAL_REQUIRED
            if isinstance(exc, ce.ReapprovalRequired)
            else g.REQUEST_REJECTED
        )
        return CallerSideError(exc.error, code, exc.body)  # the instance's ErrorResponse (never echoes input)
    if isinstance(exc, ce.ApprovalRefused):
        return CallerSideError(
            "approval_refused", g.REQUEST_REJECTED, {"reason_class": exc.reason_class, "message": str(exc)}
        )
    return CallerSideError("remote_unreachable", g.UPSTREAM_UNAVAILABLE, {"message": str(exc)[:200]})


def _unknown(what: str) -> CallerSideError:
    return CallerSideError(
        "not_found",
        g.REQUEST_REJECTED,
        {"reason_class": f"{what}_unknown", "message": f"no {what} with that id was fetched by this server"},
    )


# ---- the tools --------------------------------------------------------------------------------------------


@dataclass
class RemoteOptions:
    """What the caller accepts beyond the verifier's defaults (each False unless the caller says so)."""

    accept_modelled_bounds: bool = False
    accept_unconfigured_fee_recipient: bool = False


def remote_client(
    base_url: str,
    options: RemoteOptions,
    *,
    transport: httpx.AsyncBaseTransport | None = None,
    deployments: dict[Any, Any] | None = None,
) -> AsyncRouteQuoteClient:
    """The one client every tool uses, so every action passes the one verifier with the caller's options.
    `deployments` (contract addresses) default to the pinned mainnet ones; tests on local chains pass theirs."""
    return AsyncRouteQuoteClient(
        base_url,
        transport=transport,
        deployments=deployments,
        accept_unconfigured_fee_recipient=options.accept_unconfigured_fee_recipient,
        accept_modelled_bounds=options.accept_modelled_bounds,
    )


def _verified(action: PreparedAction) -> dict[str, Any]:
    """A verified action as the agent gets it: the handoff for its wallet and what was checked."""
    bundle = action.raw
    return {
        "action_verification": {
            "verified": True,
            "where": "on this machine, with routequote.verify against the context built from your approval",
            "warnings": [{"code": f.code, "message": f.message} for f in action.warnings],
        },
        "caller_wallet_handoff": caller_wallet_handoff(bundle),
        "guidance": g.bundle_guidance(bundle),
    }


def _session_answer(session: Session) -> dict[str, Any]:
    raw = {k: v for k, v in session.raw.items() if k != "current_action"}
    out: dict[str, Any] = {"session": raw}
    if session.current_action is not None:  # verified by the client before it got here
        out |= _verified(session.current_action)
    return out


class CallerSide:
    """The tools' state: the quotes fetched (by id) and the sessions driven (by id), in memory."""

    def __init__(self, client: AsyncRouteQuoteClient) -> None:
        self.client = client
        self.quotes: OrderedDict[str, Quote] = OrderedDict()
        self.sessions: dict[str, SessionHandle] = {}

    async def _call(self, coro: Any) -> Any:
        try:
            return await coro
        except ce.ClientError as exc:
            raise _agent_error(exc) from None

    def _quote(self, quote_id: str) -> Quote:
        quote = self.quotes.get(quote_id)
        if quote is None:
            raise _unknown("quote")
        return quote

    def _handle(self, session_id: str) -> SessionHandle:
        handle = self.sessions.get(session_id.lower())
        if handle is None:
            raise _unknown("session")
        return handle

    def _approval(self, args: dict[str, Any], mode: str) -> tuple[Quote, dict[str, str]]:
        quote = self._quote(args["quote_id"])
        try:
            approval = approval_for(
                quote,
                mode,
                maximum_input_base=args.get("maximum_input_base"),
                minimum_output_base=args.get("minimum_output_base"),
                idempotency_key=new_idempotency_key("mcp"),
            )
        except ce.ApprovalRefused as exc:
            raise _agent_error(exc) from None
        return quote, approval

    async def capabilities(self, _: dict[str, Any]) -> dict[str, Any]:
        caps = await self._call(self.client.capabilities())
        return {"capabilities": caps.raw, "guidance": g.read_guidance("v2_capabilities")}

    async def status(self, _: dict[str, Any]) -> dict[str, Any]:
        status = await self._call(self.client.status())
        return {"status": status.raw, "guidance": g.read_guidance("v2_status")}

    async def quote(self, args: dict[str, Any]) -> dict[str, Any]:
        detail = quote_detail(args.get("detail"))
        source = f"{args['from_chain']}:{args['from_token']}"
        target = f"{args['to_chain']}:{args['to_token']}"
        quote: Quote = await self._call(self.client.quote(source, target, args["amount_usd"]))
        self.quotes[quote.raw["quote_id"]] = quote
        while len(self.quotes) > MAX_QUOTES_KEPT:
            self.quotes.popitem(last=False)
        return quote_result(quote.raw, detail)

    async def prepare(self, args: dict[str, Any]) -> dict[str, Any]:
        quote, approval = self._approval(args, "one_shot")
        action = await self._call(
            self.client.prepare(
                quote, args["wallets"], approval=approval, event_signer_public=args.get("event_signer_public")
            )
        )
        return _verified(action)

    async def session_create(self, args: dict[str, Any]) -> dict[str, Any]:
        quote, approval = self._approval(args, "session")
        session: Session = await self._call(
            self.client.create_session(
                quote, args["wallets"], approval=approval, event_signer_public=args.get("event_signer_public")
            )
        )
        self.sessions[session.session_id.lower()] = session.handle
        return _session_answer(session)

    async def session_get(self, args: dict[str, Any]) -> dict[str, Any]:
        handle = self._handle(args["session_id"])
        view = args.get("view", "session")
        if view in ("workflow", "receipt"):
            out = await self._call(self.client.session_view(handle, view))
            return {"session": out.raw}
        session = await self._call(self.client.read_session(handle))
        if view == "next_action":
            if session.current_action is None:
                return {"session": {"session_id": session.session_id, "action_available": False}}
            return _verified(session.current_action)
        return _session_answer(session)

    async def session_observe(self, args: dict[str, Any]) -> dict[str, Any]:
        handle = self._handle(args["session_id"])
        return _session_answer(await self._call(self.client.observe(handle, args["transaction_hashes"])))

    async def session_refresh(self, args: dict[str, Any]) -> dict[str, Any]:
        return _session_answer(await self._call(self.client.refresh(self._handle(args["session_id"]))))

    async def session_cancel(self, args: dict[str, Any]) -> dict[str, Any]:
        return _session_answer(await self._call(self.client.cancel(self._handle(args["session_id"]))))


def caller_side_tools(side: CallerSide) -> list[ToolDef]:
    approve = (
        "Approve a quote this server fetched by its quote_id (caller_approved true: you or your human chose it, "
        "never automatically) and give your public wallet addresses. This server builds approval_v3 and the "
        "verification context from that quote, verifies the returned action on this machine and gives you "
        "the wallet handoff only when it passes; a failing action is refused (safety_boundary_failed). "
        "Nothing is signed or submitted."
    )
    stateful = STATEFUL
    return [
        ToolDef(
            "service_v2_capabilities",
            "Route capabilities",
            "GET /v2/capabilities of the remote instance. Read-only.",
            NoArguments,
            READ_ONLY,
            side.capabilities,
        ),
        ToolDef(
            "service_v2_status",
            "Service status",
            "GET /v2/status of the remote instance. Read-only.",
            NoArguments,
            READ_ONLY,
            side.status,
        ),
        ToolDef(
            "service_v2_quote",
            "Quote one route",
            "One fresh, unranked, expiring quote from the remote instance, checked here (hashes recomputed). "
            + QUOTE_RULES
            + ' Answers the decision view (about 1 KB) unless detail is "full". Never select it '
            "automatically. Moves no funds.",
            V2ProfileQuoteArguments,
            QUOTE,
            side.quote,
        ),
        ToolDef(
            "service_v2_prepare",
            "Prepare the first unsigned action",
            "One-shot prepare of a one-step route (decision.next.modes holds one_shot). " + approve,
            ApproveArguments,
            stateful,
            side.prepare,
        ),
        ToolDef(
            "service_v2_session_create",
            "Create a session",
            "A receipt-driven session for a quote (any route). This server generates and keeps the session "
            "token; you use the session_id. " + approve,
            ApproveArguments,
            stateful,
            side.session_create,
        ),
        ToolDef(
            "service_v2_session_get",
            "Read a session",
            "Read a session this server created (view session, workflow, receipt or next_action). A current "
            "action is verified here before its handoff is returned. Changes nothing.",
            SessionGetArguments,
            READ_ONLY,
            side.session_get,
        ),
        ToolDef(
            "service_v2_session_observe",
            "Observe submitted transactions",
            "Name the transactions you signed and submitted (1..8 hashes or signatures); only verified output "
            "on chain advances the session. The next action is verified here before it is returned.",
            SessionObserveArguments,
            stateful,
            side.session_observe,
        ),
        ToolDef(
            "service_v2_session_refresh",
            "Refresh an expired action",
            "Replace an expired, unsubmitted action with a fresh one held to your approval (verified here).",
            SessionArguments,
            stateful,
            side.session_refresh,
        ),
        ToolDef(
            "service_v2_session_cancel",
            "Cancel a session",
            "Cancel a session before its next action is submitted; nothing on chain is touched.",
            SessionArguments,
            stateful,
            side.session_cancel,
        ),
    ]


async def run_remote(base_url: str, options: RemoteOptions) -> None:
    """Serve the caller-side tools over stdio; stdout carries only MCP messages."""
    from mcp.server.stdio import stdio_server

    from routequote.surfaces.jsonrpc_guard import guarded_streams

    async with contextlib.AsyncExitStack() as stack:
        client = remote_client(base_url, options)
        stack.push_async_callback(client.aclose)
        server = build_server(caller_side_tools(CallerSide(client)))
        async with (
            stdio_server() as (stdin, stdout),
            guarded_streams(stdin, stdout) as (read_stream, write_stream),
        ):
            await server.run(read_stream, write_stream, server.create_initialization_options())


def serve_remote(base_url: str, options: RemoteOptions) -> None:
    """`routequote mcp --remote URL`: logs go to stderr, never onto the MCP stream."""
    import asyncio
    import sys

    import structlog

    structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stderr))
    asyncio.run(run_remote(base_url, options))
