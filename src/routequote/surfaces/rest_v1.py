"""Legacy REST v1: GET /v1/status and POST /v1/quote for the two original corridors (solana SOL to
native ETH on base or on arbitrum), the wallet login (POST /v1/auth/challenge, /v1/auth/verify) and the
step-by-step corridor session (/v1/session...), with their own OpenAPI document at GET /openapi.json.

Session calls carry the login's access token as `Authorization: Bearer <token>` (401 when it is missing,
unknown or expired); a session of another wallet is 404 `session_not_found`. Every mutating call takes an
`idempotency_key` (prepare-source-action: optional, it is idempotent by the session's state).

The v1 shapes are produced by `routequote.surfaces.legacy` (shared with the MCP legacy tools) over the
same `RouteQuoteService`; this module only adds HTTP, rate limits and the OpenAPI description.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import Response

from routequote import __version__
from routequote.auth import AccessTokenInvalid, wallet_auth_for
from routequote.contract.v2 import ErrorResponse
from routequote.core.field_rules import (
    BASE58_CLASS,
    EVM_ADDRESS_PATTERN,
    EVM_TX_HASH_PATTERN,
    IDEMPOTENCY_KEY_MAX_CHARS,
    IDEMPOTENCY_KEY_MIN_CHARS,
    IDEMPOTENCY_KEY_PATTERN,
    SOLANA_ADDRESS_PATTERN,
    V1_SIGNATURE_MAX_CHARS,
    V1_SIGNATURE_MIN_CHARS,
    V1_UUID_PATTERN,
    V1_WALLET_MAX_CHARS,
    V1_WALLET_MIN_CHARS,
)
from routequote.errors import RouteQuoteError
from routequote.ratelimit import RateLimiter
from routequote.service import RouteQuoteService
from routequote.surfaces.errors import error_response, json_response
from routequote.surfaces.http import (
    answer,
    body_pending,
    check_json_headers,
    client_key,
    count,
    json_request_body,
    read_json_body,
    schema_ref,
    settle_count,
)
from routequote.surfaces.legacy import DEFAULT_DESTINATION, legacy_quote, legacy_status, v1_session_operation

V1_OPENAPI_VERSION = "1.0.0-legacy"
_ERR = {"model": ErrorResponse}
_LOGIN = frozenset({"start_wallet_auth", "finish_wallet_auth"})  # the v1 operations taking no access token


class LegacyQuoteRequest(BaseModel):
    """solana SOL -> native ETH on `destination_chain`; nothing else is accepted."""

    model_config = ConfigDict(extra="forbid")
    amount_usd: int = Field(ge=1, le=1000, description="Whole USD notional; no funds move")
    destination_chain: Literal["base", "arbitrum"] = Field(DEFAULT_DESTINATION, description="Default base")


class LegacyCorridorQuoteRequest(BaseModel):
    """The same corridor spelled out, as the public MCP adapter of this v1 sends it."""

    model_config = ConfigDict(extra="forbid")
    from_chain: Literal["solana"]
    from_token: Literal["SOL"]
    to_chain: Literal["base", "arbitrum"]
    to_token: Literal["ETH"]
    amount_usd: int = Field(ge=1, le=1000, description="Whole USD notional; no funds move")


class LegacyCorridor(BaseModel):
    model_config = ConfigDict(extra="allow")
    corridor: str
    destination_chain: Literal["base", "arbitrum"]
    quotable: bool
    prepare_ready: bool


class LegacyStatusResponse(BaseModel):
    model_config = ConfigDict(extra="allow")
    api_version: str
    status: Literal["capped_public_agent_release"]
    corridors: list[LegacyCorridor] = Field(min_length=2, max_length=2)
    server_signing: Literal[False]
    server_submission: Literal[False]


class LegacyQuoteResponse(BaseModel):
    """The v2 quote of the corridor, untouched (its hashes still verify), under `quote`."""

    model_config = ConfigDict(extra="allow")
    api_version: str
    status: Literal["capped_public_agent_release"]
    corridor: str
    destination_chain: Literal["base", "arbitrum"]
    quote_id: str
    current_interface: str
    quote: dict[str, Any]
    server_signing: Literal[False]
    server_submission: Literal[False]


# ---- v1 wallet login and corridor session shapes --------------------------------------------------------

# the v1 shapes of core/field_rules.py (`V1_*`): a UUID in either case, a signature of 64..128 characters
_KEY = Field(
    min_length=IDEMPOTENCY_KEY_MIN_CHARS,
    max_length=IDEMPOTENCY_KEY_MAX_CHARS,
    pattern=IDEMPOTENCY_KEY_PATTERN,
)
_SOL_SIG = Field(
    min_length=V1_SIGNATURE_MIN_CHARS, max_length=V1_SIGNATURE_MAX_CHARS, pattern=f"^{BASE58_CLASS}+$"
)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class WalletAuthStartRequest(_Strict):
    source_wallet: str = Field(
        min_length=32,
        max_length=44,
        pattern=SOLANA_ADDRESS_PATTERN,
        description="Solana public key: base58 that must decode to 32 bytes, on the Ed25519 curve, and no "
        "program, mint or fee recipient (else 400 invalid_source_wallet)",
    )


class WalletAuthChallenge(BaseModel):
    """A sign-message-only login challenge: sign `message` (UTF-8 bytes) with the wallet's signMessage."""

    model_config = ConfigDict(extra="allow")
    challenge_id: str
    source_wallet: str
    message: str
    domain: str
    issued_at: str
    expires_at: str
    terms_version: str
    sign_message_only: Literal[True]
    can_authorize_transaction: Literal[False]


