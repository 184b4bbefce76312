"""The quote payload hash's cached template gives exactly the bytes of the full typed-canonical encoding."""

from __future__ import annotations

import copy
from datetime import UTC, datetime

import pytest

from routequote.clock import FixedClock, SequentialIds
from routequote.core import quote as quote_mod
from routequote.core.hashing import CanonicalTemplate, Hole, strictly_equal, typed_canonical
from routequote.core.intent import parse_quote_request
from routequote.core.quote import substituted_payload
from routequote.market.snapshot import EmbeddedSnapshot
from routequote.service import RouteQuoteService, ServiceConfig
from routequote.storage.quotes import MemoryQuoteStore


def reference(payload: dict) -> str:  # type: ignore[type-arg]
    from routequote.core.hashing import typed_canonical_sha256

    return typed_canonical_sha256(substituted_payload(payload))


@pytest.mark.parametrize(
    "value",
    [
        {"a": Hole("x"), "b": [1, Hole("y"), {"c": Hole("z")}], "zz": "tail"},
        [Hole("x"), Hole("y"), Hole("z")],
        {"": Hole("x"), "é": {"y": Hole("y")}, "z": Hole("z")},
    ],
)
@pytest.mark.parametrize(
    "filling",
    [
        {"x": "0198-uuid", "y": 12, "z": None},
        {"x": "", "y": True, "z": 1.5},
        {"x": {"nested": [1, 2]}, "y": -0.0, "z": "ü" * 40},
    ],
)
def test_template_fill_is_byte_equal_to_the_full_encoding(value: object, filling: dict) -> None:  # type: ignore[type-arg]
    def filled(v: object) -> object:
        if isinstance(v, Hole):
            return filling[v.name]
        if isinstance(v, dict):
            return {k: filled(x) for k, x in v.items()}
        if isinstance(v, list):
            return [filled(x) for x in v]
        return v

    assert CanonicalTemplate.of(value).fill(filling) == typed_canonical(filled(value))


def test_a_hole_outside_a_template_is_refused() -> None:
    with pytest.raises(TypeError):
        typed_canonical({"a": Hole("x")})


def test_strictly_equal_tells_types_apart() -> None:
    assert strictly_equal({"a": [1, "x"]}, {"a": [1, "x"]})
    assert not strictly_equal(1, 1.0) and not strictly_equal(1, True) and not strictly_equal(0.0, -0.0)
    assert not strictly_equal({"a": 1}, {"a": 1, "b": 2}) and not strictly_equal([1], (1,))
    assert strictly_equal(Hole("x"), Hole("x")) and not strictly_equal(Hole("x"), Hole("y"))


def service() -> RouteQuoteService:
    clock = FixedClock(datetime(2026, 11, 20, 12, 0, tzinfo=UTC))
    return RouteQuoteService(
        EmbeddedSnapshot(),
        MemoryQuoteStore(),
        clock,
        SequentialIds(),
        ServiceConfig(prepare_ready_routes=frozenset()),
    )


async def test_every_quote_of_one_body_hashes_as_the_full_encoding() -> None:
    svc = service()
    body = {
        "from_chain": "base",
        "from_token": "ETH",
        "to_chain": "solana",
        "to_token": "USDC",
        "amount_usd": 100,
    }
    seen = set()
    for i in range(5):
        svc.clock.advance(0.007 * i)  # type: ignore[attr-defined]
        issued = await svc.quote(parse_quote_request(body))
        got = issued.payload["continuation_v3"]["quote_payload_sha256"]
        assert got == reference(issued.payload)
        seen.add(got)
    assert len(seen) == 5  # quote ids and times differ: so do the hashes


async def test_a_field_that_changes_outside_the_holes_rebuilds_the_template() -> None:
    svc = service()
    body = {
        "from_chain": "base",
        "from_token": "ETH",
        "to_chain": "base",
        "to_token": "USDC",
        "amount_usd": 50,
    }
    first = await svc.quote(parse_quote_request(body))
    svc.config.prepare_ready_routes = frozenset(
        {first.route.key}
    )  # execution.first_unsigned_action_supported flips
    second = await svc.quote(parse_quote_request(body))
    assert second.body is first.body
    assert second.payload["execution"]["first_unsigned_action_supported"] is True
    assert second.payload["continuation_v3"]["quote_payload_sha256"] == reference(second.payload)
    # a caller changing an issued payload afterwards does not change what the next quote hashes
    first.payload["execution"]["blocker"] = "changed"
    first.payload["route"]["status"] = "changed"
    third = await svc.quote(parse_quote_request(body))
    assert third.payload["continuation_v3"]["quote_payload_sha256"] == reference(third.payload)


def test_the_hash_of_a_copied_payload_is_the_same() -> None:
    # the template is keyed by content, not identity: a deep copy of a quote hashes to the same value
    import asyncio

    svc = service()
    body = {
        "from_chain": "solana",
        "from_token": "SOL",
        "to_chain": "solana",
        "to_token": "USDC",
        "amount_usd": 1,
    }
    issued = asyncio.run(svc.quote(parse_quote_request(body)))
    clone = copy.deepcopy(issued.payload)
    assert (
        quote_mod._payload_sha256(issued.body, clone)
        == issued.payload["continuation_v3"]["quote_payload_sha256"]
    )


async def test_the_quote_json_with_shared_parts_is_byte_equal_to_a_plain_dump() -> None:
    import orjson

    from routequote.core.quote import payload_json
    from routequote.core.routes import ROUTES

    svc = service()
    for key in ROUTES:
        (fc, ft), (tc, tt) = (side.split(":") for side in key.split("->"))
        for usd in (1, 1000):
            body = {"from_chain": fc, "from_token": ft, "to_chain": tc, "to_token": tt, "amount_usd": usd}
            for _ in range(2):  # the second quote of a body reuses its serialised parts
                issued = await svc.quote(parse_quote_request(body))
                assert payload_json(issued.body, issued.payload) == orjson.dumps(issued.payload)
