"""`routequote doctor`: every check, each of its ✗ paths, against loopback fakes (one small HTTP server playing
the four chains' RPCs, Circle Iris, Across, Pyth Hermes and LayerZero Scan, with the recorded answers the live
market tests use), the real PostgreSQL and Redis of the suite, and closed ports for what does not answer."""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from tests.support.loopback import json_server
from tests.support.postgres import PG_ADMIN_URL, require_postgres
from tests.support.services import require_redis
from typer.testing import CliRunner

from routequote import doctor
from routequote.cli import app as cli_app
from routequote.config import Settings
from routequote.doctor import FAIL, OK, SOLANA_MAINNET_GENESIS, WARN, Check, run_checks

RECORDINGS = Path(__file__).resolve().parents[1] / "recordings"
CLOSED = "http://127.0.0.1:9"
PROGRAM = "LzoftProgram1111111111111111111111111111111"
OPERATOR_EVM = "0x1111111111111111111111111111111111111111"
OPERATOR_SOLANA = "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM"
CHAIN_IDS = {"base": 8453, "arbitrum": 42161, "robinhood": 4663}


def _recorded(name: str) -> Any:
    return json.loads((RECORDINGS / name).read_text())


@dataclass
class World:
    """What each fake answers; a test changes one thing and looks for its line."""

    chain_ids: dict[str, int] = field(default_factory=lambda: dict(CHAIN_IDS))
    log_range_limit: int | None = None  # eth_getLogs refuses wider ranges (a provider plan's cap)
    genesis: str = SOLANA_MAINNET_GENESIS
    healthy: bool = True
    program: dict[str, Any] | None = field(default_factory=lambda: {"executable": True, "owner": "BPFLoader"})
    broken: set[str] = field(default_factory=set)  # paths answering HTTP 500
    url: str = ""

    def answer(self, method: str, path: str, body: bytes) -> tuple[int, Any]:
        top = path.strip("/").split("/")[0].split("?")[0]
        if top in self.broken:
            return 500, {"error": "internal"}
        if top in CHAIN_IDS or top == "solana":
            request = json.loads(body)
            return 200, {
                "jsonrpc": "2.0",
                "id": request["id"],
                **self.rpc(top, request["method"], request["params"]),
            }
        if top == "iris":
            return 200, _recorded("iris_get_burn_usdc_fees.json")["responses"]["5/6"]
        if top == "across":
            return 200, _recorded("across_get_suggested_fees.json")["responses"]["8453"]
        if top == "hermes":
            return 200, _recorded("pyth_get_updates_price_latest.json")["response"]
        if top == "lzscan":
            return 404, {"message": "not found"}  # an unknown transaction: not indexed
        return 404, {}

    def rpc(self, chain: str, method: str, params: list[Any]) -> dict[str, Any]:
        latest = 0x1000000
        if method == "eth_chainId":
            return {"result": hex(self.chain_ids[chain])}
        if method == "eth_blockNumber":
            return {"result": hex(latest)}
        if method == "eth_getLogs":
            span = int(params[0]["toBlock"], 16) - int(params[0]["fromBlock"], 16)
            if self.log_range_limit is not None and span > self.log_range_limit:
                return {"error": {"code": -32005, "message": "block range too large"}}
            return {"result": []}
        if method == "getGenesisHash":
            return {"result": self.genesis}
        if method == "getHealth":
            return (
                {"result": "ok"} if self.healthy else {"error": {"code": -32005, "message": "Node is behind"}}
            )
        if method == "getSlot":
            return {"result": 300_000_000}
        if method == "getAccountInfo":
            return {"result": {"context": {"slot": 1}, "value": self.program}}
        return {"error": {"code": -32601, "message": "method not found"}}


@pytest.fixture
def world() -> Iterator[World]:
    w = World()
    with json_server(w.answer) as w.url:
        yield w


