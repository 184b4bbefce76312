"""The `routequote session`, `quote` and `matrix` commands and the quote-to-prepare example against a real server
over loopback HTTP: the token kept in a 0600 file and never printed, a table that fits 80 columns, refusals with
the reason and the next step in words."""

from __future__ import annotations

import copy
import json
import os
import stat
from pathlib import Path

import pytest
from tests.support.client_cases import MODELLED_OK, MULTI, ONE_STEP
from tests.support.server import free_port, running_server
from tests.unit.actions.support import wallets_for
from typer.testing import CliRunner

from routequote.app import create_app
from routequote.cli import app as cli_app
from routequote.config import Settings

# ---- the session CLI -----------------------------------------------------------------------------------


def _fits_80_columns(output: str) -> None:
    assert max(len(line) for line in output.splitlines()) <= 80, output


def test_cli_session_commands(url: str, tmp_path: Path) -> None:
    runner = CliRunner()
    qfile, tfile, sfile = tmp_path / "q.json", tmp_path / "s.token", tmp_path / "s.json"
    r = runner.invoke(
        cli_app, ["quote", "base:ETH", "arbitrum:USDC", "100", "--url", url, "--save", str(qfile)]
    )
    assert r.exit_code == 0, r.output
    assert "0.0" in r.output and " ETH" in r.output and qfile.exists()
    files = ["--token-file", str(tfile), "--session-file", str(sfile)]
    wallets = [x for chain, addr in wallets_for(MULTI).items() for x in ("--wallet", f"{chain}={addr}")]
    r = runner.invoke(
        cli_app, ["session", "create", "--quote", str(qfile), "--url", url, *wallets, *files, *MODELLED_OK]
    )
    assert r.exit_code == 0, r.output
    token = tfile.read_text().strip()
    assert stat.S_IMODE(os.stat(tfile).st_mode) == 0o600 and len(token) == 43
    assert "action_ready" in r.output and "created token file" in r.output
    # the preflight, before signing: this server's RPC URLs lead nowhere, so every chain read is unread
    said = " ".join(r.output.split())
    assert "preflight: nothing that was read blocks this route, but" in said, r.output
    assert "unread unknown (base, step 1): could not read" in said and "(advice: nothing is refused)" in said
    doc = json.loads(sfile.read_text())
    assert doc["session_id"] and token not in sfile.read_text()
    r = runner.invoke(cli_app, ["session", "show", *files])
    assert r.exit_code == 0 and doc["session_id"] in r.output and "0.0" in r.output
    _fits_80_columns(r.stdout)  # the in-process server logs on stderr
    # each fact on its own labelled row: a phrase is never split across lines at 80 columns
    for phrase in ("status action_ready; next: submit_current_action", f"session {doc['session_id']}"):
        assert any(" ".join(line.split()) == phrase for line in r.output.splitlines()), (phrase, r.output)
    r = runner.invoke(cli_app, ["session", "show", "--view", "receipt", "--json", *files])
    assert r.exit_code == 0 and json.loads(r.stdout)["view"] == "receipt"
    r = runner.invoke(cli_app, ["session", "show", "--view", "receipt", *files])  # a table, not raw JSON
    assert r.exit_code == 0 and "receipt: quoted vs actual" in r.output and '"view"' not in r.output
    assert "uniswap_v3" in r.output and "complete" in r.output
    _fits_80_columns(r.stdout)  # the in-process server logs on stderr
    r = runner.invoke(cli_app, ["session", "next", *files])
    assert r.exit_code == 0, r.output
    assert "your wallet would be asked to sign" in r.output and "exactInputSingle" in r.output
    # before anyone signs, in words: the bounds are modelled, accepted at create (kept in the session file)
    said = " ".join(r.output.split())
    assert "WARNING: bounds are modelled from the embedded snapshot of 2026-11-20" in said
    assert "not live market data" in said and "accepted as modelled" in said
    assert "ok time_left (base, step 1):" in said  # the session read carries the preflight too
    assert "unread unknown (arbitrum, step 2): could not read the gas balance on arbitrum" in said
    assert doc["accept_modelled_bounds"] is True
    r = runner.invoke(cli_app, ["session", "next", "--json", *files])
    bundle = json.loads(r.stdout)
    assert bundle["step_index"] == 0 and bundle["signed"] is False
    r = runner.invoke(cli_app, ["session", "observe", "--tx", "0x" + "22" * 32, *files])
    assert r.exit_code == 1 and "rpc_transport_error:base" in r.output
    r = runner.invoke(cli_app, ["session", "refresh", *files])
    assert r.exit_code == 1 and "operation_not_allowed_in_status" in r.output
    r = runner.invoke(cli_app, ["session", "cancel", *files])
    assert r.exit_code == 0 and "cancelled" in r.output
    step0 = [line for line in r.output.splitlines() if line.startswith("step 0")]
    assert step0 and "cancelled (was action_ready)" in step0[0], r.output  # not "action_ready" any more
    r = runner.invoke(cli_app, ["session", "next", *files])
    assert r.exit_code == 3 and "no action to sign" in r.output
    r = runner.invoke(
        cli_app, ["session", "create", "--quote", str(qfile), "--url", url, *wallets, *files, *MODELLED_OK]
    )
    assert r.exit_code == 1 and "exists" in r.output  # one session per file
    # a second session with the same token file reuses the token (never printed)
    other = tmp_path / "s2.json"
    r = runner.invoke(
        cli_app,
        [
            "session",
            "create",
            "--quote",
            str(qfile),
            "--url",
            url,
            *wallets,
            "--token-file",
            str(tfile),
            "--session-file",
            str(other),
            *MODELLED_OK,
        ],
    )
    assert tfile.read_text().strip() == token
    assert token not in r.output


