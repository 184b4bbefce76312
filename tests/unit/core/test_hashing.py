from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from routequote.core.hashing import canonical_json, typed_canonical


def test_typed_canonical_vectors() -> None:
    assert typed_canonical(None) == b"n"
    assert typed_canonical(True) == b"t" and typed_canonical(False) == b"f"
    assert typed_canonical(1) == b"d3ff0000000000000"
    assert typed_canonical(1.0) == typed_canonical(1)  # JSON numbers, not Python types
    assert typed_canonical(-0.0) == b"d8000000000000000" and typed_canonical(0) == b"d0000000000000000"
    assert typed_canonical("é") == b"s2:\xc3\xa9"
    assert typed_canonical([1, "a"]) == b"a2:[d3ff0000000000000s1:a]"
    assert typed_canonical({"b": 1, "a": None}) == b"o2:{s1:an" + b"s1:bd3ff0000000000000}"


def test_typed_canonical_sorts_keys_by_utf8_bytes() -> None:
    # "Z" (0x5a) < "a" (0x61) < "é" (0xc3 0xa9)
    assert typed_canonical({"é": 1, "a": 1, "Z": 1}).startswith(b"o3:{s1:Z")


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), 2**53, -(2**53), "\ud800", object()])
def test_typed_canonical_rejects(bad: object) -> None:
    with pytest.raises((ValueError, TypeError, UnicodeEncodeError)):
        typed_canonical(bad)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | st.text(),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4),
    max_leaves=20,
)


@given(json_values)
def test_canonical_json_is_sorted_compact_utf8(value: object) -> None:
    raw = canonical_json(value)
    assert raw == json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    assert json.loads(raw) == value


def test_typed_canonical_treats_subclasses_as_their_json_type() -> None:
    from collections import OrderedDict

    from routequote.core.assets import Chain

    assert typed_canonical(Chain.BASE) == typed_canonical("base")
    assert typed_canonical(OrderedDict([("b", 1), ("a", 2)])) == typed_canonical({"a": 2, "b": 1})
    assert typed_canonical((1, 2)) == typed_canonical([1, 2])


numberless = st.recursive(
    st.none() | st.booleans() | st.text(),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4),
    max_leaves=20,
)


@given(numberless)
def test_numberless_fast_path_is_byte_equal_to_canonical_json(value: object) -> None:
    from routequote.core.hashing import canonical_json_numberless

    assert canonical_json_numberless(value) == canonical_json(value)
