"""The one home of each request-field rule that more than one surface reads (pure: no I/O).

REST v2, v1, MCP, A2A, the OpenAPI documents and the Python client all take these definitions: a pattern
for the schemas, a predicate for the client, and a `check_*` that raises the service's 400 for the server.

- the JSON body (or tool arguments) must be an object, with known and required fields (`object_fields`);
- `idempotency_key`: 8..128 characters of `[A-Za-z0-9._:-]`;
- the session token: exactly 43 base64url characters (32 random bytes, 256 bits, unpadded), the A2A
  `sessionToken` capability of the spec, and not plainly non-random (`session_token_problem`);
- a session id (a lower-case UUID), a transaction id (an EVM hash or a Solana signature, at most 8 per call),
  the syntax of public addresses (EVM `0x` + 40 hex, Solana base58 of 32..44 characters);
- the v1 shapes the spec's v1 tool table fixes, deliberately wider or looser than the rules above and named
  `V1_*`: a UUID in either case, a signature of 64..128 characters, a wallet of 32..64 characters.

Whether a wallet can sign (on curve, not a program, mint, token contract or fee recipient) is
`core/wallet_rules.py`.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any, Final, TypeGuard

from routequote.errors import InvalidRequest

# ---- the request body ---------------------------------------------------------------------------------


def require_object(body: Any) -> dict[str, Any]:
    """The body as a dict, or 400 body_not_object."""
    if not isinstance(body, dict):
        raise InvalidRequest("body_not_object", "the request body must be a JSON object")
    return body


def object_fields(body: Any, required: Collection[str], optional: Collection[str] = ()) -> dict[str, Any]:
    """An object with only `required` and `optional` fields and every `required` one: 400 body_not_object,
    unknown_field (how many, and the allowed names; never the caller's names) or missing_field."""
    fields = require_object(body)
    allowed = set(required) | set(optional)
    extra = sorted(set(fields) - allowed)
    if extra:
        raise InvalidRequest(
            "unknown_field",
            f"{len(extra)} properties not allowed (allowed: {', '.join(sorted(allowed)) or 'none'})",
        )
    missing = sorted(set(required) - set(fields))
    if missing:
        raise InvalidRequest("missing_field", f"required: {', '.join(missing)}")
    return dict(fields)


# ---- idempotency keys ---------------------------------------------------------------------------------

IDEMPOTENCY_KEY_MIN_CHARS: Final = 8
IDEMPOTENCY_KEY_MAX_CHARS: Final = 128
IDEMPOTENCY_KEY_PATTERN: Final = "^[A-Za-z0-9._:-]{8,128}$"
IDEMPOTENCY_KEY_RE: Final = re.compile(IDEMPOTENCY_KEY_PATTERN[1:-1])  # always fullmatch
IDEMPOTENCY_KEY_SCHEMA: Final[dict[str, Any]] = {
    "type": "string",
    "minLength": IDEMPOTENCY_KEY_MIN_CHARS,
    "maxLength": IDEMPOTENCY_KEY_MAX_CHARS,
    "pattern": IDEMPOTENCY_KEY_PATTERN,
}


def is_idempotency_key(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and IDEMPOTENCY_KEY_RE.fullmatch(value) is not None


def idempotency_key_message(field: str = "idempotency_key") -> str:
    return f"{field} must match {IDEMPOTENCY_KEY_PATTERN}"


def check_idempotency_key(value: object, field: str = "idempotency_key") -> str:
    """`value` if it is a valid idempotency key, else 400 invalid_idempotency_key naming `field`."""
    if not is_idempotency_key(value):
        raise InvalidRequest("invalid_idempotency_key", idempotency_key_message(field))
    return value


# ---- session tokens -----------------------------------------------------------------------------------

SESSION_TOKEN_CHARS: Final = 43  # 32 bytes, base64url without padding
SESSION_TOKEN_PATTERN: Final = "^[A-Za-z0-9_-]{43}$"
SESSION_TOKEN_RE: Final = re.compile(SESSION_TOKEN_PATTERN[1:-1])
SESSION_TOKEN_SCHEMA: Final[dict[str, Any]] = {
    "type": "string",
    "minLength": SESSION_TOKEN_CHARS,
    "maxLength": SESSION_TOKEN_CHARS,
    "pattern": SESSION_TOKEN_PATTERN,
}
SESSION_TOKEN_RULE: Final = (
    "caller-generated: 32 random bytes (256 bits), base64url without padding, exactly 43 characters; "
    "plainly non-random tokens (few distinct characters, a short repeat, a sequence) are refused; "
    "stored only as SHA-256"
)
_B64URL: Final = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
# 43 characters drawn at random from 64 show ~31 distinct ones; 15 or fewer happens with p < 1e-12
MIN_DISTINCT_TOKEN_CHARS: Final = 16
# a token (or its steps through the alphabet) repeating with a period of at most 32 carries at most 32 random
# characters; a random token does so with p < 1e-16
MAX_TOKEN_PATTERN_PERIOD: Final = 32


def shortest_period(values: list[int]) -> int:
    """The least p with values[i] == values[i - p] for every i >= p, or len(values). A period p needs
    values[p] == values[0], so only those p (about 1 in 64 for a random token) compare two slices."""
    n = len(values)
    for p in range(1, n):
        if values[p] == values[0] and values[p:] == values[: n - p]:
            return p
    return n


def session_token_problem(token: object) -> str | None:
    """Why `token` is not a session token (a message that never repeats it), or None.

    Beyond the format, a token that is plainly not random is refused: fewer than 16 distinct characters
    (one repeated character, 43 x 'A' or any other constant of few characters), a repeat of a piece of at most
    32 characters, or a run whose steps through the base64url alphabet repeat with a period of at most 32
    (ABCDEF..., ACEGI..., a shifted repeat)."""
    if not isinstance(token, str) or not SESSION_TOKEN_RE.fullmatch(token):
        return "the session token must be exactly 43 base64url characters (32 random bytes, 256 bits)"
    if len(set(token)) < MIN_DISTINCT_TOKEN_CHARS:
        return "the session token is plainly not random (too few distinct characters): use 32 random bytes"
    idx = [_B64URL.index(ch) for ch in token]
    if shortest_period(idx) <= MAX_TOKEN_PATTERN_PERIOD:
        return "the session token is plainly not random (a short repeat): use 32 random bytes"
    steps = [(b - a) % 64 for a, b in zip(idx, idx[1:], strict=False)]
    if shortest_period(steps) <= MAX_TOKEN_PATTERN_PERIOD:
        return "the session token is plainly not random (a sequence): use 32 random bytes"
    return None


def is_session_token(token: object) -> TypeGuard[str]:
    return session_token_problem(token) is None


def check_session_token(token: object) -> str:
    """`token` if it is a session token, else 400 session_token_invalid (the message never repeats it)."""
    problem = session_token_problem(token)
    if problem is not None:
        raise InvalidRequest("session_token_invalid", problem)
    assert isinstance(token, str)
    return token


# ---- ids, transaction ids, address syntax ---------------------------------------------------------------

UUID_PATTERN: Final = "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"  # lower case
UUID_RE: Final = re.compile(UUID_PATTERN[1:-1])
SESSION_ID_RE: Final = UUID_RE
# The ids this service issues (quotes, sessions, challenges): version-4 UUIDs in lower case. The peers' wire
# checks a quote id against it before any lookup.
ISSUED_UUID4_RE: Final = re.compile("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
# v1 shape, deliberately different: the spec's v1 tool table says "uuid", and RFC 4122 reads its hex digits in
# either case; the v1 engine lower-cases the id before any lookup. The v2 shapes take the issued lower case.
V1_UUID_PATTERN: Final = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
V1_UUID_RE: Final = re.compile(V1_UUID_PATTERN[1:-1])
EVM_TX_HASH_PATTERN: Final = "^0x[0-9a-fA-F]{64}$"
EVM_TX_HASH_RE: Final = re.compile(EVM_TX_HASH_PATTERN[1:-1])
BASE58_CLASS: Final = "[1-9A-HJ-NP-Za-km-z]"  # Bitcoin's alphabet: no 0, O, I, l
# A Solana transaction signature is an Ed25519 signature, 64 bytes, written in base58: 64 characters when every
# byte is zero (each leading zero byte is one "1") up to 88 for 2**512 - 1 (64 x log(256) / log(58) = 87.4).
SOLANA_SIGNATURE_MIN_CHARS: Final = 64
SOLANA_SIGNATURE_MAX_CHARS: Final = 88
SOLANA_SIGNATURE_PATTERN: Final = f"^{BASE58_CLASS}{{64,88}}$"
SOLANA_SIGNATURE_RE: Final = re.compile(SOLANA_SIGNATURE_PATTERN[1:-1])
TRANSACTION_ID_PATTERN: Final = f"^(0x[0-9a-fA-F]{{64}}|{BASE58_CLASS}{{64,88}})$"
MAX_TRANSACTION_IDS: Final = 8  # per observe call
# v1 shape, deliberately different: the spec's v1 tool table gives `signature` and `burn_signature` (and the
# wallet login's signature) as "string 64..128". The v1 input shape keeps that width; anything it admits beyond
# 88 characters is no base58 signature and is refused by the signature rule above (400), never looked up.
V1_SIGNATURE_MIN_CHARS: Final = 64
V1_SIGNATURE_MAX_CHARS: Final = 128
EVM_ADDRESS_PATTERN: Final = "^0x[0-9a-fA-F]{40}$"
EVM_ADDRESS_RE: Final = re.compile(EVM_ADDRESS_PATTERN[1:-1])
SOLANA_ADDRESS_PATTERN: Final = f"^{BASE58_CLASS}{{32,44}}$"
SOLANA_ADDRESS_RE: Final = re.compile(SOLANA_ADDRESS_PATTERN[1:-1])
# v1 shape, deliberately different: the spec's v1 tool table gives `source_wallet` and `event_signer_public` as
# "string 32..64"; the wallet rule (32..44 base58 decoding to 32 bytes, core/wallet_rules.py) decides after.
V1_WALLET_MIN_CHARS: Final = 32
V1_WALLET_MAX_CHARS: Final = 64


def is_v1_signature_shape(value: object) -> TypeGuard[str]:
    """The v1 shape of a signature field: a string of 64..128 characters (its content is checked after)."""
    return isinstance(value, str) and V1_SIGNATURE_MIN_CHARS <= len(value) <= V1_SIGNATURE_MAX_CHARS
