"""Every QuoteRequest rule answers 400 with an ErrorResponse naming the rule; nothing is ever a 5xx."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.support.spec_schema import ERROR_RESPONSE, validate

GOOD: dict[str, Any] = {
    "from_chain": "solana",
    "from_token": "SOL",
    "to_chain": "base",
    "to_token": "USDC",
    "amount_usd": 50,
}


def post_raw(http: httpx.Client, content: bytes, content_type: str = "application/json") -> httpx.Response:
    return http.post("/v2/quote", content=content, headers={"content-type": content_type})


def assert_rule(resp: httpx.Response, reason_class: str) -> None:
    assert resp.status_code == 400, resp.text
    body = resp.json()
    validate(body, ERROR_RESPONSE)
    assert body["error"] == "invalid_request"
    assert body["reason_class"] == reason_class
    assert "Traceback" not in resp.text


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"extra": 1}, "unknown_field"),
        ({"amount_usd": True}, "boolean_not_number"),
        ({"amount_usd": "50"}, "string_not_number"),
        ({"amount_usd": None}, "wrong_type"),
        ({"amount_usd": [50]}, "wrong_type"),
        ({"from_chain": 7}, "wrong_type"),
        ({"to_token": None}, "wrong_type"),
        ({"from_chain": "ethereum"}, "unknown_chain"),
        ({"to_chain": "Solana"}, "unknown_chain"),
        ({"from_token": "BTC"}, "unknown_token"),
        ({"to_token": "usdc"}, "unknown_token"),
        ({"from_chain": "base", "from_token": "SOL"}, "token_not_on_chain"),
        ({"to_chain": "robinhood", "to_token": "USDC"}, "token_not_on_chain"),
        ({"to_chain": "solana", "to_token": "SOL"}, "identity_route"),
        ({"amount_usd": 0.99}, "amount_below_minimum"),
        ({"amount_usd": 0}, "amount_below_minimum"),
        ({"amount_usd": -5}, "amount_below_minimum"),
        ({"amount_usd": 1000.01}, "amount_above_maximum"),
        ({"amount_usd": 10**30}, "amount_above_maximum"),
    ],
)
def test_field_rules(http: httpx.Client, change: dict[str, Any], reason: str) -> None:
    assert_rule(http.post("/v2/quote", json={**GOOD, **change}), reason)


@pytest.mark.parametrize("field", ["from_chain", "from_token", "to_chain", "to_token", "amount_usd"])
def test_missing_field(http: httpx.Client, field: str) -> None:
    assert_rule(http.post("/v2/quote", json={k: v for k, v in GOOD.items() if k != field}), "missing_field")


@pytest.mark.parametrize("literal", [b"NaN", b"Infinity", b"-Infinity"])
def test_non_finite_numbers(http: httpx.Client, literal: bytes) -> None:
    raw = (
        b'{"from_chain":"solana","from_token":"SOL","to_chain":"base","to_token":"USDC","amount_usd":'
        + literal
        + b"}"
    )
    assert_rule(post_raw(http, raw), "non_finite_number")


@pytest.mark.parametrize("raw", [b"{", b"", b"not json", b'{"a":1,}', b"\xff\xfe"])
def test_malformed_json(http: httpx.Client, raw: bytes) -> None:
    assert_rule(post_raw(http, raw), "malformed_json")


def test_body_not_an_object(http: httpx.Client) -> None:
    assert_rule(post_raw(http, b"[1,2]"), "body_not_object")


@pytest.mark.parametrize("ctype", ["text/plain", "application/x-www-form-urlencoded", ""])
def test_wrong_content_type(http: httpx.Client, ctype: str) -> None:
    assert_rule(post_raw(http, b'{"amount_usd":50}', ctype), "unsupported_content_type")


def test_json_with_charset_is_accepted(http: httpx.Client) -> None:
    import json

    resp = post_raw(http, json.dumps(GOOD).encode(), "application/json; charset=utf-8")
    assert resp.status_code == 200


def test_body_over_one_mebibyte(http: httpx.Client) -> None:
    raw = b'{"pad":"' + b"x" * 1_048_600 + b'"}'
    assert_rule(post_raw(http, raw), "body_too_large")


def test_unknown_path_and_method_are_error_responses(http: httpx.Client) -> None:
    r = http.get("/v2/nope")
    assert r.status_code == 404 and r.json()["error"]
    r = http.get("/v2/quote")
    assert r.status_code == 405 and r.json()["error"]


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=6)
    ),
    max_leaves=12,
)
field_values = (
    st.sampled_from(["solana", "base", "arbitrum", "robinhood", "SOL", "ETH", "USDC", "USDG"]) | json_values
)
bodies = (
    st.fixed_dictionaries(
        {},
        optional={
            "from_chain": field_values,
            "from_token": field_values,
            "to_chain": field_values,
            "to_token": field_values,
            "amount_usd": st.floats(allow_nan=False, allow_infinity=False) | st.integers() | json_values,
            "extra": json_values,
        },
    )
    | json_values
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=bodies)
def test_generated_bodies_never_give_a_5xx(http: httpx.Client, body: Any) -> None:
    resp = http.post("/v2/quote", json=body)
    assert resp.status_code in (200, 400), resp.text
    if resp.status_code == 400:
        validate(resp.json(), ERROR_RESPONSE)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=st.binary(max_size=200))
def test_generated_bytes_never_give_a_5xx(http: httpx.Client, raw: bytes) -> None:
    resp = post_raw(http, raw)
    assert resp.status_code in (200, 400), resp.text
