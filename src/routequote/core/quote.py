"""Quote assembly: a priced route becomes the fee-inclusive, expiring, unranked QuoteResponse payload.

Pure: the clock reading, the quote id and the measured latency are handed in. The static part of a
quote (everything that depends only on route, amount and market version) is built once by
`QuoteBody` and reused; `issue` adds the per-quote identity, times and hashes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from fractions import Fraction
from typing import Any

from routequote.core.assets import Chain, Token
from routequote.core.field_rules import IDEMPOTENCY_KEY_PATTERN
from routequote.core.hashing import (
    CANONICAL_JSON_SPEC,
    TYPED_CANONICAL_SPEC,
    canonical_json_numberless,
    canonical_sha256,
    sha256_hex,
    typed_canonical_sha256,
)
from routequote.core.intent import QuoteIntent, amount_fraction
from routequote.core.market import MarketView
from routequote.core.pricing import SERVICE_FEE_BPS, PricedStep, RoutePricing
from routequote.core.quote_costs import (
    display_number,
    display_tokens,
    eta,
    fee_components,
    network_gas,
    usd_value,
)
from routequote.core.routes import Action, Route

RELEASE_STATUS = "capped_public_agent_release"
QUOTE_VERSION = "routequote-multichain-quote-v2"
SUMMARY_VERSION = "routequote-direct-route-summary-v1"
CONTINUATION_VERSION = "routequote-quote-bound-continuation-v3"
APPROVAL_VERSION = "routequote-quote-bound-approval-v3"
SESSION_HEADER = "X-RouteQuote-Session-Token"
FINGERPRINT_SPEC = (
    "sha256 of " + CANONICAL_JSON_SPEC + " of quote_fingerprint_claim (numbers as decimal strings)"
)
SUMMARY_HASH_SPEC = "sha256 of " + CANONICAL_JSON_SPEC + " of direct_route_summary"
PAYLOAD_HASH_SPEC = (
    "quote without continuation_v3; direct_route_summary decimal strings substituted into intent.estimated_input_base, "
    "route.input_base, route.expected_output_base, route.minimum_output_base and each route.steps[i] "
    "expected_input_base, floor_input_base, expected_output_base, minimum_output_base; then "
    + TYPED_CANONICAL_SPEC
)
APPROVAL_FIELDS = (
    "direct_route_summary_sha256",
    "idempotency_key",
    "maximum_input_base",
    "minimum_output_base",
    "quote_fingerprint",
    "quote_id",
    "selected_mode",
    "selection_status",
    "version",
)
PRICE_RECOMMENDATION_MAX_COST_BPS = 100  # advisory: recommend when the maximum token-path cost is under 1 %
SMALL_AMOUNT_WARNING_BPS = 100
SERVER_FLAGS = {"server_signing": False, "server_submission": False}


def iso_ms(t: datetime) -> str:
    """RFC 3339 UTC with milliseconds, e.g. 2026-11-22T05:00:00.123Z (`t` must be UTC)."""
    return (
        f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}."
        f"{t.microsecond // 1000:03d}Z"
    )


def _raw_step(ps: PricedStep) -> dict[str, Any]:
    s = ps.step
    fee_bps = SERVICE_FEE_BPS if s.fee_step else 0
    if s.action is Action.SWAP:
        head: dict[str, Any] = {
            "index": s.index,
            "kind": "direct_swap",
            "chain": s.source.chain.value,
            "provider": s.provider.value,
            "from": s.source.key,
            "to": s.target.key,
            "route_fee_bps": fee_bps,
        }
    else:
        head = {
            "index": s.index,
            "kind": "direct_bridge",
            "provider": s.provider.value,
            "from": s.source.chain.value,
            "to": s.target.chain.value,
            "asset": s.source.token.value,
            "route_fee_bps": fee_bps,
        }
        if s.external_intent:
            head.update(from_asset=s.source.key, to_asset=s.target.key, external_intent_protocol=True)
    head.update(  # decimal strings: wei amounts pass 2**53 and JavaScript's JSON.parse would round them
        expected_input_base=str(ps.expected_input_base),
        floor_input_base=str(ps.minimum_input_base),
        expected_output_base=str(ps.expected_output_base),
        minimum_output_base=str(ps.minimum_output_base),
        expected_evidence={
            "status": "pass",
            "inputAmount": str(ps.expected_input_base),
            "aggregatorApiUsed": False,
            "signed": False,
            "submitted": False,
        },
        floor_evidence=None,
    )
    return head


def direct_route_summary(pricing: RoutePricing) -> dict[str, Any]:
    r = pricing.route
    return {
        "version": SUMMARY_VERSION,
        "route": r.key,
        "from": r.source.key,
        "to": r.target.key,
        "classification": r.classification,
        "mode": r.mode.value,
        "route_aggregator_used": False,
        "route_aggregator_used_scope": "routequote_engine_only",
        "external_intent_protocol_used": r.external_intent,
        "provider_internal_dex_aggregation_possible": r.external_intent,
        "service_fee_bps": SERVICE_FEE_BPS,
        "fee_collection_step_index": r.fee_step_index,
        "step_count": len(r.steps),
        "steps": [
            {
                "index": ps.step.index,
                "action": ps.step.action.value,
                "provider": ps.step.provider.value,
                "from": ps.step.source.key,
                "to": ps.step.target.key,
                "expected_input_base": str(ps.expected_input_base),
                "minimum_input_base": str(ps.minimum_input_base),
                "expected_output_base": str(ps.expected_output_base),
                "minimum_output_base": str(ps.minimum_output_base),
                "service_fee_bps": SERVICE_FEE_BPS if ps.step.fee_step else 0,
                "direct_protocol": not ps.step.external_intent,
                "external_intent_protocol": ps.step.external_intent,
                "aggregator_api_used": False,
            }
            for ps in pricing.steps
        ],
        **SERVER_FLAGS,
    }


@dataclass(frozen=True, slots=True)
class QuoteBody:
    """Everything in a quote that depends only on (route, amount, market version)."""

    intent: dict[str, Any]
    offer: dict[str, Any]
    route_fields: dict[str, Any]
    risk: dict[str, Any]
    cost_summary: dict[str, Any]
    eta: dict[str, Any]
    market: dict[str, Any]
    summary: dict[str, Any]
    summary_sha256: str
    price_recommended: bool
    route: Route
    pricing: RoutePricing
    # the compiled issue of this body (routequote.core.quote_issue.IssueTemplate), by TTL and prepare flag: a cache
    # that `quote_issue.issued_json` alone reads and fills
    issue_templates: dict[tuple[int, bool, str | None], Any] = field(
        default_factory=dict, compare=False, repr=False
    )


def market_block(view: MarketView) -> dict[str, Any]:
    """Where a quote's numbers came from: the `market` block of quotes and of the route matrix."""
    return {
        "source": view.source,
        "live": view.live,
        "data_as_of": view.as_of,
        "version": view.version,
        "notes": list(view.notes),
        # only a live view with fallbacks lists them (what a prepared action's `bounds` block reads)
        **({"fallback_components": sorted(view.fallback_components)} if view.fallback_components else {}),
        "label": (
            "live market data"
            if view.live
            else f"modelled from the embedded market snapshot of {view.as_of}; not live"
        ),
    }


