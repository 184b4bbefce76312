"""Session documents are stored as JSON text: whichever encoder writes it, it reads back as the document (or
the document is refused with ValueError/TypeError, as the stdlib encoder refuses it)."""

from __future__ import annotations

import enum
import json
import math
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from routequote.storage.sessions_common import json_dumps, json_loads

_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**300), max_value=2**300)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
_DOCUMENTS = st.recursive(
    _LEAVES,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=30,
)


@given(_DOCUMENTS)
def test_a_document_reads_back_as_itself(doc: Any) -> None:
    text = json_dumps(doc)
    assert json_loads(text) == doc
    assert json_loads(text) == json.loads(json.dumps(doc, allow_nan=False))


def test_big_integers_and_tuples_read_back_as_the_stdlib_writes_them() -> None:
    doc = {"amount": 2**200, "pair": (1, 2), "keys": {1: "one"}}
    assert json_dumps(doc) == '{"amount":' + str(2**200) + ',"pair":[1,2],"keys":{"1":"one"}}'


class _Colour(enum.Enum):
    RED = "red"


@pytest.mark.parametrize(
    "bad",
    [
        {"x": math.nan},
        {"x": [1.0, math.inf]},
        {"x": -math.inf},
        {"at": datetime(2026, 11, 25, tzinfo=UTC)},  # orjson would write a string
        {"colour": _Colour.RED},  # orjson would write its value
        {"x": {1, 2}},
    ],
)
def test_what_json_cannot_hold_is_refused(bad: dict[str, Any]) -> None:
    with pytest.raises((ValueError, TypeError)):
        json_dumps(bad)
