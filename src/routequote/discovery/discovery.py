"""Discovery: every trust and discovery document this instance publishes, built from its own
configuration and code (Settings, ROUTES, ASSETS, the market view, the fee policy, the mounted routes).

Nothing here is a hand-written copy: the endpoint lists are read from the application's routing table,
the scope from the route registry and the address book, the numbers from the pricing code. The one
object lives at `app.state.discovery`; `await discovery.signed_manifest()` is what the MCP
`service_manifest` tool returns.
"""

from __future__ import annotations

import asyncio
import hashlib
import platform
import re
import subprocess
from datetime import timedelta
from importlib import resources
from pathlib import Path
from typing import Any

from routequote import __version__
from routequote.config import Settings
from routequote.core.assets import ASSETS, CHAINS
from routequote.core.fee_recipient import recipients_configured
from routequote.core.hashing import CANONICAL_JSON_SPEC, canonical_json, canonical_sha256
from routequote.core.intent import MAX_AMOUNT_USD, MIN_AMOUNT_USD
from routequote.core.manifest import (
    MANIFEST_PATH,
    MANIFEST_SCHEMA,
    PUBLIC_KEY_PATH,
    SAFETY_PATH,
    SAFETY_SCHEMA,
    iso_seconds,
    parse_time,
    sign_manifest,
)
from routequote.core.market import MarketView
from routequote.core.pricing import SERVICE_FEE_BPS
from routequote.core.quote import RELEASE_STATUS, SERVER_FLAGS
from routequote.core.routes import ROUTES
from routequote.discovery.address_book import contracts
from routequote.discovery.economics import route_economics
from routequote.discovery.keys import SigningKey
from routequote.input_rules import MAX_BODY_BYTES
from routequote.ports import Clock
from routequote.prepare import IDEMPOTENCY_TTL_SECONDS
from routequote.service import RouteQuoteService
from routequote.storage.quotes import MAX_RECORDS

STORE_PLACES = {"memory": "process memory", "sqlite": "a file its workers share"}

SERVICE_NAME = "routequote"
ECONOMICS_PATH = "/v2/route-economics.json"
INDEX_PATH = "/.well-known/api-index.json"
EVALUATION_PATH = "/.well-known/routequote-evaluation-workflow.json"
LLMS_PATH = "/llms.txt"
EVIDENCE_PATH = "/evidence"
TERMS_PATH, PRIVACY_PATH, SECURITY_PATH, PRICING_PATH = "/terms", "/privacy", "/security", "/pricing"
SECURITY_TXT_PATH = "/.well-known/security.txt"
V1_OPENAPI_PATH = "/openapi.json"
V2_OPENAPI_PATH = "/v2/openapi.json"
ECONOMICS_MIN_AGE_SECONDS = 60.0

# path -> (media type, one-line description); the documents this module serves
DOCUMENTS: dict[str, tuple[str, str]] = {
    MANIFEST_PATH: ("application/json", "Signed release manifest (Ed25519 over canonical JSON)"),
    PUBLIC_KEY_PATH: ("application/x-pem-file", "Manifest signing public key (SPKI PEM)"),
    SAFETY_PATH: (
        "application/json",
        "Safety-evidence document: claims, evidence, known limitations, verifier rules",
    ),
    INDEX_PATH: ("application/json", "API index: every surface and document of this instance"),
    EVALUATION_PATH: ("application/json", "How an agent should evaluate this service before using it"),
    ECONOMICS_PATH: (
        "application/json",
        "Route economics: modelled cost per route at USD 1/50/250/1000 (advisory)",
    ),
    LLMS_PATH: ("text/plain", "llms.txt: a short agent-readable guide with links"),
    EVIDENCE_PATH: ("application/json", "Evidence: market data source and time, build, route registry hash"),
    TERMS_PATH: ("text/markdown", "Terms of use"),
    PRIVACY_PATH: ("text/markdown", "Privacy: what is stored and for how long"),
    SECURITY_PATH: ("text/markdown", "Security: how to report a vulnerability and verify this instance"),
    SECURITY_TXT_PATH: ("text/plain", "RFC 9116 security.txt"),
    PRICING_PATH: ("text/markdown", "Pricing: the 1 bp service fee and the other costs of a route"),
}
_HEX40 = re.compile(r"[0-9a-f]{40}")  # fullmatch


def release_commit(settings: Settings) -> tuple[str | None, str]:
    """(40-hex commit or None, where it came from)."""
    configured = settings.release_commit.strip().lower()
    if configured:
        return (
            (configured, "configuration") if _HEX40.fullmatch(configured) else (None, "configuration_invalid")
        )
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=3,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None, "unavailable"
    commit = out.stdout.strip().lower()
    return (commit, "git") if out.returncode == 0 and _HEX40.fullmatch(commit) else (None, "unavailable")