def complete(w: World, **changes: Any) -> Settings:
    """A complete live configuration against the fakes (SQLite sessions, no Redis: those are tested alone)."""
    kw: dict[str, Any] = {
        "market": "live",
        "rpc_url_solana": f"{w.url}/solana",
        **{f"rpc_url_{c}": f"{w.url}/{c}" for c in CHAIN_IDS},
        "iris_url": f"{w.url}/iris",
        "across_url": f"{w.url}/across",
        "hermes_url": f"{w.url}/hermes",
        "layerzero_scan_url": f"{w.url}/lzscan",
        "usdg_oft_solana_program": PROGRAM,
        "fee_recipient_evm": OPERATOR_EVM,
        "fee_recipient_solana": OPERATOR_SOLANA,
        "signing_key": "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",  # base64 of a 32-byte seed
        "database_url": "sqlite+aiosqlite:///var-doctor-test/s.sqlite3",
    }
    return Settings(**{**kw, **changes})


# The fakes answer from this process at once, and what does not answer is a closed port (refused at once): a
# check's timeout could only measure a busy machine stalling this process (1.5 s for the REST lookups, the most
# the service allows them), never a fake's answer. Every check here gets a hang bound instead.
HANG = 60.0


def checks(settings: Settings, problems: list[str] | None = None) -> dict[str, Check]:
    return {c.name: c for c in asyncio.run(run_checks(settings, problems, timeout=HANG, lookup_timeout=HANG))}


def test_a_complete_live_configuration_passes_every_check(world: World) -> None:
    found = checks(complete(world))
    assert {n: c.status for n, c in found.items() if c.status != OK} == {}
    assert found["rpc base"].message == "chain id 8453, block 16,777,216, eth_getLogs over 20,000 blocks"
    assert found["rpc solana"].message.startswith("mainnet-beta genesis, healthy")
    assert found["usdg oft program"].message == f"{PROGRAM} is an executable program on Solana"
    assert found["signing key"].message.startswith("Ed25519, key id ")


def test_the_defaults_fail_and_warn_with_the_fix(world: World) -> None:
    found = checks(Settings(iris_url=f"{world.url}/iris", layerzero_scan_url=f"{world.url}/lzscan"))
    assert found["market"].status == FAIL and "ROUTEQUOTE_MARKET=live" in found["market"].fix
    for chain in ("solana", "base", "arbitrum", "robinhood"):
        c = found[f"rpc {chain}"]
        assert c.status == WARN and c.fix == f"set ROUTEQUOTE_RPC_URL_{chain.upper()}"
        assert "not session-ready" in c.message
    assert found["usdg oft program"].status == WARN and "14 routes" in found["usdg oft program"].message
    assert found["signing key"].status == FAIL and "routequote keys generate" in found["signing key"].fix
    for family in ("evm", "solana"):
        c = found[f"fee recipient {family}"]
        assert c.status == FAIL and f"ROUTEQUOTE_FEE_RECIPIENT_{family.upper()}" in c.fix
    assert found["across api"].status == found["pyth hermes"].status == OK  # not used by the embedded market
    assert found["database"].status == OK and found["redis"].status == OK


def test_configuration_problems_fail(world: World) -> None:
    found = asyncio.run(
        run_checks(
            complete(world),
            ["ROUTEQUOTE_MARKET: unknown market 'x' (embedded or live)"],
            timeout=HANG,
            lookup_timeout=HANG,
        )
    )
    bad = [c for c in found if c.name == "configuration"]
    assert [c.status for c in bad] == [FAIL] and "unknown market" in bad[0].message


def test_the_market_check(world: World) -> None:
    assert checks(complete(world, market_fallback="embedded"))["market"].status == WARN
    assert checks(complete(world, market="embedded"))["market"].status == FAIL


def test_an_evm_rpc_on_the_wrong_chain_fails(world: World) -> None:
    world.chain_ids["arbitrum"] = 1
    c = checks(complete(world))["rpc arbitrum"]
    assert (c.status, c.message) == (FAIL, "serves chain id 1, not 42161")


