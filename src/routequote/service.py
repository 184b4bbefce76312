"""RouteQuoteService: the one object every surface (REST v2, v1, MCP, A2A) calls.

It owns no transport and no storage technology: it is handed a market, an issued-quote store, a clock
and an id factory. Pricing results are cached per (route, amount, market version) because they
depend on nothing else; the per-quote identity, times and hashes are computed for every quote.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from routequote.core.assets import ASSETS, Chain
from routequote.core.field_rules import SESSION_TOKEN_RULE
from routequote.core.intent import MAX_AMOUNT_USD, MIN_AMOUNT_USD, QuoteIntent, parse_quote_request
from routequote.core.market import MarketView
from routequote.core.preflight import before_signing
from routequote.core.pricing import SERVICE_FEE_BPS, check_route_available, price_route, route_components
from routequote.core.quote import (
    RELEASE_STATUS,
    SERVER_FLAGS,
    SESSION_HEADER,
    QuoteBody,
    market_block,
    quote_body,
)
from routequote.core.quote_issue import issue_json
from routequote.core.route_matrix import matrix_document, parse_matrix_request, priced_cell, unpriced_cell
from routequote.core.routes import ROUTES
from routequote.errors import CapacityBusy, RouteQuoteError, UpstreamUnavailable
from routequote.market.mode import market_execution_mode
from routequote.ports import Clock, IdFactory, IssuedQuote, MarketData, QuoteStore
from routequote.readiness import BOUNDS_MODELLED, BOUNDS_NOTES, SESSION_READY_MEANING, count_by
from routequote.route_proof import route_proof

API_VERSION = "routequote-multichain-api-v2"
# per-route detail (step tables, readiness per route and why), linked from capabilities so that capabilities
# stays small enough for agents' bounded JSON walks (<= 512 values, <= 12 levels)
ROUTE_DETAILS_PATH = "/v2/capabilities/routes"
PRICING_CACHE_SIZE = 4096
MATRIX_CACHE_SIZE = 32  # whole route matrices, by (amount, market version): a reload costs nothing
MATRIX_QUEUE = 8  # route matrices waiting for their turn (one is computed at a time per process)
# distinct missing pieces listed in capabilities (every one, per route: the route document)
MAX_MISSING_LISTED = 16


@dataclass
class ServiceConfig:
    quote_ttl_seconds: int = 60
    max_inflight_quotes: int = 256
    base_url: str = "http://127.0.0.1:8080"
    # route keys the prepare builder can act on; empty until a prepare builder is registered
    prepare_ready_routes: frozenset[str] = field(default_factory=frozenset)
    prepare_unavailable_reason: str = "prepare_not_available_in_this_build"
    # route key -> why its first step cannot be prepared (set from PrepareService.unsupported_reasons())
    prepare_unavailable_reasons: dict[str, str] = field(default_factory=dict)
    # route key -> why a session cannot carry it through every step (set from SessionService.session_reasons())
    session_unavailable_reasons: dict[str, str] = field(default_factory=dict)
    # route key -> each missing piece (SessionService.session_gaps(): builders, RPC URLs, lookups, the OFT pin)
    session_unavailable_details: dict[str, list[str]] = field(default_factory=dict)
    # route key -> where its prepared bounds come from (readiness.bounds_by_route); unset: modelled
    bounds: dict[str, str] = field(default_factory=dict)
    # what this instance observes with (readiness.Observation.report()); empty: not reported
    observation: dict[str, Any] = field(default_factory=dict)
    # how Solana bridge arrivals are verified by this instance (the USDG OFT program may be unpinned)
    solana_arrivals: dict[str, Any] = field(default_factory=dict)


class RouteQuoteService:
    def __init__(
        self, market: MarketData, quotes: QuoteStore, clock: Clock, ids: IdFactory, config: ServiceConfig
    ) -> None:
        self.market = market
        self.quotes = quotes
        self.clock = clock
        self.ids = ids
        self.config = config
        self._pricing: OrderedDict[tuple[str, str, str], QuoteBody] = OrderedDict()
        self._matrices: OrderedDict[tuple[str, str, frozenset[str]], dict[str, Any]] = OrderedDict()
        self._matrix_turn = asyncio.Lock()
        self._matrix_waiting = 0
        self._inflight = 0
        self.started_at = clock.now()
        self._availability_cache: tuple[Any, dict[str, Any]] | None = None
        self._static_capabilities: dict[str, Any] | None = None
        # called with every issued quote and the seconds it took (metrics and tracing hang here)
        self.quote_hooks: list[Callable[[IssuedQuote, float], None]] = []

    # ---- quotes -------------------------------------------------------------------------------------

    async def quote_request(self, body: Any) -> dict[str, Any]:
        """Validate a QuoteRequest body and issue a quote (the REST / MCP / A2A entry point)."""
        return (await self.quote(parse_quote_request(body))).payload

    async def quote(self, intent: QuoteIntent) -> IssuedQuote:
        if self._inflight >= self.config.max_inflight_quotes:
            raise CapacityBusy("quote_capacity_busy", "too many quotes in flight", retry_after_seconds=1)
        self._inflight += 1
        try:
            started = self.clock.monotonic()
            view = await self.market.view()
            body = self._priced_body(intent, view)
            issued_at = self.clock.now()
            ttl = self.config.quote_ttl_seconds
            latency_ms = max(0, int((self.clock.monotonic() - started) * 1000))
            quote_id = self.ids.new_id()
            issued_json = issue_json(
                body,
                intent=intent,
                quote_id=quote_id,
                issued_at=issued_at,
                ttl_seconds=ttl,
                latency_ms=latency_ms,
                first_unsigned_action_supported=body.route.key in self.config.prepare_ready_routes,
                prepare_blocker=self.prepare_blocker(body.route.key),
            )
            issued = IssuedQuote(
                quote_id,
                issued_json.json,
                ttl,
                intent,
                body.route,
                body,
                self.clock.monotonic() + ttl,
                issued_json.template,
                issued_json.values,
            )
            await self.quotes.put(issued)
            for hook in self.quote_hooks:
                hook(issued, self.clock.monotonic() - started)
            return issued
        finally:
            self._inflight -= 1

    def _priced_body(self, intent: QuoteIntent, view: MarketView) -> QuoteBody:
        key = (intent.route_key, repr(intent.amount_usd), view.version)
        cached = self._pricing.get(key)
        if cached is not None:
            return cached
        route = ROUTES[intent.route_key]
        check_route_available(route, view)  # before reading prices: a live price may be missing
        input_base = intent.input_base(view.prices_usd_e8[intent.source.token])
        body = quote_body(intent, price_route(route, input_base, view), view)
        self._pricing[key] = body
        if len(self._pricing) > PRICING_CACHE_SIZE:
            self._pricing.popitem(last=False)
        return body

    async def route_matrix(self, body: Any) -> dict[str, Any]:
        """Every route priced at one amount (`{"amount_usd": n}`), in one answer: per route what its quote would
        say about cost, receive and time, or why it cannot be priced now (core/route_matrix.py).

        One market view for all 72 and the same pricing cache as quotes; the last matrices are kept by (amount,
        market version), so a reload costs nothing. A matrix not kept is computed one at a time per process,
        handing the event loop back between routes (other requests never wait for a whole matrix), with at
        most MATRIX_QUEUE more waiting their turn; past that, 503 and Retry-After."""
        amount = parse_matrix_request(body)
        view = await self.market.view()
        key = (repr(amount), view.version, self.config.prepare_ready_routes)
        kept = self._matrices.get(key)
        if kept is not None:
            return kept
        if self._matrix_waiting >= MATRIX_QUEUE:
            raise CapacityBusy(
                "matrix_capacity_busy", "too many route matrices in flight", retry_after_seconds=1
            )
        self._matrix_waiting += 1
        try:
            await self._matrix_turn.acquire()
        finally:
            self._matrix_waiting -= 1
        try:
            kept = self._matrices.get(key)  # the one before may have computed it
            if kept is not None:
                return kept
            cells = []
            for route in ROUTES.values():
                intent = QuoteIntent(route.source, route.target, amount)
                try:
                    priced = self._priced_body(intent, view)
                    cells.append(priced_cell(priced, prepare_blocker=self.prepare_blocker(route.key)))
                except RouteQuoteError as exc:
                    cells.append(unpriced_cell(route.key, exc))
                await asyncio.sleep(0)
            doc = matrix_document(amount, market_block(view), cells)
            self._matrices[key] = doc
            if len(self._matrices) > MATRIX_CACHE_SIZE:
                self._matrices.popitem(last=False)
            return doc
        finally:
            self._matrix_turn.release()

    async def issued_quote(self, quote_id: str) -> IssuedQuote | None:
        """The quote exactly as issued, while its TTL runs; None once it expired or is unknown here."""
        return await self.quotes.get(quote_id, self.clock.monotonic())

    # ---- availability -------------------------------------------------------------------------------

    def forget_availability(self) -> None:
        """Drop the cached availability block: what it is computed from changed outside the market (the OFT pin)."""
        self._availability_cache = None

    def unavailable_routes(self) -> list[dict[str, Any]]:
        """Routes that cannot be prepared right now, each with why. Quotes may still be available."""
        broken: dict[str, str] = {}
        everything: list[str] = []  # a failing source that names no components takes every route down
        for h in self.market.health():
            if not h.ok:
                reason = h.reason or f"{h.name} unavailable"
                if not h.components:
                    everything.append(reason)
                for comp in h.components:
                    broken[comp] = reason
        out = []
        for route in ROUTES.values():
            reasons = sorted({broken[c] for c in route_components(route) if c in broken} | set(everything))
            if reasons:
                out.append({"route": route.key, "reason": "market_source_unavailable", "details": reasons})
            elif route.key not in self.config.prepare_ready_routes:
                reason = self._prepare_reason(route.key)
                out.append({"route": route.key, "reason": reason.split(":", 1)[0], "details": [reason]})
        return out

    def _prepare_reason(self, route_key: str) -> str:
        return self.config.prepare_unavailable_reasons.get(route_key, self.config.prepare_unavailable_reason)

    def prepare_blocker(self, route_key: str) -> str | None:
        """Why this build cannot prepare the route's first action (its reason code), or None when it can:
        the quote's `execution.blocker`, beside `first_unsigned_action_supported`."""
        if route_key in self.config.prepare_ready_routes:
            return None
        return self._prepare_reason(route_key).split(":", 1)[0]

    def _availability(self) -> dict[str, Any]:
        health = self.market.health()
        key = (
            tuple((h.name, h.ok, h.reason, h.components) for h in health),
            self.config.prepare_ready_routes,
        )
        if self._availability_cache is not None and self._availability_cache[0] == key:
            return self._availability_cache[1]
        unavailable = self.unavailable_routes()
        market_issue = any(u["reason"] == "market_source_unavailable" for u in unavailable)
        result = {
            "route_readiness": self._route_readiness(unavailable),
            "currently_prepare_ready_routes": len(ROUTES) - len(unavailable),
            # route and reason code only: the long explanations are in the route document
            "temporarily_unavailable_routes": [
                {"route": u["route"], "reason": u["reason"]} for u in unavailable
            ],
            "temporarily_unavailable_route_count": len(unavailable),
            "execution_availability": {
                "status": "available" if not unavailable else "degraded",
                "provider": self.market.label,
                "provider_dependent_routes": len(ROUTES),
                "recent_fee_snapshot_usable": not market_issue,
                "guarantees_future_availability": False,
            },
        }
        self._availability_cache = (key, result)
        return result

    def _route_readiness(self, unavailable: list[dict[str, Any]]) -> dict[str, Any]:
        """The counts beside the spec's constants: what quotes, what prepares (and from which bounds), and what
        a session can carry to complete here, with each distinct missing piece (per route: the route
        document)."""
        blocked = {u["route"] for u in unavailable}
        unquotable = {u["route"] for u in unavailable if u["reason"] == "market_source_unavailable"}
        bounds = count_by(self.config.bounds.get(k, BOUNDS_MODELLED) for k in ROUTES if k not in blocked)
        gaps = self.config.session_unavailable_details
        missing = sorted({g for k in self.config.session_unavailable_reasons for g in gaps.get(k, [])})
        return {
            "quotable_routes": len(ROUTES) - len(unquotable),
            "prepare_ready_routes": len(ROUTES) - len(blocked),
            "prepare_ready_bounds": bounds,
            "bounds_notes": {mode: BOUNDS_NOTES[mode] for mode, n in bounds.items() if n},
            "session_ready_routes": len(ROUTES) - len(self.config.session_unavailable_reasons),
            "session_ready_meaning": SESSION_READY_MEANING,
            "session_missing": missing[:MAX_MISSING_LISTED],
            "session_missing_count": len(missing),
            "per_route": f"{self.config.base_url}{ROUTE_DETAILS_PATH}",
        }

    # ---- capabilities and status --------------------------------------------------------------------

    def capabilities(self) -> dict[str, Any]:
        if self._static_capabilities is None:
            self._static_capabilities = self._build_static_capabilities()
        return {**self._static_capabilities, **self._availability()}

    def _build_static_capabilities(self) -> dict[str, Any]:
        base = self.config.base_url
        return {
            "version": API_VERSION,
            "status": RELEASE_STATUS,
            "public_api_enabled": True,
            "chains": [c.value for c in Chain],
            "asset_endpoints": [{"chain": a.chain.value, "token": a.token.value} for a in ASSETS.values()],
            # addresses, programs and the per-route tables live in the linked route document (links.routes)
            "asset_details": [{"endpoint": a.key, "decimals": a.decimals} for a in ASSETS.values()],
            "directed_conversion_routes": len(ROUTES),
            "unsigned_route_plans_ready": len(ROUTES),
            # whether the bounds of every prepared action are live or modelled (core/bounds.py)
            "action_bounds": market_execution_mode(self.market),
            "amount_usd": {"minimum": MIN_AMOUNT_USD, "maximum": MAX_AMOUNT_USD},
            "service_fee": {
                "bps": SERVICE_FEE_BPS,
                "policy": "exact_one_bps_no_maximum",
                "collected_once": True,
            },
            "evaluation_guidance": {
                "reachability_smoke_test_usd": 1,
                "native_usdc_evaluation_start_usd": 50,
                "representative_amount_usd": 1000,
                "not_a_minimum": True,
                "not_guaranteed_best": True,
                "always_compare_fresh_at_intended_amount": True,
                "note": (
                    "USD 1 is a reachability smoke test only; native-USDC evaluation starts at USD 50; USD 1000 is "
                    "the representative amount. These are not minimums and not a best-price guarantee: compare "
                    "fresh quotes at the amount you intend to move."
                ),
            },
            "direct_route_summary": {
                "version": "routequote-direct-route-summary-v1",
                "required_on_every_quote": True,
                "route_count": len(ROUTES),
                "step_count": sum(len(r.steps) for r in ROUTES.values()),
                "base_unit_amounts_are_decimal_strings": True,
                "classification_values": ["direct_protocol_only", "external_intent"],
                "route_aggregator_used_scope": "routequote_engine_only",
                **SERVER_FLAGS,
            },
            "continuation_v3": {
                "version": "routequote-quote-bound-continuation-v3",
                "required_on_every_quote": True,
                "enforcement": "server_enforced_quote_binding",
                "selection_status": "unranked_candidate",
                "automatic_selection_forbidden": True,
                "caller_approved_boolean_is_not_human_proof": True,
                "cache_scope": self.quotes.scope,
                "maximum_ttl_seconds": self.config.quote_ttl_seconds,
                "maximum_cache_records": 2048,
                "multistep_allowed_modes": ["session"],
                "one_step_allowed_modes": ["one_shot", "session"],
                **SERVER_FLAGS,
            },
            "action_lifetime": {
                "quote_ttl_seconds": self.config.quote_ttl_seconds,
                "action_bundle_ttl_seconds": 180,
                "onchain_deadline_seconds": 240,
                "refresh_policy": "expired_unsubmitted_only",
                **SERVER_FLAGS,
            },
            "sessions": {
                "endpoint": f"{base}/v2/session",
                "token_header": SESSION_HEADER,
                "token_rule": SESSION_TOKEN_RULE,
                "operations": ["create", "read", "observe", "refresh", "cancel"],
                "views": ["session", "workflow", "receipt", "next_action"],
                "session_ready_routes": len(ROUTES) - len(self.config.session_unavailable_reasons),
                "unavailable_route_count": len(self.config.session_unavailable_reasons),
                "route_proof": route_proof(),
                "solana_arrivals": self.config.solana_arrivals,
                "only_verified_actual_output_advances": True,
                "fresh_quote_each_step_within_approved_bounds": True,
                "automatic_chaining": False,
                **SERVER_FLAGS,
            },
            "links": {
                "routes": f"{base}{ROUTE_DETAILS_PATH}",
                "quote": f"{base}/v2/quote",
                "route_matrix": f"{base}/v2/route-matrix",
                "status": f"{base}/v2/status",
                "openapi": f"{base}/v2/openapi.json",
            },
            **SERVER_FLAGS,
        }

    def route_details(self) -> dict[str, Any]:
        """The linked route document: every route's steps and why it cannot be prepared or run now."""
        unavailable = {u["route"]: u for u in self.unavailable_routes()}
        sessions = self.config.session_unavailable_reasons
        routes = []
        for r in ROUTES.values():
            gap = unavailable.get(r.key)
            routes.append(
                {
                    "route": r.key,
                    "providers": list(r.provider_path),
                    "mode": r.mode.value,
                    "classification": r.classification,
                    "step_count": len(r.steps),
                    "fee_collection_step_index": r.fee_step_index,
                    "required_wallet_chains": list(r.required_wallet_chains),
                    "event_signer_public_required": r.event_signer_required,
                    "steps": [
                        {
                            "index": st.index,
                            "action": st.action.value,
                            "provider": st.provider.value,
                            "from": st.source.key,
                            "to": st.target.key,
                            "service_fee_step": st.fee_step,
                        }
                        for st in r.steps
                    ],
                    "quotable": gap is None or gap["reason"] != "market_source_unavailable",
                    "prepare_ready": gap is None,
                    "prepare_unavailable_reason": gap["reason"] if gap else None,
                    "prepare_unavailable_details": gap["details"] if gap else [],
                    "bounds": self.config.bounds.get(r.key, BOUNDS_MODELLED),
                    "session_ready": r.key not in sessions,
                    "session_unavailable_reason": sessions.get(r.key),
                    "session_unavailable_details": self.config.session_unavailable_details.get(r.key, []),
                    # what any wallet will need along the route (its own balances: the preflight block)
                    "before_signing": before_signing(r),
                }
            )
        return {
            "version": "routequote-route-details-v1",
            "capabilities": f"{self.config.base_url}/v2/capabilities",
            "route_count": len(routes),
            "asset_details": [
                {
                    "endpoint": a.key,
                    "decimals": a.decimals,
                    "address": a.address,
                    "native": a.is_native,
                    "wrapped_address": a.wrapped_address,
                    "token_program": a.token_program,
                }
                for a in ASSETS.values()
            ],
            "session_ready_meaning": SESSION_READY_MEANING,
            "routes": routes,
            **SERVER_FLAGS,
        }

    def status(self) -> dict[str, Any]:
        if self._inflight >= self.config.max_inflight_quotes:
            raise CapacityBusy("quote_capacity_busy", "too many quotes in flight", retry_after_seconds=1)
        health = self.market.health()
        availability = self._availability()
        market_ok = all(h.ok for h in health)
        return {
            "version": API_VERSION,
            "status": RELEASE_STATUS,
            "time": self.clock.now().isoformat().replace("+00:00", "Z"),
            "started_at": self.started_at.isoformat().replace("+00:00", "Z"),
            "market": {
                "source": self.market.label,
                "healthy": market_ok,
                "sources": [
                    {"name": h.name, "ok": h.ok, "reason": h.reason, "checked_at": h.checked_at}
                    for h in health
                ],
                # live market: per-source circuit breaker, block/slot and latency (absent for the snapshot)
                **(
                    {"breakers": stats()}
                    if callable(stats := getattr(self.market, "source_stats", None))
                    else {}
                ),
            },
            "route_health": {
                "directed_conversion_routes": len(ROUTES),
                "quotable_routes": availability["route_readiness"]["quotable_routes"],
                **availability,
            },
            # what sessions can observe with here: RPC URL per chain, bridge lookups, the OFT pin (configured,
            # not reached: `routequote doctor` reaches them)
            "observation": self.config.observation,
            "safety_boundaries": {
                "quote_only_operations_move_no_funds": True,
                "never_signs": True,
                "never_submits": True,
                "quotes_are_unranked_candidates": True,
                "automatic_selection_forbidden": True,
                "fresh_quote_required_each_step": True,
                "only_verified_actual_output_advances_a_workflow": True,
                "service_fee_bps": SERVICE_FEE_BPS,
                "amount_usd_range": [MIN_AMOUNT_USD, MAX_AMOUNT_USD],
                "secret_fields_rejected": True,
            },
            "inflight_quotes": self._inflight,
            "issued_quotes_retained": self.quotes.retained(),
            "issued_quote_store": self.quotes.scope,
            **SERVER_FLAGS,
        }


__all__ = ["RouteQuoteService", "ServiceConfig", "IssuedQuote", "RouteQuoteError", "UpstreamUnavailable"]
