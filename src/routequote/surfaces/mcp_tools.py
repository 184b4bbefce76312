"""The MCP tool server: a thin translator from MCP `tools/*` to `RouteQuoteService`.

Low-level `mcp.server.Server` (mcp 2.x) so every input schema is exactly the spec's (closed objects,
enums, bounds, lengths, patterns) and every call is validated against it here; the SDK does not.
Results carry the same JSON the REST surface returns, nested under its kind (`quote`, `capabilities`,
`status`, `manifest`) so hashes and signatures still verify, next to a short `guidance` object. The two
quote tools keep the spec's exact inputs, so their text block (what most hosts put in the model's context)
is the decision view of about 1 KB (`core.quote_view`) while structuredContent holds the complete quote:
the one place this server's text is not the serialized structured result (docs/api.md says why). Errors
are tool errors (`isError: true`) with a stable `code`: rate_limited, upstream_unavailable,
request_rejected, reapproval_required. No caller input is echoed in an error and nothing is logged
from arguments, so an access token passed to a session tool can never leak.

Tools are a registry of `ToolDef`s: a new capability adds its tools (`extra_tools`) without touching
the dispatch. Only tools that work are listed.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import mcp.types as mt
import orjson
import structlog
from mcp.server import Server, ServerRequestContext
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from routequote.config import Settings
from routequote.errors import RouteQuoteError
from routequote.input_rules import check_tree, safe_name
from routequote.ratelimit import RateLimiter
from routequote.service import RouteQuoteService
from routequote.surfaces import guidance as g
from routequote.surfaces.http import MAX_BODY_BYTES
from routequote.surfaces.jsonrpc_guard import JsonRpcGuard, guarded_streams
from routequote.surfaces.legacy import legacy_quote, legacy_status, v1_session_operation
from routequote.surfaces.mcp_inputs import (
    QUOTE_RULES,
    SESSION_TOOL_INPUTS,
    LegacyQuoteArguments,
    NoArguments,
    ToolInput,
    V2QuoteArguments,
    input_schema,
)
from routequote.surfaces.mcp_tasks import SessionTasks, declared
from routequote.surfaces.quote_result import (
    FULL_IN_STRUCTURED_CONTENT,
    FULL_IN_STRUCTURED_CONTENT_V1,
    decision_result,
)

SERVER_NAME = "routequote"
SERVER_VERSION = "0.4.0"
MCP_PATH = "/mcp"
INSTRUCTIONS = (
    "Non-custodial route quotes between solana, base, arbitrum and robinhood (SOL, ETH, USDC, USDG). "
    "Quotes are unranked, expiring candidates: compare fresh quotes, never select one automatically. "
    "This server never signs and never submits; the caller alone signs and submits."
)

log = structlog.get_logger("routequote.mcp")
_CLIENT: contextvars.ContextVar[str] = contextvars.ContextVar("routequote_mcp_client", default="local")


# ---- the tool registry ------------------------------------------------------------------------------

ToolRun = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
TextView = Callable[[dict[str, Any]], dict[str, Any]]

READ_ONLY = mt.ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
QUOTE = mt.ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)
STATEFUL = mt.ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=True
)


@dataclass(frozen=True, slots=True)
class ToolDef:
    """One tool. `run` gets the validated arguments (exactly as sent) and returns the structured result."""

    name: str
    title: str
    description: str
    model: type[ToolInput]
    annotations: mt.ToolAnnotations
    run: ToolRun
    # the text block's JSON when it is not the structured result itself (/mcp's quotes: the decision view)
    text: TextView | None = None

    def tool(self) -> mt.Tool:
        return mt.Tool(
            name=self.name,
            title=self.title,
            description=self.description,
            input_schema=input_schema(self.model),
            annotations=self.annotations,
        )


ManifestSource = Callable[[], Awaitable[dict[str, Any]]]


def session_tool_def(name: str, title: str, description: str, run: ToolRun) -> ToolDef:
    """A session tool of the spec's table with its spec input model (for the capability that serves it)."""
    model = SESSION_TOOL_INPUTS[name]
    if name == "service_read_session":
        annotations = READ_ONLY
    else:  # a replay with the same idempotency_key has no further effect; the wallet-login steps have none
        annotations = STATEFUL.model_copy(update={"idempotent_hint": "idempotency_key" in model.model_fields})
    return ToolDef(name, title, description, model, annotations, run)


