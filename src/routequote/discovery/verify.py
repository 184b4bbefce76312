"""`routequote verify-manifest BASE_URL`: fetch the manifest, the public key and the safety document
of an instance and check them with the pure rules of `routequote.core.manifest.verify_documents`.

Everything is fetched relative to BASE_URL at the well-known paths (redirects are refused), so a
manifest cannot point the verifier at someone else's key or document; a manifest whose own URLs name
another origin is reported as a failure.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

import httpx

from routequote.core.manifest import (
    MANIFEST_PATH,
    PUBLIC_KEY_PATH,
    SAFETY_PATH,
    ManifestError,
    VerificationReport,
    is_canonical,
    verify_documents,
)

MAX_DOCUMENT_BYTES = 512 * 1024


@dataclass
class Fetched:
    manifest: bytes
    public_key: bytes
    safety: bytes


def _get(client: httpx.Client, url: str, what: str) -> bytes:
    try:
        response = client.get(url, follow_redirects=False)
    except httpx.HTTPError as exc:
        raise ManifestError("fetch_failed", f"{what}: {url}: {type(exc).__name__}: {exc}") from None
    if response.status_code != 200:
        raise ManifestError("fetch_failed", f"{what}: {url} answered HTTP {response.status_code}")
    if len(response.content) > MAX_DOCUMENT_BYTES:
        raise ManifestError("fetch_failed", f"{what}: {url} is larger than {MAX_DOCUMENT_BYTES} bytes")
    return response.content


def _origin(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme, parts.netloc


def verify_remote(
    base_url: str,
    *,
    client: httpx.Client,
    now: datetime,
    max_age_seconds: int | None = None,
    pinned_public_key_pem: str | bytes | None = None,
    pinned_key_id: str | None = None,
    require_same_origin: bool = True,
) -> VerificationReport:
    base = base_url.rstrip("/")
    try:
        fetched = Fetched(
            manifest=_get(client, base + MANIFEST_PATH, "manifest"),
            public_key=_get(client, base + PUBLIC_KEY_PATH, "public key"),
            safety=_get(client, base + SAFETY_PATH, "safety document"),
        )
    except ManifestError as exc:
        report = VerificationReport()
        report.failures.append(exc)
        return report
    report = verify_documents(
        manifest_raw=fetched.manifest,
        public_key_pem_text=fetched.public_key,
        safety_raw=fetched.safety,
        now=now,
        max_age_seconds=max_age_seconds,
        pinned_key_id=pinned_key_id,
        pinned_public_key_pem=pinned_public_key_pem,
    )
    report.facts["public_key_source"] = "pinned" if pinned_public_key_pem is not None else "fetched"
    _, manifest = is_canonical(fetched.manifest)
    if require_same_origin and isinstance(manifest, dict):
        urls: list[tuple[str, Any]] = [
            ("signature.public_key_url", (manifest.get("signature") or {}).get("public_key_url")),
            ("safety_bundle.url", (manifest.get("safety_bundle") or {}).get("url")),
        ]
        for name, url in urls:
            if not isinstance(url, str) or _origin(url) != _origin(base):
                report.fail("origin_mismatch", f"{name} {url!r} is not on {base}")
            elif name == "signature.public_key_url" and urlsplit(url).path != PUBLIC_KEY_PATH:
                report.fail("origin_mismatch", f"{name} {url!r} is not the well-known key path")
            elif name == "safety_bundle.url" and urlsplit(url).path != SAFETY_PATH:
                report.fail("origin_mismatch", f"{name} {url!r} is not the well-known safety path")
    return report
