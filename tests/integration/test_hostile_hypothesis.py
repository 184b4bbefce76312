"""Generated hostile keys and values (lone surrogates, control characters, huge integers, non-finite
numbers, secret-shaped names and values) on REST v2, v1, prepare, MCP and A2A bodies (issue 14).

Whatever is sent: never a 5xx, never a traceback or exception/validator text, and secret-shaped material
placed in a field name or in a field that is not a hash, an address or a transaction id never appears in
the answer (no 12-character piece of it)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.support.hostile import SURFACES, assert_clean, post, raw_body

SECRETS = [
    "3f1c9a77e2b04d5e" * 4,
    "0x" + "a1b2c3d4e5f60718" * 4,
    "0X" + "A1B2C3D4E5F60718" * 4,
    "9c8b7a6f5e4d3c2b" * 8,
    "5KQwrPbwdL6PhXujxW37FSSQZ1JiwsST4cqQzDeyXtP79zkvFD3" + "FSSQZ1JiwsST4cqQzDeyXtP79zkvFD3qNh",
    "legal winner thank year wave sausage worth useful legal winner thank yellow",
]
secret = st.sampled_from(SECRETS)
surrogate = st.integers(0xD800, 0xDFFF).map(chr)
control = st.characters(max_codepoint=0x1F)
hostile_text = st.one_of(
    st.text(max_size=12),
    st.lists(st.one_of(surrogate, control, st.characters()), min_size=1, max_size=8).map("".join),
    secret,
    secret.map(lambda s: "private_key=" + s),
    secret.map(lambda s: s + "\n"),
)
hostile_scalar = st.one_of(
    hostile_text,
    st.integers(min_value=-(10**420), max_value=10**420),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
)
hostile_value = st.recursive(
    hostile_scalar,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(hostile_text, children, max_size=3),
    max_leaves=8,
)
hostile_members = st.dictionaries(hostile_text, hostile_value, min_size=1, max_size=4)


@pytest.fixture(scope="module")
def http(served: tuple[str, Any]) -> Iterator[httpx.Client]:
    url, _ = served
    with httpx.Client(base_url=url, timeout=30) as client:
        yield client


def _members(members: dict[str, Any]) -> str:
    return json.dumps(members, ensure_ascii=True, allow_nan=True)[1:-1]  # lone surrogates travel as \\udXXX


@pytest.mark.parametrize("surface", SURFACES)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(members=hostile_members)
def test_hostile_members_never_break_an_answer(
    http: httpx.Client, surface: str, members: dict[str, Any]
) -> None:
    r = post(http, surface, raw_body(surface, _members(members)))
    assert_clean(r, *SECRETS)


@pytest.mark.parametrize("surface", SURFACES)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(amount=hostile_scalar)
def test_hostile_amounts_never_break_an_answer(http: httpx.Client, surface: str, amount: Any) -> None:
    r = post(http, surface, raw_body(surface, amount=json.dumps(amount, ensure_ascii=True, allow_nan=True)))
    assert_clean(r, *SECRETS)