def core_tools(service: RouteQuoteService, manifest: ManifestSource | None = None) -> list[ToolDef]:
    """The tools this build can serve over `service` (and the signed manifest when one is provided)."""

    async def status(_: dict[str, Any]) -> dict[str, Any]:
        return {"status": legacy_status(service), "guidance": g.read_guidance("legacy_v1_status")}

    async def capabilities(_: dict[str, Any]) -> dict[str, Any]:
        return {"capabilities": service.capabilities(), "guidance": g.read_guidance("v2_capabilities")}

    async def v2_quote(args: dict[str, Any]) -> dict[str, Any]:
        quote = await service.quote_request(args)
        return {"quote": quote, "guidance": g.quote_guidance(quote)}

    async def v1_quote(args: dict[str, Any]) -> dict[str, Any]:
        legacy = await legacy_quote(service, args)
        return {"quote": legacy, "guidance": g.quote_guidance(legacy["quote"])}

    tools = [
        ToolDef(
            "service_status",
            "Legacy corridor status",
            "Read the legacy v1 status: the two original corridors (solana SOL -> native ETH on base or "
            "arbitrum) and their safety gates. Read-only.",
            NoArguments,
            READ_ONLY,
            status,
        ),
    ]
    if manifest is not None:
        signed_manifest = manifest

        async def manifest_tool(_: dict[str, Any]) -> dict[str, Any]:
            return {"manifest": await signed_manifest(), "guidance": g.read_guidance("signed_manifest")}

        tools.append(
            ToolDef(
                "service_manifest",
                "Signed release manifest",
                "Read the signed release, contract and evidence manifest (Ed25519-signed; verify the signature "
                "against the published public key). Read-only.",
                NoArguments,
                READ_ONLY,
                manifest_tool,
            )
        )
    tools += [
        ToolDef(
            "service_v2_capabilities",
            "Route capabilities",
            "The same content as GET /v2/capabilities: 4 chains, 9 asset endpoints, 72 directed routes, "
            "provider paths and current prepare availability. Read-only.",
            NoArguments,
            READ_ONLY,
            capabilities,
        ),
        ToolDef(
            "service_v2_quote",
            "Quote one route",
            "One fresh, fee-inclusive, non-binding quote (POST /v2/quote): expected and minimum receive in "
            "exact base units, fees, unpriced gas and ETA. An unranked candidate that expires; never select "
            "it automatically. Moves no funds; never signs or submits. " + QUOTE_RULES + " The text block "
            "is the decision view (about 1 KB); structuredContent.quote is the complete quote.",
            V2QuoteArguments,
            QUOTE,
            v2_quote,
            text=lambda out: decision_result(out["quote"], full=FULL_IN_STRUCTURED_CONTENT),
        ),
        ToolDef(
            "service_quote",
            "Legacy v1 quote",
            "Legacy v1 quote of an original corridor: solana SOL -> native ETH on base (default) or "
            "arbitrum, amount_usd a whole number 1..1000. Prefer service_v2_quote. Moves no funds. The text "
            "block is the decision view (about 1 KB); structuredContent.quote is the complete v1 answer.",
            LegacyQuoteArguments,
            QUOTE,
            v1_quote,
            text=lambda out: decision_result(out["quote"]["quote"], full=FULL_IN_STRUCTURED_CONTENT_V1),
        ),
    ]
    return tools