class WalletAuthFinishRequest(_Strict):
    challenge_id: str = Field(pattern=V1_UUID_PATTERN)
    source_wallet: str = Field(
        min_length=32,
        max_length=44,
        pattern=SOLANA_ADDRESS_PATTERN,
        description="The wallet the challenge was issued for (base58, 32 bytes)",
    )
    signature: str = Field(
        min_length=V1_SIGNATURE_MIN_CHARS,
        max_length=V1_SIGNATURE_MAX_CHARS,
        description="base58 Ed25519 signature of the message",
    )
    terms_version: str = Field(min_length=1, max_length=160)


class WalletAuthToken(BaseModel):
    """Returned once. Stored by the service only as its SHA-256; send it as `Authorization: Bearer`."""

    model_config = ConfigDict(extra="allow")
    access_token: str = Field(description="Sensitive: never log it")
    token_type: Literal["Bearer"]
    source_wallet: str
    expires_at: str
    expires_in_seconds: int


class V1SessionCreateRequest(_Strict):
    quote_id: str = Field(pattern=V1_UUID_PATTERN, description="A fresh quote from POST /v1/quote")
    idempotency_key: str = _KEY
    source_wallet: str = Field(
        min_length=32,
        max_length=44,
        pattern=SOLANA_ADDRESS_PATTERN,
        description="Must be the logged-in wallet",
    )
    destination_wallet: str = Field(
        pattern=EVM_ADDRESS_PATTERN,
        description="An EVM wallet that can sign: not zero, not a token or protocol contract, a valid EIP-55 "
        "checksum if mixed case, not the fee recipient (else 400 invalid_destination_wallet)",
    )


class V1PrepareSourceRequest(_Strict):
    idempotency_key: str | None = Field(
        None,
        min_length=IDEMPOTENCY_KEY_MIN_CHARS,
        max_length=IDEMPOTENCY_KEY_MAX_CHARS,
        pattern=IDEMPOTENCY_KEY_PATTERN,
    )


class V1VerifySourceRequest(_Strict):
    signature: str = _SOL_SIG
    idempotency_key: str = _KEY


class V1PrepareCctpRequest(_Strict):
    event_signer_public: str = Field(
        min_length=V1_WALLET_MIN_CHARS,
        max_length=V1_WALLET_MAX_CHARS,
        description="A fresh keypair's public key",
    )
    idempotency_key: str = _KEY


