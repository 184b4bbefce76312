"""CLI formatting: exact token units from base units (never a float), nothing cut at 80 columns."""

from __future__ import annotations

import asyncio
import io
import json
import re
from typing import Any

import pytest
from rich.console import Console
from tests.unit.actions.support import intent_for, make_env
from typer.testing import CliRunner

from routequote.cli import app
from routequote.client.render import matrix_cell, render_matrix, render_quote
from routequote.client.units import format_units, token_amount
from routequote.core.routes import ROUTES

runner = CliRunner()


@pytest.mark.parametrize(
    ("base", "decimals", "text"),
    [
        (80017923257435307, 18, "0.080017923257435307"),
        (1640419000000000000000, 18, "1640.419000000000000000"),
        (99927007, 6, "99.927007"),
        (5, 6, "0.000005"),
        (0, 9, "0.000000000"),
        ("6561679790", 9, "6.561679790"),
        (-15, 2, "-0.15"),
        (7, 0, "7"),
        (2**70 + 1, 18, "1180.591620717411303425"),  # beyond float precision: still exact
    ],
)
def test_format_units_is_exact(base: int | str, decimals: int, text: str) -> None:
    assert format_units(base, decimals) == text


def test_token_amount_names_the_symbol() -> None:
    assert token_amount(80017923257435307, "base:ETH") == "0.080017923257435307 ETH"
    assert token_amount("99424785", "arbitrum:USDC") == "99.424785 USDC"


def _quote(route: str, amount: int) -> dict[str, Any]:
    env = make_env()
    return json.loads(json.dumps(asyncio.run(env.service.quote_request(intent_for(route, amount)))))


def _render(fn: Any, *args: Any, **kwargs: Any) -> str:
    buf = io.StringIO()
    console = Console(width=80, file=buf, force_terminal=False, color_system=None)
    fn(console, *args, **kwargs)
    return buf.getvalue()


def _amounts(q: dict[str, Any], base_units: bool) -> list[str]:
    out = []
    for s in q["direct_route_summary"]["steps"]:
        for field, endpoint in (
            ("expected_input_base", s["from"]),
            ("expected_output_base", s["to"]),
            ("minimum_output_base", s["to"]),
        ):
            out.append(s[field] if base_units else token_amount(s[field], endpoint))
    fee = q["cost_summary"]["service_fee"]
    out.append(fee["amount_base"] if base_units else token_amount(fee["amount_base"], fee["token"]))
    return out


@pytest.mark.parametrize(
    "route", ["base:ETH->arbitrum:USDC", "solana:SOL->robinhood:ETH", "robinhood:ETH->solana:SOL"]
)
@pytest.mark.parametrize("base_units", [False, True])
def test_quote_fits_80_columns_with_every_digit(route: str, base_units: bool) -> None:
    q = _quote(route, 1000)
    text = _render(render_quote, q, base_units=base_units)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "…" not in text
    for amount in _amounts(q, base_units):
        assert amount in text, amount  # whole, on one line: never cut, never wrapped mid-number
    if not base_units:
        last = q["direct_route_summary"]["steps"][-1]
        assert f"{token_amount(last['expected_output_base'], last['to'])} expected" in text
        assert re.search(r"\d\.\d{18} ETH", text)  # 18 exact decimals, not a 17-digit float


def test_matrix_fits_80_columns_and_shows_every_cell() -> None:
    env = make_env()

    async def fill() -> dict[str, dict[str, Any]]:
        return {k: matrix_cell(await env.service.quote_request(intent_for(k, 1000))) for k in ROUTES}

    cells = asyncio.run(fill())
    cells["base:ETH->base:USDC"] = {"error": "route_provider_temporarily_unavailable"}
    text = _render(render_matrix, cells, title="matrix")
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "…" not in text
    rows = {line.split()[0]: line for line in text.splitlines() if re.match(r"^(sol|base|arb|rh):", line)}
    assert len(rows) == 9
    row = rows["sol:USDC"].split()[1:]
    assert len(row) == 9 and row[1] == "·"
    assert row[0] == cells["solana:USDC->solana:SOL"]["cost_bps"]
    assert "n/a" in rows["base:ETH"] and "base:ETH->base:USDC: route_provider_temporarily_unavailable" in text


def test_cli_quote_token_units_base_units_and_json() -> None:
    r = runner.invoke(app, ["quote", "base:ETH", "arbitrum:USDC", "100", "--json"])
    assert r.exit_code == 0, r.output
    q = json.loads(r.stdout)
    steps = q["direct_route_summary"]["steps"]
    r = runner.invoke(app, ["quote", "base:ETH", "arbitrum:USDC", "100"], terminal_width=80)
    assert r.exit_code == 0, r.output
    assert (
        token_amount(steps[0]["expected_input_base"], "base:ETH") in r.output
    )  # e.g. 0.032045632981365464 ETH
    assert f"{token_amount(steps[-1]['expected_output_base'], 'arbitrum:USDC')} expected" in r.output
    assert max(len(line) for line in r.output.splitlines()) <= 80
    r = runner.invoke(app, ["quote", "base:ETH", "arbitrum:USDC", "100", "--base-units"])
    assert r.exit_code == 0 and f"{steps[0]['expected_input_base']} base units base:ETH" in r.output


def test_cli_quote_refusals() -> None:
    r = runner.invoke(app, ["quote", "base:ETH", "base:ETH", "100"])
    assert r.exit_code == 1 and "invalid_request" in r.output
    r = runner.invoke(app, ["quote", "base-ETH", "base:USDC", "100"])
    assert r.exit_code == 2 and "chain:TOKEN" in r.output
    r = runner.invoke(app, ["quote", "base:ETH", "base:USDC", "lots"])
    assert r.exit_code == 2 and "not a number" in r.output


def test_cli_matrix_in_process() -> None:
    r = runner.invoke(app, ["matrix", "--amount", "1000", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["amount_usd"] == 1000 and len(doc["cells"]) == 72
    assert all("cost_bps" in c and "error" not in c for c in doc["cells"].values())
    r = runner.invoke(app, ["matrix", "--amount", "1000"], terminal_width=80)
    assert r.exit_code == 0 and "72 of 72 cells filled" in r.output
    assert doc["cells"]["base:ETH->base:USDC"]["cost_bps"] in r.output


def test_routes_at_80_columns_shows_every_route_name_whole() -> None:
    from routequote.cli import console

    console.width = 80  # a narrow terminal
    out = runner.invoke(app, ["routes"]).output
    assert "…" not in out and max(len(line) for line in out.splitlines()) <= 80, out
    firsts = {line.split()[0] for line in out.splitlines() if line.split()}
    assert set(ROUTES) <= firsts  # every name whole at the start of its row (it used to read solana:SOL->so…)
