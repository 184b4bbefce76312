"""POST /v2/prepare: the first unsigned action for a caller-approved quote (never signed, never submitted)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from routequote.contract.v2 import ErrorResponse, PrepareResponse, endpoint_rule_parts
from routequote.core.assets import Chain, Token
from routequote.core.field_rules import EVM_ADDRESS_PATTERN, IDEMPOTENCY_KEY_PATTERN, SOLANA_ADDRESS_PATTERN
from routequote.core.quote import APPROVAL_FIELDS, APPROVAL_VERSION
from routequote.core.routes import ROUTES
from routequote.prepare import PrepareService
from routequote.ratelimit import RateLimiter
from routequote.surfaces.direct_route import DirectRoute
from routequote.surfaces.http import answer, json_request_body, read_json_body

_ERR = {"model": ErrorResponse}
_ADDRESS = {"type": "string", "description": "public address: EVM 0x + 40 hex, Solana base58 (32..44 chars)"}
EVM_ADDRESS = {"type": "string", "pattern": EVM_ADDRESS_PATTERN}
SOLANA_ADDRESS = {
    "type": "string",
    "pattern": SOLANA_ADDRESS_PATTERN,
    "description": "base58 that must decode to a 32-byte public key (refused otherwise: invalid_wallet_address)",
}
# a key shaped like a secret (hex of a private key) is refused even though the pattern allows it
IDEMPOTENCY_KEY = {
    "type": "string",
    "pattern": IDEMPOTENCY_KEY_PATTERN,
    "not": {"pattern": "^(0[xX])?([0-9a-fA-F]{64}|[0-9a-fA-F]{128})$"},
}
_WALLET_SCHEMA = {c.value: SOLANA_ADDRESS if c is Chain.SOLANA else EVM_ADDRESS for c in Chain}


def _route_rules() -> dict[str, Any]:
    """One alternative per route, generated from the registry: its endpoints, wallets on exactly the chains
    it touches, and the event signer exactly when it burns CCTP on Solana (this also rules out identity routes
    and tokens not on their chain)."""
    alternatives: list[dict[str, Any]] = []
    for route in ROUTES.values():
        chains = list(route.required_wallet_chains)
        alternative: dict[str, Any] = {
            "properties": {
                "from_chain": {"const": route.source.chain.value},
                "from_token": {"const": route.source.token.value},
                "to_chain": {"const": route.target.chain.value},
                "to_token": {"const": route.target.token.value},
                "wallets": {"required": chains, "propertyNames": {"enum": chains}},
            },
        }
        if route.event_signer_required:
            alternative["required"] = ["event_signer_public"]
        else:
            alternative["not"] = {"required": ["event_signer_public"]}
        alternatives.append(alternative)
    return {"anyOf": alternatives}


PREPARE_REQUEST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": [
        "caller_approved",
        "from_chain",
        "from_token",
        "to_chain",
        "to_token",
        "amount_usd",
        "wallets",
    ],
    "description": (
        "An approved quote's intent and the caller's public wallets. Secret-looking fields anywhere (private key, "
        "seed, mnemonic, signature, signed transaction) are refused with 400 secret_material_rejected. "
        "Each side must be one of the nine chain/token endpoints and the two sides must differ (the same "
        "rules as QuoteRequest, generated from the asset registry). Per route (generated from the route "
        "registry): `wallets` names exactly the chains the route touches, and `event_signer_public` is sent exactly "
        "when the route burns CCTP on Solana. Rules JSON Schema cannot state: every wallet and the event signer "
        "must be a key that can sign (a Solana key on the curve that is no program or mint; an EVM address that is "
        "not zero, not a token or protocol contract, with a valid EIP-55 checksum if mixed case; never the fee "
        "recipient: invalid_wallet_address / invalid_event_signer_public, rule in details.wallet_rule), the event signer must differ from every "
        "wallet (event_signer_public_not_fresh), and the route's first step must be prepare-ready now "
        "(route_not_prepare_ready; GET /v2/capabilities lists the routes that are not, with why)."
    ),
    "allOf": [
        *endpoint_rule_parts(),
        _route_rules(),
    ],  # from side, to side, no identity route, per route
    "properties": {
        "caller_approved": {
            "type": "boolean",
            "const": True,
            "description": "advisory; not proof of human approval",
        },
        "from_chain": {"type": "string", "enum": [c.value for c in Chain]},
        "from_token": {"type": "string", "enum": [t.value for t in Token]},
        "to_chain": {"type": "string", "enum": [c.value for c in Chain]},
        "to_token": {"type": "string", "enum": [t.value for t in Token]},
        "amount_usd": {"type": "number", "minimum": 1, "maximum": 1000},
        "wallets": {
            "type": "object",
            "description": "exactly the route's required_wallet_chains -> public address",
            "propertyNames": {"enum": [c.value for c in Chain]},
            "properties": _WALLET_SCHEMA,
            "additionalProperties": _ADDRESS,
            "minProperties": 1,
            "maxProperties": 4,
        },
        "event_signer_public": {
            **SOLANA_ADDRESS,
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
                # prepare is the one_shot mode; a session approval belongs to POST /v2/session
                "selected_mode": {"type": "string", "const": "one_shot"},
                "quote_fingerprint": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
                "direct_route_summary_sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
                "maximum_input_base": {"type": "string", "pattern": "^[1-9][0-9]*$"},
                "minimum_output_base": {"type": "string", "pattern": "^[1-9][0-9]*$"},
                "idempotency_key": IDEMPOTENCY_KEY,
                "quote_id": {"type": "string", "minLength": 1, "maxLength": 128},
            },
        },
    },
}


def router(prepare: PrepareService, limiter: RateLimiter) -> APIRouter:
    api = APIRouter(prefix="/v2", route_class=DirectRoute)  # every endpoint: (request) -> Response

    @api.post(
        "/prepare",
        operation_id="prepareFirstUnsignedAction",
        response_model=PrepareResponse,
        responses={400: _ERR, 409: _ERR, 429: _ERR, 502: _ERR, 503: _ERR},
        summary="Bounded, verifiable unsigned first action for an approved quote (the service never signs)",
        description=(
            "Binds to the issued quote through approval_v3 (409 reapproval_required on any drift, nothing "
            "created); without approval_v3 it is served as legacy_advisory. Returns the bundle: unsigned "
            "transactions or instructions, a safety receipt and payload_sha256. Verify before signing "
            "(`routequote verify-action`). `unsigned_action.safety_receipt.bounds` says whether the bounds are "
            "live or modelled from the embedded snapshot; verifiers refuse modelled ones unless accepted. "
            "`preflight` (response-only, outside payload_sha256) advises what each chain of the route will need "
            "from the caller; it never refuses."
        ),
        openapi_extra=json_request_body(PREPARE_REQUEST_SCHEMA),
    )
    async def prepare_action(request: Request) -> Response:
        async def produce() -> dict[str, Any]:
            body: Any = await read_json_body(request)
            return await prepare.prepare(body)

        return await answer(limiter, request, produce)

    return api
