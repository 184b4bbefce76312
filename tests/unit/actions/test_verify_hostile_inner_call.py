"""A multicall whose inner calldata cannot be decoded is a finding (calldata_undecodable), never an exception
out of verify_bundle: found by the shared vectors of the TypeScript verifier (tests/support/ts_vectors.py)."""

from __future__ import annotations

import copy

from tests.unit.actions.support import make_env, prepare_route, rehash

from routequote.verify import verify_bundle


async def test_non_canonical_inner_call_is_refused_not_raised() -> None:
    prepared = await prepare_route(make_env(), "base:USDC->base:ETH")
    bundle = copy.deepcopy(prepared.bundle)
    swap = bundle["unsigned_action"]["transactions"][-1]
    data = bytearray(bytes.fromhex(swap["data"][2:]))
    # a nonzero byte in the padding of the inner exactInputSingle's tokenIn word (the outer call stays valid)
    inner = data.index(bytes.fromhex("04e45aaf"))  # exactInputSingle's selector
    data[inner + 4] ^= 0x01
    swap["data"] = "0x" + data.hex()
    errors = [
        f.code for f in verify_bundle(rehash(bundle), **prepared.verify_kwargs()) if f.severity == "error"
    ]
    assert errors == ["calldata_undecodable"]
