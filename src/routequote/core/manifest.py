"""The signed manifest: canonical bytes, Ed25519 signature and the verifier's rules.

Pure: no clock, no I/O, no environment. Keys are handed in as `cryptography` key objects, the time
of verification is handed in as a datetime.

Canonical form: UTF-8 JSON with lexicographically sorted keys and compact separators (byte-equal to
`json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)`). The signature is
Ed25519 over the canonical bytes of the manifest with its `signature` member removed; the value is
base64url without padding (86 characters).
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    PublicFormat,
    load_pem_public_key,
)

from routequote.core.hashing import CANONICAL_JSON_SPEC, canonical_json, sha256_hex

MANIFEST_SCHEMA = "routequote-manifest-v1"
SAFETY_SCHEMA = "routequote-safety-bundle-v1"
SIGNATURE_ALGORITHM = "Ed25519"
MANIFEST_CANONICALIZATION = CANONICAL_JSON_SPEC + "; omit signature"
MANIFEST_PATH = "/.well-known/routequote-manifest.json"
PUBLIC_KEY_PATH = "/.well-known/routequote-manifest.pub"
SAFETY_PATH = "/.well-known/routequote-safety.json"
MANIFEST_KEYS = frozenset(
    {
        "schema",
        "service",
        "endpoints",
        "execution",
        "limits",
        "release_commit",
        "issued_at",
        "valid_until",
        "safety_bundle",
        "signature",
        "verification",
    }
)
SIGNATURE_KEYS = frozenset({"algorithm", "canonicalization", "key_id", "public_key_url", "value"})
DEFAULT_CLOCK_SKEW_SECONDS = 300


class ManifestError(ValueError):
    """One verification failure; `cause` is a stable snake_case name of the rule that failed."""

    def __init__(self, cause: str, message: str) -> None:
        super().__init__(f"{cause}: {message}")
        self.cause = cause
        self.message = message


# ---- encodings --------------------------------------------------------------------------------------


def b64url_encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: Any) -> bytes:
    if not isinstance(text, str) or any(c in text for c in "+/= \n"):
        raise ValueError("not unpadded base64url")
    try:
        data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (ValueError, TypeError):
        raise ValueError("not base64url") from None
    # reject non-canonical encodings (non-zero unused trailing bits) so a signature has one spelling
    if b64url_encode(data) != text:
        raise ValueError("non-canonical base64url")
    return data


def public_key_raw(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(Encoding.Raw, PublicFormat.Raw)


def public_key_pem(key: Ed25519PublicKey) -> str:
    return key.public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo).decode("ascii")


def key_id_for(key: Ed25519PublicKey) -> str:
    """`routequote-` + the first 16 hex characters of sha256 over the raw 32-byte public key."""
    return "routequote-" + hashlib.sha256(public_key_raw(key)).hexdigest()[:16]


def load_public_key(pem: str | bytes) -> Ed25519PublicKey:
    data = pem.encode("ascii", "replace") if isinstance(pem, str) else pem
    try:
        key = load_pem_public_key(data)
    except (ValueError, TypeError) as exc:
        raise ManifestError("public_key_invalid", f"the public key is not a PEM SPKI key ({exc})") from None
    if not isinstance(key, Ed25519PublicKey):
        raise ManifestError("public_key_invalid", "the public key is not an Ed25519 key")
    return key


def is_canonical(raw: bytes) -> tuple[bool, Any]:
    """(raw bytes equal the canonical encoding of their parsed value, the parsed value)."""
    try:
        value = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return False, None
    try:
        return canonical_json(value) == raw, value
    except ValueError:
        return False, value


def iso_seconds(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: Any) -> datetime:
    if not isinstance(text, str) or not text.endswith("Z") or "T" not in text:
        raise ValueError(f"not an RFC 3339 UTC time: {text!r}")
    return datetime.fromisoformat(text[:-1] + "+00:00")


# ---- signing ----------------------------------------------------------------------------------------


def signing_bytes(manifest: dict[str, Any]) -> bytes:
    """The bytes the signature covers: the canonical manifest without `signature`."""
    return canonical_json({k: v for k, v in manifest.items() if k != "signature"})


def sign_manifest(payload: dict[str, Any], key: Ed25519PrivateKey, *, public_key_url: str) -> dict[str, Any]:
    """`payload` plus its `signature` member."""
    if "signature" in payload:
        raise ValueError("payload already carries a signature")
    public = key.public_key()
    value = key.sign(signing_bytes(payload))
    return {
        **payload,
        "signature": {
            "algorithm": SIGNATURE_ALGORITHM,
            "canonicalization": MANIFEST_CANONICALIZATION,
            "key_id": key_id_for(public),
            "public_key_url": public_key_url,
            "value": b64url_encode(value),
        },
    }


def verify_signature(manifest: dict[str, Any], key: Ed25519PublicKey) -> None:
    sig = manifest.get("signature")
    if not isinstance(sig, dict):
        raise ManifestError("signature_missing", "the manifest has no signature object")
    if sig.get("algorithm") != SIGNATURE_ALGORITHM:
        raise ManifestError(
            "signature_algorithm_unsupported", f"algorithm is {sig.get('algorithm')!r}, not Ed25519"
        )
    try:
        value = b64url_decode(sig.get("value"))
    except ValueError:
        raise ManifestError("signature_malformed", "signature.value is not unpadded base64url") from None
    if len(value) != 64:
        raise ManifestError("signature_malformed", f"signature.value decodes to {len(value)} bytes, not 64")
    try:
        key.verify(value, signing_bytes(manifest))
    except InvalidSignature:
        raise ManifestError(
            "signature_invalid", "the Ed25519 signature does not verify over the canonical manifest"
        ) from None


# ---- the verifier's rules ---------------------------------------------------------------------------


@dataclass
class VerificationReport:
    failures: list[ManifestError] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failures

    def fail(self, cause: str, message: str) -> None:
        self.failures.append(ManifestError(cause, message))


def _execution_rules(manifest: dict[str, Any], report: VerificationReport) -> None:
    execution = manifest.get("execution")
    if not isinstance(execution, dict):
        report.fail("manifest_malformed", "execution is not an object")
        return
    for flag in ("server_signing", "server_submission"):
        if execution.get(flag) is not False:
            report.fail("execution_policy_violated", f"execution.{flag} is not false")
    fee = execution.get("fee_policy")
    if not isinstance(fee, dict) or (fee.get("exact_bps"), fee.get("maximum_bps")) != (1, 1):
        report.fail("fee_policy_violated", "execution.fee_policy is not exactly 1 bp")


def _signature_metadata_rules(
    manifest: dict[str, Any], sig: dict[str, Any], report: VerificationReport
) -> None:
    """The signature object is not covered by the signature, so each of its members must be bound:
    fixed values for algorithm and canonicalization, and the signed `verification` block for the rest."""
    if set(sig) != SIGNATURE_KEYS:
        report.fail(
            "signature_malformed", f"signature members are {sorted(sig)}, expected {sorted(SIGNATURE_KEYS)}"
        )
    if sig.get("canonicalization") != MANIFEST_CANONICALIZATION:
        report.fail("signature_metadata_mismatch", f"canonicalization is {sig.get('canonicalization')!r}")
    raw_verification = manifest.get("verification")
    verification: dict[str, Any] = raw_verification if isinstance(raw_verification, dict) else {}
    for name in ("public_key_url", "key_id"):
        if sig.get(name) != verification.get(name):
            report.fail(
                "signature_metadata_mismatch",
                f"signature.{name} {sig.get(name)!r} differs from the signed verification.{name} "
                f"{verification.get(name)!r}",
            )


def _says_development_key(signing_key: Any) -> bool:
    return isinstance(signing_key, dict) and signing_key.get("development_key") is True


def verify_documents(
    *,
    manifest_raw: bytes,
    public_key_pem_text: str | bytes,
    safety_raw: bytes,
    now: datetime,
    max_age_seconds: int | None = None,
    pinned_key_id: str | None = None,
    pinned_public_key_pem: str | bytes | None = None,
    clock_skew_seconds: int = DEFAULT_CLOCK_SKEW_SECONDS,
) -> VerificationReport:
    """Check a fetched manifest, public key and safety document. Every rule that fails is reported.

    Rules: the manifest bytes are canonical JSON; its key set is the documented one; the unsigned
    signature metadata equals the signed `verification` block; the public key
    parses, matches a pinned key (if any) and its key id is the manifest's; the Ed25519 signature
    verifies; the safety document is canonical and its sha256 equals the manifest's pin; the manifest
    is issued no later than now (+ skew), is not expired and, if `max_age_seconds` is given, is not
    older than that; execution never signs, never submits and the fee is exactly 1 bp.
    """
    report = VerificationReport()
    canonical, manifest = is_canonical(manifest_raw)
    if not isinstance(manifest, dict):
        report.fail("manifest_malformed", "the manifest is not a JSON object")
        return report
    if not canonical:
        report.fail(
            "manifest_not_canonical", "served bytes differ from sorted-key compact UTF-8 JSON of the value"
        )
    missing = sorted(MANIFEST_KEYS - set(manifest))
    if missing:
        report.fail("manifest_malformed", f"missing members: {', '.join(missing)}")
    if manifest.get("schema") != MANIFEST_SCHEMA:
        report.fail("manifest_schema_unknown", f"schema is {manifest.get('schema')!r}")
    raw_sig = manifest.get("signature")
    sig: dict[str, Any] = raw_sig if isinstance(raw_sig, dict) else {}
    report.facts.update(
        service=manifest.get("service"),
        release_commit=manifest.get("release_commit"),
        issued_at=manifest.get("issued_at"),
        valid_until=manifest.get("valid_until"),
        key_id=sig.get("key_id"),
        # the instance's own signed statement that its key is a development one (not an operator release key)
        development_key=_says_development_key(manifest.get("signing_key")),
    )

    _signature_metadata_rules(manifest, sig, report)
    key: Ed25519PublicKey | None = None
    try:
        key = load_public_key(public_key_pem_text)
    except ManifestError as exc:
        report.failures.append(exc)
    if pinned_public_key_pem is not None:
        try:
            pinned = load_public_key(pinned_public_key_pem)
        except ManifestError as exc:
            report.fail("pinned_key_invalid", exc.message)
        else:
            if key is not None and public_key_raw(pinned) != public_key_raw(key):
                report.fail("public_key_mismatch", "the served public key is not the pinned key")
            key = pinned
    if key is not None:
        actual_id = key_id_for(key)
        if sig.get("key_id") != actual_id:
            report.fail(
                "key_id_mismatch", f"signature.key_id {sig.get('key_id')!r} is not the key's id {actual_id!r}"
            )
        if pinned_key_id is not None and actual_id != pinned_key_id:
            report.fail("public_key_mismatch", f"key id {actual_id!r} is not the pinned {pinned_key_id!r}")
        try:
            verify_signature(manifest, key)
        except ManifestError as exc:
            report.failures.append(exc)

    safety_canonical, safety = is_canonical(safety_raw)
    raw_pin = manifest.get("safety_bundle")
    pin: dict[str, Any] = raw_pin if isinstance(raw_pin, dict) else {}
    actual_sha = sha256_hex(canonical_json(safety)) if isinstance(safety, dict) else None
    report.facts["safety_sha256"] = actual_sha
    if not isinstance(safety, dict):
        report.fail("safety_malformed", "the safety document is not a JSON object")
    elif not safety_canonical:
        report.fail("safety_not_canonical", "served safety bytes differ from their canonical JSON")
    if actual_sha is not None and pin.get("sha256") != actual_sha:
        report.fail(
            "safety_pin_mismatch",
            f"safety document sha256 {actual_sha} is not the manifest's pin {pin.get('sha256')!r}",
        )
    if isinstance(safety, dict) and safety.get("schema") != SAFETY_SCHEMA:
        report.fail("safety_schema_unknown", f"safety schema is {safety.get('schema')!r}")

    try:
        issued = parse_time(manifest.get("issued_at"))
        until = parse_time(manifest.get("valid_until"))
    except ValueError as exc:
        report.fail("manifest_malformed", str(exc))
    else:
        age = (now - issued).total_seconds()
        report.facts["age_seconds"] = int(age)
        if issued >= until:
            report.fail("manifest_malformed", "issued_at is not before valid_until")
        if until <= now:
            report.fail("manifest_expired", f"valid_until {manifest.get('valid_until')} is not in the future")
        if age < -clock_skew_seconds:
            report.fail("manifest_not_yet_valid", f"issued_at {manifest.get('issued_at')} is in the future")
        if max_age_seconds is not None and age > max_age_seconds:
            report.fail(
                "manifest_stale", f"issued {int(age)} s ago, more than the allowed {max_age_seconds} s"
            )
    _execution_rules(manifest, report)
    return report


__all__ = [
    "MANIFEST_CANONICALIZATION",
    "MANIFEST_SCHEMA",
    "ManifestError",
    "SAFETY_SCHEMA",
    "VerificationReport",
    "b64url_decode",
    "b64url_encode",
    "is_canonical",
    "iso_seconds",
    "key_id_for",
    "load_public_key",
    "parse_time",
    "public_key_pem",
    "sign_manifest",
    "signing_bytes",
    "verify_documents",
    "verify_signature",
]