V1_TOOL_TEXT: dict[str, tuple[str, str]] = {
    "service_start_wallet_auth": (
        "Wallet login: start",
        "Legacy v1 wallet login, step 1: a sign-message-only challenge for source_wallet (a Solana public key). "
        "Its message names the domain, wallet, nonce, issue and expiry times and the terms version; signing it "
        "cannot authorize a transaction. Sign the exact message bytes with the wallet's signMessage.",
    ),
    "service_finish_wallet_auth": (
        "Wallet login: finish",
        "Legacy v1 wallet login, step 2: the base58 Ed25519 signature of the challenge message -> a wallet-bound "
        "access token, returned once. The token is SENSITIVE: never log or share it. Challenges are single use.",
    ),
    "service_create_session": (
        "Create corridor session",
        "Lock a fresh v1 quote (service_quote) into one wallet-bound corridor session (solana SOL -> ETH on base "
        "or arbitrum). Creates no blockchain transaction; the session then waits for prepare_source_action.",
    ),
    "service_read_session": (
        "Read corridor session",
        "Read a corridor session: view session (default), workflow, receipt or next_action. Read-only.",
    ),
    "service_prepare_source_action": (
        "Prepare source action",
        "Step 1: the bounded unsigned Solana action (Raydium SOL->USDC swap with the 1 bp fee), re-quoted now "
        "and held to the quote's bounds. The service never signs or submits: verify, sign and submit it yourself.",
    ),
    "service_verify_source_receipt": (
        "Verify source receipt",
        "Step 1 done: name the finalized signature of the source action; the service reads it from the chain "
        "and takes the actual USDC from its token balance deltas.",
    ),
    "service_prepare_cctp_action": (
        "Prepare CCTP burn",
        "Step 2: an unsigned CCTP v2 deposit_for_burn of the ACTUAL USDC (fast finality, bounded max_fee), "
        "co-signed by event_signer_public (a fresh keypair you generate).",
    ),
    "service_observe_cctp": (
        "Observe CCTP",
        "Step 2 done: observe the submitted burn (burn_signature), then Circle's attestation and the mint on the "
        "destination (relayed by anyone). Call again until the mint is verified.",
    ),
    "service_prepare_destination_action": (
        "Prepare destination settlement",
        "Step 3: an unsigned ERC-4337 settlement plan (EntryPoint v0.7 PackedUserOperation from your smart "
        "account): an EIP-2612 USDC permit with a deadline, the swap to native ETH with a minimum, its bounds.",
    ),
    "service_observe_destination": (
        "Observe destination settlement",
        "Step 3 done: name the handleOps transaction that carried the user operation; its receipt and the ETH "
        "received are verified and the session completes.",
    ),
}


def v1_session_tools(state: Any) -> list[ToolDef]:
    """The ten v1 session tools over the app's session engine and wallet login (`legacy.v1_session_operation`)."""

    def make(name: str) -> ToolRun:
        operation = name.removeprefix("service_")

        async def run(args: dict[str, Any]) -> dict[str, Any]:
            rest = {k: v for k, v in args.items() if k not in ("access_token", "session_id")}
            _status, body = await v1_session_operation(
                state,
                operation,
                rest,
                token=args.get("access_token"),
                session_id=args.get("session_id"),
                client=_CLIENT.get(),
            )
            if operation == "start_wallet_auth":
                return {
                    "challenge": body,
                    "guidance": {"sign_message_only": True, "can_authorize_transaction": False},
                }
            if operation == "finish_wallet_auth":
                return {"auth": body, "guidance": {"sensitive": True, "never_log_access_token": True}}
            return {
                "session": body,
                "guidance": {
                    "next_operation": body.get("next_operation"),
                    "server_signing": False,
                    "server_submission": False,
                },
            }

        return run

    return [session_tool_def(name, *V1_TOOL_TEXT[name], make(name)) for name in SESSION_TOOL_INPUTS]


# ---- results ------------------------------------------------------------------------------------------


def tool_result(
    structured: dict[str, Any], *, is_error: bool = False, text: dict[str, Any] | None = None
) -> mt.CallToolResult:
    return mt.CallToolResult(
        content=[mt.TextContent(text=orjson.dumps(structured if text is None else text).decode())],
        structured_content=structured,
        is_error=is_error,
    )


