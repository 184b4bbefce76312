"""The TypeScript client (clients/typescript, issue 44): it builds with tsc, its node tests pass, and what it
takes from the service cannot drift: the types generated from the served OpenAPI documents and the pinned data
rendered from the Python core are regenerated here and must equal the checked-in files."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.support import ts_pinned
from tests.support.ts_package import built_package, run

pytestmark = pytest.mark.node


@pytest.fixture(scope="module")
def package() -> Iterator[Path]:
    yield built_package()


def test_node_tests_pass(package: Path, served: tuple[str, Any]) -> None:
    """node --test over the compiled tests, the client's against this module's running server."""
    tests = sorted(str(p.relative_to(package)) for p in (package / "dist" / "test").glob("*.test.js"))
    assert tests, "no compiled node tests"
    done = run([str(shutil.which("node")), "--test", *tests], env={"RQ_TS_BASE_URL": served[0]})
    assert done.returncode == 0, f"node --test failed:\n{done.stdout[-4000:]}{done.stderr[-2000:]}"
    assert "# fail 0" in done.stdout and "# skipped 0" in done.stdout, done.stdout[-1500:]


def test_pinned_data_matches_the_python_core() -> None:
    checked_in = ts_pinned.TARGET.read_text()
    assert checked_in == ts_pinned.render(), "run `python -m tests.support.ts_pinned` and commit the result"


def test_generated_types_match_the_served_documents(
    package: Path, served: tuple[str, Any], tmp_path: Path
) -> None:
    url, _ = served
    done = run([str(shutil.which("node")), "scripts/generate-types.mjs", url, str(tmp_path)])
    assert done.returncode == 0, done.stderr
    for name in ("v2.ts", "v1.ts"):
        fresh = (tmp_path / name).read_text()
        assert fresh == (package / "src" / "generated" / name).read_text(), (
            f"src/generated/{name} differs from the served document: run "
            "`node scripts/generate-types.mjs <base_url>` in clients/typescript and commit the result"
        )


def test_the_readme_typescript_example_runs_as_pasted(package: Path, served: tuple[str, Any]) -> None:
    readme = (package.parents[1] / "README.md").read_text()
    start = readme.index("\n## TypeScript client")
    blocks = re.findall(r"```ts\n(.*?)```", readme[start : readme.index("\n## ", start + 1)], re.S)
    assert len(blocks) == 1 and "http://127.0.0.1:8080" in blocks[0]
    # inside the package, so `@routequote/client` resolves to it by its own name (as installed from the path)
    script = package / "dist" / "readme-example.mjs"
    script.write_text(blocks[0].replace("http://127.0.0.1:8080", served[0]))
    done = run([str(shutil.which("node")), str(script)])
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("base:ETH->base:USDC minimum out: "), done.stdout
    refusal = done.stdout.splitlines()[1]
    assert refusal.startswith("prepared action refused by the verifier: bounds_modelled_not_live"), refusal
    assert "fee_recipient_not_configured" in refusal and "verified:" not in done.stdout
