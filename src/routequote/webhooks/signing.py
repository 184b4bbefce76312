"""A session's webhook secret, its sealed URL, and the Standard Webhooks headers of one delivery.

The secret is never stored: it is derived again, whenever it is needed, from the server's signing key and
the session id (HKDF-SHA256, with its own salt so it can never equal another use of the key). The caller
sees it in the create answer (and a replay of that create). Rotating the signing key therefore changes every
session's secret, and makes sealed URLs unreadable (their deliveries are given up, and say so).

The URL may carry the receiver's own secret in its path or query, so it is stored sealed (AES-256-GCM under
a key derived the same way, bound to the session id): a database dump does not show it.
"""

from __future__ import annotations

import base64
import os
from datetime import UTC, datetime

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat
from standardwebhooks import Webhook

SECRET_PREFIX = "whsec_"
_SALT = b"routequote/session-webhook-secret/v1"
_SEAL_SALT = b"routequote/session-webhook-url-seal/v1"
_SEAL_PREFIX = "v1."


class UnsealError(ValueError):
    """A sealed URL that this server key cannot open (another key, or damaged)."""


def server_key_seed(key: Ed25519PrivateKey) -> bytes:
    """The 32-byte seed of the server's signing key: the input of every webhook secret."""
    return key.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption())


def webhook_secret(key_material: bytes, session_id: str) -> str:
    """`whsec_` + base64 of 32 bytes, the same for one server key and one session, every time."""
    derived = HKDF(hashes.SHA256(), 32, salt=_SALT, info=session_id.encode("ascii")).derive(key_material)
    return SECRET_PREFIX + base64.b64encode(derived).decode("ascii")


def signed_headers(secret: str, message_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    """The three Standard Webhooks headers for one delivery of `body`."""
    when = datetime.fromtimestamp(timestamp, tz=UTC)
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": Webhook(secret).sign(message_id, when, body.decode("utf-8")),
    }


def _seal_key(key_material: bytes) -> AESGCM:
    return AESGCM(HKDF(hashes.SHA256(), 32, salt=_SEAL_SALT, info=b"url").derive(key_material))


def seal_url(key_material: bytes, session_id: str, url: str) -> str:
    nonce = os.urandom(12)
    sealed = _seal_key(key_material).encrypt(nonce, url.encode("ascii"), session_id.encode("ascii"))
    return _SEAL_PREFIX + base64.urlsafe_b64encode(nonce + sealed).decode("ascii")


def unseal_url(key_material: bytes, session_id: str, sealed: str) -> str:
    if not sealed.startswith(_SEAL_PREFIX):
        raise UnsealError("not a sealed webhook URL")
    try:
        raw = base64.urlsafe_b64decode(sealed[len(_SEAL_PREFIX) :])
        plain = _seal_key(key_material).decrypt(raw[:12], raw[12:], session_id.encode("ascii"))
    except (InvalidTag, ValueError):
        raise UnsealError("the sealed webhook URL does not open with this server key") from None
    return plain.decode("ascii")