def tool_error(exc: RouteQuoteError) -> mt.CallToolResult:
    return tool_result({"error": g.agent_error(exc)}, is_error=True)


def invalid_arguments(exc: ValidationError) -> mt.CallToolResult:
    """Which argument broke which rule of the schema; never the values the caller sent."""
    details = [
        {
            "loc": [p if isinstance(p, int) else safe_name(p) for p in e["loc"]],
            "type": e["type"],
            "msg": e["msg"],
        }
        for e in exc.errors(include_url=False, include_input=False, include_context=False)
    ]
    return tool_result(
        {
            "error": {
                "code": g.REQUEST_REJECTED,
                "error": "invalid_arguments",
                "reason_class": "invalid_arguments",
                "message": "arguments do not match the tool's input schema",
                "details": details[:20],
            }
        },
        is_error=True,
    )


# ---- the server ---------------------------------------------------------------------------------------


def _client_key(ctx: ServerRequestContext[Any, Any]) -> str:
    """The same per-client key as REST: one budget per client whichever surface it uses."""
    client = getattr(ctx.request, "client", None)
    return str(client.host) if client else "local"


def build_server(
    tools: Sequence[ToolDef], *, limiter: RateLimiter | None = None, tasks: SessionTasks | None = None
) -> Server[Any]:
    by_name = {t.name: t for t in tools}
    listing = mt.ListToolsResult(tools=[t.tool() for t in tools])
    schemas = {t.name: input_schema(t.model) for t in tools}

    async def on_list_tools(
        ctx: ServerRequestContext[Any, Any], params: mt.PaginatedRequestParams | None
    ) -> mt.ListToolsResult:
        return listing

    async def on_call_tool(
        ctx: ServerRequestContext[Any, Any], params: mt.CallToolRequestParams
    ) -> Any:  # a CallToolResult, or (MCP tasks) a CreateTaskResult mapping the runner sends as it is
        tool = by_name.get(params.name)
        if tool is None:
            raise MCPError(code=mt.INVALID_PARAMS, message="unknown tool")
        args = params.arguments or {}
        _CLIENT.set(_client_key(ctx))
        try:
            if limiter is not None:
                await limiter.check(_client_key(ctx))
        except RouteQuoteError as exc:
            return tool_error(exc)
        result = await call(tool, args)
        if tasks is not None and declared(params.meta):  # the host can take a task instead (MCP tasks)
            return tasks.task_for(tool.name, args, result) or result
        return result

    async def call(tool: ToolDef, args: dict[str, Any]) -> mt.CallToolResult:
        try:
            check_tree(
                args
            )  # the strict reader's depth / Unicode rules, for callers that bypass /mcp (stdio)
            tool.model.model_validate(args)
        except ValidationError as exc:
            return invalid_arguments(exc)
        except RouteQuoteError as exc:
            return tool_error(exc)
        try:
            out = await tool.run(args)
            return tool_result(out, text=tool.text(out) if tool.text is not None else None)
        except RouteQuoteError as exc:
            return tool_error(exc)
        except Exception as exc:  # never a traceback or caller input in a result; the log has the type
            log.error("mcp_tool_failed", tool=tool.name, error_type=type(exc).__name__)
            return tool_result(
                {
                    "error": {
                        "code": "internal_error",
                        "error": "internal_error",
                        "reason_class": "internal_error",
                    }
                },
                is_error=True,
            )

    server = Server(
        SERVER_NAME,
        version=SERVER_VERSION,
        title="routequote route quotes",
        instructions=INSTRUCTIONS,
        get_tool_input_schema=schemas.get,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )
    if tasks is not None:
        tasks.install(server, lambda name, args: call(by_name[name], args))
    return server


