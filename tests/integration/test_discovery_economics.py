"""Route economics agrees with live quotes of the same route and amount, in the same run."""

from __future__ import annotations

import httpx

from routequote.core.routes import ROUTES


def _quote(http: httpx.Client, route: str, amount: int) -> httpx.Response:
    src, dst = route.split("->")
    fc, ft = src.split(":")
    tc, tt = dst.split(":")
    return http.post(
        "/v2/quote",
        json={"from_chain": fc, "from_token": ft, "to_chain": tc, "to_token": tt, "amount_usd": amount},
    )


def test_route_economics_agrees_with_live_quotes(http: httpx.Client) -> None:
    doc = http.get("/v2/route-economics.json").json()
    assert doc["route_count"] == len(doc["routes"]) == len(ROUTES) == 72
    assert doc["advisory_only"] is True and doc["economic_guidance_blocks_execution"] is False
    assert doc["sample_amounts_usd"] == [1, 50, 250, 1000]
    assert doc["price_recommendation_rule"]["search_resolution_usd"] == 1
    assert sum(doc["advisory_start_distribution"].values()) == 72
    assert {r["route"] for r in doc["routes"]} == set(ROUTES)
    version = doc["data_source"]["market_version"]
    checked_thresholds = 0
    for entry in doc["routes"]:
        route = entry["route"]
        for sample in entry["costs"]:
            r = _quote(http, route, sample["amount_usd"])
            if not sample["quotable"]:
                assert r.status_code == 400 and r.json()["reason_class"] == sample["reason_class"], route
                continue
            assert r.status_code == 200, (route, sample, r.text)
            q = r.json()
            assert q["market"]["version"] == version
            assert q["price_recommended_for_amount"] is sample["price_recommended_for_amount"], (
                route,
                sample,
            )
            cost = q["cost_summary"]
            assert round(cost["expected_total_cost_percent"] * 100, 2) == sample["expected_cost_bps"], (
                route,
                sample,
            )
            assert round(cost["maximum_total_cost_percent"] * 100, 2) == sample["maximum_cost_bps"], (
                route,
                sample,
            )
            assert cost["expected_total_cost_usd"] == sample["expected_total_cost_usd"]
        start = entry["price_recommended_from_usd"]
        if start is None:
            assert _quote(http, route, 1000).json()["price_recommended_for_amount"] is False, route
            continue
        assert _quote(http, route, start).json()["price_recommended_for_amount"] is True, (route, start)
        if start > 1:
            assert _quote(http, route, start - 1).json()["price_recommended_for_amount"] is False, (
                route,
                start,
            )
            checked_thresholds += 1
    assert checked_thresholds > 0  # the snapshot has routes whose recommendation starts above USD 1
