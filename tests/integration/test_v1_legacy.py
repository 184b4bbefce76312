"""Legacy REST v1 over real HTTP: the two original corridors (solana SOL -> ETH on base / arbitrum)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from tests.support.server import running_server

from routequote.app import create_app
from routequote.config import Settings


def _flags(tree: Any) -> list[Any]:
    found: list[Any] = []
    if isinstance(tree, dict):
        for k, v in tree.items():
            if k in ("server_signing", "server_submission"):
                found.append(v)
            found += _flags(v)
    elif isinstance(tree, list):
        for v in tree:
            found += _flags(v)
    return found


def test_v1_status_lists_the_two_corridors(http: httpx.Client) -> None:
    r = http.get("/v1/status")
    assert r.status_code == 200
    body = r.json()
    assert body["status"] == "capped_public_agent_release"
    assert [c["corridor"] for c in body["corridors"]] == ["solana:SOL->base:ETH", "solana:SOL->arbitrum:ETH"]
    assert all(c["quotable"] for c in body["corridors"])
    assert body["safety_gates"]["never_signs"] is True
    flags = _flags(body)
    assert flags and all(v is False for v in flags)


@pytest.mark.parametrize("destination", [None, "base", "arbitrum"])
def test_v1_quote_is_the_v2_quote_of_the_corridor(http: httpx.Client, destination: str | None) -> None:
    body: dict[str, Any] = {"amount_usd": 500}
    if destination:
        body["destination_chain"] = destination
    r = http.post("/v1/quote", json=body)
    assert r.status_code == 200, r.text
    v1 = r.json()
    chain = destination or "base"
    assert v1["corridor"] == f"solana:SOL->{chain}:ETH" and v1["destination_chain"] == chain
    quote = v1["quote"]
    assert quote["route"]["route"] == v1["corridor"]
    assert quote["intent"] == {
        **quote["intent"],
        "from": "solana:SOL",
        "to": f"{chain}:ETH",
        "amount_usd": 500,
    }
    v2 = http.post(
        "/v2/quote",
        json={
            "from_chain": "solana",
            "from_token": "SOL",
            "to_chain": chain,
            "to_token": "ETH",
            "amount_usd": 500,
        },
    ).json()
    assert quote["offer"]["expected_output_base"] == v2["offer"]["expected_output_base"]
    assert quote["offer"]["minimum_output_base"] == v2["offer"]["minimum_output_base"]
    assert quote["quote_id"] != v2["quote_id"]
    flags = _flags(v1)
    assert len(flags) >= 8 and all(v is False for v in flags)


# the public MCP adapter's v1 quote body: the corridor spelled out
ADAPTER_V1 = {
    "from_chain": "solana",
    "from_token": "SOL",
    "to_chain": "base",
    "to_token": "ETH",
    "amount_usd": 10,
}


@pytest.mark.parametrize("chain", ["base", "arbitrum"])
def test_v1_quote_accepts_the_adapters_spelled_out_corridor(http: httpx.Client, chain: str) -> None:
    r = http.post("/v1/quote", json={**ADAPTER_V1, "to_chain": chain})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["corridor"] == f"solana:SOL->{chain}:ETH" and body["quote_id"] == body["quote"]["quote_id"]
    assert body["quote"]["intent"]["amount_usd"] == 10


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ({"amount_usd": 10, "destination_chain": "solana"}, "unsupported_corridor"),
        ({"amount_usd": 10, "destination_chain": "robinhood"}, "unsupported_corridor"),
        ({"amount_usd": 1.5}, "wrong_type"),
        ({"amount_usd": "10"}, "string_not_number"),
        ({"amount_usd": 0}, "amount_below_minimum"),
        ({"amount_usd": 1001}, "amount_above_maximum"),
        ({"amount_usd": 10, "source": "solana"}, "unknown_field"),
        ({"amount_usd": 10, "from_token": "USDC"}, "missing_field"),  # a half-spelled corridor
        ({**ADAPTER_V1, "destination_chain": "base"}, "unknown_field"),
        ({**ADAPTER_V1, "note": "x"}, "unknown_field"),
        ({**ADAPTER_V1, "to_token": "USDC"}, "unsupported_corridor"),
        ({**ADAPTER_V1, "to_chain": "robinhood"}, "unsupported_corridor"),
        ({}, "missing_field"),
        ([10], "body_not_object"),
    ],
)
def test_v1_quote_rejects_what_v1_does_not_cover(http: httpx.Client, body: Any, reason: str) -> None:
    r = http.post("/v1/quote", json=body)
    assert r.status_code == 400, r.text
    assert r.json()["reason_class"] == reason
    assert r.json()["error"]


def test_v1_quote_rejects_non_json(http: httpx.Client) -> None:
    r = http.post("/v1/quote", content=b"amount_usd=10", headers={"content-type": "text/plain"})
    assert r.status_code == 400 and r.json()["reason_class"] == "unsupported_content_type"
    r = http.post("/v1/quote", content=b"{", headers={"content-type": "application/json"})
    assert r.status_code == 400 and r.json()["reason_class"] == "malformed_json"


@pytest.fixture(scope="module")
def limited() -> Iterator[str]:
    app = create_app(Settings(rate_limit="2/minute", dev_signing_key_path=""))
    with running_server(app) as url:
        yield url


def test_v1_is_rate_limited_like_v2(limited: str) -> None:
    with httpx.Client(base_url=limited) as client:
        codes = [client.post("/v1/quote", json={"amount_usd": 5}).status_code for _ in range(3)]
        assert codes == [200, 200, 429]
        r = client.get("/v1/status")
        assert r.status_code == 429 and 1 <= int(r.headers["retry-after"]) <= 60
        assert r.json()["reason_class"] == "rate_limit_exceeded"
