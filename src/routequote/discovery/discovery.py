"""Discovery: every trust and discovery document this instance publishes, built from its own
configuration and code (Settings, ROUTES, ASSETS, the market view, the fee policy, the mounted routes).

Nothing here is a hand-written copy: the endpoint lists are read from the application's routing table,
the scope from the route registry and the address book, the numbers from the pricing code. The one
object lives at `app.state.discovery`; `await discovery.signed_manifest()` is what the MCP
`service_manifest` tool returns.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from routequote import __version__
from routequote.core.assets import ASSETS, CHAINS
from routequote.core.intent import MAX_AMOUNT_USD, MIN_AMOUNT_USD
from routequote.core.manifest import MANIFEST_PATH, PUBLIC_KEY_PATH, SAFETY_PATH, iso_seconds
from routequote.core.pricing import SERVICE_FEE_BPS
from routequote.core.quote import RELEASE_STATUS, SERVER_FLAGS
from routequote.core.routes import ROUTES
from routequote.discovery.economics import route_economics
from routequote.discovery.instance import (
    ECONOMICS_MIN_AGE_SECONDS,
    ECONOMICS_PATH,
    PRICING_PATH,
    SECURITY_PATH,
    SECURITY_TXT_PATH,
    SERVICE_NAME,
    STORE_PLACES,
    V1_OPENAPI_PATH,
    V2_OPENAPI_PATH,
)
from routequote.discovery.signed_documents import SignedDocuments
from routequote.prepare import IDEMPOTENCY_TTL_SECONDS
from routequote.storage.quotes import MAX_RECORDS


class Discovery(SignedDocuments):
    """Every trust and discovery document of this instance; see the module docstring."""

    # ---- route economics -----------------------------------------------------------------------------

    async def route_economics(self) -> dict[str, Any]:
        """Computed off the event loop (a few seconds of pricing), once per market version; a live market
        whose version moves every few seconds is recomputed at most once per ECONOMICS_MIN_AGE_SECONDS."""
        view = await self.view()
        async with self._economics_lock:
            now = self.clock.monotonic()
            cached = self._economics
            if cached is None or (
                cached[0] != view.version and now - self._economics_at >= ECONOMICS_MIN_AGE_SECONDS
            ):
                doc = await asyncio.to_thread(route_economics, view)
                self._economics = (view.version, doc)
                self._economics_at = now
            assert self._economics is not None
            return self._economics[1]

    # ---- index, workflow, pages --------------------------------------------------------------------

    def api_index(self) -> dict[str, Any]:
        return {
            "version": "routequote-api-index-v1",
            "service": SERVICE_NAME,
            "service_version": __version__,
            "base_url": self.base_url,
            "release_status": RELEASE_STATUS,
            "current_interface": "rest_v2",
            "openapi": {
                "rest_v2": self.url(V2_OPENAPI_PATH) if self._has(V2_OPENAPI_PATH) else None,
                "rest_v1_legacy": self.url(V1_OPENAPI_PATH) if self._has(V1_OPENAPI_PATH) else None,
            },
            "trust": {
                "manifest": self.url(MANIFEST_PATH),
                "public_key": self.url(PUBLIC_KEY_PATH),
                "safety": self.url(SAFETY_PATH),
                "verify_command": f"routequote verify-manifest {self.base_url}",
            },
            "endpoints": self.endpoints(),
            **SERVER_FLAGS,
        }

    def evaluation_workflow(self) -> dict[str, Any]:
        caps = self.service.capabilities()
        guidance = caps.get("evaluation_guidance", {})
        quote_url = self.url("/v2/quote")
        return {
            "version": "routequote-evaluation-workflow-v1",
            "service": SERVICE_NAME,
            "base_url": self.base_url,
            "before_you_start": {
                "verify_manifest": f"routequote verify-manifest {self.base_url}",
                "manifest": self.url(MANIFEST_PATH),
                "safety": self.url(SAFETY_PATH),
            },
            "steps": [
                {
                    "step": 1,
                    "id": "read_capabilities",
                    "request": {"method": "GET", "url": self.url("/v2/capabilities")},
                    "expect": {
                        "status": RELEASE_STATUS,
                        "directed_conversion_routes": len(ROUTES),
                        "server_signing": False,
                        "server_submission": False,
                    },
                    "then": "confirm your source and destination endpoints are among asset_endpoints; read "
                    "temporarily_unavailable_routes",
                },
                {
                    "step": 2,
                    "id": "read_status",
                    "request": {"method": "GET", "url": self.url("/v2/status")},
                    "expect": {"status": RELEASE_STATUS, "server_signing": False, "server_submission": False},
                    "then": "stop if market.healthy is false for the sources your route uses",
                },
                {
                    "step": 3,
                    "id": "quote_at_intended_amount",
                    "request": {
                        "method": "POST",
                        "url": quote_url,
                        "body": {
                            "from_chain": "solana",
                            "from_token": "USDC",
                            "to_chain": "base",
                            "to_token": "USDC",
                            "amount_usd": guidance.get("representative_amount_usd", MAX_AMOUNT_USD),
                        },
                    },
                    "then": "quote the amount you intend to move; read offer.estimated_min_receive_amount, "
                    "cost_summary (provider fees, unpriced network gas), eta and market.label; "
                    f"USD {guidance.get('reachability_smoke_test_usd', 1)} is a reachability smoke test only",
                },
                {
                    "step": 4,
                    "id": "compare_with_another_provider",
                    "then": "request a fresh quote for the same endpoints and amount from another provider and "
                    "compare minimum receive, total cost including gas, and time; this service does not rank "
                    "its quotes against anyone's",
                },
                {
                    "step": 5,
                    "id": "stop_unless_caller_approves",
                    "then": "stop here unless the caller separately and explicitly approves continuing; quotes are "
                    "unranked candidates, automatic selection is forbidden, and nothing is prepared, signed or "
                    "submitted by this service",
                },
            ],
            "evaluation_guidance": guidance,
            "route_economics": self.url(ECONOMICS_PATH),
            **SERVER_FLAGS,
        }

    def llms_txt(self) -> str:
        lines = [
            f"# {SERVICE_NAME}",
            "",
            f"> Non-custodial, quote-only route service for agents: {len(CHAINS)} chains "
            f"({', '.join(c.value for c in CHAINS)}), {len(ASSETS)} asset endpoints, {len(ROUTES)} directed routes. "
            "Quotes are non-binding, fee-inclusive, expiring and unranked. The service never signs and never submits.",
            "",
            f"- Service fee: exactly {SERVICE_FEE_BPS} basis point of the fee step's input, no maximum; not the total cost.",
            f"- amount_usd: {MIN_AMOUNT_USD} to {MAX_AMOUNT_USD}. Quotes expire after {self.settings.quote_ttl_seconds} s.",
            "- No API key, no wallet, no signature needed to quote.",
            f"- Verify this instance first: `routequote verify-manifest {self.base_url}`.",
            "",
        ]
        sections = {
            "rest_v2": "API (v2, current)",
            "document": "Trust and documents",
            "mcp": "Tool protocol (MCP)",
            "a2a": "Agent-to-agent",
            "rest_v1_legacy": "Optional: legacy v1 (solana SOL -> ETH on base or arbitrum only)",
            "operations": "Operations (Prometheus metrics, liveness and readiness probes)",
            "explorer": "Route explorer (a web page for people)",
        }
        for surface, title in sections.items():
            entries = [e for e in self.endpoints() if e["surface"] == surface]
            if not entries:
                continue
            lines += [f"## {title}", ""]
            for e in entries:
                methods = " ".join(e["methods"]) or "ANY"
                summary = f": {e['summary']}" if e["summary"] else ""
                lines.append(f"- [{methods} {e['path']}]({e['url']}){summary}")
            lines.append("")
        return "\n".join(lines)

    async def evidence(self) -> dict[str, Any]:
        safety = await self.safety_document()
        return {
            "version": "routequote-evidence-v1",
            "service": SERVICE_NAME,
            "evidence": safety["evidence"],
            "known_limitations": safety["known_limitations"],
            "safety_document": self.url(SAFETY_PATH),
            "manifest": self.url(MANIFEST_PATH),
            **SERVER_FLAGS,
        }

    def terms(self) -> str:
        s = self.settings
        return "\n".join(
            [
                f"# Terms of use: {SERVICE_NAME} at {self.base_url}",
                "",
                "- What it does: returns non-binding, fee-inclusive, expiring, unranked route quotes. A quote is an "
                f"estimate, not an execution guarantee, and expires {s.quote_ttl_seconds} s after `as_of`.",
                "- What it never does: sign or submit a transaction, hold funds, or ask for a private key. The caller "
                "alone signs and submits, and checks each action (chain, wallets, assets, exact input, minimum "
                "output, contract or program, deadline, payload_sha256) before signing.",
                f"- Fee: exactly {SERVICE_FEE_BPS} basis point (0.01 %) of the fee step's input, "
                "floor(input / 10000), collected once per route on a successful step, with no maximum. Provider "
                f"fees and network gas are extra; see {self.url(PRICING_PATH)}.",
                f"- Amounts: amount_usd from {MIN_AMOUNT_USD} to {MAX_AMOUNT_USD} per quote request.",
                "- Advice: `price_recommended_for_amount` and the route economics document are advisory and never "
                "gate execution. Compare fresh quotes at the amount you intend to move.",
                "- Multi-step routes are sequential and non-atomic; only verified actual output advances a workflow.",
                f"- Rate limit: {s.rate_limit} per client on the quote operations.",
                "- Software: Apache-2.0 licensed, provided without warranty; this instance is run by its operator.",
                "",
            ]
        )

    def privacy(self) -> str:
        s = self.settings
        lines = [
            f"# Privacy: {SERVICE_NAME} at {self.base_url}",
            "",
            "- No accounts, no cookies, no API keys.",
            {
                "memory": f"- Issued quotes (route, amounts, quote id; no wallet data) are kept in process memory "
                f"for {s.quote_ttl_seconds} s (their TTL), at most {MAX_RECORDS} at a time, and are gone on restart.",
                "sqlite": "- Issued quotes (route, amounts, quote id; no wallet data) are kept in a file on the "
                f"server's machine that its workers share, for {s.quote_ttl_seconds} s (their TTL), then deleted.",
            }.get(
                s.resolved_quote_store(),
                "- Issued quotes (route, amounts, quote id; no wallet data) are kept in the operator's Redis "
                f"for {s.quote_ttl_seconds} s (their TTL), then expire.",
            ),
            "- Rate limiting keeps a counter keyed by the client IP address for the limit's window "
            f"({s.rate_limit}) in {'Redis' if s.redis_url else 'process memory'}.",
            "- Logs: structured JSON lines to standard output at level "
            f"`{s.log_level}`; `routequote serve` turns HTTP access logging off.",
            "- Requests that carry secret fields (private keys, seed phrases) are rejected, not stored.",
        ]
        if self._has("/v2/prepare"):
            lines.append(
                "- Prepare keeps, per idempotency key, a hash of the request and the bundle it returned (public "
                f"wallet addresses, amounts, quote id) in {STORE_PLACES.get(s.resolved_quote_store(), 'Redis')} "
                f"for {IDEMPOTENCY_TTL_SECONDS} s, so a replay gets the same answer; nothing else keeps it."
            )
        lines.append("")
        return "\n".join(lines)

    def security_contact(self) -> str:
        return self.settings.security_contact.strip() or self.url(SECURITY_PATH)

    def security(self) -> str:
        return "\n".join(
            [
                f"# Security: {SERVICE_NAME} at {self.base_url}",
                "",
                f"- Report a vulnerability to: {self.security_contact()}. Include the affected URL, the request, "
                "what you expected and what happened. Do not include private keys or seed phrases.",
                f"- Machine-readable contact: {self.url(SECURITY_TXT_PATH)} (RFC 9116).",
                f"- Verify this instance: `routequote verify-manifest {self.base_url}` checks the Ed25519 "
                f"signature of {self.url(MANIFEST_PATH)} against {self.url(PUBLIC_KEY_PATH)} "
                f"(key id `{self.key.key_id}`), the safety document pin, expiry and age.",
                "- Development key: yes, generated by this instance; pin an operator key for production."
                if self.key.development
                else "- Signing key: configured by the operator.",
                "- Boundaries: the service never signs, never submits and holds no caller funds or keys. Every "
                "`server_signing` and `server_submission` field it returns is false.",
                "",
            ]
        )

    def security_txt(self) -> str:
        expires = (self.clock.now() + timedelta(days=180)).replace(microsecond=0)
        return "\n".join(
            [
                f"Contact: {self.security_contact()}",
                f"Expires: {iso_seconds(expires)}",
                "Preferred-Languages: en",
                f"Canonical: {self.url(SECURITY_TXT_PATH)}",
                f"Policy: {self.url(SECURITY_PATH)}",
                "",
            ]
        )

    async def pricing(self) -> str:
        view = await self.view()
        cctp = ", ".join(
            f"from {c.chain.value} {view.cctp.fast_fee_bps_milli[c.cctp_domain] / 1000:g} bp"
            for c in CHAINS.values()
            if c.cctp_domain is not None and c.cctp_domain in view.cctp.fast_fee_bps_milli
        )
        pools = ", ".join(f"{pid} {p.clmm.fee_pips / 100:g} bp" for pid, p in sorted(view.pools.items()))
        a = view.across
        return "\n".join(
            [
                f"# Pricing: {SERVICE_NAME} at {self.base_url}",
                "",
                "- Quotes are free: no subscription, no API key.",
                f"- Service fee: exactly {SERVICE_FEE_BPS} basis point of the fee step's input, floor(input / 10000), "
                "once per route, no maximum (about USD 0.10 on a USD 1000 route). It is included in the quoted "
                "receive amounts and it is not the total cost.",
                "- Other costs, shown per quote in `cost_summary`:",
                f"  - pool fees: {pools};",
                f"  - Circle CCTP fast transfer fee: {cctp};",
                f"  - Across: LP {a.lp_fee_ppm / 100:g} bp + relayer capital {a.relayer_capital_fee_ppm / 100:g} bp "
                f"+ relayer gas {a.relayer_gas_fee_base / 10**6:g} USDG;",
                f"  - LayerZero OFT messaging fee: {view.oft.native_fee_wei / 10**18:g} ETH paid beside the amount;",
                "  - network gas: reported in units per chain, not priced.",
                f"- Market data: {'live' if view.live else f'embedded snapshot of {view.as_of}, not live'}.",
                f"- Per-route costs at USD 1, 50, 250 and 1000: {self.url(ECONOMICS_PATH)} (advisory).",
                "",
            ]
        )
