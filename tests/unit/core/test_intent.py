from __future__ import annotations

from typing import Any

import pytest

from routequote.core.intent import amount_decimal, parse_quote_request
from routequote.errors import InvalidRequest

GOOD: dict[str, Any] = {
    "from_chain": "solana",
    "from_token": "SOL",
    "to_chain": "base",
    "to_token": "USDC",
    "amount_usd": 50,
}


def reason(body: Any) -> str:
    with pytest.raises(InvalidRequest) as info:
        parse_quote_request(body)
    return info.value.reason_class


def test_valid() -> None:
    intent = parse_quote_request(GOOD)
    assert intent.route_key == "solana:SOL->base:USDC"
    assert intent.as_request() == GOOD


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ([], "body_not_object"),
        ({**GOOD, "x": 1}, "unknown_field"),
        ({k: v for k, v in GOOD.items() if k != "to_token"}, "missing_field"),
        ({**GOOD, "amount_usd": True}, "boolean_not_number"),
        ({**GOOD, "amount_usd": "5"}, "string_not_number"),
        ({**GOOD, "amount_usd": float("nan")}, "non_finite_number"),
        ({**GOOD, "amount_usd": float("inf")}, "non_finite_number"),
        ({**GOOD, "from_chain": "polygon"}, "unknown_chain"),
        ({**GOOD, "from_token": "DOGE"}, "unknown_token"),
        ({**GOOD, "from_chain": "base"}, "token_not_on_chain"),
        ({**GOOD, "to_chain": "solana", "to_token": "SOL"}, "identity_route"),
        ({**GOOD, "amount_usd": 0.5}, "amount_below_minimum"),
        ({**GOOD, "amount_usd": 1000.0001}, "amount_above_maximum"),
    ],
)
def test_rules(body: Any, expected: str) -> None:
    assert reason(body) == expected


@pytest.mark.parametrize(
    ("amount", "text"), [(1000, "1000"), (50.0, "50"), (12.5, "12.5"), (1.10, "1.1"), (999.999, "999.999")]
)
def test_amount_decimal(amount: float, text: str) -> None:
    assert amount_decimal(amount) == text


def test_input_base_rounds_down_at_reference_price() -> None:
    intent = parse_quote_request({**GOOD, "amount_usd": 1})
    # $1 at $152.40/SOL = 0.006561679790... SOL -> 6561679 lamports
    assert intent.input_base(152_40_000000) == 6_561_679
