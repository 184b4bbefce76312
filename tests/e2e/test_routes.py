"""Every route of `ROUTES`, at $1 and $1,000, carried from create to `complete` through the REST API of a running
server, on local chains (see `_routes.py` for the harness and `docs/routes.md` for what ran how).

One world per session store: anvil 8453 / 42161 / 4663 (shared with the other e2e modules, restored after each
run), Uniswap v3 and the Across SpokePool from npm, CCTP v2 stand-ins on base and arbitrum, LayerZero
EndpointV2 + the USDG OFT adapter on robinhood (`_lz.py`), a fake Iris and a fake Solana JSON-RPC fed by the
LiteSVM + simulator of `_solana_sim.py`. The app runs with one confirmation per EVM chain and its production
observers.

The 38 routes through a Raydium or Orca swap run on the embedded snapshot (Solana swaps built from the
snapshot's pool state; while a build cannot, create is asserted to refuse them with the service's own reason)
and again on a second server whose market is live, read from recorded upstream answers
(`test_route_completes_on_a_live_market`); the Solana swaps run in the run's LiteSVM, the swap program simulated
with the venue SDK's math (`_solana_programs.py`).
Each run's per-step proof labels are collected; `RQ_UPDATE_ROUTES=1`
writes them to `tests/recordings/routes/route_results.json` (the source of `docs/routes.md`, `make
routes-doc`); otherwise every run must agree with that committed file.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from _bridge_wire import iris_fee
from _evm import AnvilChain
from _routes import (
    Run,
    World,
    build_world,
    check_receipt,
    fresh_chains,
)
from _sessions import SESSION_HEADER, approval, intent, new_key, new_token
from tests.support.postgres import require_postgres, temporary_database
from tests.unit.actions.test_solana_swaps import pinned_live_market, pinned_raydium_upstreams

from routequote.core.routes import ROUTES, Provider

pytestmark = pytest.mark.chain
RESULTS = Path(__file__).resolve().parents[1] / "recordings" / "routes" / "route_results.json"
UPDATE_ENV = "RQ_UPDATE_ROUTES"
NOT_RUN_ENV = "RQ_ROUTES_NOT_RUN_REASON"
AMOUNTS = (1, 1000)
ISSUE_18 = "needs the Solana swap prepared from the snapshot (issue 18)"
# One route per step kind (and direction family) for the PostgreSQL variant.
POSTGRES_ROUTES = (
    "base:ETH->robinhood:ETH",  # uniswap_v3 on base and robinhood, across base->robinhood
    "arbitrum:ETH->base:ETH",  # uniswap_v3 on arbitrum and base, cctp arbitrum->base with the EVM mint
    "solana:USDC->arbitrum:USDC",  # cctp burn on Solana
    "base:USDC->solana:USDC",  # cctp arrival on Solana
    "robinhood:USDG->solana:USDG",  # the USDG OFT send
)
SOLANA_SWAPS = (Provider.RAYDIUM_CLMM, Provider.ORCA_WHIRLPOOL)
EMBEDDED_ROUTES = [n for n, r in ROUTES.items() if not any(s.provider in SOLANA_SWAPS for s in r.steps)]
LIVE_ROUTES = [n for n in ROUTES if n not in EMBEDDED_ROUTES]  # through a Raydium or Orca swap
POSTGRES_LIVE_ROUTES = ("solana:SOL->solana:USDG",)  # raydium_clmm then orca_whirlpool
_collected: dict[str, dict[str, Any]] = {}
_collected_live: dict[str, dict[str, Any]] = {}
RECORDED_AT = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)  # the recordings' time (tests/recordings)


@contextlib.contextmanager
def must_run() -> Iterator[None]:
    """The chain suite backs docs/routes.md: a toolchain that cannot run it fails the build (the table would claim
    what nothing checked), unless the build declares why in RQ_ROUTES_NOT_RUN_REASON (the doc then prints it)."""
    try:
        yield
    except pytest.skip.Exception as e:
        declared = os.environ.get(NOT_RUN_ENV, "").strip()
        if declared:
            pytest.skip(f"declared ({NOT_RUN_ENV}): {declared}; cause: {e}")
        pytest.fail(
            f"the route suite cannot run ({e}) while docs/routes.md claims its results: make it run, or declare "
            f"why with {NOT_RUN_ENV}=<reason> (`make routes-doc` then prints it)"
        )


@pytest.fixture(scope="module")
def world(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    db = tmp_path_factory.mktemp("routes") / "sessions.sqlite3"
    with must_run():
        anvil_factory = request.getfixturevalue("anvil_factory")
        stack = contextlib.ExitStack()
        w = stack.enter_context(build_world(anvil_factory, f"sqlite+aiosqlite:///{db}"))
    with stack:
        yield w


@pytest.fixture(scope="module")
def unavailable(world: World) -> dict[str, str]:
    """The service's own reasons, from the route document capabilities links, for the routes it cannot run
    as a session."""
    link = world.api.http.get("/v2/capabilities").json()["links"]["routes"]
    details = world.api.http.get(link).json()["routes"]
    return {r["route"]: r["session_unavailable_reason"] for r in details if not r["session_ready"]}


def run_route(world: World, name: str, amount: int) -> list[dict[str, Any]]:
    run = Run(world, name, amount)
    run.fund()
    run.create()
    run.drive()
    return check_receipt(run)


@pytest.mark.parametrize("amount", AMOUNTS, ids=lambda a: f"usd{a}")
@pytest.mark.parametrize("name", EMBEDDED_ROUTES)
def test_route_completes(world: World, unavailable: dict[str, str], name: str, amount: int) -> None:
    assert name not in unavailable, unavailable.get(name)
    with fresh_chains(world):
        steps = run_route(world, name, amount)
    _collected[f"{name} ${amount}"] = {"status": "complete", "steps": steps}


@pytest.mark.parametrize("amount", AMOUNTS, ids=lambda a: f"usd{a}")
@pytest.mark.parametrize("name", LIVE_ROUTES)
def test_route_through_a_solana_swap_on_the_embedded_snapshot(
    world: World, unavailable: dict[str, str], name: str, amount: int
) -> None:
    """A route through a Solana swap: while the service cannot carry it on the embedded snapshot (issue 18),
    capabilities say why and create answers 400 with that reason; once it can, it is carried to `complete`."""
    if name not in unavailable:
        with fresh_chains(world):
            steps = run_route(world, name, amount)
        _collected[f"{name} ${amount}"] = {"status": "complete", "steps": steps}
        return
    reason = unavailable[name]
    assert "solana_swap_needs_live_pool_state" in reason, reason  # nothing else may keep a route out
    run = Run(world, name, amount, evm_wallet="0x" + "5a" * 20)
    q = world.api.quote(name, amount)
    key = new_key("create")
    body = {
        "caller_approved": True,
        **intent(name, amount),
        "wallets": run.wallets(),
        "approval_v3": approval(q, key),
        "idempotency_key": key,
    }
    if run.route.event_signer_required:
        body["event_signer_public"] = str(run.event.pubkey())
    r = world.api.http.post("/v2/session", json=body, headers={SESSION_HEADER: new_token()})
    # a first step that cannot be prepared is refused by the prepare rule, a later one by the session rule
    first = ROUTES[name].steps[0].provider in SOLANA_SWAPS
    assert r.status_code == 400, r.text
    assert r.json()["reason_class"] == ("route_not_prepare_ready" if first else "route_not_session_ready"), (
        r.text
    )
    assert "solana_swap_needs_live_pool_state" in r.json()["message"], r.text
    where = reason.split(": solana_swap_needs_live_pool_state")[0]  # e.g. "step 0 (raydium_clmm on solana)"
    _collected[f"{name} ${amount}"] = {
        "status": "not_run",
        "reason": f"{ISSUE_18}: {where}",
        "steps": _steps(name),
    }


@pytest.mark.parametrize(
    "name", ["base:USDC->solana:USDC", "solana:USDC->base:USDC", "base:USDC->arbitrum:USDC"]
)
def test_circle_charging_another_fee_than_quoted_delivers_what_its_message_says(
    world: World, name: str
) -> None:
    """Iris executes 0.5 bp (the quote assumed Circle's 1 to 1.3 bp): the mint is the attested message's amount less
    that fee, measured on the destination chain, and the receipt says the same."""
    with fresh_chains(world):
        run = Run(world, name, 1000, iris_bps_milli=500)
        run.fund()
        run.create()
        run.drive()
        check_receipt(run)
        bridge = run.world.api.read(run.sid, run.token)["steps"][0]["bridge"]
        burn, max_fee = int(bridge["burn_amount"]), int(bridge["max_fee"])
        got = run.outcomes[0].measured_output
        assert got == burn - iris_fee(burn, max_fee, 500)
        assert got != int(run.quote["direct_route_summary"]["steps"][0]["expected_output_base"])


def _steps(name: str) -> list[dict[str, Any]]:
    """A route that cannot be created as a session runs none of its steps."""
    return [
        {"index": s.index, "provider": s.provider.value, "source": "not run: the session cannot be created"}
        for s in ROUTES[name].steps
    ]


@pytest.fixture(scope="module")
def pg_world(
    anvil_factory: Callable[[int], AnvilChain], world: World
) -> Iterator[World]:  # after the SQLite world: the chains are restored by then
    require_postgres()
    with temporary_database() as url, build_world(anvil_factory, url) as w:
        yield w


@pytest.mark.postgres
@pytest.mark.parametrize("name", POSTGRES_ROUTES)
def test_route_completes_on_postgresql(pg_world: World, name: str) -> None:
    with fresh_chains(pg_world):
        run_route(pg_world, name, 1000)


# ---- the routes the embedded snapshot cannot carry, on a live market ---------------------------------------------


class OffsetClock:
    """The recordings' time, advancing with the wall clock: the recorded upstream answers stay fresh."""

    def __init__(self) -> None:
        self.started = datetime.now(UTC)

    def now(self) -> datetime:
        return RECORDED_AT + (datetime.now(UTC) - self.started)

    def monotonic(self) -> float:
        return time.monotonic()


def _recorded_market() -> Any:
    clock = OffsetClock()
    return pinned_live_market(clock, pinned_raydium_upstreams(clock), raydium=True)


@pytest.fixture(scope="module")
def live_world(anvil_factory: Callable[[int], AnvilChain], world: World) -> Iterator[World]:
    """A server whose market is live, read from recorded upstream answers in their wire formats (Solana
    `getMultipleAccounts` of the pinned Raydium and Orca pools, Chainlink, Iris fees, Across fees, Pyth, the OFT
    quoteSend; the EVM pools are the snapshot's, as on the local chains). Solana swaps need the pools' live
    accounts, so this is how the routes through Raydium and Orca run as sessions today."""
    probe = _recorded_market()
    view = asyncio.run(probe.view())
    asyncio.run(probe.aclose())
    assert view.live and not [k for k in view.unavailable if not k.startswith("price:")], view.unavailable
    db = world.settings["database_url"].replace("sessions.sqlite3", "sessions-live.sqlite3")
    with build_world(anvil_factory, db, market=_recorded_market(), pools=dict(view.pools)) as w:
        yield w


@pytest.mark.parametrize("amount", AMOUNTS, ids=lambda a: f"usd{a}")
@pytest.mark.parametrize("name", LIVE_ROUTES)
def test_route_completes_on_a_live_market(
    live_world: World, unavailable: dict[str, str], name: str, amount: int
) -> None:
    with fresh_chains(live_world):
        steps = run_route(live_world, name, amount)
    _collected_live[f"{name} ${amount}"] = {
        "status": "complete",
        "market": "live (recorded upstreams)",
        "steps": steps,
    }


@pytest.fixture(scope="module")
def pg_live_world(anvil_factory: Callable[[int], AnvilChain], live_world: World) -> Iterator[World]:
    require_postgres()
    with (
        temporary_database() as url,
        build_world(anvil_factory, url, market=_recorded_market(), pools=live_world.pools) as w,
    ):
        yield w


@pytest.mark.postgres
@pytest.mark.parametrize("name", POSTGRES_LIVE_ROUTES)
def test_route_completes_on_a_live_market_on_postgresql(pg_live_world: World, name: str) -> None:
    with fresh_chains(pg_live_world):
        run_route(pg_live_world, name, 1000)


def test_the_results_file_agrees_with_this_run() -> None:
    """Runs last in this module: what ran here equals the committed results (or rewrites them when asked)."""
    if not _collected:
        pytest.skip("no route ran in this session")
    committed: dict[str, Any] = json.loads(RESULTS.read_text()) if RESULTS.exists() else {"runs": {}}
    if os.environ.get(UPDATE_ENV) == "1":
        assert len(_collected) == len(ROUTES) * len(AMOUNTS), "write the results from a full run only"
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        doc = {
            "commit": _commit(),
            "amounts_usd": list(AMOUNTS),
            "runs": dict(sorted(_collected.items())),
            "live_runs": dict(sorted(_collected_live.items())),
        }
        RESULTS.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
        return
    for key, got in _collected_live.items():
        assert _how(committed.get("live_runs", {}).get(key)) == _how(got), (
            f"{key}: the live-market run differs from {RESULTS.name}"
        )
    for key, got in _collected.items():
        assert _how(committed["runs"].get(key)) == _how(got), (
            f"{key}: the run differs from {RESULTS.name} (update: {UPDATE_ENV}=1)"
        )


def _how(run: dict[str, Any] | None) -> Any:
    """What a run claims, without what differs between runs (amounts measured, transaction ids)."""
    if run is None:
        return None
    varying = ("measured", "source_tx_ids", "destination_tx_ids")
    steps = [{k: v for k, v in s.items() if k not in varying} for s in run["steps"]]
    return {**run, "steps": steps}


def _commit() -> str:
    """The commit the results were measured at (with "+changes" when the tree differed from it)."""
    root = Path(__file__).resolve().parents[2]
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True)
    if head.returncode != 0:
        return "unknown"
    return head.stdout.strip() + ("+changes" if dirty.stdout.strip() else "")