class V1ObserveCctpRequest(_Strict):
    burn_signature: str = _SOL_SIG
    idempotency_key: str = _KEY


class V1PrepareDestinationRequest(_Strict):
    idempotency_key: str = _KEY


class V1ObserveDestinationRequest(_Strict):
    transaction_hash: str = Field(pattern=EVM_TX_HASH_PATTERN)
    idempotency_key: str = _KEY


class V1Session(BaseModel):
    """One corridor session (the same record as /v2/session, `mode: v1_corridor`). `status` follows the one
    state machine (docs/sessions.md); `action_required` means: ask for the next step's action."""

    model_config = ConfigDict(extra="allow")
    session_id: str
    status: Literal[
        "action_required",
        "action_ready",
        "awaiting_source_receipt",
        "awaiting_destination",
        "action_expired",
        "reapproval_required",
        "complete",
        "cancelled",
        "failed",
    ]
    next_operation: Literal["prepare_action", "submit_current_action", "observe", "refresh_action", "none"]
    mode: Literal["v1_corridor"]
    route: str
    current_step: int
    view: Literal["session", "workflow", "receipt", "next_action"]
    idempotent_replay: bool
    server_signing: Literal[False]
    server_submission: Literal[False]


V1_BODIES: dict[str, type[BaseModel]] = {
    "WalletAuthStartRequest": WalletAuthStartRequest,
    "WalletAuthFinishRequest": WalletAuthFinishRequest,
    "V1SessionCreateRequest": V1SessionCreateRequest,
    "V1PrepareSourceRequest": V1PrepareSourceRequest,
    "V1VerifySourceRequest": V1VerifySourceRequest,
    "V1PrepareCctpRequest": V1PrepareCctpRequest,
    "V1ObserveCctpRequest": V1ObserveCctpRequest,
    "V1PrepareDestinationRequest": V1PrepareDestinationRequest,
    "V1ObserveDestinationRequest": V1ObserveDestinationRequest,
}
_BEARER: list[dict[str, list[str]]] = [{"bearerAuth": []}]


def _body(name: str, security: bool = True) -> dict[str, Any]:
    extra = json_request_body(schema_ref(name))
    if security:
        extra["security"] = _BEARER
    return extra


def _bearer(request: Request) -> str | None:
    value = request.headers.get("authorization", "")
    scheme, _, token = value.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


async def _v1_answer(
    limiter: RateLimiter,
    request: Request,
    operation: str,
    *,
    body: bool = True,
    session_id: str | None = None,
    args: dict[str, Any] | None = None,
) -> Response:
    """answer() for the v1 session surface: an invalid access token is 401 with `WWW-Authenticate`."""
    headers: dict[str, str] = {}
    try:
        headers = await count(limiter, request, "v1_session")
        token = _bearer(request)
        if body and body_pending(request) and operation not in _LOGIN:
            # `Expect: 100-continue`: an access token that is missing, unknown or expired is refused uninvited
            check_json_headers(request)
            await wallet_auth_for(request.app.state).wallet_for(token)
        payload = await read_json_body(request) if body else (args or {})
        status, out = await v1_session_operation(
            request.app.state,
            operation,
            payload,
            token=token,
            session_id=session_id,
            client=client_key(request),
        )
        return json_response(out, status, headers=headers)
    except AccessTokenInvalid as exc:
        await settle_count(request)  # refused before its body was asked for: counted, as an eager read was
        out_headers = {**headers, "WWW-Authenticate": 'Bearer realm="routequote-v1"'}
        return json_response(exc.body(), 401, headers=out_headers)
    except RouteQuoteError as exc:
        await settle_count(request)
        return error_response(exc, headers)


