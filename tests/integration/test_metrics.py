"""GET /metrics: Prometheus text with answers counted by route template and status."""

from __future__ import annotations

import httpx
from prometheus_client.parser import text_string_to_metric_families


def samples(http: httpx.Client) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    r = http.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for fam in text_string_to_metric_families(r.text)
        for s in fam.samples
    }


def test_answers_are_counted_by_template_and_status(http: httpx.Client) -> None:
    key_ok = (
        "routequote_http_requests_total",
        (("method", "POST"), ("route", "/v2/quote"), ("status", "200")),
    )
    key_bad = (
        "routequote_http_requests_total",
        (("method", "POST"), ("route", "/v2/quote"), ("status", "400")),
    )
    key_404 = (
        "routequote_http_requests_total",
        (("method", "GET"), ("route", "unmatched"), ("status", "404")),
    )
    before = samples(http)
    body = {
        "from_chain": "solana",
        "from_token": "SOL",
        "to_chain": "base",
        "to_token": "USDC",
        "amount_usd": 5,
    }
    assert http.post("/v2/quote", json=body).status_code == 200
    assert http.post("/v2/quote", json={**body, "amount_usd": 0}).status_code == 400
    assert http.get("/v2/a-path-nobody-serves-123").status_code == 404
    after = samples(http)
    for key in (key_ok, key_bad, key_404):
        assert after[key] == before.get(key, 0) + 1, key
    # a caller-chosen path never becomes a label
    assert not any("a-path-nobody-serves" in str(labels) for _, labels in after)
    assert after[("routequote_market_source_up", (("source", "embedded_snapshot"),))] == 1
    assert after[("routequote_http_request_seconds_count", (("method", "POST"), ("route", "/v2/quote")))] >= 2
