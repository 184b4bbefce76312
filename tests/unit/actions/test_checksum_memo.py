"""`checksum` remembers EIP-55 forms: what it answers must be what eth_utils answers, whatever it saw before,
and an address it refused once it refuses again."""

from __future__ import annotations

import pytest
from eth_utils.address import to_checksum_address
from hypothesis import given
from hypothesis import strategies as st

from routequote.core.actions.common import checksum

_ADDRESS = st.binary(min_size=20, max_size=20).map(lambda b: "0x" + b.hex())


@given(st.lists(st.tuples(_ADDRESS, st.sampled_from([str.lower, str.upper, lambda a: a])), max_size=12))
def test_a_remembered_form_is_the_form(addresses: list[tuple[str, object]]) -> None:
    for address, spelling in addresses:
        spelled = "0x" + spelling(address[2:])  # type: ignore[operator]
        assert checksum(spelled) == to_checksum_address(spelled)
        assert checksum(spelled) == checksum(address)  # every spelling of one address: one form


@pytest.mark.parametrize("bad", ["0x1234", "0x" + "zz" * 20, "", "0x" + "ab" * 21])
def test_a_refused_address_is_refused_every_time(bad: str) -> None:
    for _ in range(2):
        with pytest.raises(ValueError):
            checksum(bad)
