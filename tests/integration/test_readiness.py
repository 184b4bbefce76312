"""Readiness counts only what can finish on this instance (issue 39, item 2).

On the defaults (no RPC URL) every route quotes and prepares from the modelled snapshot, and none is
session-ready: capabilities, the route document, /v2/status and /readyz say why, and a session create is refused
with every missing piece and creates nothing. With RPC URLs configured, session readiness follows them route by
route, and the 14 routes that cross Robinhood -> Solana over the USDG OFT are ready exactly when the program is
pinned. The expected sets are computed here from the route document's step endpoints, not by the readiness code.
"""

from __future__ import annotations

import base64
import itertools
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.support.observable import CLOSED, OBSERVABLE, PINNED_OFT_PROGRAM
from tests.support.server import free_port, running_server
from tests.unit.actions.support import EVENT_SIGNER, START, approval_for, intent_for, wallets_for

from routequote.app import create_app
from routequote.clock import FixedClock
from routequote.config import Settings
from routequote.core.quote import SESSION_HEADER
from routequote.core.sessions.state import session_id_for

CHAINS = ("solana", "base", "arbitrum", "robinhood")
OFT = "paxos_usdg_layerzero_oft"


def _settings(tmp: Path, **kw: Any) -> Settings:
    return Settings(rate_limit="off", database_url=f"sqlite+aiosqlite:///{tmp}/s.sqlite3", **kw)


