"""POST /v2/quote over real HTTP: every route at the evaluation amounts, schema, invariants, hashes."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

import httpx
import pytest
from tests.support import independent_hash as ih
from tests.support.json_safety import assert_javascript_safe, assert_twins_exact
from tests.support.spec_schema import QUOTE_RESPONSE, validate, walk_server_flags

from routequote.core.assets import ASSETS

ROUTE_PAIRS = [(a, b) for a in ASSETS.values() for b in ASSETS.values() if a.key != b.key]
AMOUNTS = (1, 50, 1000)


def body(src: Any, dst: Any, amount: float) -> dict[str, Any]:
    return {
        "from_chain": src.chain.value,
        "from_token": src.token.value,
        "to_chain": dst.chain.value,
        "to_token": dst.token.value,
        "amount_usd": amount,
    }


@pytest.fixture(scope="module")
def sweep(http: httpx.Client) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    out = []
    for src, dst in ROUTE_PAIRS:
        for amount in AMOUNTS:
            req = body(src, dst, amount)
            resp = http.post("/v2/quote", json=req)
            assert resp.status_code == 200, (req, resp.text)
            assert resp.headers["content-type"].startswith("application/json")
            out.append((req, resp.json()))
    return out


def test_sweep_covers_all_72_routes_at_three_amounts(
    sweep: list[tuple[dict[str, Any], dict[str, Any]]],
) -> None:
    assert len(sweep) == 72 * 3
    assert len({q["route"]["route"] for _, q in sweep}) == 72


def test_every_quote_validates_against_the_spec_schema(sweep: list) -> None:
    for _, q in sweep:
        validate(q, QUOTE_RESPONSE)
        uuid.UUID(q["quote_id"])
        as_of = datetime.fromisoformat(q["as_of"].replace("Z", "+00:00"))
        assert as_of.tzinfo is not None


def test_server_never_signs_or_submits_anywhere_in_any_tree(sweep: list) -> None:
    for _, q in sweep:
        assert walk_server_flags(q) == []
        assert q["route"]["server_signing"] is False and q["risk"]["server_submission"] is False


def test_intent_echoes_request_and_route_names(sweep: list) -> None:
    for req, q in sweep:
        src = f"{req['from_chain']}:{req['from_token']}"
        dst = f"{req['to_chain']}:{req['to_token']}"
        assert q["intent"]["from"] == src and q["intent"]["to"] == dst
        assert q["intent"]["amount_usd"] == req["amount_usd"]
        assert q["route"]["route"] == f"{src}->{dst}"
        assert q["offer"]["output_symbol"] == req["to_token"]


def test_step_amounts_chain_on_expected_and_minimum_paths(sweep: list) -> None:
    for _, q in sweep:
        raw = q["route"]["steps"]
        summary = q["direct_route_summary"]["steps"]
        assert len(raw) == len(summary) == q["direct_route_summary"]["step_count"]
        for a, b in zip(summary, summary[1:]):
            assert a["expected_output_base"] == b["expected_input_base"]
            assert a["minimum_output_base"] == b["minimum_input_base"]
            assert a["to"] == b["from"]
        for a, b in zip(raw, raw[1:]):
            assert a["expected_output_base"] == b["expected_input_base"]
            assert a["minimum_output_base"] == b["floor_input_base"]
        for r, s in zip(raw, summary):
            assert str(r["expected_input_base"]) == s["expected_input_base"]
            assert str(r["floor_input_base"]) == s["minimum_input_base"]
            assert str(r["expected_output_base"]) == s["expected_output_base"]
            assert str(r["minimum_output_base"]) == s["minimum_output_base"]
            assert r["provider"] == s["provider"]
            for key in (
                "expected_input_base",
                "minimum_input_base",
                "expected_output_base",
                "minimum_output_base",
            ):
                assert s[key].isdigit() and not s[key].startswith("0")
            assert int(s["minimum_output_base"]) <= int(s["expected_output_base"])
        assert summary[0]["expected_input_base"] == str(q["intent"]["estimated_input_base"])
        # base amounts are exact decimal strings; the spec-fixed integer keeps its decimal twin
        assert (
            q["route"]["input_base"] == q["estimated_input_base_decimal"] == summary[0]["expected_input_base"]
        )
        assert q["route"]["expected_output_base"] == summary[-1]["expected_output_base"]
        assert q["route"]["minimum_output_base"] == summary[-1]["minimum_output_base"]
        assert q["continuation_v3"]["estimated_input_base_decimal"] == q["estimated_input_base_decimal"]
        assert_twins_exact(q)
        assert_javascript_safe(q)
        assert q["continuation_v3"]["minimum_output_base"] == summary[-1]["minimum_output_base"]


def test_exactly_one_fee_step_of_one_bp_taking_floor_of_its_input(sweep: list) -> None:
    for _, q in sweep:
        steps = q["direct_route_summary"]["steps"]
        fee_steps = [s["index"] for s in steps if s["service_fee_bps"] == 1]
        assert len(fee_steps) == 1
        assert all(s["service_fee_bps"] in (0, 1) for s in steps)
        assert q["offer"]["fee_collection_steps"] == fee_steps
        assert q["direct_route_summary"]["fee_collection_step_index"] == fee_steps[0]
        assert q["offer"]["service_fee_bps"] == 1
        fee = q["cost_summary"]["service_fee"]
        assert fee["step_index"] == fee_steps[0]
        assert int(fee["amount_base"]) == int(steps[fee_steps[0]]["expected_input_base"]) // 10_000


def test_offer_amounts_match_base_units_and_expected_at_least_minimum(sweep: list) -> None:
    for _, q in sweep:
        dec = ASSETS[q["intent"]["to"]].decimals
        exp = int(q["direct_route_summary"]["steps"][-1]["expected_output_base"])
        mn = int(q["direct_route_summary"]["steps"][-1]["minimum_output_base"])
        assert q["offer"]["expected_receive_amount"] == pytest.approx(
            float(Decimal(exp) / 10**dec), rel=1e-12
        )
        assert q["offer"]["estimated_min_receive_amount"] == pytest.approx(
            float(Decimal(mn) / 10**dec), rel=1e-12
        )
        assert q["offer"]["expected_receive_amount"] >= q["offer"]["estimated_min_receive_amount"] > 0
        assert q["offer"]["expected_receive_usd"] >= q["offer"]["estimated_min_receive_usd"] > 0


def test_cost_summary_is_consistent(sweep: list) -> None:
    for req, q in sweep:
        c = q["cost_summary"]
        assert c["input_value_usd"] == pytest.approx(req["amount_usd"])
        assert c["maximum_total_cost_usd"] >= c["expected_total_cost_usd"]
        assert c["unpriced_costs"], "network gas must be listed as unpriced"
        assert all(g["priced"] is False for g in c["network_gas"])
        for f in c["provider_fee_components"]:
            assert f["maximum_usd"] >= f["expected_usd"] >= 0
        assert c["small_amount_warning"] == (
            c["maximum_total_cost_usd"] / c["input_value_usd"] >= 0.01 - 1e-9
        )
        assert q["price_recommended_for_amount"] is (not c["small_amount_warning"])


def test_eta_is_complete_or_null_and_matches_offer(sweep: list) -> None:
    for _, q in sweep:
        eta = q["eta"]
        assert eta["estimated_time_seconds"] == q["offer"]["estimated_time_seconds"]
        if eta["complete_route_estimate"]:
            lo, hi = eta["estimated_time_range_seconds"]
            assert 0 <= lo <= hi == eta["estimated_time_seconds"]
        else:
            assert eta["estimated_time_seconds"] is None and eta["estimated_time_range_seconds"] is None
        assert eta["complete_route_estimate"]  # every step has a time model, the OFT delivery included
        if "paxos_usdg_layerzero_oft" in [s["provider"] for s in q["route"]["steps"]]:
            assert "OFT delivery is modelled" in eta["note"]


def test_market_label_is_honest(sweep: list) -> None:
    for _, q in sweep:
        m = q["market"]
        assert m["source"] == "embedded_snapshot" and m["live"] is False
        assert m["data_as_of"] and "not live" in m["label"]


def test_risk_and_ttl(sweep: list) -> None:
    for _, q in sweep:
        n = len(q["route"]["steps"])
        assert q["risk"]["non_atomic"] is (n > 1)
        assert q["ttl_seconds"] == 60
        as_of = datetime.fromisoformat(q["as_of"].replace("Z", "+00:00"))
        expires = datetime.fromisoformat(q["continuation_v3"]["expires_at"].replace("Z", "+00:00"))
        assert expires - as_of == timedelta(seconds=q["ttl_seconds"])


def test_hashes_recomputed_independently_match(sweep: list) -> None:
    for _, q in sweep:
        c = q["continuation_v3"]
        assert c["selection_status"] == "unranked_candidate"
        assert c["direct_route_summary_sha256"] == ih.summary_sha256(q)
        assert c["quote_payload_sha256"] == ih.payload_sha256(q)
        assert c["quote_fingerprint"] == ih.fingerprint(q)
        assert c["allowed_modes"] == (
            ["session"] if len(q["route"]["steps"]) > 1 else ["one_shot", "session"]
        )
        assert (
            c["input_base_bounds"]["minimum"]
            == c["input_base_bounds"]["maximum"]
            == str(q["intent"]["estimated_input_base"])
        )
        chains = {s["from"].split(":")[0] for s in q["direct_route_summary"]["steps"]} | {
            s["to"].split(":")[0] for s in q["direct_route_summary"]["steps"]
        }
        assert c["required_wallet_chains"] == sorted(chains)


def test_a_changed_byte_changes_the_payload_hash(sweep: list) -> None:
    _, q = sweep[0]
    tampered = {
        **q,
        "offer": {**q["offer"], "expected_receive_usd": q["offer"]["expected_receive_usd"] + 0.000001},
    }
    assert ih.payload_sha256(tampered) != q["continuation_v3"]["quote_payload_sha256"]


def test_quote_ids_are_unique_and_quotes_are_not_cached_identities(http: httpx.Client) -> None:
    req = {
        "from_chain": "solana",
        "from_token": "SOL",
        "to_chain": "base",
        "to_token": "USDC",
        "amount_usd": 250,
    }
    a, b = http.post("/v2/quote", json=req).json(), http.post("/v2/quote", json=req).json()
    assert a["quote_id"] != b["quote_id"]
    assert a["continuation_v3"]["quote_fingerprint"] != b["continuation_v3"]["quote_fingerprint"]
    assert a["direct_route_summary"] == b["direct_route_summary"]


def test_fractional_amount_is_exact(http: httpx.Client) -> None:
    req = {
        "from_chain": "base",
        "from_token": "USDC",
        "to_chain": "arbitrum",
        "to_token": "USDC",
        "amount_usd": 12.345678,
    }
    q = http.post("/v2/quote", json=req).json()
    assert q["intent"]["estimated_input_base"] == 12_345_678
    assert q["continuation_v3"]["amount_usd_decimal"] == "12.345678"
