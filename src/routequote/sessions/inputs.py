"""The session operations' request rules (bodies, keys, tokens, transaction names). A wrong one is a 400
that changes nothing."""

from __future__ import annotations

import hashlib
from typing import Any

from routequote.core.field_rules import (
    EVM_ADDRESS_RE,
    MAX_TRANSACTION_IDS,
    SESSION_ID_RE,
    check_idempotency_key,
    check_session_token,
    is_session_token,
    object_fields,
    require_object,
)
from routequote.core.hashing import canonical_sha256
from routequote.core.sessions.evidence import EVM_TX_RE, SOLANA_SIG_RE
from routequote.errors import InvalidRequest

UUID_RE = SESSION_ID_RE  # the field rules live in core/field_rules.py
MAX_TX_IDS = MAX_TRANSACTION_IDS
__all__ = ["EVM_ADDRESS_RE", "UUID_RE", "is_session_token"]


def operation_sha256(operation: str, body: dict[str, Any]) -> str:
    """The request hash an idempotency record keeps: the operation and the body, so a key replays only the
    same operation with the same body (refresh and cancel with one key: 409, never each other's answer)."""
    return canonical_sha256({"operation": f"v2_{operation}", **body})


def token_sha256(token: str) -> str:
    return hashlib.sha256(token.encode("ascii")).hexdigest()


def v1_wallet_binding(wallet: str) -> str:
    """The `token_sha256` of a v1 corridor session: bound to the wallet (any live access token of that wallet
    reaches it). A v2 capability token is base64url without ':' so its hash can never be this value."""
    return hashlib.sha256(f"routequote-v1-wallet:{wallet}".encode()).hexdigest()


def creation_token(token: str | None) -> str:
    if not token:
        raise InvalidRequest(
            "session_token_required",
            "send a caller-generated session token (32 random bytes, base64url, 43 characters) in the "
            "X-RouteQuote-Session-Token header",
        )
    return token_sha256(check_session_token(token))


def body_object(body: Any) -> dict[str, Any]:
    return require_object(body)


def idempotency_key(fields: dict[str, Any]) -> str:
    return check_idempotency_key(fields.get("idempotency_key"))


def observe_body(body: Any) -> tuple[str, list[str]]:
    body = body_object(body)
    extra = sorted(set(body) - {"idempotency_key", "transaction_hashes"})
    if extra:
        raise InvalidRequest(
            "unknown_field",
            f"{len(extra)} properties not allowed (allowed: idempotency_key, transaction_hashes)",
        )
    key = idempotency_key(body)
    hashes = body.get("transaction_hashes", [])
    if not isinstance(hashes, list) or len(hashes) > MAX_TX_IDS:
        raise InvalidRequest(
            "transaction_hashes_invalid", f"transaction_hashes must be a list of at most {MAX_TX_IDS}"
        )
    for h in hashes:
        if not isinstance(h, str) or not (EVM_TX_RE.fullmatch(h) or SOLANA_SIG_RE.fullmatch(h)):
            raise InvalidRequest(
                "transaction_hash_invalid",
                "each transaction hash must be 0x + 64 hex (EVM) or a base58 Solana signature",
            )
    if len(set(h.lower() if h.startswith("0x") else h for h in hashes)) != len(hashes):
        raise InvalidRequest("transaction_hashes_duplicate", "transaction_hashes must not repeat")
    return key, hashes


def key_only_body(body: Any) -> str:
    body = body_object(body)
    extra = sorted(set(body) - {"idempotency_key"})
    if extra:
        raise InvalidRequest(
            "unknown_field", f"{len(extra)} properties not allowed (allowed: idempotency_key)"
        )
    return idempotency_key(body)


def v1_fields(body: Any, required: set[str], optional: set[str] | None = None) -> dict[str, Any]:
    return object_fields(body, required, optional or set())