def allowed_hosts(settings: Settings) -> list[str]:
    """Host header values /mcp accepts: loopback on the server's port, the bind address, the public base
    URL's host and every ROUTEQUOTE_ALLOWED_HOSTS entry (`host`, `host:port` or `host:*`)."""
    port = settings.port
    hosts = [f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"]
    if port == 80:
        hosts += ["127.0.0.1", "localhost", "[::1]"]
    if settings.host not in ("0.0.0.0", "::", "127.0.0.1", "localhost"):
        hosts.append(f"{settings.host}:{port}")
    netloc = urlsplit(settings.resolved_base_url()).netloc
    if netloc:
        hosts.append(netloc)
    hosts += [h.strip() for h in settings.allowed_hosts.split(",") if h.strip()]
    return list(dict.fromkeys(hosts))


def transport_security(settings: Settings) -> TransportSecuritySettings:
    hosts = allowed_hosts(settings)
    origins = [f"{scheme}://{h}" for h in hosts for scheme in ("http", "https")]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


class PostOnly:
    """/mcp in stateless JSON mode: GET would open an idle SSE stream that never carries anything (and
    holds a connection until the client hangs up), so it is answered 405 as the transport allows."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "GET":
            await Response(status_code=405, headers={"Allow": "POST, DELETE"})(scope, receive, send)
            return
        await self.app(scope, receive, send)


@dataclass
class McpSurface:
    server: Server[Any]
    routes: list[Route]
    tools: list[ToolDef]

    def lifespan(self) -> contextlib.AbstractAsyncContextManager[None]:
        """Enter in the app's lifespan (the session manager's task group); once per instance."""
        return self.server.session_manager.run()


def build_mcp(
    service: RouteQuoteService,
    settings: Settings,
    *,
    limiter: RateLimiter | None = None,
    manifest: ManifestSource | None = None,
    extra_tools: Sequence[ToolDef] = (),
) -> McpSurface:
    """The MCP server over `service` and its Streamable HTTP route at exactly /mcp (stateless, JSON)."""
    tools = [*core_tools(service, manifest), *extra_tools]
    server = build_server(tools, limiter=limiter)
    security = transport_security(settings)
    sub = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        json_response=True,
        max_request_body_size=MAX_BODY_BYTES,  # the same 1 MiB limit as every REST POST
        transport_security=security,
    )
    routes: list[Route] = []
    for r in sub.routes:
        if isinstance(r, Route) and r.path == MCP_PATH:
            guarded = JsonRpcGuard(r.endpoint, limiter, security=security, accept_json=True)
            routes.append(Route(MCP_PATH, endpoint=PostOnly(guarded), name="mcp"))
    if len(routes) != 1:
        raise RuntimeError("the MCP SDK did not produce exactly one /mcp route")
    return McpSurface(server=server, routes=routes, tools=tools)


async def run_stdio(app: Any) -> None:
    """Serve the same tools as /mcp over stdio (for desktop agent hosts), from the app built by the one
    composition root (same service, manifest and limits-free local channel). Runs the app's lifespan hooks
    (market warm-up and the like) around the session. Stdout carries only MCP messages."""
    from mcp.server.stdio import stdio_server

    state = app.state
    server = build_server([*core_tools(state.service, manifest_provider(state)), *v1_session_tools(state)])
    async with contextlib.AsyncExitStack() as stack:
        for hook in state.lifespan_hooks:
            await stack.enter_async_context(hook())
        async with (
            stdio_server() as (stdin, stdout),
            guarded_streams(stdin, stdout) as (read_stream, write_stream),
        ):
            await server.run(read_stream, write_stream, server.create_initialization_options())


def mount_mcp(app: Any) -> McpSurface:
    """Mount /mcp on the composition root's app (call last: reads the capabilities set on app.state)."""
    state = app.state
    surface = build_mcp(
        state.service,
        state.settings,
        limiter=state.limiter,
        manifest=manifest_provider(state),
        extra_tools=v1_session_tools(state),
    )
    app.router.routes.extend(surface.routes)
    state.lifespan_hooks.append(surface.lifespan)
    state.mcp = surface
    return surface


def manifest_provider(state: Any) -> ManifestSource | None:
    """The signed manifest, when the discovery capability is mounted (`app.state.discovery`)."""
    discovery = getattr(state, "discovery", None)
    source = getattr(discovery, "signed_manifest", None)
    return source if callable(source) else None
