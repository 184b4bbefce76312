"""docs/routes.md is generated from the whole-route suite's committed results, never written by hand."""

from __future__ import annotations

import copy
import importlib.util
import json
import os
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("routes_doc", ROOT / "tests" / "e2e" / "routes_doc.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_docs_routes_md_equals_what_the_generator_renders_from_the_committed_results() -> None:
    gen = _generator()
    declared = os.environ.get(gen.NOT_RUN_ENV, "").strip() or None
    rendered = gen.render(json.loads(gen.RESULTS.read_text()), declared)
    assert gen.PAGE.read_text() == rendered, "docs/routes.md is stale or hand-edited: run `make routes-doc`"


def test_the_capabilities_summary_equals_what_the_generator_derives_from_the_committed_results() -> None:
    gen = _generator()
    want = gen.summary(json.loads(gen.RESULTS.read_text()))
    assert json.loads(gen.SUMMARY.read_text()) == want, "route_proof.json is stale: run `make routes-doc`"


def test_the_committed_results_cover_every_route_at_every_amount() -> None:
    from routequote.core.routes import ROUTES

    gen = _generator()
    doc = json.loads(gen.RESULTS.read_text())
    assert set(doc["runs"]) == {f"{name} ${a}" for name in ROUTES for a in doc["amounts_usd"]}
    for key, run in doc["runs"].items():
        assert run["status"] in ("complete", "not_run"), key
        assert run["status"] == "complete" or run["reason"], key


def test_every_label_is_recomputed_from_the_executor_that_ran_and_every_run_carries_its_evidence() -> None:
    gen = _generator()
    gen.check_evidence(json.loads(gen.RESULTS.read_text()))


def test_a_hand_edited_label_or_executor_fails() -> None:
    """Relabelling a simulated step as real bytecode, or claiming a real executor for it, is caught."""
    gen = _generator()
    doc = json.loads(gen.RESULTS.read_text())
    key, step = next(
        (k, s) for k, run in doc["live_runs"].items() for s in run["steps"] if s["provider"] == "raydium_clmm"
    )
    index = doc["live_runs"][key]["steps"].index(step)
    relabelled = copy.deepcopy(doc)
    relabelled["live_runs"][key]["steps"][index]["source"] = "real protocol bytecode: Raydium CLMM"
    with pytest.raises(AssertionError, match="not its executor's"):
        gen.check_evidence(relabelled)
    reclaimed = copy.deepcopy(doc)
    reclaimed["live_runs"][key]["steps"][index]["executors"] = {"source": "evm_uniswap_v3"}
    with pytest.raises(AssertionError, match="cannot run"):
        gen.check_evidence(reclaimed)
    unmeasured = copy.deepcopy(doc)
    del unmeasured["live_runs"][key]["steps"][index]["measured"]
    with pytest.raises(AssertionError):
        gen.check_evidence(unmeasured)


async def test_capabilities_show_how_the_suite_carried_each_step_kind() -> None:
    import httpx

    from routequote.app import create_app
    from routequote.config import Settings

    gen = _generator()
    app = create_app(Settings(rate_limit="off"))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
        caps = (await client.get("/v2/capabilities")).json()
    proof = caps["sessions"]["route_proof"]
    assert proof == json.loads(gen.SUMMARY.read_text())
    assert proof["routes"] == 72 and proof["document"] == "docs/routes.md"


def test_the_cli_route_list_says_how_many_routes_the_suite_completed() -> None:
    from typer.testing import CliRunner

    from routequote.cli import app

    out = CliRunner().invoke(app, ["routes"], env={"COLUMNS": "300"})
    assert out.exit_code == 0, out.output
    proof = json.loads(_generator().SUMMARY.read_text())
    assert f"tests: {proof['routes_complete_at_every_amount']} of 72 routes complete" in out.output
    assert "docs/routes.md" in out.output
