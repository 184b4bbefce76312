"""What this instance is, read from its own configuration and code: the paths of the documents it
publishes, its release commit and source fingerprint, its mounted endpoints (from the routing table) and
its policies (fee, limits, signing key), each defined once for the manifest, the safety document and the
pages."""

from __future__ import annotations

import asyncio
import hashlib
import re
import subprocess
from importlib import resources
from pathlib import Path
from typing import Any

from routequote.config import Settings
from routequote.core.assets import ASSETS, CHAINS
from routequote.core.fee_recipient import recipients_configured
from routequote.core.intent import MAX_AMOUNT_USD, MIN_AMOUNT_USD
from routequote.core.manifest import MANIFEST_PATH, PUBLIC_KEY_PATH, SAFETY_PATH
from routequote.core.market import MarketView
from routequote.core.pricing import SERVICE_FEE_BPS
from routequote.core.routes import ROUTES
from routequote.discovery.address_book import contracts
from routequote.discovery.keys import SigningKey
from routequote.input_rules import MAX_BODY_BYTES
from routequote.ports import Clock
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


def flat_routes(routes: Any) -> list[Any]:
    """Routes with included routers expanded (FastAPI >= 0.165 keeps included routers as one entry)."""
    try:
        from fastapi.routing import iter_route_contexts
    except ImportError:  # older FastAPI: app.routes is already flat
        return list(routes)
    return list(iter_route_contexts(list(routes)))


class InstanceFacts:
    """The facts every discovery document is built from (the base of `Discovery`)."""

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

    def forget_documents(self) -> None:
        """Drop the cached manifest and safety document: a fact they carry changed (the OFT pin)."""
        self._manifest = None
        self._safety = None

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
        for r in flat_routes(self._routes_provider() if self._routes_provider else []):
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
