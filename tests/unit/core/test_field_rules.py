"""core/field_rules.py is the one home of the shared field rules: their behaviour, the client's use of them,
and that no other file in src/ spells one of their patterns (or the body_not_object refusal) again."""

from __future__ import annotations

import base64
import secrets
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from routequote.client.token import SessionToken
from routequote.core.field_rules import (
    EVM_ADDRESS_PATTERN,
    EVM_TX_HASH_PATTERN,
    IDEMPOTENCY_KEY_PATTERN,
    SESSION_TOKEN_PATTERN,
    SOLANA_ADDRESS_PATTERN,
    SOLANA_SIGNATURE_PATTERN,
    TRANSACTION_ID_PATTERN,
    UUID_PATTERN,
    V1_UUID_PATTERN,
    check_idempotency_key,
    check_session_token,
    object_fields,
    require_object,
    session_token_problem,
)
from routequote.errors import InvalidRequest

SRC = Path(__file__).resolve().parents[3] / "src" / "routequote"
HOME = SRC / "core" / "field_rules.py"


def _random_token() -> str:
    return base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()


WEAK = [
    "A" * 43,
    "_" * 42 + "8",  # 32 bytes of 0xff
    ("Ab" * 22)[:43],
    ("q7Zk_3Xw" * 6)[:43],
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopq",
    "".join("ADGJMPSVYbehknqtwz0369-"[i % 23] for i in range(43)),
    "0123456789" * 4 + "012",
]


@pytest.mark.parametrize("token", WEAK)
def test_plainly_non_random_tokens_are_refused_by_the_server_rule_and_the_client(token: str) -> None:
    with pytest.raises(InvalidRequest) as refused:
        check_session_token(token)
    assert refused.value.reason_class == "session_token_invalid" and token not in str(refused.value)
    with pytest.raises(ValueError) as client_refused:
        SessionToken(token)
    assert token not in str(client_refused.value)


@pytest.mark.parametrize(
    "token", [_random_token() + "A", _random_token()[:42], _random_token()[:42] + "=", ""]
)
def test_only_exactly_43_base64url_characters(token: str) -> None:
    assert session_token_problem(token) is not None


def test_random_tokens_pass() -> None:
    for _ in range(20_000):
        token = _random_token()
        assert check_session_token(token) == token
    assert SessionToken.generate().reveal()


def test_idempotency_key_rule_names_the_field() -> None:
    assert check_idempotency_key("k-0001abcd") == "k-0001abcd"
    for bad in ("short", "x" * 129, "has space ok", None, 12345678):
        with pytest.raises(InvalidRequest) as refused:
            check_idempotency_key(bad, "idempotencyKey")
        assert refused.value.reason_class == "invalid_idempotency_key"
        assert str(refused.value).startswith(f"idempotencyKey must match {IDEMPOTENCY_KEY_PATTERN}")


def test_object_fields() -> None:
    assert object_fields({"a": 1}, {"a"}, {"b"}) == {"a": 1}
    for body, reason in (
        ([], "body_not_object"),
        ({"a": 1, "zz": 2}, "unknown_field"),
        ({}, "missing_field"),
    ):
        with pytest.raises(InvalidRequest) as refused:
            object_fields(body, {"a"}, {"b"})
        assert refused.value.reason_class == reason
        assert "zz" not in str(refused.value)  # the caller's names are counted, never repeated
    with pytest.raises(InvalidRequest):
        require_object("not an object")


@pytest.mark.parametrize(
    "spelled",
    [
        IDEMPOTENCY_KEY_PATTERN,
        SESSION_TOKEN_PATTERN,
        EVM_ADDRESS_PATTERN,
        EVM_TX_HASH_PATTERN,
        SOLANA_ADDRESS_PATTERN,
        TRANSACTION_ID_PATTERN,
        UUID_PATTERN,
        V1_UUID_PATTERN,
        SOLANA_SIGNATURE_PATTERN,
        '"body_not_object"',
        "A-Za-z0-9_-]{43,128}",
    ],
)
def test_each_rule_is_spelled_once_in_src(spelled: str) -> None:
    core = spelled.strip("^$")

    def spells(
        text: str,
    ) -> bool:  # the v1 access token (`rqv1_` + 43 characters) is another, server-made rule
        return any(core in line and "rqv1_" not in line for line in text.splitlines())

    found = sorted(str(p.relative_to(SRC)) for p in SRC.rglob("*.py") if p != HOME and spells(p.read_text()))
    assert found == []


@settings(max_examples=500, deadline=None)
@given(st.lists(st.integers(0, 3), max_size=50) | st.lists(st.integers(0, 63), min_size=43, max_size=43))
def test_the_shortest_period_is_the_least_shift_that_maps_the_values_onto_themselves(
    values: list[int],
) -> None:
    from routequote.core.field_rules import shortest_period

    expected = next(
        (p for p in range(1, len(values)) if all(values[i] == values[i - p] for i in range(p, len(values)))),
        len(values),
    )
    assert shortest_period(values) == expected