def quote_body(intent: QuoteIntent, pricing: RoutePricing, view: MarketView) -> QuoteBody:
    route = pricing.route
    src, dst = route.source, route.target
    input_usd = amount_fraction(intent.amount_usd)
    exp_usd = usd_value(pricing.expected_output_base, dst, view)
    min_usd = usd_value(pricing.minimum_output_base, dst, view)
    fees = fee_components(pricing, view)
    native_exp = sum((Fraction(ps.native_fee_wei, 10**18) for ps in pricing.steps), Fraction(0)) * view.price(
        Token.ETH
    )
    native_max = sum(
        (Fraction(ps.native_fee_max_wei, 10**18) for ps in pricing.steps), Fraction(0)
    ) * view.price(Token.ETH)
    exp_cost = input_usd - exp_usd + native_exp
    max_cost = input_usd - min_usd + native_max
    max_cost_bps = max_cost * 10_000 / input_usd
    small = max_cost_bps >= SMALL_AMOUNT_WARNING_BPS
    fee_step = pricing.fee_step
    timing = eta(pricing, view)
    summary = direct_route_summary(pricing)
    intent_obj = {
        "from": src.key,
        "to": dst.key,
        "amount_usd": intent.amount_usd,
        "estimated_input_base": pricing.input_base,  # the spec fixes an integer (twin: beside `intent`)
    }
    offer = {
        "expected_receive_amount": display_tokens(pricing.expected_output_base, dst),
        "estimated_min_receive_amount": display_tokens(pricing.minimum_output_base, dst),
        "output_symbol": dst.token.value,
        "expected_receive_usd": display_number(exp_usd),
        "estimated_min_receive_usd": display_number(min_usd),
        "expected_output_base": str(pricing.expected_output_base),
        "minimum_output_base": str(pricing.minimum_output_base),
        "service_fee_bps": SERVICE_FEE_BPS,
        "fee_modeled_bps": SERVICE_FEE_BPS,
        "fee_collectible_now": True,
        "fee_blocker": None,
        "fee_collection_steps": [route.fee_step_index],
        "fee_collection": "only_on_eligible_successful_executor_step",
        "estimated_time_seconds": timing["estimated_time_seconds"],
    }
    route_fields = {
        "route": route.key,
        "status": "pass",
        "version": QUOTE_VERSION,
        "mode": route.mode.value,
        "input_base": str(pricing.input_base),
        "expected_output_base": str(pricing.expected_output_base),
        "minimum_output_base": str(pricing.minimum_output_base),
        "steps": [_raw_step(ps) for ps in pricing.steps],
        "aggregator_api_used": False,
        "external_intent_protocol_used": route.external_intent,
    }
    risk = {
        "non_atomic": route.non_atomic,
        "fresh_quote_required_each_step": True,
        "expected_output_never_becomes_next_input": True,
        "external_intent_protocol_used": route.external_intent,
        "provider_internal_dex_aggregation_possible": route.external_intent,
        **SERVER_FLAGS,
    }
    cost_summary = {
        "scope": "token_path_and_provider_native_fees_network_gas_excluded",
        "input_value_usd": display_number(input_usd),
        "expected_receive_value_usd": display_number(exp_usd),
        "minimum_receive_value_usd": display_number(min_usd),
        "expected_total_cost_usd": display_number(exp_cost),
        "maximum_total_cost_usd": display_number(max_cost),
        "expected_total_cost_percent": display_number(exp_cost * 100 / input_usd, 4),
        "maximum_total_cost_percent": display_number(max_cost * 100 / input_usd, 4),
        "service_fee": {
            "bps": SERVICE_FEE_BPS,
            "step_index": fee_step.step.index,
            "token": fee_step.step.source.key,
            "amount_base": str(fee_step.service_fee_base),
            "formula": "floor(fee_step_input_base * 1 / 10000)",
            "estimated_usd": display_number(usd_value(fee_step.service_fee_base, fee_step.step.source, view)),
            "included_in_receive_amount": True,
            "note": "the service fee is 1 bp of the fee step's input; it is not the total cost",
        },
        "provider_fee_components": fees,
        "network_gas": network_gas(route, view),
        "unpriced_costs": sorted({f"network_gas:{g['chain']}" for g in network_gas(route, view)})
        + (["solana_account_rent"] if any(s.source.chain is Chain.SOLANA for s in route.steps) else []),
        "rankable_all_in": False,
        "small_amount_warning": small,
        "warning": (
            f"maximum token-path cost is {float(max_cost_bps) / 100:.2f}% of the amount; compare other routes"
            if small
            else None
        ),
    }
    return QuoteBody(
        intent=intent_obj,
        offer=offer,
        route_fields=route_fields,
        risk=risk,
        cost_summary=cost_summary,
        eta=timing,
        market=market_block(view),
        summary=summary,
        summary_sha256=canonical_sha256(summary),
        price_recommended=max_cost_bps < PRICE_RECOMMENDATION_MAX_COST_BPS,
        route=route,
        pricing=pricing,
    )


