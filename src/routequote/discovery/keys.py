"""The manifest signing key: from configuration (environment or file), or a development key.

Order: `ROUTEQUOTE_SIGNING_KEY` (PKCS#8 PEM text, or base64/base64url of the 32-byte raw Ed25519
seed), then `ROUTEQUOTE_SIGNING_KEY_PATH` (a PKCS#8 PEM file, as `routequote keys generate` writes),
else a development key: loaded from `ROUTEQUOTE_DEV_SIGNING_KEY_PATH` (default under `./var/`, which
is not part of the repository) or generated there on first start, or kept in memory when that path is
empty or not writable. A development key is always reported as one in the manifest and the safety
document.
"""

from __future__ import annotations

import base64
import binascii
import os
from dataclasses import dataclass
from pathlib import Path

import structlog
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    load_pem_private_key,
)

from routequote.config import Settings
from routequote.core.manifest import key_id_for, public_key_pem


class SigningKeyError(ValueError):
    """The configured signing key cannot be used (the message names the setting)."""


@dataclass(frozen=True)
class SigningKey:
    private: Ed25519PrivateKey
    source: str  # "environment" | "file" | "development_file" | "development_memory"

    @property
    def development(self) -> bool:
        return self.source.startswith("development")

    @property
    def key_id(self) -> str:
        return key_id_for(self.private.public_key())

    @property
    def public_pem(self) -> str:
        return public_key_pem(self.private.public_key())


def generate_private_key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.generate()


def private_key_pem(key: Ed25519PrivateKey) -> bytes:
    return key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())


def parse_private_key(text: str | bytes, what: str) -> Ed25519PrivateKey:
    data = text.encode() if isinstance(text, str) else text
    if b"-----BEGIN" in data:
        try:
            key = load_pem_private_key(data, password=None)
        except (ValueError, TypeError) as exc:
            raise SigningKeyError(f"{what}: not an unencrypted PKCS#8 PEM private key ({exc})") from None
        if not isinstance(key, Ed25519PrivateKey):
            raise SigningKeyError(f"{what}: the key is not an Ed25519 key")
        return key
    raw_text = data.strip().decode("ascii", "replace")
    try:
        raw = base64.urlsafe_b64decode(
            raw_text.replace("+", "-").replace("/", "_") + "=" * (-len(raw_text) % 4)
        )
    except (binascii.Error, ValueError):
        raise SigningKeyError(f"{what}: neither PEM nor base64 of a 32-byte Ed25519 seed") from None
    if len(raw) != 32:
        raise SigningKeyError(f"{what}: base64 decodes to {len(raw)} bytes, not a 32-byte Ed25519 seed")
    return Ed25519PrivateKey.from_private_bytes(raw)


def write_private_key(path: Path, key: Ed25519PrivateKey) -> None:
    """Write a PKCS#8 PEM readable by its owner only (0600). Atomic and never overwrites: the file is
    written beside the target and hard-linked into place, so FileExistsError if the target exists."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(private_key_pem(key))
        os.link(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def load_signing_key(settings: Settings) -> SigningKey:
    if settings.signing_key.strip():
        return SigningKey(
            parse_private_key(settings.signing_key.strip(), "ROUTEQUOTE_SIGNING_KEY"), "environment"
        )
    if settings.signing_key_path:
        path = Path(settings.signing_key_path)
        try:
            text = path.read_bytes()
        except OSError as exc:
            raise SigningKeyError(
                f"ROUTEQUOTE_SIGNING_KEY_PATH: cannot read {path} ({exc.strerror})"
            ) from None
        return SigningKey(parse_private_key(text, "ROUTEQUOTE_SIGNING_KEY_PATH"), "file")
    log = structlog.get_logger()
    if settings.dev_signing_key_path:
        path = Path(settings.dev_signing_key_path)
        try:
            if path.exists():
                return SigningKey(parse_private_key(path.read_bytes(), str(path)), "development_file")
            key = generate_private_key()
            try:
                write_private_key(path, key)
            except FileExistsError:  # another worker generated it first: use theirs
                return SigningKey(parse_private_key(path.read_bytes(), str(path)), "development_file")
            log.warning(
                "development_signing_key_generated", path=str(path), key_id=key_id_for(key.public_key())
            )
            return SigningKey(key, "development_file")
        except (OSError, SigningKeyError) as exc:
            log.warning("development_signing_key_not_persisted", path=str(path), error=str(exc))
    key = generate_private_key()
    log.warning("development_signing_key_in_memory", key_id=key_id_for(key.public_key()))
    return SigningKey(key, "development_memory")
