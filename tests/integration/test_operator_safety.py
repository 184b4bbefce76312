"""Operator safety on the defaults: until fee recipients are configured, the instance says so at start (one
warning), on /readyz, in the safety document and in every prepared action (`fee_recipient_configured`)."""

from __future__ import annotations

import logging
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tests.support.server import free_port, running_server

from routequote.app import create_app
from routequote.config import Settings

OPERATOR = {
    "fee_recipient_evm": "0x" + "fe" * 20,
    "fee_recipient_solana": "HN7cABqLq46Es1jh92dQQisAq662SmxELLLsHHe4YWrH",
}
PREPARE = {
    "caller_approved": True,
    "from_chain": "base",
    "from_token": "USDC",
    "to_chain": "base",
    "to_token": "ETH",
    "amount_usd": 100,
    "wallets": {"base": "0x1111111111111111111111111111111111111111"},
}


def _served(settings: Settings) -> Iterator[str]:
    with running_server(create_app(settings), settings.port) as url:
        yield url


@pytest.fixture(scope="module")
def default_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    db = tmp_path_factory.mktemp("op-default") / "s.sqlite3"
    yield from _served(Settings(rate_limit="off", port=free_port(), database_url=f"sqlite+aiosqlite:///{db}"))


@pytest.fixture(scope="module")
def operator_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    db = tmp_path_factory.mktemp("op-configured") / "s.sqlite3"
    settings = Settings(
        rate_limit="off", port=free_port(), database_url=f"sqlite+aiosqlite:///{db}", **OPERATOR
    )
    yield from _served(settings)


def test_defaults_report_the_placeholder_everywhere(default_url: str) -> None:
    with httpx.Client(base_url=default_url) as http:
        ready = http.get("/readyz")
        assert ready.status_code == 200  # still serves quotes: reported, not failing
        assert ready.json()["fee_recipients_configured"] == {"evm": False, "solana": False}
        assert len(ready.json()["warnings"]) == 2
        safety = http.get("/.well-known/routequote-safety.json").json()
        assert safety["claims"]["fee_policy"]["fee_recipients_configured"] == {"evm": False, "solana": False}
        assert "fee_recipient_not_configured" in {x["id"] for x in safety["known_limitations"]}
        bundle = http.post("/v2/prepare", json=PREPARE).json()
        assert bundle["fee_recipient_configured"] is False, bundle


def test_configured_recipients_report_configured(operator_url: str) -> None:
    with httpx.Client(base_url=operator_url) as http:
        ready = http.get("/readyz").json()
        assert ready["fee_recipients_configured"] == {"evm": True, "solana": True} and ready["warnings"] == []
        safety = http.get("/.well-known/routequote-safety.json").json()
        assert "fee_recipient_not_configured" not in {x["id"] for x in safety["known_limitations"]}
        bundle = http.post("/v2/prepare", json=PREPARE).json()
        assert bundle["fee_recipient_configured"] is True


@pytest.mark.parametrize(("overrides", "warnings"), [({}, 1), (OPERATOR, 0)])
def test_one_start_up_warning_only_on_placeholders(
    caplog: pytest.LogCaptureFixture,
    tmp_path_factory: pytest.TempPathFactory,
    overrides: dict[str, str],
    warnings: int,
) -> None:
    db = tmp_path_factory.mktemp("op-start") / "s.sqlite3"
    settings = Settings(
        rate_limit="off", port=free_port(), database_url=f"sqlite+aiosqlite:///{db}", **overrides
    )
    with caplog.at_level(logging.WARNING):
        for url in _served(settings):
            httpx.get(url + "/livez")
            httpx.get(url + "/readyz")
    hits = [r for r in caplog.records if "fee_recipient_not_configured" in r.getMessage()]
    assert len(hits) == warnings, [r.getMessage() for r in hits]


def test_the_readmes_curl_prepare_flow_runs(operator_url: str, tmp_path: Path) -> None:
    """The README's prepare flow, pasted into a shell: it builds approval_v3 from the quote, prepares and
    verifies (the server's own fee recipient pinned)."""
    if shutil.which("jq") is None or shutil.which("curl") is None:
        pytest.skip("jq or curl is not installed")
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    block = next(b for b in re.findall(r"```sh\n(.*?)```", readme, re.S) if "/v2/prepare" in b and "jq" in b)
    exe = str(Path(sys.executable).parent / "routequote")
    script = (
        block.replace("http://127.0.0.1:8080", operator_url)
        .replace("0xYourPublicAddress", "0x1111111111111111111111111111111111111111")
        .replace("0xYourOperatorsPublishedRecipient", OPERATOR["fee_recipient_evm"])
        .replace(".venv/bin/routequote", exe)
    )
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    # this server prices from the embedded snapshot: as pasted, the verifier refuses the modelled bounds
    assert done.returncode == 1, done.stdout + done.stderr
    assert "FAIL bounds_modelled_not_live: bounds are modelled from the embedded snapshot" in done.stderr
    # and the flag the README names lets it through, saying so instead of "safe to hand to your wallet"
    accepted = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script.rstrip() + " --accept-modelled-bounds\n"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    ok = [line for line in accepted.stdout.splitlines() if line.startswith("OK ")]
    assert ok and ok[0].startswith("OK base:USDC->base:ETH step 0"), accepted.stdout
    assert "ACCEPTED AS MODELLED" in accepted.stdout and "safe to hand" not in accepted.stdout