def test_cli_session_create_refuses_modelled_bounds_without_the_flag(url: str, tmp_path: Path) -> None:
    runner = CliRunner()
    qfile = tmp_path / "q.json"
    r = runner.invoke(cli_app, ["quote", "base:ETH", "base:USDC", "100", "--url", url, "--save", str(qfile)])
    assert r.exit_code == 0, r.output
    files = ["--token-file", str(tmp_path / "t"), "--session-file", str(tmp_path / "s.json")]
    wallets = ["--wallet", f"base={wallets_for(ONE_STEP)['base']}"]
    r = runner.invoke(cli_app, ["session", "create", "--quote", str(qfile), "--url", url, *wallets, *files])
    said = " ".join(r.output.split())
    assert r.exit_code == 1 and "bounds_modelled_not_live" in said, r.output
    assert "modelled from the embedded snapshot of 2026-11-20" in said and "--accept-modelled-bounds" in said


def test_cli_session_reapproval_and_tampered_quote_file(url: str, tmp_path: Path) -> None:
    runner = CliRunner()
    qfile = tmp_path / "q.json"
    r = runner.invoke(cli_app, ["quote", "base:ETH", "base:USDC", "100", "--url", url, "--save", str(qfile)])
    assert r.exit_code == 0
    files = ["--token-file", str(tmp_path / "t"), "--session-file", str(tmp_path / "s.json")]
    wallets = ["--wallet", f"base={wallets_for(ONE_STEP)['base']}"]
    q = json.loads(qfile.read_text())
    bad = copy.deepcopy(q)
    bad["direct_route_summary"]["steps"][0]["minimum_output_base"] = "1"
    qbad = tmp_path / "bad.json"
    qbad.write_text(json.dumps(bad))
    r = runner.invoke(cli_app, ["session", "create", "--quote", str(qbad), "--url", url, *wallets, *files])
    assert r.exit_code == 1 and "quote refused" in r.output
    r = runner.invoke(
        cli_app,
        [
            "session",
            "create",
            "--quote",
            str(qfile),
            "--url",
            url,
            *wallets,
            "--min-output-base",
            "1",
            *files,
        ],
    )
    assert r.exit_code == 1 and "minimum_output_weaker_than_quote" in r.output
    # a quote this server never issued (an in-process one): 409 reapproval_required, nothing created
    r = runner.invoke(
        cli_app, ["quote", "base:ETH", "base:USDC", "100", "--save", str(tmp_path / "local.json")]
    )
    r = runner.invoke(
        cli_app,
        [
            "session",
            "create",
            "--quote",
            str(tmp_path / "local.json"),
            "--url",
            url,
            *wallets,
            *files,
            *MODELLED_OK,
        ],
    )
    assert r.exit_code == 1 and "reapproval required" in r.output
    assert not (tmp_path / "s.json").exists()


def test_cli_matrix_against_a_server(url: str) -> None:
    r = CliRunner().invoke(cli_app, ["matrix", "--amount", "1000", "--url", url, "--json"])
    assert r.exit_code == 0, r.output
    cells = json.loads(r.stdout)["cells"]
    assert len(cells) == 72 and all("cost_bps" in c for c in cells.values())


