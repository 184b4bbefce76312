"""The licence the package metadata names is in the repository, word for word, and travels with the image."""

from __future__ import annotations

import hashlib
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# SHA-256 of the Apache License 2.0 text as the ASF publishes it (www.apache.org/licenses/LICENSE-2.0.txt,
# MD5 3b83ef96387f14655fc854ddc3c6bd57; also Debian's /usr/share/common-licenses/Apache-2.0)
APACHE_2_0_SHA256 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"


def test_the_license_file_is_the_standard_apache_2_0_text() -> None:
    text = (ROOT / "LICENSE").read_bytes()
    assert hashlib.sha256(text).hexdigest() == APACHE_2_0_SHA256
    assert hashlib.md5(text, usedforsecurity=False).hexdigest() == "3b83ef96387f14655fc854ddc3c6bd57"
    assert b"Apache License\n                           Version 2.0, January 2004" in text


def test_the_metadata_names_the_same_license() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "Apache-2.0"


def test_the_image_carries_the_license() -> None:
    """An image is a redistribution: the licence goes into the build context and the installed package."""
    rules = (ROOT / ".dockerignore").read_text().split()
    assert "!LICENSE" in rules
    copies = [
        ln.split()[1:] for ln in (ROOT / "Dockerfile").read_text().splitlines() if ln.startswith("COPY ")
    ]
    assert any("LICENSE" in c[:-1] for c in copies), copies
