"""A session's webhook secret and the Standard Webhooks headers of one delivery.

The secret is never stored: it is derived again, whenever it is needed, from the server's signing key and
the session id (HKDF-SHA256, with its own salt so it can never equal another use of the key). The caller
sees it once, in the create answer. Rotating the signing key therefore changes every session's secret.
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat
from standardwebhooks import Webhook

SECRET_PREFIX = "whsec_"
_SALT = b"routequote/session-webhook-secret/v1"


def webhook_key_material(key: Ed25519PrivateKey) -> bytes:
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