def allowed_modes(route: Route) -> list[str]:
    return ["session"] if route.non_atomic else ["one_shot", "session"]


def substituted_payload(quote: dict[str, Any]) -> dict[str, Any]:
    """The quote as hashed by quote_payload_sha256: continuation removed, exact decimal strings in."""
    summary = quote["direct_route_summary"]
    steps = summary["steps"]
    out = {k: v for k, v in quote.items() if k != "continuation_v3"}
    out["intent"] = {**quote["intent"], "estimated_input_base": steps[0]["expected_input_base"]}
    route = dict(quote["route"])
    route["input_base"] = steps[0]["expected_input_base"]
    route["expected_output_base"] = steps[-1]["expected_output_base"]
    route["minimum_output_base"] = steps[-1]["minimum_output_base"]
    route["steps"] = [
        {
            **raw,
            "expected_input_base": s["expected_input_base"],
            "floor_input_base": s["minimum_input_base"],
            "expected_output_base": s["expected_output_base"],
            "minimum_output_base": s["minimum_output_base"],
        }
        for raw, s in zip(quote["route"]["steps"], steps, strict=True)
    ]
    out["route"] = route
    return out


def fingerprint_claim(quote: dict[str, Any], continuation: dict[str, Any]) -> dict[str, Any]:
    intent = quote["intent"]
    return {
        "version": CONTINUATION_VERSION,
        "quote_id": quote["quote_id"],
        "issued_at": continuation["issued_at"],
        "expires_at": continuation["expires_at"],
        "ttl_seconds": str(quote["ttl_seconds"]),
        "intent": {
            "from": intent["from"],
            "to": intent["to"],
            "amount_usd_decimal": continuation["amount_usd_decimal"],
            "estimated_input_base": str(intent["estimated_input_base"]),
        },
        "direct_route_summary_sha256": continuation["direct_route_summary_sha256"],
        "quote_payload_sha256": continuation["quote_payload_sha256"],
        "quote_payload_sha256_spec": continuation["quote_payload_sha256_spec"],
        "input_base_bounds": continuation["input_base_bounds"],
        "minimum_output_base": continuation["minimum_output_base"],
        "required_wallet_chains": continuation["required_wallet_chains"],
        "event_signer_public_required": continuation["event_signer_public_required"],
        "step_count": str(continuation["step_count"]),
        "allowed_modes": continuation["allowed_modes"],
        **SERVER_FLAGS,
    }