def test_an_evm_rpc_that_caps_the_log_range_fails(world: World) -> None:
    world.log_range_limit = 10_000
    c = checks(complete(world))["rpc base"]
    assert c.status == FAIL and "eth_getLogs over 20,000 blocks" in c.message
    assert "ROUTEQUOTE_ACROSS_FILL_SEARCH_BLOCKS" in c.fix
    assert checks(complete(world, across_fill_search_blocks=10_000))["rpc base"].status == OK


def test_an_unreachable_or_failing_evm_rpc_fails(world: World) -> None:
    c = checks(complete(world, rpc_url_robinhood=f"{CLOSED}/robinhood"))["rpc robinhood"]
    assert c.status == FAIL and "unreachable" in c.message and "ROUTEQUOTE_RPC_URL_ROBINHOOD" in c.fix
    world.broken.add("base")
    c = checks(complete(world))["rpc base"]
    assert (c.status, c.message) == (FAIL, "eth_chainId answered HTTP 500")


def test_the_solana_rpc_check(world: World) -> None:
    world.genesis = "4uhcVJyU9pJkvQyS88uRDiswHXSCkY3zQawwpjk2NsNY"  # testnet
    assert checks(complete(world))["rpc solana"].message == "serves another cluster than mainnet-beta"
    world.genesis, world.healthy = SOLANA_MAINNET_GENESIS, False
    c = checks(complete(world))["rpc solana"]
    assert c.status == FAIL and "getHealth" in c.message
    c = checks(complete(world, rpc_url_solana=f"{CLOSED}/solana"))["rpc solana"]
    assert c.status == FAIL and "unreachable" in c.message


def test_the_oft_program_check(world: World) -> None:
    assert checks(complete(world, usdg_oft_solana_program=""))["usdg oft program"].status == WARN
    c = checks(complete(world, rpc_url_solana=""))["usdg oft program"]
    assert c.status == WARN and "not checked" in c.message
    world.program = None
    c = checks(complete(world))["usdg oft program"]
    assert (c.status, c.message) == (FAIL, f"{PROGRAM} does not exist on Solana")
    world.program = {"executable": False, "owner": "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"}
    c = checks(complete(world))["usdg oft program"]
    assert (c.status, c.message) == (FAIL, f"{PROGRAM} is not an executable program")
    c = checks(complete(world, rpc_url_solana=f"{CLOSED}/solana"))["usdg oft program"]
    assert c.status == FAIL and "not checked" in c.message


@pytest.mark.parametrize(
    ("name", "setting", "path"),
    [
        ("circle iris", "iris_url", "iris"),
        ("layerzero scan", "layerzero_scan_url", "lzscan"),
        ("across api", "across_url", "across"),
        ("pyth hermes", "hermes_url", "hermes"),
    ],
)
def test_each_lookup_fails_when_it_does_not_answer_and_warns_when_unset(
    world: World, name: str, setting: str, path: str
) -> None:
    world.broken.add(path)
    c = checks(complete(world))[name]
    assert c.status == FAIL and f"ROUTEQUOTE_{setting.upper()}" in c.fix
    c = checks(complete(world, **{setting: f"{CLOSED}/{path}"}))[name]
    assert c.status == FAIL
    c = checks(complete(world, **{setting: ""}))[name]
    assert c.status == WARN and c.fix == f"set ROUTEQUOTE_{setting.upper()}"


def test_a_lookup_answering_garbage_fails(world: World) -> None:
    c = checks(complete(world, iris_url=f"{world.url}/elsewhere"))["circle iris"]  # 404 {} is not a fee list
    assert c.status == FAIL


