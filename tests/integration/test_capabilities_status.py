"""GET /v2/capabilities and /v2/status over real HTTP; rate limits; failing market sources; OpenAPI."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from tests.support.json_safety import json_walk_size
from tests.support.server import running_server
from tests.support.spec_schema import (
    CAPABILITIES_RESPONSE,
    ERROR_RESPONSE,
    STATUS_RESPONSE,
    validate,
    walk_server_flags,
)

from routequote.app import create_app
from routequote.config import Settings
from routequote.market.failing import FailingMarket

QUOTE = {
    "from_chain": "solana",
    "from_token": "SOL",
    "to_chain": "base",
    "to_token": "USDC",
    "amount_usd": 50,
}


def test_capabilities_contract(http: httpx.Client) -> None:
    caps = http.get("/v2/capabilities").json()
    validate(caps, CAPABILITIES_RESPONSE)
    assert walk_server_flags(caps) == []
    assert sorted(caps["chains"]) == ["arbitrum", "base", "robinhood", "solana"]
    endpoints = {f"{e['chain']}:{e['token']}" for e in caps["asset_endpoints"]}
    assert endpoints == {
        "solana:SOL",
        "solana:USDC",
        "solana:USDG",
        "base:ETH",
        "base:USDC",
        "arbitrum:ETH",
        "arbitrum:USDC",
        "robinhood:ETH",
        "robinhood:USDG",
    }
    assert "routes" not in caps  # per-route detail is the linked document
    assert caps["links"]["routes"].endswith("/v2/capabilities/routes")
    assert caps["direct_route_summary"]["step_count"] == 164
    # the embedded market: every action's bounds are modelled, and verifiers refuse them unless accepted
    mode = caps["action_bounds"]
    assert mode["bounds"] == "modelled" and mode["market"] == "embedded_snapshot" and mode["snapshot_as_of"]
    assert (
        mode["refusal_code"] == "bounds_modelled_not_live"
        and mode["verifiers_refuse_modelled_bounds_by_default"]
    )
    safety = http.get("/.well-known/routequote-safety.json").json()
    assert safety["claims"]["action_bounds"] == mode


def test_capabilities_availability_is_all_or_nothing_and_consistent(http: httpx.Client) -> None:
    caps = http.get("/v2/capabilities").json()
    keys = (
        "currently_prepare_ready_routes",
        "temporarily_unavailable_routes",
        "temporarily_unavailable_route_count",
        "execution_availability",
    )
    assert all(k in caps for k in keys)
    unavailable = caps["temporarily_unavailable_routes"]
    assert caps["temporarily_unavailable_route_count"] == len(unavailable)
    assert caps["currently_prepare_ready_routes"] == 72 - len(unavailable)
    assert (caps["execution_availability"]["status"] == "available") is (not unavailable)
    assert caps["execution_availability"]["guarantees_future_availability"] is False
    for u in unavailable:
        assert u["reason"]


def test_quote_first_unsigned_action_flag_matches_capabilities(http: httpx.Client) -> None:
    caps = http.get("/v2/capabilities").json()
    unavailable = {u["route"] for u in caps["temporarily_unavailable_routes"]}
    q = http.post("/v2/quote", json=QUOTE).json()
    assert q["execution"]["first_unsigned_action_supported"] is (q["route"]["route"] not in unavailable)


def test_evaluation_guidance(http: httpx.Client) -> None:
    g = http.get("/v2/capabilities").json()["evaluation_guidance"]
    assert (
        g["reachability_smoke_test_usd"],
        g["native_usdc_evaluation_start_usd"],
        g["representative_amount_usd"],
    ) == (
        1,
        50,
        1000,
    )
    assert g["not_a_minimum"] and g["not_guaranteed_best"] and g["always_compare_fresh_at_intended_amount"]


def test_status_contract(http: httpx.Client) -> None:
    status = http.get("/v2/status").json()
    validate(status, STATUS_RESPONSE)
    assert walk_server_flags(status) == []
    assert status["market"]["source"] == "embedded_snapshot" and status["market"]["healthy"] is True
    assert status["route_health"]["directed_conversion_routes"] == 72
    sb = status["safety_boundaries"]
    assert sb["never_signs"] and sb["never_submits"] and sb["service_fee_bps"] == 1


@pytest.fixture()
def limited() -> Iterator[str]:
    app = create_app(Settings(rate_limit="3/minute"))
    with running_server(app) as url:
        yield url


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [("GET", "/v2/capabilities", None), ("GET", "/v2/status", None), ("POST", "/v2/quote", QUOTE)],
)
def test_rate_limit_429_with_headers(limited: str, method: str, path: str, body: Any) -> None:
    with httpx.Client(base_url=limited) as c:
        codes = []
        for _ in range(4):
            r = c.request(method, path, json=body)
            codes.append(r.status_code)
            if r.status_code == 200:
                assert int(r.headers["RateLimit-Limit"]) == 3
                assert int(r.headers["RateLimit-Remaining"]) >= 0
                assert "RateLimit-Reset" in r.headers
        assert codes == [200, 200, 200, 429]
        validate(r.json(), ERROR_RESPONSE)
        assert r.json()["error"] == "rate_limited"
        assert 1 <= r.json()["retry_after_seconds"] <= 3600
        assert int(r.headers["Retry-After"]) == r.json()["retry_after_seconds"]
        assert r.headers["RateLimit-Remaining"] == "0"


@pytest.mark.parametrize(
    ("mode", "status", "error"),
    [("down", 502, "route_provider_temporarily_unavailable"), ("busy", 503, "provider_capacity_busy")],
)
def test_failing_market_gives_502_or_503_and_never_500(mode: str, status: int, error: str) -> None:
    app = create_app(Settings(rate_limit="off"), market=FailingMarket(mode))
    with running_server(app) as url, httpx.Client(base_url=url) as c:
        r = c.post("/v2/quote", json=QUOTE)
        assert r.status_code == status
        validate(r.json(), ERROR_RESPONSE)
        assert r.json()["error"] == error and r.json()["retry_after_seconds"] >= 1
        assert "Retry-After" in r.headers
        s = c.get("/v2/status").json()
        assert s["market"]["healthy"] is False
        caps = c.get("/v2/capabilities").json()
        assert caps["execution_availability"]["recent_fee_snapshot_usable"] is False
        assert {u["reason"] for u in caps["temporarily_unavailable_routes"]} == {"market_source_unavailable"}


def test_openapi_document(http: httpx.Client) -> None:
    doc = http.get("/v2/openapi.json").json()
    assert doc["info"]["version"] == "2.0.0-quote-only"
    assert doc["x-service-safety"] == {
        "quote_only_import": True,
        "public": True,
        "api_key_required": False,
        "wallet_required": False,
        "server_signing": False,
        "server_submission": False,
        "next_action": doc["x-service-safety"]["next_action"],
    }
    ops = {op["operationId"] for path in doc["paths"].values() for op in path.values()}
    assert {"getMultichainCapabilities", "getMultichainStatus", "quoteMultichainRoute"} <= ops
    assert all(p.startswith("/v2/") for p in doc["paths"])
    schemas = doc["components"]["schemas"]
    req = schemas["QuoteRequest"]
    assert req["additionalProperties"] is False
    assert set(req["required"]) == {"from_chain", "from_token", "to_chain", "to_token", "amount_usd"}
    assert (
        req["properties"]["amount_usd"]["minimum"] == 1 and req["properties"]["amount_usd"]["maximum"] == 1000
    )
    assert set(req["properties"]["from_chain"]["enum"]) == {"solana", "base", "arbitrum", "robinhood"}
    assert schemas["Intent"]["additionalProperties"] is False
    quote_op = doc["paths"]["/v2/quote"]["post"]
    assert set(quote_op["responses"]) >= {"200", "400", "429", "502", "503"}


def test_openapi_validates_and_schemathesis_loads_it(http: httpx.Client, base_url: str) -> None:
    import schemathesis

    schema = schemathesis.openapi.from_url(f"{base_url}/v2/openapi.json")
    operations = [op for op in schema.get_all_operations()]
    assert len(operations) >= 3


def test_schemathesis_finds_no_failure_on_the_quote_operations(base_url: str) -> None:
    """schemathesis against the served document: schema-valid requests accepted, invalid ones rejected
    with documented statuses, responses conforming, never a 5xx."""
    import subprocess
    import sys
    from pathlib import Path

    exe = Path(sys.executable).with_name("schemathesis")
    run = subprocess.run(
        [
            str(exe),
            "run",
            f"{base_url}/v2/openapi.json",
            "--max-examples",
            "40",
            "--seed",
            "7",
            "--include-path-regex",
            "^/v2/(quote|status|capabilities)$",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout[-3000:]
    import re

    generated = re.search(r"(\d+) generated", run.stdout)
    assert generated and int(generated.group(1)) >= 50, run.stdout[-1500:]  # it really exercised them


def test_capabilities_fit_the_adapters_bounded_walk(http: httpx.Client) -> None:
    """The public MCP adapter walks at most 512 JSON values and 12 levels of capabilities (it was 1,354
    values before the per-route detail moved to the linked document)."""
    caps = http.get("/v2/capabilities").json()
    nodes, depth = json_walk_size(caps)
    assert nodes <= 512 and depth <= 12, (nodes, depth)
    for key in (  # every field the spec and today's clients (client, explorer, A2A, v1) read stays
        "status",
        "public_api_enabled",
        "chains",
        "asset_endpoints",
        "asset_details",
        "directed_conversion_routes",
        "unsigned_route_plans_ready",
        "currently_prepare_ready_routes",
        "temporarily_unavailable_routes",
        "temporarily_unavailable_route_count",
        "execution_availability",
        "amount_usd",
        "service_fee",
        "action_lifetime",
        "sessions",
        "direct_route_summary",
        "continuation_v3",
        "evaluation_guidance",
        "server_signing",
        "server_submission",
    ):
        assert key in caps, key
    assert {d["endpoint"] for d in caps["asset_details"]} == {
        f"{e['chain']}:{e['token']}" for e in caps["asset_endpoints"]
    }
    assert all(isinstance(d["decimals"], int) for d in caps["asset_details"])


def test_the_worst_case_capabilities_still_fit() -> None:
    """No route prepare-ready and none session-ready: the largest capabilities can get."""
    from routequote.clock import FixedClock, SequentialIds
    from routequote.core.routes import ROUTES
    from routequote.market.snapshot import EmbeddedSnapshot
    from routequote.service import RouteQuoteService, ServiceConfig
    from routequote.storage.quotes import MemoryQuoteStore

    config = ServiceConfig(session_unavailable_reasons={k: "not in this build" for k in ROUTES})
    service = RouteQuoteService(
        EmbeddedSnapshot(),
        MemoryQuoteStore(),
        FixedClock(datetime(2026, 11, 22, tzinfo=UTC)),
        SequentialIds(),
        config,
    )
    caps = service.capabilities()
    assert caps["temporarily_unavailable_route_count"] == 72 and caps["sessions"]["session_ready_routes"] == 0
    nodes, depth = json_walk_size(caps)
    assert nodes <= 512 and depth <= 12, (nodes, depth)


def test_the_linked_route_document_holds_the_per_route_detail(http: httpx.Client) -> None:
    caps = http.get("/v2/capabilities").json()
    doc = http.get("/v2/capabilities/routes").json()
    assert doc["route_count"] == len(doc["routes"]) == 72
    assert doc["server_signing"] is False and doc["server_submission"] is False
    unavailable = {u["route"]: u["reason"] for u in caps["temporarily_unavailable_routes"]}
    for r in doc["routes"]:
        assert r["prepare_ready"] is (r["route"] not in unavailable)
        if not r["prepare_ready"]:
            assert (
                r["prepare_unavailable_reason"] == unavailable[r["route"]]
                and r["prepare_unavailable_details"]
            )
        assert len(r["steps"]) == r["step_count"] and [s["index"] for s in r["steps"]] == list(
            range(r["step_count"])
        )
        assert [s["provider"] for s in r["steps"]] == r["providers"]
        assert sum(s["service_fee_step"] for s in r["steps"]) == 1
    assert (
        sum(1 for r in doc["routes"] if not r["session_ready"]) == caps["sessions"]["unavailable_route_count"]
    )
    assert {d["endpoint"] for d in doc["asset_details"]} == {d["endpoint"] for d in caps["asset_details"]}
