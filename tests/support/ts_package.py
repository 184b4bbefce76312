"""The TypeScript client package (clients/typescript) for the tests: its dependencies installed from the npm
registry at test time (`npm ci` from the committed package-lock.json into the gitignored node_modules, redone
only when the lock file changes) and built with `tsc`. Without npm or the registry the tests that need it skip,
except under CI=true, where they fail."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "clients" / "typescript"
STAMP = PACKAGE / "node_modules" / ".routequote-lock-sha256"


def _unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"the TypeScript package cannot be tested in CI: {reason}")
    pytest.skip(reason)


def run(
    args: list[str], timeout: float = 300, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        args, cwd=PACKAGE, capture_output=True, text=True, timeout=timeout, check=False, env=full_env
    )


_built: list[Path] = []  # once per test process: tsc is the slow part


def built_package() -> Path:
    """npm ci when the lock file changed since the last install, then tsc; the package directory."""
    if _built:
        return _built[0]
    npm, node = shutil.which("npm"), shutil.which("node")
    if npm is None or node is None:
        _unavailable("node / npm are not on PATH")
    assert npm is not None and node is not None
    lock = hashlib.sha256((PACKAGE / "package-lock.json").read_bytes()).hexdigest()
    if not STAMP.exists() or STAMP.read_text().strip() != lock:
        done = run([npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund"])
        if done.returncode != 0:
            reachable = run([npm, "ping"], timeout=60)
            if reachable.returncode != 0:
                _unavailable(f"the npm registry is unreachable (npm ping: {reachable.stderr.strip()[-200:]})")
            pytest.fail(f"npm ci failed:\n{(done.stdout + done.stderr)[-2000:]}")
        STAMP.write_text(lock)
    tsc = run([node, "node_modules/typescript/bin/tsc", "-p", "tsconfig.json"])
    assert tsc.returncode == 0, f"tsc failed:\n{tsc.stdout}{tsc.stderr}"
    _built.append(PACKAGE)
    return PACKAGE
