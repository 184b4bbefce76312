"""Discovery and trust routes: signed manifest, public key, safety document, API index, llms.txt,
evaluation workflow, evidence, route economics, terms/privacy/security/pricing and security.txt.

None of these appear in the v2 OpenAPI document (which lists only /v2/* operations); the API index
lists them all. The manifest and the safety document are served as their canonical bytes.
"""

from __future__ import annotations

from fastapi import APIRouter
from starlette.responses import Response

from routequote.core.manifest import MANIFEST_PATH, PUBLIC_KEY_PATH, SAFETY_PATH
from routequote.discovery import Discovery
from routequote.discovery.instance import (
    ECONOMICS_PATH,
    EVALUATION_PATH,
    EVIDENCE_PATH,
    INDEX_PATH,
    LLMS_PATH,
    PRICING_PATH,
    PRIVACY_PATH,
    SECURITY_PATH,
    SECURITY_TXT_PATH,
    TERMS_PATH,
)
from routequote.surfaces.errors import json_response

_CACHE = {"Cache-Control": "public, max-age=60"}


def _text(body: str, media_type: str) -> Response:
    return Response(body.encode("utf-8"), media_type=f"{media_type}; charset=utf-8", headers=_CACHE)


def router(discovery: Discovery) -> APIRouter:
    api = APIRouter(include_in_schema=False)

    @api.get(MANIFEST_PATH)
    async def manifest() -> Response:
        """Signed release manifest (canonical JSON, Ed25519)."""
        return Response(await discovery.manifest_bytes(), media_type="application/json", headers=_CACHE)

    @api.get(PUBLIC_KEY_PATH)
    async def public_key() -> Response:
        """Manifest signing public key (SPKI PEM)."""
        return _text(discovery.public_key_pem(), "application/x-pem-file")

    @api.get(SAFETY_PATH)
    async def safety() -> Response:
        """Safety-evidence document (canonical JSON, pinned by the manifest)."""
        return Response(await discovery.safety_bytes(), media_type="application/json", headers=_CACHE)

    @api.get(INDEX_PATH)
    async def api_index() -> Response:
        """API index."""
        return json_response(discovery.api_index(), headers=_CACHE)

    @api.get(EVALUATION_PATH)
    async def evaluation() -> Response:
        """Evaluation workflow."""
        return json_response(discovery.evaluation_workflow(), headers=_CACHE)

    @api.get(ECONOMICS_PATH)
    async def economics() -> Response:
        """Route economics (advisory)."""
        return json_response(await discovery.route_economics(), headers=_CACHE)

    @api.get(EVIDENCE_PATH)
    async def evidence() -> Response:
        """Evidence."""
        return json_response(await discovery.evidence(), headers=_CACHE)

    @api.get(LLMS_PATH)
    async def llms() -> Response:
        return _text(discovery.llms_txt(), "text/plain")

    @api.get(TERMS_PATH)
    async def terms() -> Response:
        return _text(discovery.terms(), "text/markdown")

    @api.get(PRIVACY_PATH)
    async def privacy() -> Response:
        return _text(discovery.privacy(), "text/markdown")

    @api.get(SECURITY_PATH)
    async def security() -> Response:
        return _text(discovery.security(), "text/markdown")

    @api.get(SECURITY_TXT_PATH)
    async def security_txt() -> Response:
        return _text(discovery.security_txt(), "text/plain")

    @api.get(PRICING_PATH)
    async def pricing() -> Response:
        return _text(await discovery.pricing(), "text/markdown")

    return api
