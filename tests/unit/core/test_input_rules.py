"""The pure rules behind issue 14: the strict JSON reader, safe names, secret shapes, approval bounds."""

from __future__ import annotations

from typing import Any

import pytest

from routequote.core.actions.approval import U64_MAX, UINT256_MAX, parse_approval
from routequote.errors import InvalidRequest
from routequote.input_rules import REDACTED, loads_strict, looks_secret_name, looks_secret_value, safe_name

HEX64 = "ab" * 32
APPROVAL = {
    "version": "routequote-quote-bound-approval-v3",
    "quote_id": "7c9e6679-7425-40de-944b-e07fc1f90ae7",
    "quote_fingerprint": "0" * 64,
    "selection_status": "selected",
    "selected_mode": "one_shot",
    "maximum_input_base": "100000000",
    "minimum_output_base": "99000000",
    "direct_route_summary_sha256": "1" * 64,
    "idempotency_key": "abcdefgh-1",
}


def reason(call: Any) -> str:
    with pytest.raises(InvalidRequest) as info:
        call()
    return info.value.reason_class


@pytest.mark.parametrize(
    ("raw", "rule"),
    [
        (b'{"\\ud800":1}', "invalid_unicode"),
        (b'{"a":["\\udc00"]}', "invalid_unicode"),
        (b'{"a":1,"a":1}', "duplicate_key"),
        (b'[{"b":{"c":1,"c":2}}]', "duplicate_key"),
        (b'{"a":0.99999999999999999999}', "inexact_number"),
        (b'{"a":1e400}', "inexact_number"),
        (b'{"a":NaN}', "non_finite_number"),
        (b'{"a":-Infinity}', "non_finite_number"),
        (b"1" * 5000, "number_too_long"),
        (b"[" * 10_000 + b"]" * 10_000, "nesting_too_deep"),
        (b"[" * 33 + b"]" * 33, "nesting_too_deep"),
        (b"\xed\xa0\x80", "malformed_json"),  # a surrogate encoded in the bytes themselves
        (b"{", "malformed_json"),
        (b"  ", "malformed_json"),
    ],
)
def test_strict_reader_refuses(raw: bytes, rule: str) -> None:
    assert reason(lambda: loads_strict(raw)) == rule


def test_strict_reader_keeps_valid_json() -> None:
    assert loads_strict(b'{"a":[0.1,5e1,-0.0,"\\ud83d\\ude00",1000],"b":{"c":null}}') == {
        "a": [0.1, 50.0, -0.0, "\U0001f600", 1000],
        "b": {"c": None},
    }
    assert loads_strict(b"[" * 32 + b"]" * 32) is not None


@pytest.mark.parametrize(
    "name",
    [
        HEX64,
        "0X" + HEX64.upper(),
        "private_key=" + HEX64,
        "x" * 41,
        "a b",
        "k\n",
        "deadbeefcafe",
        "\ud800",
        "abc123456789",
    ],
)
def test_unsafe_names_are_never_repeated(name: str) -> None:
    assert safe_name(name) == REDACTED


@pytest.mark.parametrize("name", ["amount_usd", "fromChain", "private_key", "extra", "field_2"])
def test_plain_names_are_shown(name: str) -> None:
    assert safe_name(name) == name


@pytest.mark.parametrize(
    "value",
    ["0x" + HEX64, "0X" + HEX64, HEX64.upper(), "ab" * 64, " 0x" + HEX64 + "\n", "abandon " * 11 + "about"],
)
def test_secret_shaped_values(value: str) -> None:
    assert looks_secret_value(value)


def test_hash_fields_may_hold_64_hex_but_not_prefixed_keys() -> None:
    assert not looks_secret_value(HEX64, hash_field=True)
    assert looks_secret_value("0x" + HEX64, hash_field=True)
    assert (
        looks_secret_name("wallet_" + HEX64)
        and looks_secret_name("seedPhrase")
        and not looks_secret_name("amount")
    )


@pytest.mark.parametrize(
    "field",
    [
        "maximum_input_base",
        "minimum_output_base",
        "idempotency_key",
        "quote_fingerprint",
        "direct_route_summary_sha256",
    ],
)
def test_approval_patterns_are_full_match(field: str) -> None:
    assert parse_approval(APPROVAL)[field] == APPROVAL[field]
    assert reason(lambda: parse_approval({**APPROVAL, field: APPROVAL[field] + "\n"})).startswith(
        ("approval_v3_", "invalid_idempotency_key")
    )


@pytest.mark.parametrize("key", ["0X" + HEX64, "0x" + HEX64.upper(), "ab" * 64, ("AB" * 64)])
def test_secret_looking_idempotency_keys(key: str) -> None:
    assert reason(lambda: parse_approval({**APPROVAL, "idempotency_key": key})) == "invalid_idempotency_key"


@pytest.mark.parametrize(
    ("limit", "fits", "too_big"), [(UINT256_MAX, 2**256 - 1, 2**256), (U64_MAX, 2**64 - 1, 2**64)]
)
def test_bounds_fit_their_field(limit: int, fits: int, too_big: int) -> None:
    for field in ("maximum_input_base", "minimum_output_base"):
        assert parse_approval({**APPROVAL, field: str(fits)}, max_base=limit)[field] == str(fits)
        assert reason(lambda f=field: parse_approval({**APPROVAL, f: str(too_big)}, max_base=limit)) == (
            "approval_v3_amount_out_of_range"
        )


def test_unknown_approval_names_are_redacted() -> None:
    with pytest.raises(InvalidRequest) as info:
        parse_approval({**APPROVAL, HEX64: "1", "private_key=" + HEX64: "1"})
    assert HEX64[:12] not in info.value.message and REDACTED in info.value.message
