"""compose.yaml asks for the signing key in the form `routequote keys generate` writes (issue 39: it asked for
base64 of a seed, which the command does not produce). The start-up lines in compose.yaml's header are run
as written, in a shell, up to `docker compose`; the key they put in ROUTEQUOTE_SIGNING_KEY loads, and it is
the key the command printed."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

from routequote.config import Settings
from routequote.discovery import load_signing_key

ROOT = Path(__file__).resolve().parents[2]
MARK = "\n@@ the variable @@\n"


def _start_lines() -> list[str]:
    header = []
    for line in (ROOT / "compose.yaml").read_text().splitlines():
        if not line.startswith("#"):
            break
        header.append(line)
    commands = [ln[1:].strip() for ln in header if ln.startswith("#   ")]
    return [c.split("   #", 1)[0].strip() for c in commands]


def test_the_compose_start_lines_produce_a_key_the_replicas_load(tmp_path: Path) -> None:
    lines = _start_lines()
    assert any(ln.startswith("routequote keys generate") for ln in lines), lines
    before_compose = lines[: next(i for i, ln in enumerate(lines) if ln.startswith("docker compose"))]
    script = (
        "set -euo pipefail\n" + "\n".join(before_compose) + f'\nprintf "{MARK}%s" "$ROUTEQUOTE_SIGNING_KEY"\n'
    )
    env = {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", "HOME": str(tmp_path)}
    done = subprocess.run(
        ["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    said, _, value = done.stdout.partition(MARK)
    printed = re.search(r"key_id: (routequote-[0-9a-f]{16})", said)
    assert printed is not None and value.startswith("-----BEGIN PRIVATE KEY-----"), done.stdout
    key = load_signing_key(Settings(signing_key=value, dev_signing_key_path=""))
    assert key.source == "environment" and not key.development
    assert key.key_id == printed.group(1)


def test_compose_passes_that_variable_to_every_replica() -> None:
    env = yaml.safe_load((ROOT / "compose.yaml").read_text())["services"]["routequote"]["environment"]
    assert env["ROUTEQUOTE_SIGNING_KEY"].startswith("${ROUTEQUOTE_SIGNING_KEY:?")
    assert "keys generate" in env["ROUTEQUOTE_SIGNING_KEY"]  # the refusal names where the key comes from
