"""create_app: the only composition root. Picks adapters from Settings, builds the one service object
and mounts every surface over it."""

from __future__ import annotations

import contextlib
import functools
import gc
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import Request
from starlette.responses import Response

from routequote import __version__
from routequote.clock import SystemClock, UuidFactory
from routequote.config import Settings
from routequote.contract.v2 import QuoteRequest
from routequote.core.assets import Chain
from routequote.core.fee_recipient import recipients_configured
from routequote.discovery import Discovery, load_signing_key
from routequote.logging import configure_logging
from routequote.market.snapshot import EmbeddedSnapshot
from routequote.metrics import Metrics
from routequote.observability import setup_tracing
from routequote.ports import Clock, IdempotencyStore, IdFactory, MarketData, QuoteStore, SessionStore
from routequote.prepare import IDEMPOTENCY_RECORDS, PrepareService
from routequote.ratelimit import RateLimiter
from routequote.readiness import Observation, bounds_by_route
from routequote.service import RouteQuoteService, ServiceConfig
from routequote.sessions import SessionConfig, SessionService
from routequote.sessions.event_stream import EventFeed, StreamSlots
from routequote.storage.quotes import MemoryIdempotencyStore, MemoryQuoteStore
from routequote.surfaces import rest_events, rest_prepare, rest_session, rest_v1, rest_v2, web, well_known
from routequote.surfaces.a2a_agent import mount_a2a
from routequote.surfaces.errors import json_response
from routequote.surfaces.health import Probes
from routequote.surfaces.health import router as health_router
from routequote.surfaces.input_guard import TransportLimits
from routequote.surfaces.mcp_tools import mount_mcp
from routequote.surfaces.mcp_v2 import mount_mcp_v2
from routequote.surfaces.request_stack import RequestStack
from routequote.webhooks.wiring import delivering, session_webhooks

OPENAPI_VERSION = "2.0.0-quote-only"
SERVICE_SAFETY = {
    "quote_only_import": True,
    "public": True,
    "api_key_required": False,
    "wallet_required": False,
    "server_signing": False,
    "server_submission": False,
    "next_action": (
        "compare with another fresh executable route and stop unless the caller separately approves continuation"
    ),
}

LifespanHook = Callable[[], contextlib.AbstractAsyncContextManager[Any]]


def build_market(settings: Settings, clock: Clock | None = None) -> MarketData:
    if settings.market == "embedded":
        return EmbeddedSnapshot(settings.snapshot_path or None)
    if settings.market == "live":
        from routequote.market.live import LiveMarket
        from routequote.market.live_config import live_config_from_settings
        from routequote.market.snapshot import load_snapshot_document

        return LiveMarket(
            live_config_from_settings(settings),
            clock or SystemClock(),
            snapshot_document=load_snapshot_document(settings.snapshot_path or None),
        )
    raise ValueError(f"unknown ROUTEQUOTE_MARKET {settings.market!r} (this build supports: embedded, live)")


@dataclass(frozen=True)
class Stores:
    quotes: QuoteStore
    idempotency: IdempotencyStore
    # quote ids the store needs (peers: the issuing worker's slot in each id; redis: the second of issue)
    ids: IdFactory | None = None


def build_stores(settings: Settings) -> Stores:
    kind = settings.resolved_quote_store()
    if kind == "memory":
        return Stores(MemoryQuoteStore(), MemoryIdempotencyStore())
    if kind == "peers":
        import os

        from routequote.storage.peer_quotes import PEER_DIR_ENV, PeerQuoteStore
        from routequote.storage.sqlite_quotes import SqliteIdempotencyStore

        folder = os.environ.get(PEER_DIR_ENV, "")
        if not folder:
            raise ValueError(
                "ROUTEQUOTE_QUOTE_STORE=peers with several workers runs under `routequote serve` (it gives the "
                "workers their shared directory)"
            )
        peers = PeerQuoteStore(folder, settings.workers)
        return Stores(peers, SqliteIdempotencyStore(peers.idempotency_file), peers.ids)
    if kind == "sqlite":
        from routequote.storage.sqlite_quotes import SqliteIdempotencyStore, SqliteQuoteStore

        quotes = SqliteQuoteStore(settings.resolved_quote_store_path())
        return Stores(quotes, SqliteIdempotencyStore(quotes))
    if kind == "redis":
        if not settings.redis_url:
            raise ValueError("ROUTEQUOTE_QUOTE_STORE=redis needs ROUTEQUOTE_REDIS_URL")
        from routequote.storage.redis_store import RedisIdempotencyStore, RedisQuoteStore

        redis_quotes = RedisQuoteStore(settings.redis_url)
        return Stores(redis_quotes, RedisIdempotencyStore(settings.redis_url), redis_quotes.ids)
    raise ValueError(
        f"unknown ROUTEQUOTE_QUOTE_STORE {settings.quote_store!r} (auto, memory, peers, sqlite or redis)"
    )


