"""REST /v2/session…: receipt-driven sessions (a translator over SessionService; the service never signs).

The capability token travels only in the `X-RouteQuote-Session-Token` header; a wrong or missing token on an
existing session is 404 `session_not_found`, exactly like an unknown id.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from routequote.contract.v2 import ErrorResponse, SessionResponse
from routequote.core.field_rules import (
    IDEMPOTENCY_KEY_PATTERN,
    MAX_TRANSACTION_IDS,
    SESSION_TOKEN_RULE,
    SESSION_TOKEN_SCHEMA,
    TRANSACTION_ID_PATTERN,
)
from routequote.core.quote import SESSION_HEADER
from routequote.core.webhook_rules import MAX_URL_LENGTH
from routequote.ratelimit import RateLimiter
from routequote.sessions import VIEWS, SessionService
from routequote.sessions.inputs import creation_token
from routequote.surfaces.http import (
    answer,
    body_pending,
    check_json_headers,
    json_request_body,
    read_json_body,
)
from routequote.surfaces.rest_prepare import IDEMPOTENCY_KEY, PREPARE_REQUEST_SCHEMA

_ERR = {"model": ErrorResponse}
_KEY = {"type": "string", "pattern": IDEMPOTENCY_KEY_PATTERN}
TOKEN_PARAM = {
    "name": SESSION_HEADER,
    "in": "header",
    "required": True,
    "description": f"the session capability, {SESSION_TOKEN_RULE}; never logged or echoed. A wrong token is "
    "404 session_not_found.",
    "schema": SESSION_TOKEN_SCHEMA,
}
_APPROVAL = PREPARE_REQUEST_SCHEMA["properties"]["approval_v3"]
WEBHOOK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["url"],
    "description": "optional: every event of the session is POSTed to url, signed by the Standard Webhooks "
    "scheme (webhook-id, webhook-timestamp, webhook-signature; HMAC-SHA256 with the secret the create answer "
    "returns), at least once and in order. https to a public address only (http and non-public addresses only "
    "for hosts the operator allows); no redirect is followed; the URL is kept sealed and never echoed.",
    "properties": {"url": {"type": "string", "minLength": 1, "maxLength": MAX_URL_LENGTH}},
}
CREATE_SCHEMA: dict[str, Any] = {
    **PREPARE_REQUEST_SCHEMA,
    "required": [*PREPARE_REQUEST_SCHEMA["required"], "approval_v3", "idempotency_key"],
    "description": PREPARE_REQUEST_SCHEMA["description"] + " Session create: the prepare body plus "
    "idempotency_key; approval_v3.selected_mode is `session`, and approval_v3.idempotency_key must equal "
    "idempotency_key (an equality JSON Schema cannot state: 400 idempotency_key_mismatch); every step of the route "
    "must be buildable by this instance (400 route_not_session_ready; GET /v2/capabilities `sessions` lists why not).",
    "properties": {
        **PREPARE_REQUEST_SCHEMA["properties"],
        "idempotency_key": IDEMPOTENCY_KEY,
        "webhook": WEBHOOK_SCHEMA,
        "approval_v3": {
            **_APPROVAL,
            "properties": {
                **_APPROVAL["properties"],
                "selected_mode": {"type": "string", "const": "session"},
            },
        },
    },
}
OBSERVE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["idempotency_key"],
    "properties": {
        "idempotency_key": _KEY,
        "transaction_hashes": {
            "type": "array",
            "maxItems": MAX_TRANSACTION_IDS,
            "uniqueItems": True,
            "description": "what you submitted for the current action: EVM transaction hashes, or one Solana "
            "signature; the service reads them from the chain itself. Omit to re-check what you named before.",
            "items": {"type": "string", "pattern": TRANSACTION_ID_PATTERN},
        },
    },
}
KEY_ONLY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["idempotency_key"],
    "properties": {"idempotency_key": _KEY},
}


def router(sessions: SessionService, limiter: RateLimiter) -> APIRouter:
    api = APIRouter(prefix="/v2")

    def token(request: Request) -> str | None:
        return request.headers.get(SESSION_HEADER)

    @api.post(
        "/session",
        operation_id="createSession",
        status_code=201,
        response_model=SessionResponse,
        responses={400: _ERR, 404: _ERR, 409: _ERR, 429: _ERR, 502: _ERR, 503: _ERR},
        summary="Create a receipt-driven session for an approved quote; returns its first unsigned action",
        description=(
            "Binds approval_v3 (selected_mode session) to the issued quote (409 reapproval_required on drift, "
            "nothing created). Idempotent per (token, idempotency_key): a replay answers the stored session with "
            "idempotent_replay true; the same key with another body is 409. One approved quote opens at most one "
            "session: a create for it with another token or another key is 409 session_exists_for_approval "
            "(no token is returned, nothing is opened)."
        ),
        openapi_extra={**json_request_body(CREATE_SCHEMA), "parameters": [TOKEN_PARAM]},
    )
    async def create(request: Request) -> Response:
        async def produce() -> Any:
            if body_pending(request):  # `Expect: 100-continue`: what the headers refuse is refused uninvited
                check_json_headers(request)
                creation_token(token(request))
            return await sessions.create(await read_json_body(request), token(request))

        return await answer(limiter, request, produce, group="session_api")

    @api.get(
        "/session/{session_id}",
        operation_id="readSession",
        responses={400: _ERR, 404: _ERR, 429: _ERR, 503: _ERR},
        summary="Read a session: session, workflow, receipt (quoted vs actual) or next_action",
        openapi_extra={
            "parameters": [  # the path's session_id comes from the signature
                TOKEN_PARAM,
                {
                    "name": "view",
                    "in": "query",
                    "required": False,
                    "schema": {"type": "string", "enum": list(VIEWS)},
                },
            ]
        },
    )
    async def read(request: Request, session_id: str) -> Response:
        async def produce() -> Any:
            return await sessions.read(session_id, token(request), request.query_params.get("view"))

        return await answer(limiter, request, produce, group="session_api")

    def mutating(path: str, op_id: str, summary: str, schema: dict[str, Any], method: str) -> None:
        @api.post(
            f"/session/{{session_id}}/{path}",
            operation_id=op_id,
            response_model=SessionResponse,
            responses={400: _ERR, 404: _ERR, 409: _ERR, 429: _ERR, 502: _ERR, 503: _ERR},
            summary=summary,
            openapi_extra={**json_request_body(schema), "parameters": [TOKEN_PARAM]},
        )
        async def handler(request: Request, session_id: str) -> Response:
            async def produce() -> Any:
                if body_pending(request):  # `Expect: 100-continue`: a token that opens no session, uninvited
                    check_json_headers(request)
                    await sessions.authorized(session_id, token(request))
                return await getattr(sessions, method)(
                    session_id, token(request), await read_json_body(request)
                )

            return await answer(limiter, request, produce, group="session_api")

    mutating(
        "observe",
        "observeSession",
        "Name what you submitted; the service reads the chain and advances only on verified actual output",
        OBSERVE_SCHEMA,
        "observe",
    )
    mutating(
        "refresh",
        "refreshSessionAction",
        "A new action for an expired, unsubmitted step, inside the approved "
        "bounds (never after an observation)",
        KEY_ONLY_SCHEMA,
        "refresh",
    )
    mutating(
        "cancel",
        "cancelSession",
        "Stop the session; the answer says where the funds are now",
        KEY_ONLY_SCHEMA,
        "cancel",
    )
    return api
