"""The Redis store's quote ids name their second of issue in their last byte (still a valid uuid4)."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from routequote.storage.redis_store import SecondIds, second_of

UUID4 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


@given(st.integers(min_value=300, max_value=2**40), st.floats(min_value=0, max_value=0.999))
def test_an_id_names_its_second_until_a_moment_has_passed(second: int, fraction: float) -> None:
    quote_id = SecondIds(lambda: second + fraction).new_id()
    assert UUID4.fullmatch(quote_id)
    assert int(quote_id[34:], 16) == second % 256
    assert second_of(quote_id, second) == second
    assert second_of(quote_id, second + 1) == second
    assert second_of(quote_id, second + 2) == second
    assert second_of(quote_id, second + 3) is None  # made too long before it is stored: a key of its own
    assert second_of(quote_id, second - 1) is None  # from the future here (or 255 s old): not trusted


def test_ids_not_of_this_store_name_no_second() -> None:
    assert second_of("not-a-uuid", 1000) is None
    assert second_of("00000000-0000-4000-8000-0000000000zz", 1000) is None
    assert second_of("00000000-0000-4000-8000-0000000000e8", 1000) == 1000  # 1000 % 256 == 0xe8
    assert second_of("00000000-0000-4000-8000-0000000000e7", 1000) == 999
    assert second_of("00000000-0000-4000-8000-0000000000e9", 1000) is None