def router(service: RouteQuoteService, limiter: RateLimiter) -> APIRouter:
    """The /v1 routes and GET /openapi.json describing exactly them."""
    v1 = APIRouter(prefix="/v1", tags=["legacy-v1"], deprecated=False)

    @v1.get(
        "/status",
        operation_id="getLegacyStatus",
        response_model=LegacyStatusResponse,
        responses={429: _ERR, 503: _ERR},
        summary="Status of the two original corridors and their safety gates",
    )
    async def status(request: Request) -> Response:
        async def produce() -> dict[str, Any]:
            return legacy_status(service)

        return await answer(limiter, request, produce)

    @v1.post(
        "/quote",
        operation_id="quoteLegacyCorridor",
        response_model=LegacyQuoteResponse,
        responses={400: _ERR, 429: _ERR, 502: _ERR, 503: _ERR},
        summary="One fresh quote for solana SOL -> ETH on base or arbitrum (moves no funds)",
        openapi_extra=json_request_body(
            {"anyOf": [schema_ref("LegacyQuoteRequest"), schema_ref("LegacyCorridorQuoteRequest")]}
        ),
    )
    async def quote(request: Request) -> Response:
        async def produce() -> dict[str, Any]:
            return await legacy_quote(service, await read_json_body(request))

        return await answer(limiter, request, produce)

    _errs: dict[int | str, dict[str, Any]] = {
        400: _ERR,
        401: _ERR,
        404: _ERR,
        409: _ERR,
        429: _ERR,
        503: _ERR,
    }

    @v1.post(
        "/auth/challenge",
        operation_id="startWalletAuth",
        response_model=WalletAuthChallenge,
        responses={400: _ERR, 429: _ERR, 503: _ERR},
        openapi_extra=_body("WalletAuthStartRequest", False),
        summary="Wallet login, step 1: a sign-message-only challenge (cannot authorize a transaction)",
    )
    async def auth_challenge(request: Request) -> Response:
        return await _v1_answer(limiter, request, "start_wallet_auth")

    @v1.post(
        "/auth/verify",
        operation_id="finishWalletAuth",
        response_model=WalletAuthToken,
        responses={400: _ERR, 429: _ERR, 503: _ERR},
        openapi_extra=_body("WalletAuthFinishRequest", False),
        summary="Wallet login, step 2: the Ed25519 signature of the challenge -> a wallet-bound access token",
    )
    async def auth_verify(request: Request) -> Response:
        return await _v1_answer(limiter, request, "finish_wallet_auth")

    @v1.post(
        "/session",
        operation_id="createLegacySession",
        response_model=V1Session,
        status_code=201,
        responses=_errs,
        openapi_extra=_body("V1SessionCreateRequest"),
        summary="Lock a fresh corridor quote into one wallet-bound session (creates no transaction)",
    )
    async def create_session(request: Request) -> Response:
        return await _v1_answer(limiter, request, "create_session")

    @v1.get(
        "/session/{session_id}",
        operation_id="readLegacySession",
        response_model=V1Session,
        responses=_errs,
        openapi_extra={"security": _BEARER},
        summary="Read a corridor session: view session | workflow | receipt | next_action",
        description=(
            "The view may also be a path segment: GET /v1/session/{session_id}/workflow, /receipt or "
            "/next-action. POST /v1/session/{session_id}/verify-source is the same as verify-source-receipt."
        ),
    )
    async def read_session(
        request: Request,
        session_id: str,
        view: Literal["session", "workflow", "receipt", "next_action"] = Query("session"),
    ) -> Response:
        return await _v1_answer(
            limiter,
            request,
            "read_session",
            body=False,
            session_id=session_id,
            args={"view": request.query_params.get("view")},
        )

    # the public MCP adapter reads a view as a path segment (`/workflow`, `/receipt`, `/next-action`) and
    # posts the source receipt to `/verify-source`: the same operations, kept out of the document
    def read_view(view: str) -> Any:
        async def endpoint(request: Request, session_id: str) -> Response:
            return await _v1_answer(
                limiter, request, "read_session", body=False, session_id=session_id, args={"view": view}
            )

        return endpoint

    for segment, view_name in (
        ("workflow", "workflow"),
        ("receipt", "receipt"),
        ("next-action", "next_action"),
    ):
        v1.add_api_route(
            f"/session/{{session_id}}/{segment}",
            read_view(view_name),
            methods=["GET"],
            include_in_schema=False,
        )

    async def verify_source_alias(request: Request, session_id: str) -> Response:
        return await _v1_answer(limiter, request, "verify_source_receipt", session_id=session_id)

    v1.add_api_route(
        "/session/{session_id}/verify-source", verify_source_alias, methods=["POST"], include_in_schema=False
    )

    steps = (
        (
            "prepare-source-action",
            "prepare_source_action",
            "prepareLegacySourceAction",
            "V1PrepareSourceRequest",
            "Step 1: the unsigned Raydium SOL->USDC swap (1 bp fee)",
        ),
        (
            "verify-source-receipt",
            "verify_source_receipt",
            "verifyLegacySourceReceipt",
            "V1VerifySourceRequest",
            "Step 1 done: the finalized signature; the actual USDC from its token balance deltas",
        ),
        (
            "prepare-cctp-action",
            "prepare_cctp_action",
            "prepareLegacyCctpAction",
            "V1PrepareCctpRequest",
            "Step 2: the unsigned CCTP v2 deposit_for_burn of the actual USDC (fast finality, bounded max_fee)",
        ),
        (
            "observe-cctp",
            "observe_cctp",
            "observeLegacyCctp",
            "V1ObserveCctpRequest",
            "Step 2 done: the burn, Circle's attestation and the relayed mint on the destination",
        ),
        (
            "prepare-destination-action",
            "prepare_destination_action",
            "prepareLegacyDestinationAction",
            "V1PrepareDestinationRequest",
            "Step 3: the unsigned ERC-4337 settlement plan (permit, swap to ETH)",
        ),
        (
            "observe-destination",
            "observe_destination",
            "observeLegacyDestination",
            "V1ObserveDestinationRequest",
            "Step 3 done: the handleOps transaction of the user operation; the ETH received completes the session",
        ),
    )
    for path, operation, op_id, schema, summary in steps:

        def make(operation: str = operation) -> Any:
            async def endpoint(request: Request, session_id: str) -> Response:
                return await _v1_answer(limiter, request, operation, session_id=session_id)

            return endpoint

        v1.add_api_route(
            f"/session/{{session_id}}/{path}",
            make(),
            methods=["POST"],
            operation_id=op_id,
            response_model=V1Session,
            responses=_errs,
            openapi_extra=_body(schema),
            summary=summary,
        )

    cache: dict[str, dict[str, Any]] = {}

    def openapi_document() -> dict[str, Any]:
        if "doc" not in cache:
            doc = get_openapi(
                title="routequote legacy v1",
                version=V1_OPENAPI_VERSION,
                description=(
                    "Legacy v1: only the two original corridors, solana SOL to native ETH on base or arbitrum. "
                    "v2 (/v2/openapi.json) is the current interface. The service never signs and never submits."
                ),
                routes=v1.routes,
            )
            schemas = doc.setdefault("components", {}).setdefault("schemas", {})
            schemas["LegacyQuoteRequest"] = LegacyQuoteRequest.model_json_schema()
            schemas["LegacyCorridorQuoteRequest"] = LegacyCorridorQuoteRequest.model_json_schema()
            for name, model in V1_BODIES.items():
                schemas[name] = model.model_json_schema()
            doc["components"]["securitySchemes"] = {
                "bearerAuth": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "The access token of the v1 wallet login (POST /v1/auth/verify)",
                }
            }
            doc["info"]["x-build-version"] = __version__
            doc["x-current-interface"] = "/v2/openapi.json"
            doc["x-service-safety"] = {"server_signing": False, "server_submission": False, "legacy": True}
            cache["doc"] = doc
        return cache["doc"]

    root = APIRouter(include_in_schema=False)

    @root.get("/openapi.json")
    async def openapi_v1() -> Response:
        """OpenAPI description of legacy v1."""
        return json_response(openapi_document())

    outer = APIRouter()
    outer.include_router(v1, include_in_schema=False)
    outer.include_router(root)
    return outer
