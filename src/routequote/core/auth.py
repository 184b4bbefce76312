"""The v1 wallet login: a sign-message-only challenge and the check of its Ed25519 signature. Pure: no I/O.

The challenge message is plain UTF-8 text, built once at start and stored; the finish step verifies the
signature over exactly those bytes (never over a message rebuilt from the caller's input). It names the
domain the login is for (the base URL's host), the wallet, a random nonce, when it was issued, when it
expires, the terms version, and says plainly that signing it cannot authorize a transaction. A Solana
wallet's `signMessage` signs these bytes with the wallet's Ed25519 key; no transaction can be built from
them (a Solana transaction's wire form starts with a signature count and a message header, never with
this text).
"""

from __future__ import annotations

from datetime import UTC, datetime

from solders.pubkey import Pubkey
from solders.signature import Signature

from routequote.core.field_rules import SOLANA_ADDRESS_RE, SOLANA_SIGNATURE_RE

LOGIN_MESSAGE_VERSION = "routequote-wallet-login-v1"
TERMS_VERSION = "routequote-terms-v1"  # the /terms page this build serves
NO_TRANSACTION_SENTENCE = (
    "Signing this message cannot authorize a transaction: it only proves you control this wallet, "
    "and it moves no funds."
)


def iso(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def login_message(
    *,
    domain: str,
    wallet: str,
    challenge_id: str,
    nonce: str,
    issued_at: datetime,
    expires_at: datetime,
    terms_version: str,
) -> str:
    """The exact text the wallet signs (SIWS-like; one field per line)."""
    return "\n".join(
        [
            f"{domain} wants you to sign in with your Solana account:",
            wallet,
            "",
            "Sign in to the routequote legacy v1 corridor sessions.",
            NO_TRANSACTION_SENTENCE,
            "",
            f"Domain: {domain}",
            f"Version: {LOGIN_MESSAGE_VERSION}",
            f"Challenge ID: {challenge_id}",
            f"Nonce: {nonce}",
            f"Issued At: {iso(issued_at)}",
            f"Expiration Time: {iso(expires_at)}",
            f"Terms Version: {terms_version}",
        ]
    )


def valid_wallet(wallet: object) -> bool:
    """A base58 Solana public key of 32 bytes (32..44 characters)."""
    if not isinstance(wallet, str) or not SOLANA_ADDRESS_RE.fullmatch(wallet):
        return False
    try:
        return len(bytes(Pubkey.from_string(wallet))) == 32
    except ValueError:
        return False


def signature_valid(*, wallet: str, message: str, signature: str) -> bool:
    """True when `signature` (base58, 64 bytes) is `wallet`'s Ed25519 signature of exactly `message`'s
    UTF-8 bytes. Malformed input is simply not valid (never an exception)."""
    if not isinstance(signature, str) or not SOLANA_SIGNATURE_RE.fullmatch(signature):
        return False  # 64 bytes in base58 are 64..88 characters
    if not valid_wallet(wallet):
        return False
    try:
        sig = Signature.from_string(signature)
        if str(sig) != signature:  # one canonical spelling (no leading-zero games)
            return False
        return bool(sig.verify(Pubkey.from_string(wallet), message.encode("utf-8")))
    except (ValueError, TypeError):
        return False


__all__ = [
    "LOGIN_MESSAGE_VERSION",
    "NO_TRANSACTION_SENTENCE",
    "TERMS_VERSION",
    "login_message",
    "signature_valid",
    "valid_wallet",
]


# ---- records kept in the session database ---------------------------------------------------------------

from dataclasses import dataclass  # noqa: E402


@dataclass(frozen=True, slots=True)
class LoginChallenge:
    """One issued challenge. `used_at` is set once, when a valid signature redeemed it."""

    challenge_id: str
    wallet: str
    message: str
    terms_version: str
    issued_at: datetime
    expires_at: datetime
    used_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class AccessGrant:
    """A wallet-bound access token, as stored: only the SHA-256 of the token, never the token."""

    token_sha256: str
    wallet: str
    challenge_id: str
    issued_at: datetime
    expires_at: datetime


__all__ += ["AccessGrant", "LoginChallenge"]