def source_fingerprint() -> str:
    """sha256 over the package's Python sources and data (sorted relative paths and contents)."""
    root = Path(str(resources.files("routequote")))
    digest = hashlib.sha256()
    for path in sorted(
        p for p in root.rglob("*") if p.suffix in (".py", ".json") and "__pycache__" not in p.parts
    ):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def _surface(path: str) -> str:
    if path in DOCUMENTS:
        return "document"
    if path == V2_OPENAPI_PATH or path.startswith("/v2/"):
        return "rest_v2"
    if path == V1_OPENAPI_PATH or path.startswith("/v1/"):
        return "rest_v1_legacy"
    if path.startswith("/mcp"):
        return "mcp"
    if path.startswith("/a2a") or path.startswith("/.well-known/agent"):
        return "a2a"
    if path in ("/metrics", "/livez", "/readyz"):
        return "operations"
    if path == "/" or path.startswith("/explorer/"):
        return "explorer"
    return "other"


def _flat_routes(routes: Any) -> list[Any]:
    """Routes with included routers expanded (FastAPI >= 0.165 keeps included routers as one entry)."""
    try:
        from fastapi.routing import iter_route_contexts
    except ImportError:  # older FastAPI: app.routes is already flat
        return list(routes)
    return list(iter_route_contexts(list(routes)))