def issue(
    body: QuoteBody,
    *,
    intent: QuoteIntent,
    quote_id: str,
    issued_at: datetime,
    ttl_seconds: int,
    latency_ms: int,
    first_unsigned_action_supported: bool,
    prepare_blocker: str | None = None,
) -> dict[str, Any]:
    """The complete QuoteResponse payload, with its continuation_v3 hashes computed.

    The reference assembly, encoding everything afresh; `quote_issue.IssueTemplate` gives the same bytes
    for the service's hot path."""
    issued = iso_ms(issued_at)
    expires = iso_ms(issued_at + timedelta(seconds=ttl_seconds))
    quote = quote_fields(
        body,
        quote_id=quote_id,
        issued=issued,
        expires=expires,
        ttl_seconds=ttl_seconds,
        latency_ms=latency_ms,
        first_unsigned_action_supported=first_unsigned_action_supported,
        prepare_blocker=prepare_blocker,
    )
    payload_sha = typed_canonical_sha256(substituted_payload(quote))
    continuation = continuation_fields(
        body, quote, amount_usd_decimal=intent.amount_usd_decimal, payload_sha256=payload_sha
    )
    continuation["quote_fingerprint"] = sha256_hex(
        canonical_json_numberless(continuation["quote_fingerprint_claim"])
    )
    continuation["quote_fingerprint_spec"] = FINGERPRINT_SPEC
    quote["continuation_v3"] = continuation
    return quote