def test_example_quote_to_prepare(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "quote_to_prepare", Path(__file__).parents[2] / "examples" / "quote_to_prepare.py"
    )
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    wallet = wallets_for(ONE_STEP)["base"]
    code = example.main(
        [
            *("--url", url, "--route", ONE_STEP, "--amounts", "100", "1000", "--wallet", f"base={wallet}"),
            *MODELLED_OK,
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.count(" ETH, receive ") == 2 and "gets the better rate" in out
    assert "verify_bundle: 0 error(s)" in out and "your wallet would be asked to sign" in out
    assert "exactInputSingle: swap 0.0" in out and "Uniswap SwapRouter02" in out
    assert "  preflight: " in out and "time_left (base, step 1)" in out  # the advice, after the action


def test_cli_matrix_waits_out_the_rate_limit_and_fails_when_cells_are_missing() -> None:
    """Run twice in a minute the matrix used to stop at 37 or 48 of 72 on rate_limit_exceeded and exit 0."""
    # 16 requests at once against a budget of 12 a second: the first burst alone runs into the limit, however
    # slowly a busy machine sends the rest (at 24 a second it took two bursts inside one second, and a loaded
    # run never hit the limit)
    port = free_port()
    app = create_app(Settings(rate_limit="12/second", port=port, dev_signing_key_path=""))
    with running_server(app, port) as base:
        waited = CliRunner().invoke(
            cli_app, ["matrix", "--amount", "100", "--url", base, "--concurrency", "16"]
        )
        assert waited.exit_code == 0, waited.output
        assert "72 of 72 cells filled" in waited.output and "waited out the rate limit" in waited.output
    port = free_port()
    app = create_app(Settings(rate_limit="10/minute", port=port, dev_signing_key_path=""))
    with running_server(app, port) as base:
        cut = CliRunner().invoke(cli_app, ["matrix", "--url", base, "--max-retries", "0", "--json"])
    assert cut.exit_code == 1, cut.output
    out = json.loads(cut.output)
    assert out["missing"] > 0
    assert sum(c.get("error") == "rate_limit_exceeded" for c in out["cells"].values()) == out["missing"]


def test_cli_session_on_placeholder_fee_recipients_needs_the_explicit_flag(
    base_url: str, tmp_path: Path
) -> None:
    runner = CliRunner()
    qfile = tmp_path / "q.json"
    r = runner.invoke(
        cli_app, ["quote", "base:ETH", "base:USDC", "100", "--url", base_url, "--save", str(qfile)]
    )
    assert r.exit_code == 0, r.output
    files = ["--token-file", str(tmp_path / "s.token"), "--session-file", str(tmp_path / "s.json")]
    wallets = [x for chain, addr in wallets_for(ONE_STEP).items() for x in ("--wallet", f"{chain}={addr}")]
    create = ["session", "create", "--quote", str(qfile), "--url", base_url, *wallets, *files, *MODELLED_OK]
    r = runner.invoke(cli_app, create)
    assert r.exit_code == 1 and "fee_recipient_not_configured" in r.output, r.output
    # the session the server opened is kept (saved before its answer was verified), and the output says
    # what to do with it: never sign the refused action, cancel it or continue once the cause is fixed
    refused_id = json.loads((tmp_path / "s.json").read_text())["session_id"]
    said = " ".join(r.output.split())
    assert f"session {refused_id} is open on the server" in said and "do not sign it" in said, said
    assert f"routequote session cancel --session-file {tmp_path / 's.json'}" in said, said
    r = runner.invoke(cli_app, ["session", "cancel", *files])
    assert r.exit_code == 0 and refused_id in r.output and "cancelled" in r.output, r.output
    (tmp_path / "s.json").unlink()
    # one session per approved quote: approve a fresh quote, and accept the placeholder explicitly
    r = runner.invoke(
        cli_app, ["quote", "base:ETH", "base:USDC", "100", "--url", base_url, "--save", str(qfile)]
    )
    assert r.exit_code == 0, r.output
    r = runner.invoke(cli_app, [*create, "--accept-unconfigured-fee-recipient"])
    assert r.exit_code == 0, r.output
    assert json.loads((tmp_path / "s.json").read_text())["accept_unconfigured_fee_recipient"] is True
    r = runner.invoke(cli_app, ["session", "next", *files])  # the acceptance is kept for the session
    assert r.exit_code == 0 and "your wallet would be asked to sign" in r.output, r.output