class Discovery:
    def __init__(
        self,
        *,
        settings: Settings,
        service: RouteQuoteService,
        clock: Clock,
        signing_key: SigningKey,
        routes_provider: Any = None,
        deployments: Any = None,
    ) -> None:
        self.settings = settings
        self.service = service
        self.clock = clock
        self.key = signing_key
        self._routes_provider = routes_provider  # callable returning the app's routes (read lazily)
        self.contracts = contracts(deployments)  # the EVM deployments the prepare service builds against
        self.commit, self.commit_source = release_commit(settings)
        self.source_sha256 = source_fingerprint()
        self._manifest: dict[str, Any] | None = None
        self._safety: tuple[str, dict[str, Any]] | None = None
        self._economics: tuple[str, dict[str, Any]] | None = None
        self._economics_lock = asyncio.Lock()
        self._economics_at = 0.0
        self._endpoints: list[dict[str, Any]] | None = None

    # ---- basics ---------------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return self.settings.resolved_base_url()

    def url(self, path: str) -> str:
        return self.base_url + path

    async def view(self) -> MarketView:
        return await self.service.market.view()

    def public_key_pem(self) -> str:
        return self.key.public_pem

    def endpoints(self) -> list[dict[str, Any]]:
        """Every mounted path with its methods and surface, read from the application's routing table."""
        if self._endpoints is not None:
            return self._endpoints
        from starlette.routing import Mount

        out: dict[str, dict[str, Any]] = {}
        for r in _flat_routes(self._routes_provider() if self._routes_provider else []):
            path = getattr(r, "path", None)
            if not path:
                continue
            entry = out.setdefault(
                path,
                {
                    "path": path,
                    "url": self.url(path),
                    "methods": set(),
                    "surface": _surface(path),
                    "summary": "",
                },
            )
            entry["methods"] |= set(getattr(r, "methods", None) or ()) - {"HEAD"}
            if not entry["summary"]:
                endpoint = getattr(r, "endpoint", None)
                paragraph = " ".join(
                    (getattr(endpoint, "__doc__", None) or "").strip().split("\n\n")[0].split()
                )
                doc = paragraph.split(". ")[0].rstrip(".") + "." if paragraph else ""
                entry["summary"] = getattr(r, "summary", None) or doc
            if isinstance(getattr(r, "original_route", r), Mount):
                entry["mount"] = True
            if path in DOCUMENTS:
                entry["media_type"], entry["summary"] = DOCUMENTS[path]
        listed = []
        for entry in sorted(out.values(), key=lambda e: (e["surface"], e["path"])):
            entry["methods"] = sorted(entry["methods"])
            listed.append(entry)
        self._endpoints = listed
        return listed

    def _endpoints_by_surface(self) -> dict[str, list[dict[str, Any]]]:
        grouped: dict[str, list[dict[str, Any]]] = {}
        for e in self.endpoints():
            grouped.setdefault(e["surface"], []).append(
                {"path": e["path"], "methods": e["methods"], "url": e["url"]}
            )
        return grouped

    def _has(self, prefix: str) -> bool:
        return any(e["path"].startswith(prefix) for e in self.endpoints())

    # ---- policies (one definition, used by the manifest, the safety document and the pages) -------

    @staticmethod
    def fee_policy() -> dict[str, Any]:
        return {
            "exact_bps": SERVICE_FEE_BPS,
            "minimum_bps": SERVICE_FEE_BPS,
            "maximum_bps": SERVICE_FEE_BPS,
            "fee_maximum_stable_base": None,
            "zero_fee_routes_allowed": False,
            "policy": "exact_one_bps_no_maximum",
            "formula": "floor(fee_step_input_base * 1 / 10000)",
            "collected_once_per_route": True,
            "collected_at": "the route's single fee step, only on an eligible successful executor step",
            "included_in_quoted_receive_amounts": True,
            "is_total_cost": False,
        }

    def fee_recipients(self) -> dict[str, str]:
        return {"evm": self.settings.fee_recipient_evm, "solana": self.settings.fee_recipient_solana}

    def fee_recipients_configured(self) -> dict[str, bool]:
        return recipients_configured(self.settings.fee_recipient_evm, self.settings.fee_recipient_solana)

    def limits(self) -> dict[str, Any]:
        return {
            "amount_usd": {"minimum": MIN_AMOUNT_USD, "maximum": MAX_AMOUNT_USD},
            "quote_ttl_seconds": self.settings.quote_ttl_seconds,
            "max_request_body_bytes": MAX_BODY_BYTES,
            "rate_limit_per_client": self.settings.rate_limit,
            "max_inflight_quotes": self.settings.max_inflight_quotes,
            "issued_quote_store_max_records": MAX_RECORDS,
            "chains": len(CHAINS),
            "asset_endpoints": len(ASSETS),
            "directed_conversion_routes": len(ROUTES),
        }

    def signing_key_facts(self) -> dict[str, Any]:
        return {
            "key_id": self.key.key_id,
            "algorithm": "Ed25519",
            "development_key": self.key.development,
            "source": self.key.source,
            "note": (
                "development key generated by this instance on first start; not an operator release key"
                if self.key.development
                else "operator-configured key"
            ),
        }

    # ---- safety document ---------------------------------------------------------------------------

    def _scope(self, view: MarketView) -> dict[str, Any]:
        listed = [
            {
                "provider": c.provider.value,
                "chain": c.chain.value,
                "role": c.role,
                "address": c.address,
                "address_basis": c.basis,
                **({"note": c.note} if c.note else {}),
            }
            for c in self.contracts
        ]
        pools = [
            {
                "provider": p.clmm.venue,
                "chain": pid.split(":", 1)[0],
                "role": "pool",
                "pool_id": pid,
                "address": p.address,
                "address_basis": "market_snapshot" if p.address else "not_pinned",
                "fee_pips": p.clmm.fee_pips,
            }
            for pid, p in sorted(view.pools.items())
        ]
        tokens = [
            {
                "endpoint": a.key,
                "chain": a.chain.value,
                "token": a.token.value,
                "decimals": a.decimals,
                "native": a.is_native,
                "address": a.address,
                "wrapped_address": a.wrapped_address,
                "token_program": a.token_program,
            }
            for a in ASSETS.values()
        ]
        return {
            "chains": [
                {
                    "chain": c.chain.value,
                    "family": c.family.value,
                    "chain_id": c.chain_id,
                    "cctp_domain": c.cctp_domain,
                }
                for c in CHAINS.values()
            ],
            "asset_endpoints": tokens,
            "directed_conversion_routes": len(ROUTES),
            "route_steps": sum(len(r.steps) for r in ROUTES.values()),
            "providers": sorted({s.provider.value for r in ROUTES.values() for s in r.steps}),
            "third_party_contracts_and_programs": listed,
            "pools": pools,
            "service_deployed_contracts": [],
            "service_deployed_contracts_note": (
                "this build deploys no contracts of its own; actions call the third-party contracts and programs "
                "listed here directly from the caller's wallet"
            ),
        }

    def _limitations(self, view: MarketView) -> list[dict[str, str]]:
        out: list[dict[str, str]] = []
        unset = [k for k, ok in self.fee_recipients_configured().items() if not ok]
        if unset:
            out.append(
                {
                    "id": "fee_recipient_not_configured",
                    "text": f"the {' and '.join(unset)} service fee recipient is a development placeholder: "
                    "a signed action would send the fee nowhere; actions say fee_recipient_configured: false",
                }
            )
        if not view.live:
            out.append(
                {
                    "id": "market_data_modelled",
                    "text": f"quotes are priced from the embedded market snapshot of {view.as_of}, not live data",
                }
            )
        modelled = sorted(
            pid for pid, p in view.pools.items() if p.state_source == "embedded_snapshot" and p.accounts
        )
        if modelled:
            out.append(
                {
                    "id": "solana_swaps_from_modelled_pool_state",
                    "text": "Solana swaps on "
                    + ", ".join(modelled)
                    + " are built from the embedded snapshot's modelled pool state: their tick arrays may not "
                    "match mainnet, so the swap may fail; it never pays below its minimum output",
                }
            )
        unpinned = sorted(pid for pid, p in view.pools.items() if not p.address)
        if unpinned:
            out.append(
                {
                    "id": "pool_accounts_not_pinned",
                    "text": "no pool account pinned for: " + ", ".join(unpinned),
                }
            )
        third = sorted(
            {
                f"{c.provider.value}:{c.chain.value}:{c.role}"
                for c in self.contracts
                if c.basis == "third_party"
            }
        )
        if third:
            out.append(
                {
                    "id": "addresses_from_third_party_sources",
                    "text": "addresses taken from third-party sources; check on chain: " + ", ".join(third),
                }
            )
        missing = sorted(
            f"{c.provider.value}:{c.chain.value}:{c.role}" for c in self.contracts if c.address is None
        )
        if missing:
            out.append({"id": "programs_not_pinned", "text": "no address pinned for: " + ", ".join(missing)})
        oft = self.service.config.solana_arrivals.get("oft") or {}
        if not oft.get("verifiable"):
            out.append(
                {
                    "id": "usdg_oft_solana_program_not_pinned",
                    "text": "the USDG OFT program on Solana is not pinned by this build: a session's USDG arrival "
                    "on Solana (LayerZero lz_receive) cannot be verified and is never accepted until the "
                    "operator sets ROUTEQUOTE_USDG_OFT_SOLANA_PROGRAM",
                }
            )
        if view.oft.delivery_seconds is None:
            out.append(
                {
                    "id": "eta_incomplete_for_oft_routes",
                    "text": "routes with a LayerZero OFT step carry no complete time estimate",
                }
            )
        ready = len(self.service.config.prepare_ready_routes)
        if ready < len(ROUTES):
            out.append(
                {
                    "id": "prepare_not_available_on_all_routes",
                    "text": f"unsigned action preparation is available on {ready} of {len(ROUTES)} routes",
                }
            )
        out.append(
            {
                "id": "network_gas_unpriced",
                "text": "network gas is reported in units per chain and is not priced into quotes",
            }
        )
        out.append(
            {
                "id": "non_atomic_routes",
                "text": "multi-step routes are sequential and non-atomic; a later step can fail after an earlier one",
            }
        )
        out.append(
            {
                "id": "external_intent_protocol",
                "text": "Robinhood ingress uses Across, where provider-internal liquidity sourcing may occur",
            }
        )
        if self.key.development:
            out.append(
                {
                    "id": "development_signing_key",
                    "text": "the manifest is signed with a development key generated by this instance",
                }
            )
        return out

    def _market_evidence(self, view: MarketView) -> dict[str, Any]:
        doc = getattr(self.service.market, "document", None)
        return {
            "source": view.source,
            "live": view.live,
            "data_as_of": None if view.live else view.as_of,
            "version": None if view.live else view.version,
            "document_sha256": canonical_sha256(doc) if isinstance(doc, dict) and not view.live else None,
            "notes": list(view.notes),
        }

    def _safety_for(self, view: MarketView) -> dict[str, Any]:
        route_table = [
            {"route": r.key, "providers": list(r.provider_path), "fee_step_index": r.fee_step_index}
            for r in ROUTES.values()
        ]
        return {
            "schema": SAFETY_SCHEMA,
            "bundle_version": 1,
            "service": SERVICE_NAME,
            "release": {
                "service_version": __version__,
                "release_commit": self.commit,
                "release_commit_source": self.commit_source,
                "release_status": RELEASE_STATUS,
            },
            "claims": {
                "scope": self._scope(view),
                "fee_policy": {
                    **self.fee_policy(),
                    "fee_recipients": self.fee_recipients(),
                    "fee_recipients_configured": self.fee_recipients_configured(),
                },
                "amount_policy": {
                    "minimum_usd": MIN_AMOUNT_USD,
                    "maximum_usd": MAX_AMOUNT_USD,
                    "enforced_at": "quote request validation (400 outside the range)",
                    "unit": "USD notional at the reference price; no funds move when quoting",
                },
                "noncustody_policy": {
                    **SERVER_FLAGS,
                    "holds_caller_funds": False,
                    "receives_caller_private_keys": False,
                    "caller_signs_and_submits": True,
                    "quote_only_operations_move_no_funds": True,
                    "automatic_selection": False,
                    "automatic_prepare": False,
                    "only_verified_actual_output_advances_a_workflow": True,
                },
            },
            "evidence": {
                "market_snapshot": self._market_evidence(view),
                "build": {
                    "service_version": __version__,
                    "release_commit": self.commit,
                    "source_sha256": self.source_sha256,
                    "source_sha256_spec": "sha256 over sorted (relative path, sha256 of file) of the package's .py and .json files",
                    "python": platform.python_version(),
                },
                "route_registry": {
                    "route_count": len(ROUTES),
                    "sha256": canonical_sha256(route_table),
                    "sha256_spec": "sha256 of "
                    + CANONICAL_JSON_SPEC
                    + " of [{route, providers, fee_step_index}]",
                },
                "signing_key": self.signing_key_facts(),
                "public_urls": {
                    "manifest": self.url(MANIFEST_PATH),
                    "public_key": self.url(PUBLIC_KEY_PATH),
                    "route_economics": self.url(ECONOMICS_PATH),
                    "openapi_v2": self.url(V2_OPENAPI_PATH),
                },
            },
            "known_limitations": self._limitations(view),
            "operational_disclosures": {
                "issued_quotes_kept_in_memory_seconds": self.settings.quote_ttl_seconds,
                "issued_quote_store_max_records": MAX_RECORDS,
                "rate_limit_per_client": self.settings.rate_limit,
                "rate_limit_store": "redis" if self.settings.redis_url else "process_memory",
            },
            "verifier_rules": [
                "manifest bytes equal " + CANONICAL_JSON_SPEC + " of the parsed manifest",
                "signature: Ed25519 over the canonical manifest without its signature member; value base64url, no padding",
                "signature.key_id equals 'routequote-' + first 16 hex of sha256(raw 32-byte public key)",
                "the public key equals the operator's pinned key when one is pinned",
                "sha256 of the canonical safety document equals manifest.safety_bundle.sha256",
                "issued_at <= now + 300 s, valid_until > now, and the age is within the verifier's limit",
                "execution.server_signing and execution.server_submission are false; fee_policy exact_bps is 1",
            ],
        }

    async def safety_document(self) -> dict[str, Any]:
        view = await self.view()
        if self._safety is None or self._safety[0] != view.version:
            self._safety = (view.version, self._safety_for(view))
        return self._safety[1]

    # ---- manifest ------------------------------------------------------------------------------------

    async def signed_manifest(self) -> dict[str, Any]:
        """The signed manifest dict (re-signed when half its validity has passed or the evidence changed)."""
        safety = await self.safety_document()
        safety_sha = canonical_sha256(safety)
        now = self.clock.now()
        cached = self._manifest
        if cached is not None and cached["safety_bundle"]["sha256"] == safety_sha:
            issued = parse_time(cached["issued_at"])
            if now < issued + timedelta(seconds=self.settings.manifest_valid_seconds / 2) and now >= issued:
                return cached
        view = await self.view()
        issued_at = now.replace(microsecond=0)
        payload = {
            "schema": MANIFEST_SCHEMA,
            "service": SERVICE_NAME,
            "service_version": __version__,
            "base_url": self.base_url,
            "endpoints": self._endpoints_by_surface(),
            "execution": {
                **SERVER_FLAGS,
                "fee_policy": self.fee_policy(),
                "release_status": RELEASE_STATUS,
            },
            "limits": self.limits(),
            "release_commit": self.commit,
            "issued_at": iso_seconds(issued_at),
            "valid_until": iso_seconds(issued_at + timedelta(seconds=self.settings.manifest_valid_seconds)),
            "market": {
                "source": view.source,
                "live": view.live,
                "data_as_of": None if view.live else view.as_of,
            },
            "signing_key": self.signing_key_facts(),
            "safety_bundle": {
                "schema": SAFETY_SCHEMA,
                "url": self.url(SAFETY_PATH),
                "sha256": safety_sha,
                "canonicalization": CANONICAL_JSON_SPEC,
            },
            "verification": {
                "command": f"routequote verify-manifest {self.base_url}",
                "public_key_url": self.url(PUBLIC_KEY_PATH),
                "key_id": self.key.key_id,
            },
        }
        self._manifest = sign_manifest(payload, self.key.private, public_key_url=self.url(PUBLIC_KEY_PATH))
        return self._manifest

    async def manifest_bytes(self) -> bytes:
        return canonical_json(await self.signed_manifest())

    async def safety_bytes(self) -> bytes:
        return canonical_json(await self.safety_document())

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