def test_the_database_check(world: World, tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    c = checks(complete(world, database_url=f"sqlite+aiosqlite:///{tmp_path}/a-file/s.sqlite3"))["database"]
    assert c.status == FAIL and "not a writable directory" in c.message
    c = checks(complete(world, database_url="postgresql://routequote:secret@127.0.0.1:9/routequote"))[
        "database"
    ]
    assert c.status == FAIL and "secret" not in c.line() and "ROUTEQUOTE_DATABASE_URL" in c.fix
    require_postgres()
    c = checks(complete(world, database_url=PG_ADMIN_URL))["database"]
    assert (c.status, c.message) == (OK, "PostgreSQL answers SELECT 1")


def test_the_redis_check(world: World) -> None:
    assert checks(complete(world, workers=2))["redis"].status == WARN
    c = checks(complete(world, redis_url="redis://:secret@127.0.0.1:9/0"))["redis"]
    assert c.status == FAIL and "secret" not in c.line()
    require_redis()
    assert checks(complete(world, redis_url="redis://127.0.0.1:6379/0"))["redis"].status == OK


def test_the_signing_key_check(world: World, tmp_path: Path) -> None:
    c = checks(complete(world, signing_key="", signing_key_path=str(tmp_path / "missing.pem")))["signing key"]
    assert c.status == FAIL and "cannot be read" in c.message
    (tmp_path / "bad.pem").write_text("not a key")
    c = checks(complete(world, signing_key="", signing_key_path=str(tmp_path / "bad.pem")))["signing key"]
    assert (c.status, c.message) == (FAIL, "the configured key is not an Ed25519 key")
    c = checks(complete(world, signing_key="bm90IGEga2V5"))["signing key"]
    assert c.status == FAIL
    assert checks(complete(world, signing_key=""))["signing key"].status == FAIL


def test_no_line_repeats_a_url_or_a_key(world: World) -> None:
    settings = complete(world, rpc_url_base=f"{CLOSED}/v2/apikey-s3cr3t")
    lines = "\n".join(c.line() for c in checks(settings).values())
    assert "s3cr3t" not in lines and world.url not in lines and settings.signing_key not in lines


def _env(settings: dict[str, str]) -> dict[str, str]:
    return {f"ROUTEQUOTE_{k.upper()}": v for k, v in settings.items()}


def test_the_command_prints_one_line_per_check_and_exits_by_them(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the command's own checks, with the hang bound above for the lookups (`--timeout` gives the rest theirs)
    monkeypatch.setattr(doctor, "run_checks", functools.partial(doctor.run_checks, lookup_timeout=HANG))
    runner = CliRunner()
    full = complete(world, database_url=f"sqlite+aiosqlite:///{tmp_path}/s.sqlite3")
    env = _env({k: str(v) for k, v in full.model_dump().items() if isinstance(v, str | int | float)})
    ok = runner.invoke(cli_app, ["doctor", "--timeout", str(HANG)], env=env)
    assert ok.exit_code == 0, ok.output
    lines = ok.output.splitlines()
    assert all(line.startswith("✓") for line in lines[:-2]), ok.output
    assert lines[-2] == "readiness: 72 quotable, 72 prepare-ready (72 live), 72 session-ready"
    assert lines[-1] == f"{len(lines) - 2} checks: 0 failed, 0 warnings"
    missing = runner.invoke(
        cli_app, ["doctor", "--timeout", str(HANG)], env={**env, "ROUTEQUOTE_RPC_URL_ROBINHOOD": ""}
    )
    assert missing.exit_code == 0  # honest and reduced: the routes say why they are not session-ready
    assert "⚠ rpc robinhood: not set: the 30 routes touching robinhood" in missing.output
    assert "42 session-ready" in missing.output
    bad = runner.invoke(
        cli_app, ["doctor", "--timeout", str(HANG)], env={**env, "ROUTEQUOTE_MARKET": "bogus"}
    )
    assert bad.exit_code == 1 and "✗ configuration: ROUTEQUOTE_MARKET: unknown market" in bad.output
    down = runner.invoke(
        cli_app, ["doctor", "--timeout", str(HANG)], env={**env, "ROUTEQUOTE_IRIS_URL": f"{CLOSED}/iris"}
    )
    assert down.exit_code == 1 and "✗ circle iris" in down.output
