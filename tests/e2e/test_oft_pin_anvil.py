"""The USDG OFT program found on chain (oft_pin.py): the real OFTAdapter on anvil (chain id 4663, Robinhood's) with
`setPeer(30168, store)`, read by the production `JsonRpcEvmState`, and a Solana JSON-RPC fake whose
`getAccountInfo` answers the store's owner, read by the production `JsonRpcSolanaReader`. Covers the derived pin,
the override, a disagreement, an owner that is not executable and an RPC down at start (retried, never guessed);
then the pin applied to a built app: capabilities, /readyz's observation, the safety document, session readiness
and the arrival check."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from _evm import AnvilChain
from _lz import deploy_layerzero
from solders.pubkey import Pubkey
from tests.support.loopback import json_server
from tests.support.server import free_port, running_server

from routequote.app import create_app
from routequote.config import Settings
from routequote.core.actions.evm import DEFAULT_DEPLOYMENTS, LZ_EID
from routequote.core.assets import Chain
from routequote.core.routes import Provider
from routequote.market.snapshot import EmbeddedSnapshot
from routequote.observe.evm import JsonRpcEvmReader
from routequote.observe.evm_state import JsonRpcEvmState
from routequote.observe.solana import JsonRpcSolanaReader
from routequote.oft_pin import LZ_EID_SOLANA, OftPin, OftPinResolver

pytestmark = pytest.mark.chain

STORE = Pubkey.from_bytes(hashlib.sha256(b"local USDG OFT store").digest())  # the peer set on anvil
PROGRAM = str(Pubkey.from_bytes(hashlib.sha256(b"local USDG OFT program").digest()))
OTHER = str(Pubkey.from_bytes(hashlib.sha256(b"another program").digest()))
LOADER = "BPFLoaderUpgradeab1e11111111111111111111111"


@dataclass
class SolanaFake:
    """getAccountInfo for the store (owned by `owner`) and the programs (`executable` per program)."""

    owner: str = PROGRAM
    executable: dict[str, bool] = field(default_factory=lambda: {PROGRAM: True, OTHER: True})
    down: bool = False
    calls: list[str] = field(default_factory=list)

    def answer(self, method: str, path: str, body: bytes) -> tuple[int, Any]:
        if self.down:
            return 503, {"error": "unavailable"}
        request = json.loads(body)
        address = request["params"][0]
        self.calls.append(address)
        if request["method"] != "getAccountInfo":
            return 200, {"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": "no"}}
        if address == str(STORE):
            value: dict[str, Any] | None = {"owner": self.owner, "executable": False, "lamports": 3_000_000}
        elif address in self.executable:
            value = {"owner": LOADER, "executable": self.executable[address], "lamports": 1_141_440}
        else:
            value = None
        if value is not None:
            value.update(data=["", "base64"], rentEpoch=0, space=0)
        return 200, {
            "jsonrpc": "2.0",
            "id": request["id"],
            "result": {"context": {"slot": 1}, "value": value},
        }


@pytest.fixture(scope="module")
def robinhood(anvil_factory: Callable[[int], AnvilChain]) -> tuple[AnvilChain, str]:
    chain = anvil_factory(4663)
    oft = deploy_layerzero(chain, LZ_EID[Chain.ROBINHOOD])["usdg_oft"]
    chain.transact(oft, "setPeer(uint32,bytes32)", LZ_EID_SOLANA, bytes(STORE))
    return chain, oft


@pytest.fixture
def solana() -> Iterator[tuple[SolanaFake, str]]:
    fake = SolanaFake()
    with json_server(fake.answer) as url:
        yield fake, url


def resolve(
    robinhood: tuple[AnvilChain, str], solana_url: str, setting: str | None, rounds: int = 1
) -> tuple[OftPinResolver, list[OftPin]]:
    chain, oft = robinhood
    seen: list[OftPin] = []

    async def run() -> OftPinResolver:
        async with httpx.AsyncClient() as client:
            evm = JsonRpcEvmState(JsonRpcEvmReader({"robinhood": chain.url}, client))
            sol = JsonRpcSolanaReader(solana_url, client, failure_threshold=100)
            resolver = OftPinResolver(
                setting, evm=evm, solana=sol, robinhood_oft=oft, now=lambda: "t", on_change=seen.append
            )
            for _ in range(rounds):
                await resolver.refresh()
            return resolver

    return asyncio.run(run()), seen


def test_pin_is_derived_from_the_oft_peer_and_the_store_owner(robinhood: Any, solana: Any) -> None:
    fake, url = solana
    resolver, _ = resolve(robinhood, url, None)
    assert resolver.pin.source == "chain"
    assert resolver.pin.program == PROGRAM
    assert resolver.pin.chain is not None and resolver.pin.chain.store == str(STORE)
    assert fake.calls == [str(STORE), PROGRAM]  # the store, then its owner's executable flag


def test_setting_overrides_and_agrees(robinhood: Any, solana: Any) -> None:
    _, url = solana
    resolver, _ = resolve(robinhood, url, PROGRAM)
    assert (resolver.pin.source, resolver.pin.program, resolver.pin.problem) == ("setting", PROGRAM, None)
    assert resolver.pin.report()["chain_program"] == PROGRAM


def test_setting_that_disagrees_with_the_chain_is_an_error_and_pins_nothing(
    robinhood: Any, solana: Any
) -> None:
    _, url = solana
    resolver, _ = resolve(robinhood, url, OTHER)
    assert resolver.pin.source == "setting"
    assert resolver.pin.program is None
    assert (
        resolver.pin.problem is not None and OTHER in resolver.pin.problem and PROGRAM in resolver.pin.problem
    )
    assert resolver.pin.report()["error"] == resolver.pin.problem


def test_owner_that_is_not_executable_is_not_pinned(robinhood: Any, solana: Any) -> None:
    fake, url = solana
    fake.executable[PROGRAM] = False
    resolver, _ = resolve(robinhood, url, None)
    assert resolver.pin.source == "not_pinned"
    assert resolver.pin.program is None
    assert resolver.pin.reason is not None and "not an executable program" in resolver.pin.reason


def test_rpc_down_at_start_is_not_pinned_then_retried(robinhood: Any, solana: Any) -> None:
    chain, oft = robinhood
    fake, url = solana
    fake.down = True
    seen: list[OftPin] = []

    async def run() -> OftPinResolver:
        async with httpx.AsyncClient() as client:
            resolver = OftPinResolver(
                None,
                evm=JsonRpcEvmState(JsonRpcEvmReader({"robinhood": chain.url}, client)),
                solana=JsonRpcSolanaReader(url, client, failure_threshold=100),
                robinhood_oft=oft,
                now=lambda: "t",
                interval_seconds=1,
                on_change=seen.append,
            )
            async with resolver.running():  # the start-up round fails: not pinned, nothing guessed
                assert resolver.pin.source == "not_pinned" and resolver.pin.program is None
                assert resolver.pin.reason is not None and "read failed" in resolver.pin.reason
                fake.down = False
                for _ in range(600):  # the periodic round retries (the deadline only bounds a hang)
                    if resolver.pin.program is not None:
                        break
                    await asyncio.sleep(0.05)
            return resolver

    resolver = asyncio.run(run())
    assert (resolver.pin.source, resolver.pin.program) == ("chain", PROGRAM)
    assert [p.source for p in seen][0] == "not_pinned"


def test_a_failed_read_keeps_the_pin_the_chain_gave(robinhood: Any, solana: Any) -> None:
    fake, url = solana
    chain, oft = robinhood

    async def run() -> OftPin:
        async with httpx.AsyncClient() as client:
            resolver = OftPinResolver(
                None,
                evm=JsonRpcEvmState(JsonRpcEvmReader({"robinhood": chain.url}, client)),
                solana=JsonRpcSolanaReader(url, client, failure_threshold=100),
                robinhood_oft=oft,
                now=lambda: "t",
            )
            await resolver.refresh()
            fake.down = True
            return await resolver.refresh()

    pin = asyncio.run(run())
    assert (pin.source, pin.program) == ("chain", PROGRAM)


def _app(
    robinhood: tuple[AnvilChain, str], solana_url: str, tmp: Path, setting: str = "", **more: Any
) -> Any:
    chain, oft = robinhood
    settings = Settings(
        **more,
        market="live",
        rate_limit="off",
        database_url=f"sqlite+aiosqlite:///{tmp}/s.sqlite3",
        rpc_url_robinhood=chain.url,
        rpc_url_solana=solana_url,
        rpc_url_base="http://127.0.0.1:9/base",
        rpc_url_arbitrum="http://127.0.0.1:9/arbitrum",
        usdg_oft_solana_program=setting,
    )
    deployments = {Chain.ROBINHOOD: DEFAULT_DEPLOYMENTS[Chain.ROBINHOOD].with_overrides(usdg_oft=oft)}
    return create_app(settings, market=EmbeddedSnapshot(), deployments=deployments)


def _oft_routes_ready(app: Any) -> int:
    details = app.state.service.route_details()["routes"]
    oft = [r for r in details if Provider.PAXOS_OFT.value in r["providers"]]
    assert len(oft) == 14
    return sum(1 for r in oft if r["session_ready"])


def test_a_derived_pin_makes_the_oft_routes_session_ready_and_is_shown(
    robinhood: Any, solana: Any, tmp_path: Path
) -> None:
    _, url = solana
    app = _app(robinhood, url, tmp_path)
    assert _oft_routes_ready(app) == 0  # before the first round: not pinned, nothing guessed

    async def run() -> dict[str, Any]:
        await app.state.oft_pin.refresh()
        doc: dict[str, Any] = await app.state.discovery.safety_document()
        await app.state.sessions.http_client.aclose()
        return doc

    safety = asyncio.run(run())
    assert _oft_routes_ready(app) == 14
    assert app.state.sessions.config.usdg_oft_solana_program == PROGRAM
    readyz = app.state.probes.observation["usdg_oft_solana_program"]  # the dict /readyz reports
    assert (readyz["source"], readyz["program"], readyz["chain_store"]) == ("chain", PROGRAM, str(STORE))
    oft = app.state.service.capabilities()["sessions"]["solana_arrivals"]["oft"]
    assert (oft["program_source"], oft["usdg_oft_solana_program"], oft["verifiable"]) == (
        "chain",
        PROGRAM,
        True,
    )
    assert safety["claims"]["usdg_oft_solana_program"]["source"] == "chain"
    limits = {x["id"] for x in safety["known_limitations"]}
    assert "usdg_oft_solana_program_not_pinned" not in limits


def test_a_disagreement_is_an_error_everywhere_and_no_arrival_is_accepted(
    robinhood: Any, solana: Any, tmp_path: Path
) -> None:
    _, url = solana
    app = _app(robinhood, url, tmp_path, setting=OTHER)
    assert _oft_routes_ready(app) == 14  # the setting alone, before the chain is read

    async def run() -> dict[str, Any]:
        await app.state.oft_pin.refresh()
        doc: dict[str, Any] = await app.state.discovery.safety_document()
        await app.state.sessions.http_client.aclose()
        return doc

    safety = asyncio.run(run())
    readyz = app.state.probes.observation["usdg_oft_solana_program"]
    assert readyz["source"] == "setting" and readyz["program"] is None
    assert OTHER in readyz["error"] and PROGRAM in readyz["error"]
    limits = {x["id"]: x["text"] for x in safety["known_limitations"]}
    assert limits["usdg_oft_solana_program_disagreement"] == readyz["error"]
    assert safety["claims"]["usdg_oft_solana_program"]["error"] == readyz["error"]
    assert _oft_routes_ready(app) == 0
    config = app.state.sessions.config
    assert config.usdg_oft_solana_program is None and config.usdg_oft_pin_problem == readyz["error"]


def test_served_the_pin_is_read_at_start_shown_over_http_and_a_change_is_logged(
    robinhood: Any, solana: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A running server: its start-up round pins the program (nothing here calls refresh), and /readyz,
    capabilities and the safety document say so over HTTP. The store's owner then changes on Solana: a later
    periodic round pins the new program, shows it everywhere and logs the change."""
    fake, url = solana
    caplog.set_level(logging.WARNING, logger="routequote.oft_pin")
    port = free_port()
    app = _app(robinhood, url, tmp_path, port=port, usdg_oft_pin_interval_seconds=1)

    def shown(http: httpx.Client) -> tuple[Any, Any, Any]:
        ready = http.get("/readyz").json()["observation"]["usdg_oft_solana_program"]
        caps = http.get("/v2/capabilities").json()["sessions"]["solana_arrivals"]["oft"]
        safety = http.get("/.well-known/routequote-safety.json").json()["claims"]["usdg_oft_solana_program"]
        return (
            (ready["source"], ready["program"]),
            (caps["program_source"], caps["usdg_oft_solana_program"]),
            (safety["source"], safety["program"]),
        )

    with running_server(app, port) as base, httpx.Client(base_url=base, timeout=30) as http:
        assert shown(http) == (("chain", PROGRAM),) * 3
        assert http.get("/readyz").json()["observation"]["usdg_oft_solana_program"]["chain_store"] == str(
            STORE
        )
        fake.owner = OTHER  # the OFT store's owner changes on chain
        deadline = time.monotonic() + 120  # bounds a hang only: the next round comes when it comes
        while shown(http)[0] != ("chain", OTHER) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert shown(http) == (("chain", OTHER),) * 3
    changes = [r for r in caplog.records if "usdg_oft_pin_changed" in r.getMessage()]
    assert changes, caplog.text
    assert OTHER in changes[-1].getMessage() and PROGRAM in changes[-1].getMessage()