def build_sessions(
    settings: Settings, prepare: PrepareService, store: SessionStore | None = None
) -> SessionService:
    """The session engine: its store (SQLite by default, PostgreSQL by URL) and the chain readers, each
    configured only where an RPC URL is set (an unconfigured chain answers 503 when observed). The adapters
    are imported here, when the engine is built, not when `app` is imported (start-up cost)."""
    import httpx

    from routequote.observe.evm import JsonRpcEvmReader
    from routequote.observe.evm_state import JsonRpcEvmState
    from routequote.observe.iris import IrisAttestationReader
    from routequote.observe.layerzero_scan import LayerZeroScanReader
    from routequote.observe.solana import JsonRpcSolanaReader

    if store is None:
        from routequote.storage.retention import CappedSessionStore
        from routequote.storage.sessions_sql import SqlSessionStore

        sql = SqlSessionStore(settings.database_url, pool_size=settings.database_pool_size)
        store = CappedSessionStore(sql, settings.max_open_sessions_per_client)
    client = httpx.AsyncClient(limits=httpx.Limits(max_connections=32))
    timeout, limit = settings.market_timeout_seconds, settings.upstream_max_bytes
    evm_urls = {
        "base": settings.rpc_url_base,
        "arbitrum": settings.rpc_url_arbitrum,
        "robinhood": settings.rpc_url_robinhood,
    }
    evm = JsonRpcEvmReader({k: v for k, v in evm_urls.items() if v}, client, timeout=timeout, max_bytes=limit)
    sessions = SessionService(
        prepare,
        store,
        evm=evm,
        evm_state=JsonRpcEvmState(evm),
        solana=JsonRpcSolanaReader(settings.rpc_url_solana or None, client, timeout=timeout, max_bytes=limit),
        attestations=IrisAttestationReader(
            settings.iris_url or None, client, timeout=timeout, max_bytes=limit
        ),
        layerzero=LayerZeroScanReader(
            settings.layerzero_scan_url or None, client, timeout=timeout, max_bytes=limit
        ),
        config=SessionConfig(
            confirmations=settings.confirmations(),
            across_fill_search_blocks=settings.across_fill_search_blocks,
            usdg_oft_solana_program=settings.usdg_oft_solana_program or None,
            observation=Observation.from_settings(settings),
        ),
    )
    sessions.http_client = client  # closed with the app
    return sessions


def solana_arrivals(settings: Settings) -> dict[str, Any]:
    """What capabilities say about Solana bridge arrivals: how each is bound to its bridge message, and whether
    the USDG OFT program (not pinned by this build) is configured."""
    program = settings.usdg_oft_solana_program or None
    return {
        "cctp": "MessageTransmitterV2 receive_message of the Iris-attested message crediting the session's wallet "
        "(prepared as the next action once attested; a relayed mint is verified the same way)",
        "oft": {
            "rule": "lz_receive of the GUID the session's OFTSent emitted, from Robinhood (eid 30416) and its OFT",
            "usdg_oft_solana_program": program,
            "program_source": "operator setting ROUTEQUOTE_USDG_OFT_SOLANA_PROGRAM" if program else None,
            "verifiable": program is not None,
            "note": None
            if program
            else "the USDG OFT program on Solana is not pinned by this build: an OFT arrival on Solana is "
            "unverifiable and never accepted until ROUTEQUOTE_USDG_OFT_SOLANA_PROGRAM is set",
            "finder": "LayerZero Scan by source transaction (a lead, verified on chain)",
        },
        "balance_increase_alone_counts": False,
    }


