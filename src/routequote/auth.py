"""The v1 wallet login (sign-message only) and its wallet-bound access tokens.

start(`source_wallet`) issues a challenge: an id and a message (`core.auth.login_message`) naming the
domain, the wallet, a random nonce, issued-at, expiry and the terms version, saying plainly that signing it
cannot authorize a transaction. finish(`challenge_id`, `source_wallet`, `signature`, `terms_version`)
checks the Ed25519 signature over the exact stored message bytes and, in one database transaction, marks
the challenge used and stores the SHA-256 of a fresh random access token bound to the wallet; the token is
returned once, never stored, never logged. Challenges are single use and expire; an expired, replayed,
wrong-wallet, wrong-terms or badly signed attempt is refused with its own reason and changes nothing.
Attempts are rate limited per wallet and per client (`ratelimit.RateLimiter`, Redis-shared when
configured). Challenges and grants live in the session database, so every replica sees them.

Settings: ROUTEQUOTE_LOGIN_RATE_LIMIT (default 20/minute, per wallet and per client, or `off`),
ROUTEQUOTE_LOGIN_CHALLENGE_TTL_SECONDS (default 300), ROUTEQUOTE_ACCESS_TOKEN_TTL_SECONDS (default 3600).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol
from urllib.parse import urlsplit

import structlog

from routequote.config import Settings
from routequote.core.assets import ChainFamily
from routequote.core.auth import (
    TERMS_VERSION,
    AccessGrant,
    LoginChallenge,
    login_message,
    signature_valid,
)
from routequote.core.field_rules import (
    UUID_RE,
    V1_SIGNATURE_MAX_CHARS,
    V1_SIGNATURE_MIN_CHARS,
    is_v1_signature_shape,
    object_fields,
)
from routequote.core.wallet_rules import KnownAddresses, check_signing_wallet, known_addresses
from routequote.errors import InvalidRequest, RouteQuoteError
from routequote.ports import Clock, IdFactory
from routequote.ratelimit import RateLimiter
from routequote.store_errors import stored

ACCESS_TOKEN_PREFIX = "rqv1_"
ACCESS_TOKEN_RE = re.compile(r"rqv1_[A-Za-z0-9_-]{43}")
START_FIELDS = frozenset({"source_wallet"})
FINISH_FIELDS = frozenset({"challenge_id", "source_wallet", "signature", "terms_version"})
log = structlog.get_logger("routequote.auth")  # challenge ids and outcomes only: never a token or a signature


class AccessTokenInvalid(InvalidRequest):
    """The access token is missing, malformed, unknown or expired (REST 401)."""

    error = "unauthorized"


class LoginStore(Protocol):
    async def put_challenge(self, challenge: LoginChallenge) -> None: ...

    async def get_challenge(self, challenge_id: str) -> LoginChallenge | None: ...

    async def redeem_challenge(self, challenge_id: str, now: datetime, grant: AccessGrant) -> bool: ...

    async def get_grant(self, token_sha256: str) -> AccessGrant | None: ...


def access_token_sha256(token: str) -> str:
    return hashlib.sha256(token.encode("ascii")).hexdigest()


@dataclass
class WalletAuth:
    store: LoginStore
    clock: Clock
    ids: IdFactory
    base_url: str
    limiter: RateLimiter
    challenge_ttl_seconds: int = 300
    token_ttl_seconds: int = 3600
    terms_version: str = TERMS_VERSION
    known: KnownAddresses = field(default_factory=known_addresses)  # what no signing wallet may be

    @classmethod
    def from_settings(cls, store: LoginStore, clock: Clock, ids: IdFactory, settings: Settings) -> WalletAuth:
        return cls(
            store,
            clock,
            ids,
            settings.resolved_base_url(),
            RateLimiter(settings.login_rate_limit, settings.redis_url),
            settings.login_challenge_ttl_seconds,
            settings.access_token_ttl_seconds,
            known=known_addresses(fee_recipients={ChainFamily.SOLANA: settings.fee_recipient_solana}),
        )

    @property
    def domain(self) -> str:
        return urlsplit(self.base_url).netloc or self.base_url

    async def _limit(self, wallet: str, client: str) -> None:
        await self.limiter.check(f"wallet:{wallet}", "wallet_login")
        await self.limiter.check(f"client:{client}", "wallet_login")

    @staticmethod
    def _fields(body: Any, allowed: frozenset[str]) -> dict[str, Any]:
        return object_fields(body, allowed)

    def _wallet(self, value: Any) -> str:
        return check_signing_wallet(
            ChainFamily.SOLANA, value, self.known, reason="invalid_source_wallet", field="source_wallet"
        )

    # ---- start --------------------------------------------------------------------------------------

    async def start(self, body: Any, client: str) -> dict[str, Any]:
        fields = self._fields(body, START_FIELDS)
        wallet = self._wallet(fields["source_wallet"])
        await self._limit(wallet, client)
        now = self.clock.now()
        expires = now + timedelta(seconds=self.challenge_ttl_seconds)
        challenge_id = self.ids.new_id()
        message = login_message(
            domain=self.domain,
            wallet=wallet,
            challenge_id=challenge_id,
            nonce=secrets.token_urlsafe(24),
            issued_at=now,
            expires_at=expires,
            terms_version=self.terms_version,
        )
        await stored(
            self.store.put_challenge(
                LoginChallenge(challenge_id, wallet, message, self.terms_version, now, expires)
            )
        )
        log.info("wallet_login_challenge_issued", challenge_id=challenge_id)
        return {
            "challenge_id": challenge_id,
            "source_wallet": wallet,
            "message": message,
            "message_encoding": "utf-8",
            "domain": self.domain,
            "issued_at": message.split("Issued At: ", 1)[1].split("\n", 1)[0],
            "expires_at": message.split("Expiration Time: ", 1)[1].split("\n", 1)[0],
            "terms_version": self.terms_version,
            "sign_message_only": True,
            "can_authorize_transaction": False,
            "instructions": "sign the exact message bytes with the wallet's signMessage (Ed25519), then finish "
            "with challenge_id, source_wallet, the base58 signature and terms_version",
            "server_signing": False,
            "server_submission": False,
        }

    # ---- finish -------------------------------------------------------------------------------------

    async def finish(self, body: Any, client: str) -> dict[str, Any]:
        fields = self._fields(body, FINISH_FIELDS)
        wallet = self._wallet(fields["source_wallet"])
        challenge_id, signature, terms = fields["challenge_id"], fields["signature"], fields["terms_version"]
        if not isinstance(challenge_id, str) or not UUID_RE.fullmatch(challenge_id.lower()):
            raise InvalidRequest("invalid_challenge_id", "challenge_id must be the uuid start returned")
        if not is_v1_signature_shape(signature):
            raise InvalidRequest(
                "invalid_signature_format",
                f"signature must be {V1_SIGNATURE_MIN_CHARS}..{V1_SIGNATURE_MAX_CHARS} base58 characters",
            )
        if not isinstance(terms, str) or not 1 <= len(terms) <= 160:
            raise InvalidRequest("invalid_terms_version", "terms_version must be 1..160 characters")
        await self._limit(wallet, client)
        challenge_id = challenge_id.lower()
        found: LoginChallenge | None = await stored(self.store.get_challenge(challenge_id))
        now = self.clock.now()
        try:
            if found is None:
                raise InvalidRequest("challenge_not_found", "no such login challenge: start again")
            if not hmac.compare_digest(found.wallet, wallet):
                raise InvalidRequest(
                    "challenge_wallet_mismatch", "this challenge was issued to another wallet"
                )
            if found.used_at is not None:
                raise InvalidRequest("challenge_already_used", "this challenge was already used: start again")
            if now >= found.expires_at:
                raise InvalidRequest("challenge_expired", "this challenge has expired: start again")
            if terms != found.terms_version:
                raise InvalidRequest(
                    "terms_version_mismatch",
                    f"accept the current terms: {found.terms_version}",
                    details={"terms_version": found.terms_version},
                )
            if not signature_valid(wallet=wallet, message=found.message, signature=signature):
                raise InvalidRequest(
                    "signature_invalid",
                    "the signature is not this wallet's Ed25519 signature of the exact challenge message",
                )
            token = ACCESS_TOKEN_PREFIX + secrets.token_urlsafe(32)
            expires = now + timedelta(seconds=self.token_ttl_seconds)
            grant = AccessGrant(access_token_sha256(token), wallet, challenge_id, now, expires)
            if not await stored(self.store.redeem_challenge(challenge_id, now, grant)):
                raise InvalidRequest("challenge_already_used", "this challenge was already used: start again")
        except RouteQuoteError as exc:
            log.info("wallet_login_refused", challenge_id=challenge_id, reason=exc.reason_class)
            raise
        log.info("wallet_login_granted", challenge_id=challenge_id)
        return {
            "access_token": token,
            "token_type": "Bearer",
            "source_wallet": wallet,
            "expires_at": expires.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "expires_in_seconds": self.token_ttl_seconds,
            "sensitive": True,
            "note": "shown once and stored only as its SHA-256: keep it secret; it acts for this wallet's v1 "
            "sessions only and can never sign or move funds",
            "server_signing": False,
            "server_submission": False,
        }

    # ---- token check ----------------------------------------------------------------------------------

    async def wallet_for(self, token: Any) -> str:
        """The wallet an access token is bound to; AccessTokenInvalid when it is missing, unknown or expired."""
        if not isinstance(token, str) or not ACCESS_TOKEN_RE.fullmatch(token):
            raise AccessTokenInvalid("access_token_invalid", "send the access token from the wallet login")
        grant: AccessGrant | None = await stored(self.store.get_grant(access_token_sha256(token)))
        if grant is None or not hmac.compare_digest(grant.token_sha256, access_token_sha256(token)):
            raise AccessTokenInvalid("access_token_invalid", "unknown access token: log in with the wallet")
        if self.clock.now() >= grant.expires_at:
            raise AccessTokenInvalid("access_token_expired", "the access token has expired: log in again")
        return grant.wallet


def wallet_auth_for(state: Any) -> WalletAuth:
    """The app's WalletAuth (built once, over the session store of `state.sessions`)."""
    auth = getattr(state, "wallet_auth", None)
    if auth is None:
        sessions = state.sessions
        settings = state.settings
        auth = WalletAuth.from_settings(
            sessions.store, sessions.service.clock, sessions.service.ids, settings
        )
        state.wallet_auth = auth
    return auth


__all__ = ["AccessTokenInvalid", "WalletAuth", "access_token_sha256", "wallet_auth_for"]
