"""The shared-vector corpus measured, for the closing note of issue 44: its size by action kind and by variant,
and how often the TypeScript verifier gives the Python verdict (refused or not) and the same findings (codes and
severities, in order). Run from the repository root: `python -m tests.support.ts_vectors_stats` (builds the
TypeScript package as the tests do; prints one JSON object)."""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from tests.support.ts_package import built_package, run
from tests.support.ts_vectors import corpus


def _variant(entry_id: str) -> str:
    """The variant an entry id ends with, its re-hashed twin counted with it."""
    parts = entry_id.split(":")
    return parts[-2] if parts[-1] == "rehashed" and len(parts) > 1 else parts[-1]


def _refused(findings: list[list[str]]) -> bool:
    return any(severity == "error" for _, severity in findings)


def measure() -> dict[str, Any]:
    built_package()
    entries = asyncio.run(corpus())
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "corpus.json"
        path.write_text(json.dumps(entries))
        done = run([str(shutil.which("node")), "scripts/verify-corpus.mjs", str(path)], timeout=600)
    if done.returncode != 0:
        raise SystemExit(done.stderr[-3000:])
    ts: dict[str, Any] = json.loads(done.stdout)
    n = len(entries)
    verdicts = sum(_refused(e["python"]) == _refused(ts[e["id"]]) for e in entries)
    codes = sum(ts[e["id"]] == e["python"] for e in entries)
    return {
        "entries": n,
        "refused_by_python": sum(_refused(e["python"]) for e in entries),
        "verdict_agreement_percent": round(100 * verdicts / n, 2),
        "code_agreement_percent": round(100 * codes / n, 2),
        "by_kind": dict(sorted(Counter(e["kind"] for e in entries).items())),
        "by_variant": dict(Counter(_variant(e["id"]) for e in entries).most_common()),
    }


if __name__ == "__main__":
    print(json.dumps(measure(), indent=1))
