"""`routequote market build-snapshot` never writes into the installed package by default (issue 39): `--out`
is required, and the file it writes is one `ROUTEQUOTE_SNAPSHOT_PATH` serves."""

from __future__ import annotations

import hashlib
from importlib import resources
from pathlib import Path

from typer.testing import CliRunner

from routequote.cli import app as cli_app
from routequote.market.snapshot import EmbeddedSnapshot

AS_OF = "2026-11-20T00:00:00Z"


def _packaged() -> str:
    data = (resources.files("routequote.data") / "market_snapshot.json").read_bytes()
    return hashlib.sha256(data).hexdigest()


def test_without_out_nothing_is_written() -> None:
    before = _packaged()
    done = CliRunner().invoke(cli_app, ["market", "build-snapshot", "--as-of", AS_OF])
    assert done.exit_code == 2 and "--out" in done.output
    assert _packaged() == before


def test_out_writes_a_snapshot_the_server_can_serve(tmp_path: Path) -> None:
    before = _packaged()
    target = tmp_path / "snapshot.json"
    done = CliRunner().invoke(
        cli_app, ["market", "build-snapshot", "--as-of", "2026-12-01T00:00:00Z", "--out", str(target)]
    )
    assert done.exit_code == 0, done.output
    view = EmbeddedSnapshot(str(target)).current()
    assert view.as_of == "2026-12-01T00:00:00Z" and view.version.startswith("embedded-2026-12-01")
    assert view.live is False and view.source == "embedded_snapshot"
    assert _packaged() == before


def test_the_packaged_snapshot_is_what_the_builder_writes(tmp_path: Path) -> None:
    """The packaged file is reproducible from its as-of time and seed (how it is regenerated)."""
    target = tmp_path / "again.json"
    done = CliRunner().invoke(cli_app, ["market", "build-snapshot", "--as-of", AS_OF, "--out", str(target)])
    assert done.exit_code == 0, done.output
    assert hashlib.sha256(target.read_bytes()).hexdigest() == _packaged()
