"""The pure manifest core: canonical bytes, Ed25519 signature, and each verifier rule naming its cause."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given, settings
from hypothesis import strategies as st

from routequote.core.hashing import canonical_json, canonical_sha256
from routequote.core.manifest import (
    MANIFEST_SCHEMA,
    SAFETY_SCHEMA,
    ManifestError,
    b64url_decode,
    is_canonical,
    key_id_for,
    public_key_pem,
    sign_manifest,
    signing_bytes,
    verify_documents,
    verify_signature,
)

NOW = datetime(2026, 11, 22, 12, 0, 0, tzinfo=UTC)
KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
PEM = public_key_pem(KEY.public_key())
KEY_ID = key_id_for(KEY.public_key())


def _safety() -> dict:
    return {"schema": SAFETY_SCHEMA, "claims": {"fee_policy": {"exact_bps": 1}}, "note": "ünïcode ✓"}


def _manifest(
    safety: dict, issued: datetime = NOW - timedelta(minutes=5), valid: timedelta = timedelta(days=1)
):
    payload = {
        "schema": MANIFEST_SCHEMA,
        "service": "routequote",
        "endpoints": {"rest_v2": [{"path": "/v2/quote", "methods": ["POST"]}]},
        "execution": {
            "server_signing": False,
            "server_submission": False,
            "fee_policy": {
                "exact_bps": 1,
                "minimum_bps": 1,
                "maximum_bps": 1,
                "fee_maximum_stable_base": None,
            },
        },
        "limits": {"amount_usd": {"minimum": 1, "maximum": 1000}},
        "release_commit": "a" * 40,
        "issued_at": issued.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "valid_until": (issued + valid).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "safety_bundle": {
            "url": "http://x/.well-known/routequote-safety.json",
            "sha256": canonical_sha256(safety),
        },
        "verification": {"public_key_url": "http://x/.well-known/routequote-manifest.pub", "key_id": KEY_ID},
    }
    return sign_manifest(payload, KEY, public_key_url="http://x/.well-known/routequote-manifest.pub")


def _verify(manifest_raw: bytes, safety_raw: bytes, pem: str | bytes = PEM, **kw):
    return verify_documents(
        manifest_raw=manifest_raw, public_key_pem_text=pem, safety_raw=safety_raw, now=NOW, **kw
    )


def _causes(report) -> set[str]:
    return {f.cause for f in report.failures}


def test_canonical_bytes_equal_json_dumps_sorted_compact_utf8() -> None:
    safety = _safety()
    manifest = _manifest(safety)
    raw = canonical_json(manifest)
    assert raw == json.dumps(manifest, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode(
        "utf-8"
    )
    assert is_canonical(raw) == (True, manifest)
    assert is_canonical(json.dumps(manifest, indent=1).encode())[0] is False
    assert "✓".encode() in canonical_json(safety)  # UTF-8, not \u escapes


@settings(max_examples=60, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(),
        lambda c: st.lists(c) | st.dictionaries(st.text(), c),
    )
)
def test_canonical_round_trip_property(value) -> None:
    raw = canonical_json(value)
    assert raw == json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    assert is_canonical(raw)[0] is True


def test_signature_shape_and_verification() -> None:
    manifest = _manifest(_safety())
    sig = manifest["signature"]
    assert sig["algorithm"] == "Ed25519"
    assert sig["canonicalization"].endswith("omit signature")
    assert sig["key_id"] == key_id_for(KEY.public_key())
    assert len(sig["value"]) == 86 and "=" not in sig["value"]
    assert len(b64url_decode(sig["value"])) == 64
    KEY.public_key().verify(b64url_decode(sig["value"]), signing_bytes(manifest))
    verify_signature(manifest, KEY.public_key())
    assert signing_bytes(manifest) == canonical_json({k: v for k, v in manifest.items() if k != "signature"})


def test_a_good_manifest_verifies() -> None:
    safety = _safety()
    report = _verify(canonical_json(_manifest(safety)), canonical_json(safety), max_age_seconds=3600)
    assert report.ok, report.failures
    assert report.facts["key_id"] == key_id_for(KEY.public_key())


def test_flipping_any_one_byte_of_the_manifest_fails() -> None:
    """Every byte position, signed part and signature object alike, flipped one at a time."""
    safety = _safety()
    good = canonical_json(_manifest(safety))
    safety_raw = canonical_json(safety)
    for i in range(len(good)):
        raw = bytearray(good)
        raw[i] ^= 0x01
        report = _verify(bytes(raw), safety_raw)
        assert not report.ok, (i, bytes(raw[max(0, i - 20) : i + 20]))
        assert all(f.cause and f.message for f in report.failures)


def test_flipping_a_signed_value_is_signature_invalid() -> None:
    safety = _safety()
    raw = canonical_json(_manifest(safety)).replace(b'"service":"routequote"', b'"service":"routequotf"')
    report = _verify(raw, canonical_json(safety))
    assert _causes(report) == {"signature_invalid"}
    assert "does not verify" in report.failures[0].message


def test_flipping_one_byte_of_the_safety_document_breaks_the_pin() -> None:
    safety = _safety()
    safety_raw = canonical_json(safety).replace(b'"exact_bps":1', b'"exact_bps":2')
    report = _verify(canonical_json(_manifest(safety)), safety_raw)
    assert _causes(report) == {"safety_pin_mismatch"}


def test_a_different_or_broken_key_fails() -> None:
    safety = _safety()
    raw, safety_raw = canonical_json(_manifest(safety)), canonical_json(safety)
    other = public_key_pem(Ed25519PrivateKey.generate().public_key())
    assert {"key_id_mismatch", "signature_invalid"} <= _causes(_verify(raw, safety_raw, pem=other))
    # one byte of the PEM body flipped: either unparsable or a different key
    lines = PEM.splitlines()
    body = lines[1]
    flipped = body[:20] + ("A" if body[20] != "A" else "B") + body[21:]
    broken = "\n".join([lines[0], flipped, *lines[2:]]) + "\n"
    causes = _causes(_verify(raw, safety_raw, pem=broken))
    assert causes & {"public_key_invalid", "key_id_mismatch", "signature_invalid"}, causes
    assert _causes(_verify(raw, safety_raw, pem="not a key")) == {"public_key_invalid"}


def test_pinned_key_and_key_id() -> None:
    safety = _safety()
    raw, safety_raw = canonical_json(_manifest(safety)), canonical_json(safety)
    assert _verify(raw, safety_raw, pinned_public_key_pem=PEM, pinned_key_id=key_id_for(KEY.public_key())).ok
    other = public_key_pem(Ed25519PrivateKey.generate().public_key())
    assert "public_key_mismatch" in _causes(_verify(raw, safety_raw, pinned_public_key_pem=other))
    assert "public_key_mismatch" in _causes(
        _verify(raw, safety_raw, pinned_key_id="routequote-0000000000000000")
    )


def test_expired_not_yet_valid_and_stale() -> None:
    safety = _safety()
    safety_raw = canonical_json(safety)
    expired = _manifest(safety, issued=NOW - timedelta(days=2), valid=timedelta(days=1))
    report = _verify(canonical_json(expired), safety_raw)
    assert _causes(report) == {"manifest_expired"}
    assert "valid_until" in report.failures[0].message
    future = _manifest(safety, issued=NOW + timedelta(hours=1))
    assert _causes(_verify(canonical_json(future), safety_raw)) == {"manifest_not_yet_valid"}
    old = _manifest(safety, issued=NOW - timedelta(hours=2))
    assert _verify(canonical_json(old), safety_raw).ok
    assert _causes(_verify(canonical_json(old), safety_raw, max_age_seconds=3600)) == {"manifest_stale"}


def test_non_canonical_bytes_and_policy_violations() -> None:
    safety = _safety()
    manifest = _manifest(safety)
    pretty = json.dumps(manifest, indent=2).encode()
    assert "manifest_not_canonical" in _causes(_verify(pretty, canonical_json(safety)))
    bad = dict(manifest)
    bad["execution"] = {**manifest["execution"], "server_signing": True}
    re_signed = sign_manifest(
        {k: v for k, v in bad.items() if k != "signature"},
        KEY,
        public_key_url=manifest["signature"]["public_key_url"],
    )
    assert "execution_policy_violated" in _causes(_verify(canonical_json(re_signed), canonical_json(safety)))
    with pytest.raises(ManifestError) as err:
        verify_signature({k: v for k, v in manifest.items() if k != "signature"}, KEY.public_key())
    assert err.value.cause == "signature_missing"