def _preflight(settings: Settings, sessions: SessionService) -> Any:
    """The preflight block's checker (preflight.py): chain reads through the chain ports (own readers) wherever an
    RPC URL is configured (a chain without one gives `unknown` findings); with none (the embedded defaults) no
    chain is read and the block says so."""
    from routequote.observe.evm import JsonRpcEvmReader
    from routequote.observe.evm_state import JsonRpcEvmState
    from routequote.observe.solana import JsonRpcSolanaReader
    from routequote.preflight import NO_CHAIN_ACCESS, PreflightChecker

    evm_urls = {
        "base": settings.rpc_url_base,
        "arbitrum": settings.rpc_url_arbitrum,
        "robinhood": settings.rpc_url_robinhood,
    }
    if not any(evm_urls.values()) and not settings.rpc_url_solana:
        return PreflightChecker(enabled=False, reason=NO_CHAIN_ACCESS)
    # its own readers (own breakers) over the engine's HTTP client: advice reads against a failing node never
    # open the circuit the session observations depend on
    client, timeout, limit = (
        sessions.http_client,
        settings.market_timeout_seconds,
        settings.upstream_max_bytes,
    )
    evm = JsonRpcEvmReader({k: v for k, v in evm_urls.items() if v}, client, timeout=timeout, max_bytes=limit)
    return PreflightChecker(
        enabled=True,
        reason="",
        evm=JsonRpcEvmState(evm),
        solana=JsonRpcSolanaReader(settings.rpc_url_solana or None, client, timeout=timeout, max_bytes=limit),
        token_address=sessions.prepare.token_address,
    )


def _oft_pin(settings: Settings, sessions: SessionService, service: RouteQuoteService, discovery: Any) -> Any:
    """The USDG OFT pin (oft_pin.py): derived from chain state under a live market with Robinhood and Solana
    RPC URLs; the setting overrides; applied to sessions, capabilities, /readyz and the safety document."""
    from routequote.oft_pin import OftPinResolver, apply_pin

    derives = settings.market == "live" and bool(settings.rpc_url_robinhood and settings.rpc_url_solana)
    resolver = OftPinResolver(
        settings.usdg_oft_solana_program or None,
        evm=sessions.builder.evm_state if derives else None,
        solana=sessions.solana if derives else None,  # type: ignore[arg-type]
        robinhood_oft=sessions.prepare.deployments[Chain.ROBINHOOD].usdg_oft,
        now=lambda: service.clock.now().isoformat(),
        interval_seconds=settings.usdg_oft_pin_interval_seconds,
        on_change=lambda pin: apply_pin(pin, sessions=sessions, service=service, discovery=discovery),
    )
    apply_pin(resolver.pin, sessions=sessions, service=service, discovery=discovery)
    return resolver


def retention_purger(settings: Settings, store: Any, clock: Clock) -> Any:
    """The background purge of the SQL session store (storage/retention.py); None for other stores."""
    from routequote.storage.retention import CappedSessionStore, Purger, RetentionPolicy

    if not isinstance(store, CappedSessionStore):
        return None
    policy = RetentionPolicy(
        session_days=settings.session_retention_days,
        receipt_days=settings.receipt_retention_days,
        interval_seconds=settings.retention_interval_seconds,
        max_open_sessions_per_client=settings.max_open_sessions_per_client,
    )
    return Purger(store.inner, policy, clock.now)


def build_watcher(settings: Settings, sessions: SessionService) -> Any:
    """The watcher (sessions/watch.py): every session waiting on a chain with an RPC URL is advanced by the
    service; its lease lives in the session database. Off with ROUTEQUOTE_WATCH=0 (views say so)."""
    from routequote.sessions.watch import WatchConfig, Watcher, Watching
    from routequote.storage.watch_store import watch_store

    observation = sessions.config.observation
    sessions.watching = Watching(
        WatchConfig.from_settings(settings), None if observation is None else observation.rpc_chains
    )
    return Watcher(sessions, watch_store(sessions.store), sessions.watching)