def quote_fields(
    body: QuoteBody,
    *,
    quote_id: Any,
    issued: Any,
    expires: Any,
    ttl_seconds: int,
    latency_ms: Any,
    first_unsigned_action_supported: bool,
    prepare_blocker: str | None = None,
) -> dict[str, Any]:
    """The quote without continuation_v3. The per-quote values may be placeholders (a template is made so).

    `prepare_blocker` is why the first action cannot be prepared (the readiness reason code); a quote that
    says it cannot be prepared always says why."""
    return {
        "version": QUOTE_VERSION,
        "quote_id": quote_id,
        "status": RELEASE_STATUS,
        "as_of": issued,
        "expires_at": expires,
        "ttl_seconds": ttl_seconds,
        "intent": body.intent,
        # the spec fixes intent.estimated_input_base as an integer and closes `intent`; wei amounts pass
        # 2**53, which JavaScript's JSON.parse rounds, so the exact decimal twin sits beside `intent`
        "estimated_input_base_decimal": str(body.intent["estimated_input_base"]),
        "offer": body.offer,
        "route": {**body.route_fields, "quote_latency_ms": latency_ms, **SERVER_FLAGS},
        "risk": body.risk,
        "execution": {
            "supported": True,
            "first_unsigned_action_supported": first_unsigned_action_supported,
            "future_actions_require_verified_receipts": True,
            "blocker": None
            if first_unsigned_action_supported
            else (prepare_blocker or "first_unsigned_action_unavailable"),
        },
        "cost_summary": body.cost_summary,
        "eta": body.eta,
        "market": body.market,
        "price_recommended_for_amount": body.price_recommended,
        "price_recommendation_rule": "maximum token-path cost below 1% of amount_usd; advisory, never an execution gate",
        "selection_status": "unranked_candidate",
        "direct_route_summary": body.summary,
        **SERVER_FLAGS,
    }


def continuation_fields(
    body: QuoteBody, quote: dict[str, Any], *, amount_usd_decimal: str, payload_sha256: Any
) -> dict[str, Any]:
    """continuation_v3 with its fingerprint claim, before the fingerprint (the claim's hash) is added."""
    route = body.route
    summary_steps = body.summary["steps"]
    continuation: dict[str, Any] = {
        "version": CONTINUATION_VERSION,
        "enforcement": "server_enforced_quote_binding",
        "selection_status": "unranked_candidate",
        "automatic_selection_forbidden": True,
        "caller_approved_boolean_is_not_human_proof": True,
        "quote_id": quote["quote_id"],
        "issued_at": quote["as_of"],
        "expires_at": quote["expires_at"],
        "ttl_seconds": quote["ttl_seconds"],
        "intent": body.intent,
        "estimated_input_base_decimal": str(body.intent["estimated_input_base"]),
        "amount_usd_decimal": amount_usd_decimal,
        "direct_route_summary_sha256": body.summary_sha256,
        "direct_route_summary_sha256_spec": SUMMARY_HASH_SPEC,
        "quote_payload_sha256": payload_sha256,
        "quote_payload_sha256_spec": PAYLOAD_HASH_SPEC,
        "input_base_bounds": {
            "minimum": summary_steps[0]["expected_input_base"],
            "maximum": summary_steps[0]["expected_input_base"],
        },
        "minimum_output_base": summary_steps[-1]["minimum_output_base"],
        "required_wallet_chains": list(route.required_wallet_chains),
        "event_signer_public_required": route.event_signer_required,
        "step_count": len(route.steps),
        "provider_path": list(route.provider_path),
        "recommended_mode": "session" if route.non_atomic else "one_shot_or_session",
        "allowed_modes": allowed_modes(route),
        "session_header": {
            "name": SESSION_HEADER,
            "required_for": "session",
            "caller_generated": True,
            "minimum_entropy_bits": 256,
            "server_returns_raw_value": False,
        },
        "idempotency": {
            "required": True,
            "field": "idempotency_key",
            "pattern": IDEMPOTENCY_KEY_PATTERN,
            "scope": "quote_and_selected_mode",
        },
        "approval_v3_version": APPROVAL_VERSION,
        "approval_v3_required_fields": list(APPROVAL_FIELDS),
        "legacy_handoff_enforcement": "legacy_advisory",
        **SERVER_FLAGS,
    }
    continuation["quote_fingerprint_claim"] = fingerprint_claim(quote, continuation)
    return continuation
