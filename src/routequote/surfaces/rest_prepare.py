"""POST /v2/prepare: the first unsigned action for a caller-approved quote (never signed, never submitted)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from routequote.contract.v2 import ErrorResponse, _endpoint_rules
from routequote.core.assets import Chain, Token
from routequote.core.quote import APPROVAL_FIELDS, APPROVAL_VERSION
from routequote.prepare import PrepareService
from routequote.ratelimit import RateLimiter
from routequote.surfaces.http import answer, read_json_body

_ERR = {"model": ErrorResponse}
_ADDRESS = {"type": "string", "description": "public address: EVM 0x + 40 hex, Solana base58 (32..44 chars)"}
PREPARE_REQUEST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["caller_approved", "from_chain", "from_token", "to_chain", "to_token", "amount_usd", "wallets"],
    "description": (
        "An approved quote's intent and the caller's public wallets. Secret-looking fields anywhere (private key, "
        "seed, mnemonic, signature, signed transaction) are refused with 400 secret_material_rejected. "
        "Each side must be one of the nine chain/token endpoints and the two sides must differ (the same "
        "rules as QuoteRequest, generated from the asset registry)."
    ),
    **_endpoint_rules(),  # allOf: from side, to side, not an identity route
    "properties": {
        "caller_approved": {"type": "boolean", "const": True, "description": "advisory; not proof of human approval"},
        "from_chain": {"type": "string", "enum": [c.value for c in Chain]},
        "from_token": {"type": "string", "enum": [t.value for t in Token]},
        "to_chain": {"type": "string", "enum": [c.value for c in Chain]},
        "to_token": {"type": "string", "enum": [t.value for t in Token]},
        "amount_usd": {"type": "number", "minimum": 1, "maximum": 1000},
        "wallets": {
            "type": "object",
            "description": "exactly the route's required_wallet_chains -> public address",
            "propertyNames": {"enum": [c.value for c in Chain]},
            "additionalProperties": _ADDRESS,
            "minProperties": 1,
            "maxProperties": 4,
        },
        "event_signer_public": {
            "type": "string",
            "description": "required exactly when the route burns CCTP on Solana: a fresh keypair's public key",
        },
        "approval_v3": {
            "type": "object",
            "additionalProperties": False,
            "required": list(APPROVAL_FIELDS),
            "properties": {
                **{k: {"type": "string"} for k in APPROVAL_FIELDS},
                "version": {"type": "string", "const": APPROVAL_VERSION},
                "selection_status": {"type": "string", "const": "selected"},
                "selected_mode": {"type": "string", "enum": ["one_shot", "session"]},
                "quote_fingerprint": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
                "direct_route_summary_sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
                "maximum_input_base": {"type": "string", "pattern": "^[1-9][0-9]*$"},
                "minimum_output_base": {"type": "string", "pattern": "^[1-9][0-9]*$"},
                "idempotency_key": {"type": "string", "pattern": "^[A-Za-z0-9._:-]{8,128}$"},
            },
        },
    },
}


def router(prepare: PrepareService, limiter: RateLimiter) -> APIRouter:
    api = APIRouter(prefix="/v2")

    @api.post(
        "/prepare",
        operation_id="prepareFirstUnsignedAction",
        responses={400: _ERR, 409: _ERR, 429: _ERR, 502: _ERR, 503: _ERR},
        summary="Bounded, verifiable unsigned first action for an approved quote (the service never signs)",
        description=(
            "Binds to the issued quote through approval_v3 (409 reapproval_required on any drift, nothing "
            "created); without approval_v3 it is served as legacy_advisory. Returns the bundle: unsigned "
            "transactions or instructions, a safety receipt and payload_sha256. Verify before signing "
            "(`routequote verify-action`)."
        ),
        openapi_extra={
            "requestBody": {"required": True, "content": {"application/json": {"schema": PREPARE_REQUEST_SCHEMA}}}
        },
    )
    async def prepare_action(request: Request) -> Response:
        async def produce() -> dict[str, Any]:
            body: Any = await read_json_body(request)
            return await prepare.prepare(body)

        return await answer(limiter, request, produce)

    return api