def build_service(
    settings: Settings,
    *,
    market: MarketData,
    quotes: QuoteStore,
    clock: Clock,
    ids: IdFactory,
    idempotency: IdempotencyStore | None = None,
    deployments: dict[Any, Any] | None = None,
) -> tuple[RouteQuoteService, PrepareService]:
    """The service object with its prepare builder's readiness: the server and the CLI's in-process commands
    both build it here, so an in-process quote says what a served one says (`first_unsigned_action_supported`)."""
    service = RouteQuoteService(
        market=market,
        quotes=quotes,
        clock=clock,
        ids=ids,
        config=ServiceConfig(
            quote_ttl_seconds=settings.quote_ttl_seconds,
            max_inflight_quotes=settings.max_inflight_quotes,
            base_url=settings.resolved_base_url(),
        ),
    )
    # without a configured store (the CLI's in-process commands) a prepare replays from memory
    idempotency = idempotency or MemoryIdempotencyStore(IDEMPOTENCY_RECORDS)
    prepare = PrepareService(service, settings, idempotency=idempotency, deployments=deployments)
    service.config.prepare_ready_routes = prepare.supported_routes()
    service.config.prepare_unavailable_reasons = prepare.unsupported_reasons()
    return service, prepare


def in_process_service(settings: Settings) -> RouteQuoteService:
    """The service object for the CLI's in-process commands (`quote`, `matrix`): quotes kept in memory."""
    market = build_market(settings)
    return build_service(
        settings, market=market, quotes=MemoryQuoteStore(), clock=SystemClock(), ids=UuidFactory()
    )[0]


def _async(close: Callable[[], Any]) -> Callable[[], Any]:
    async def run() -> None:
        close()

    return run


@contextlib.asynccontextmanager
async def _closing(close: Callable[[], Any]) -> AsyncIterator[None]:
    try:
        yield
    finally:
        await close()