@pytest.fixture(scope="module")
def defaults(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    port = free_port()
    app = create_app(_settings(tmp_path_factory.mktemp("ready"), port=port), clock=FixedClock(START))
    with running_server(app, port) as url, httpx.Client(base_url=url, timeout=30) as http:
        yield http


def _touched(route: dict[str, Any]) -> set[str]:
    return {endpoint.split(":")[0] for s in route["steps"] for endpoint in (s["from"], s["to"])}


def test_defaults_quote_and_prepare_every_route_with_modelled_bounds_and_none_is_session_ready(
    defaults: httpx.Client,
) -> None:
    caps = defaults.get("/v2/capabilities").json()
    assert (
        caps["unsigned_route_plans_ready"] == 72 and caps["directed_conversion_routes"] == 72
    )  # spec constants
    ready = caps["route_readiness"]
    assert (ready["quotable_routes"], ready["prepare_ready_routes"], ready["session_ready_routes"]) == (
        72,
        72,
        0,
    )
    assert ready["prepare_ready_bounds"] == {"live": 0, "modelled": 72, "live_or_modelled": 0}
    assert set(ready["bounds_notes"]) == {"modelled"} and "snapshot" in ready["bounds_notes"]["modelled"]
    assert caps["sessions"]["session_ready_routes"] == 0 and caps["sessions"]["unavailable_route_count"] == 72
    assert ready["session_missing"] == sorted(
        [f"no RPC URL for {c} (ROUTEQUOTE_RPC_URL_{c.upper()})" for c in CHAINS]
        + [
            "USDG OFT program on Solana not pinned: an OFT arrival cannot be verified "
            "(ROUTEQUOTE_USDG_OFT_SOLANA_PROGRAM)"
        ]
    )
    doc = defaults.get("/v2/capabilities/routes").json()
    for route in doc["routes"]:
        assert route["quotable"] and route["prepare_ready"] and route["bounds"] == "modelled"
        assert route["session_ready"] is False
        want = {f"no RPC URL for {c} (ROUTEQUOTE_RPC_URL_{c.upper()})" for c in _touched(route)}
        oft_gap = [
            g for g in route["session_unavailable_details"] if "ROUTEQUOTE_USDG_OFT_SOLANA_PROGRAM" in g
        ]
        assert set(route["session_unavailable_details"]) - set(oft_gap) == want
        assert bool(oft_gap) is (OFT in route["providers"])
        assert route["session_unavailable_reason"] == "; ".join(route["session_unavailable_details"])


def test_defaults_status_and_readyz_report_observation_per_chain_and_the_oft_pin(
    defaults: httpx.Client,
) -> None:
    for body in (
        defaults.get("/v2/status").json()["observation"],
        defaults.get("/readyz").json()["observation"],
    ):
        assert {c: v["rpc_url_configured"] for c, v in body["chains"].items()} == dict.fromkeys(CHAINS, False)
        pin = body["usdg_oft_solana_program"]
        assert {k: pin[k] for k in ("pinned", "program", "source", "setting", "error", "chain_program")} == {
            "pinned": False,
            "program": None,
            "source": "not_pinned",
            "setting": "ROUTEQUOTE_USDG_OFT_SOLANA_PROGRAM",
            "error": None,
            "chain_program": None,  # the embedded market reads no chain
        }
        assert "the chain is not read" in pin["reason"]
        assert body["circle_iris_configured"] and body["layerzero_scan_configured"]
    ready = defaults.get("/readyz")
    assert ready.status_code == 200  # reported, not failing: quotes and prepare still serve
    health = defaults.get("/v2/status").json()["route_health"]
    assert health["quotable_routes"] == 72 and health["route_readiness"]["session_ready_routes"] == 0
    safety = defaults.get("/.well-known/routequote-safety.json").json()
    limits = {x["id"]: x["text"] for x in safety["known_limitations"]}
    assert (
        "a session can be carried to complete on 0 of 72 routes"
        in limits["sessions_not_available_on_all_routes"]
    )


def test_defaults_refuse_a_session_that_could_not_finish_and_create_nothing(defaults: httpx.Client) -> None:
    route = "solana:SOL->base:ETH"
    quote = defaults.post("/v2/quote", json=intent_for(route, 100)).json()
    key = f"ready-{secrets.token_hex(6)}"
    body = {
        "caller_approved": True,
        **intent_for(route, 100),
        "wallets": wallets_for(route),
        "approval_v3": approval_for(quote, key=key, selected_mode="session"),
        "idempotency_key": key,
        "event_signer_public": EVENT_SIGNER,
    }
    token = base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()
    r = defaults.post("/v2/session", json=body, headers={SESSION_HEADER: token})
    assert r.status_code == 400, r.text
    err = r.json()
    assert err["reason_class"] == "route_not_session_ready" and err["route"] == route
    assert err["missing"] == [
        "no RPC URL for solana (ROUTEQUOTE_RPC_URL_SOLANA)",
        "no RPC URL for base (ROUTEQUOTE_RPC_URL_BASE)",
    ]
    assert "current_action" not in err and "session_id" not in err
    again = defaults.post("/v2/session", json=body, headers={SESSION_HEADER: token})
    assert again.status_code == 400 and again.json()["missing"] == err["missing"]
    sid = session_id_for(quote["quote_id"])  # the id a create of this quote would have made: none exists
    assert defaults.get(f"/v2/session/{sid}", headers={SESSION_HEADER: token}).status_code == 404


def _readiness(tmp: Path, **kw: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    app = create_app(_settings(tmp, **kw))
    service = app.state.service
    return service.capabilities(), service.route_details()


def test_session_readiness_follows_the_configured_rpc_urls_route_by_route(tmp_path: Path) -> None:
    seen: dict[tuple[frozenset[str], bool], int] = {}
    for n in range(len(CHAINS) + 1):
        for chains in itertools.combinations(CHAINS, n):
            for pinned in (False, True):
                kw = {f"rpc_url_{c}": f"{CLOSED}/{c}" for c in chains}
                if pinned:
                    kw["usdg_oft_solana_program"] = PINNED_OFT_PROGRAM
                caps, doc = _readiness(tmp_path, **kw)
                expected = {
                    r["route"]
                    for r in doc["routes"]
                    if _touched(r) <= set(chains) and (pinned or OFT not in r["providers"])
                }
                got = {r["route"] for r in doc["routes"] if r["session_ready"]}
                assert got == expected, (chains, pinned)
                assert caps["sessions"]["session_ready_routes"] == len(expected)
                assert caps["route_readiness"]["session_ready_routes"] == len(expected)
                assert caps["unsigned_route_plans_ready"] == 72
                seen[(frozenset(chains), pinned)] = len(expected)
    everything = frozenset(CHAINS)
    assert seen[(everything, True)] == 72 and seen[(everything, False)] == 72 - 14
    assert seen[(frozenset(), True)] == 0
    assert seen[(frozenset({"base"}), False)] == seen[(frozenset({"base"}), True)] > 0


def test_the_oft_routes_are_ready_exactly_when_the_program_is_pinned(tmp_path: Path) -> None:
    rpcs = {k: v for k, v in OBSERVABLE.items() if k.startswith("rpc_url_")}
    _, unpinned = _readiness(tmp_path, **rpcs)
    _, pinned = _readiness(tmp_path, **OBSERVABLE)
    oft_routes = {r["route"] for r in pinned["routes"] if OFT in r["providers"]}
    assert len(oft_routes) == 14 and all(k.startswith("robinhood:") for k in oft_routes)
    blocked = {
        r["route"]: r["session_unavailable_details"] for r in unpinned["routes"] if not r["session_ready"]
    }
    assert set(blocked) == oft_routes
    assert all(
        d == [next(iter(d))] and "ROUTEQUOTE_USDG_OFT_SOLANA_PROGRAM" in d[0] for d in blocked.values()
    )
    assert all(r["session_ready"] for r in pinned["routes"])


def test_a_missing_bridge_lookup_is_a_missing_piece(tmp_path: Path) -> None:
    caps, doc = _readiness(tmp_path, **{**OBSERVABLE, "iris_url": "", "layerzero_scan_url": ""})
    routes = {r["route"]: r for r in doc["routes"]}
    cctp = [r for r in routes.values() if "circle_cctp" in r["providers"]]
    assert cctp and all(
        "no Circle Iris URL for CCTP attestations (ROUTEQUOTE_IRIS_URL)" in r["session_unavailable_details"]
        for r in cctp
    )
    oft = [r for r in routes.values() if OFT in r["providers"]]
    assert all(
        any("ROUTEQUOTE_LAYERZERO_SCAN_URL" in g for g in r["session_unavailable_details"]) for r in oft
    )
    across_only = [
        r for r in routes.values() if set(r["providers"]) <= {"across_intent_bridge", "uniswap_v3"}
    ]
    assert across_only and all(r["session_ready"] for r in across_only)  # a fill is found in chain logs
    assert caps["sessions"]["session_ready_routes"] == sum(r["session_ready"] for r in routes.values())


def test_bounds_follow_the_market_mode_and_its_fallback(tmp_path: Path) -> None:
    rpcs = {k: v for k, v in OBSERVABLE.items() if k.startswith("rpc_url_")}
    caps, doc = _readiness(tmp_path, market="live", **rpcs)
    assert {r["bounds"] for r in doc["routes"]} == {"live"}
    assert (
        caps["route_readiness"]["prepare_ready_bounds"]["live"]
        == caps["route_readiness"]["prepare_ready_routes"]
    )
    caps, doc = _readiness(tmp_path, market="live", market_fallback="embedded", **rpcs)
    assert {r["bounds"] for r in doc["routes"]} == {"live_or_modelled"}
    assert "ROUTEQUOTE_MARKET_FALLBACK" in caps["route_readiness"]["bounds_notes"]["live_or_modelled"]
    # with the fallback, a chain without an RPC URL has no live source: its routes are always modelled
    without_robinhood = {k: v for k, v in rpcs.items() if k != "rpc_url_robinhood"}
    _, doc = _readiness(tmp_path, market="live", market_fallback="embedded", **without_robinhood)
    for r in doc["routes"]:
        uses_usdg = any(
            "USDG" in e for s in r["steps"] for e in (s["from"], s["to"])
        )  # its feed is on Robinhood
        if "robinhood" in _touched(r):
            assert r["bounds"] == "modelled", r["route"]
        elif not uses_usdg:
            assert r["bounds"] == "live_or_modelled", r["route"]


def test_defaults_prepare_says_preflight_was_not_checked(defaults: httpx.Client) -> None:
    """The embedded defaults have no chain access: the preflight block says so (the e2e suite shows no chain
    call is made) and the bundle is served as ever."""
    route = "base:USDC->base:ETH"
    quote = defaults.post("/v2/quote", json=intent_for(route, 100)).json()
    body = {
        "caller_approved": True,
        **intent_for(route, 100),
        "wallets": wallets_for(route),
        "approval_v3": approval_for(quote, key=f"pf-{secrets.token_hex(6)}"),
    }
    r = defaults.post("/v2/prepare", json=body)
    assert r.status_code == 200, r.text
    preflight = r.json()["preflight"]
    assert preflight["checked"] is False and preflight["ok"] is None and preflight["findings"] == []
    assert preflight["reason"].startswith("no_chain_access: no RPC URL is configured")
    for chain in ("BASE", "ARBITRUM", "ROBINHOOD", "SOLANA"):
        assert f"ROUTEQUOTE_RPC_URL_{chain}" in preflight["reason"]