def create_app(
    settings: Settings | None = None,
    *,
    market: MarketData | None = None,
    clock: Clock | None = None,
    ids: IdFactory | None = None,
    session_store: SessionStore | None = None,
    deployments: dict[Any, Any] | None = None,
) -> FastAPI:
    """`deployments` overrides contract addresses per chain (tests point the builders at local chains)."""
    settings = settings or Settings()
    from routequote.config_check import ConfigurationError, problems

    found = problems(settings)
    if found:  # every bad setting at once, one line each (`routequote serve` prints them and exits 2)
        raise ConfigurationError(found)
    configure_logging(settings.log_level)
    tracing = setup_tracing(settings.otel_exporter, settings.otel_service_name, __version__)  # None when off
    clock = clock or SystemClock()
    stores = build_stores(settings)
    service, prepare = build_service(
        settings,
        market=market or build_market(settings, clock),
        quotes=stores.quotes,
        clock=clock,
        ids=ids or stores.ids or UuidFactory(),
        idempotency=stores.idempotency,
        deployments=deployments,
    )
    sessions = build_sessions(settings, prepare, session_store)
    signing_key = load_signing_key(settings)  # the manifest's key; webhook secrets are derived from it too
    sessions.webhooks = session_webhooks(settings, sessions.store, signing_key.private, clock)
    prepare.preflight = _preflight(settings, sessions)
    service.config.session_unavailable_reasons = sessions.session_reasons()
    service.config.session_unavailable_details = sessions.session_gaps()
    service.config.bounds = bounds_by_route(service.market)
    service.config.observation = Observation.from_settings(settings).report()
    service.config.solana_arrivals = solana_arrivals(settings)
    limiter = RateLimiter(settings.rate_limit, settings.redis_url)
    hooks: list[LifespanHook] = []
    for store in (stores.quotes, stores.idempotency):
        serving = getattr(store, "serving", None)
        if serving is not None:  # peers: this worker answers the others' lookups while it serves
            hooks.append(serving)
        close = getattr(store, "aclose", None)
        if close is not None:  # shared stores hold a connection pool: release it on shutdown
            hooks.append(functools.partial(_closing, close))

    purger = retention_purger(settings, sessions.store, service.clock)
    watcher = build_watcher(settings, sessions)

    @contextlib.asynccontextmanager
    async def session_lifespan() -> AsyncIterator[None]:
        await sessions.store.start()  # migrations run here, before the first request
        try:
            async with contextlib.AsyncExitStack() as running:
                if purger is not None:
                    await running.enter_async_context(purger.running())
                await running.enter_async_context(watcher.running())
                if sessions.webhooks is not None:
                    await running.enter_async_context(delivering(sessions.webhooks))
                yield
        finally:
            await sessions.store.aclose()
            await sessions.http_client.aclose()

    hooks.append(session_lifespan)

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            for hook in hooks:
                await stack.enter_async_context(hook())
            yield

    app = FastAPI(
        title="routequote",
        version=OPENAPI_VERSION,
        description=(
            "Multichain route service: non-binding, fee-inclusive, expiring, unranked quotes, and unsigned actions "
            "and sessions the caller verifies and signs. The service never signs and never submits."
        ),
        openapi_url="/v2/openapi.json",
        docs_url=None,
        redoc_url=None,
        lifespan=lifespan,
        redirect_slashes=False,  # never a redirect built from the Host header: `/v2/status/` is a 404
        # FastAPI's own OpenTelemetry would export any global provider's spans with the raw query string,
        # past our redaction, and costs every request its provider lookups: traces are ours (observability)
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    app.state.settings = settings
    app.state.service = service
    app.state.limiter = limiter
    app.state.lifespan_hooks = hooks
    market_lifespan = getattr(service.market, "lifespan", None)  # live market: warm-up and HTTP pool close
    if market_lifespan is not None:
        hooks.append(market_lifespan)
    app.state.prepare = prepare
    app.state.sessions = sessions
    app.state.signing_key = signing_key  # MCP task ids are sealed under a key derived from it
    app.state.retention = purger  # the background purge (None for a store it does not manage)
    app.state.watcher = watcher
    fee_configured = recipients_configured(settings.fee_recipient_evm, settings.fee_recipient_solana)
    probes = Probes(
        service.market, sessions.store, settings.redis_url, settings.market_fallback, fee_configured
    )
    probes.observation = service.config.observation  # reported on /readyz, never failing it
    hooks.append(lambda: _warn_fee_placeholders(fee_configured))  # one warning at start
    metrics = Metrics(
        service.market,
        quotes=stores.quotes,
        idempotency=stores.idempotency,
        sessions=sessions.store,
        probes=probes,
        tracing=tracing,
    )
    limiter.on_limited = metrics.on_rate_limited
    service.quote_hooks.append(metrics.observe_quote)
    sessions.on_transition = metrics.on_transition
    hooks.append(lambda: _closing(probes.aclose))
    if tracing is not None:
        hooks.append(lambda: _closing(_async(tracing.shutdown)))  # flush the last spans
    app.state.metrics = metrics
    app.state.probes = probes
    app.state.tracing = tracing
    # one ASGI layer: request id, transport guard and metrics in one pass, with one send wrapper
    app.add_middleware(
        RequestStack, metrics=metrics, limits=TransportLimits.from_settings(settings), tracing=tracing
    )
    # routes are matched in order, each costing a request a few microseconds: the hot path (POST /v2/quote) first
    app.include_router(rest_v2.router(service, limiter))
    app.include_router(health_router(probes))  # /livez, /readyz: not rate limited, not in the OpenAPI
    app.add_route("/metrics", metrics.endpoint, methods=["GET"], include_in_schema=False)
    app.include_router(rest_prepare.router(prepare, limiter))  # POST /v2/prepare
    app.include_router(rest_session.router(sessions, limiter))  # /v2/session...
    app.state.event_feed = EventFeed(sessions, poll_seconds=settings.event_stream_poll_seconds)
    app.state.event_slots = StreamSlots(settings.event_stream_max_per_client)
    metrics.gauge_of(
        "routequote_event_streams_open",
        "Open session event streams in this process",
        app.state.event_slots.open_streams,
    )
    app.include_router(  # GET /v2/session/{id}/events (Server-Sent Events)
        rest_events.router(app.state.event_feed, limiter, app.state.event_slots, settings)
    )
    app.include_router(rest_v1.router(service, limiter))  # /v1/* + /openapi.json (legacy corridors)
    discovery = Discovery(
        settings=settings,
        service=service,
        clock=clock,
        signing_key=signing_key,
        routes_provider=lambda: app.routes,
        deployments=prepare.deployments,
    )
    app.state.discovery = discovery
    app.state.oft_pin = _oft_pin(settings, sessions, service, discovery)
    hooks.append(app.state.oft_pin.running)  # one derivation at start, then every interval
    app.include_router(well_known.router(discovery))  # manifest, safety, index, pages, route economics
    app.include_router(web.router())  # route explorer: `/` and /explorer/* (static, strict CSP)
    _install_error_handlers(app)
    _install_openapi(app)
    # agent surfaces last: they read the capabilities mounted on app.state above
    mount_mcp(app)  # /mcp (Streamable HTTP, stateless JSON): exactly the spec's 15 tools
    mount_mcp_v2(app)  # /mcp/v2: the v2 lifecycle (prepare, sessions) for MCP agents
    mount_a2a(app)  # /a2a + /.well-known/agent-card.json (+ /.well-known/agent.json)
    return app


@contextlib.asynccontextmanager
async def _warn_fee_placeholders(configured: dict[str, bool]) -> AsyncIterator[None]:
    unset = [family for family, ok in configured.items() if not ok]
    if unset:
        import structlog

        structlog.get_logger("routequote.app").warning(
            "fee_recipient_not_configured",
            families=unset,
            message="the 1 bp service fee goes to a development placeholder: set ROUTEQUOTE_FEE_RECIPIENT_EVM "
            "and ROUTEQUOTE_FEE_RECIPIENT_SOLANA; until then every action says fee_recipient_configured: false",
        )
    yield


def create_served_app() -> FastAPI:
    """What `routequote serve` runs in each worker: `create_app()` from the environment, and once every start-up
    hook has run, the objects start-up built (routes, schemas, the snapshot, ...) are frozen out of the garbage
    collector: they live as long as the process, and a full collection under load would otherwise walk them
    again and again (stalls of hundreds of milliseconds were measured)."""
    app = create_app()

    @contextlib.asynccontextmanager
    async def freeze_start_up() -> AsyncIterator[None]:
        gc.collect()
        gc.freeze()
        yield

    app.state.lifespan_hooks.append(freeze_start_up)  # the last hook: after every other start-up step
    return app


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> Response:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return json_response(
            {"error": code, "reason_class": code, "message": str(exc.detail)},
            exc.status_code,
            dict(exc.headers or {}),
        )

    @app.exception_handler(RequestValidationError)
    async def validation_error(_: Request, exc: RequestValidationError) -> Response:
        return json_response({"error": "invalid_request", "reason_class": "invalid_parameters"}, 400)

    @app.exception_handler(Exception)
    async def unexpected(_: Request, exc: Exception) -> Response:
        # never a stack trace in a body; the log has it
        import structlog

        structlog.get_logger().error("unhandled_error", error_type=type(exc).__name__)
        return json_response({"error": "internal_error", "reason_class": "internal_error"}, 500)


def _install_openapi(app: FastAPI) -> None:
    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        from fastapi.openapi.utils import get_openapi

        schema = get_openapi(
            title=app.title,
            version=app.version,
            description=app.description,
            routes=app.routes,
        )
        # this document describes v2 only; v1 and the well-known documents have their own
        schema["paths"] = {p: op for p, op in schema.get("paths", {}).items() if p.startswith("/v2/")}
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        components["QuoteRequest"] = QuoteRequest.model_json_schema()
        components["SessionEvent"] = rest_events.EVENT_SCHEMA
        schema["x-service-safety"] = SERVICE_SAFETY
        schema["info"]["x-release-status"] = "capped_public_agent_release"
        schema["info"]["x-build-version"] = __version__
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
