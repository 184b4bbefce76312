"""The compiled issue of a quote body gives exactly the bytes of the reference assembly: its JSON, its payload
hash (the full typed-canonical encoding) and its fingerprint."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from hashlib import sha256
from typing import Any

import orjson
import pytest
from tests.support import independent_hash as ih

from routequote.clock import FixedClock, SequentialIds
from routequote.core.hashing import (
    CanonicalTemplate,
    Hole,
    canonical_json_numberless,
    sha256_hex,
    typed_canonical,
)
from routequote.core.intent import QuoteIntent, parse_quote_request
from routequote.core.quote import QuoteBody, issue, substituted_payload
from routequote.core.quote_issue import IssueTemplate, PayloadFormat, fill_json, issue_json
from routequote.core.routes import ROUTES
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


def service() -> RouteQuoteService:
    clock = FixedClock(datetime(2026, 11, 20, 12, 0, tzinfo=UTC))
    return RouteQuoteService(
        EmbeddedSnapshot(),
        MemoryQuoteStore(),
        clock,
        SequentialIds(),
        ServiceConfig(prepare_ready_routes=frozenset()),
    )


def request(key: str, usd: float) -> dict:  # type: ignore[type-arg]
    (fc, ft), (tc, tt) = (side.split(":") for side in key.split("->"))
    return {"from_chain": fc, "from_token": ft, "to_chain": tc, "to_token": tt, "amount_usd": usd}


def reference_json(body: QuoteBody, intent: QuoteIntent, **per_quote: Any) -> bytes:
    return orjson.dumps(issue(body, intent=intent, **per_quote))


# per-quote values: ids of either factory, times across second, day and year boundaries, latencies
PER_QUOTE = [
    ("00000000-0000-4000-8000-000000000001", datetime(2026, 11, 20, 12, 0, tzinfo=UTC), 0),
    ("0198f3a2-7c41-4b7e-9e2d-5a6b7c8d9e0f", datetime(2026, 11, 20, 23, 59, 59, 999_999, tzinfo=UTC), 7),
    ("f" * 32, datetime(2026, 12, 31, 23, 59, 30, 500, tzinfo=UTC), 1234),
    ("q", datetime(2027, 1, 1, 0, 0, 0, 1000, tzinfo=UTC), 2**31),
]


@pytest.mark.parametrize("usd", [1, 50, 1000, 12.34])
async def test_every_quote_of_every_route_is_byte_equal_to_the_reference_assembly(usd: float) -> None:
    """The first quote of a body takes the reference path, the second compiles the template, the rest fill
    it: every one equals `orjson.dumps(issue(...))`, for both TTLs and prepare flags."""
    svc = service()
    view = await svc.market.view()
    for key in ROUTES:
        intent = parse_quote_request(request(key, usd))
        body = svc._priced_body(intent, view)
        for ttl, ready in ((60, False), (60, True), (300, False)):
            for quote_id, at, latency in PER_QUOTE * 2:
                per_quote = dict(
                    quote_id=quote_id,
                    issued_at=at,
                    ttl_seconds=ttl,
                    latency_ms=latency,
                    first_unsigned_action_supported=ready,
                )
                got = issue_json(body, intent=intent, **per_quote).json
                assert got == reference_json(body, intent, **per_quote), (key, per_quote)
            template = body.issue_templates[(ttl, ready, None)]
            assert type(template) is IssueTemplate
            again = issue_json(body, intent=intent, **per_quote)
            runs, names = template.json_runs()  # what a shared store keeps once per body
            assert again.template is template and fill_json(runs, names, again.values) == again.json


async def test_quotes_within_one_second_and_across_seconds_have_the_reference_times() -> None:
    svc = service()
    view = await svc.market.view()
    intent = parse_quote_request(request("base:USDC->solana:USDC", 25))
    body = svc._priced_body(intent, view)
    start = datetime(2026, 11, 20, 23, 59, 58, 998_500, tzinfo=UTC)
    # forward within a millisecond, a second and a day, then back (a wall clock can step back), then one
    # instant written in another zone (iso_ms writes a time's own fields: the cache must not mix zones)
    steps = (0, 1, 400, 999, 1_000, 1_500, 700_000, 1_000_000, 86_400_000_000, 1_200, -1, -1_000_000, 1_200)
    for n, step_us in enumerate((*steps, 1_200)):
        at = start + timedelta(microseconds=step_us)
        if n == len(steps):
            at = at.astimezone(timezone(timedelta(hours=2)))
        per_quote = dict(quote_id=f"id-{step_us}", issued_at=at, ttl_seconds=90, latency_ms=2)
        got = issue_json(body, intent=intent, first_unsigned_action_supported=False, **per_quote).json
        assert got == reference_json(body, intent, first_unsigned_action_supported=False, **per_quote), at


async def test_every_quote_of_one_body_hashes_as_the_full_encoding() -> None:
    svc = service()
    seen = set()
    for i in range(5):
        svc.clock.advance(0.007 * i)  # type: ignore[attr-defined]
        issued = await svc.quote(parse_quote_request(request("base:ETH->solana:USDC", 100)))
        got = issued.payload["continuation_v3"]["quote_payload_sha256"]
        assert got == reference(issued.payload) == ih.payload_sha256(issued.payload)
        claim = issued.payload["continuation_v3"]["quote_fingerprint_claim"]
        assert issued.payload["continuation_v3"]["quote_fingerprint"] == sha256_hex(
            canonical_json_numberless(claim)
        )
        seen.add(got)
    assert len(seen) == 5  # quote ids and times differ: so do the hashes


async def test_a_template_that_does_not_reproduce_the_first_quote_is_never_used() -> None:
    svc = service()
    view = await svc.market.view()
    intent = parse_quote_request(request("base:ETH->base:USDC", 50))
    body = svc._priced_body(intent, view)
    first = dict(quote_id="a", issued_at=PER_QUOTE[0][1], ttl_seconds=60, latency_ms=1)
    issue_json(body, intent=intent, first_unsigned_action_supported=False, **first)
    body.offer["changed_after_the_first_quote"] = True  # what the template is compiled from now differs
    second = dict(first, quote_id="b")
    got = issue_json(body, intent=intent, first_unsigned_action_supported=False, **second).json
    assert got == reference_json(body, intent, first_unsigned_action_supported=False, **second)
    assert type(body.issue_templates[(60, False, None)]) is not IssueTemplate
    third = dict(first, quote_id="c")
    got = issue_json(body, intent=intent, first_unsigned_action_supported=False, **third).json
    assert got == reference_json(body, intent, first_unsigned_action_supported=False, **third)


def test_a_placeholder_inside_a_longer_string_refuses_the_template() -> None:
    data = orjson.dumps({"a": "\x00quote_id\x00", "b": "see \x00quote_id\x00 here"})
    with pytest.raises(ValueError):
        PayloadFormat.cut(data, {"quote_id": 2})


def test_a_format_fills_its_places_and_keeps_everything_else() -> None:
    data = orjson.dumps(
        {"a": "\x00quote_id\x00", "b": "100% %s %d %%", "c": ["\x00latency\x00", "\x00quote_id\x00"]}
    )
    fmt = PayloadFormat.cut(data, {"quote_id": 2, "latency": 1})
    filled = fmt.fill((b'"q-1"', b"", b"", b"7", b"", b""))
    assert orjson.loads(filled) == {"a": "q-1", "b": "100% %s %d %%", "c": [7, "q-1"]}
    assert fmt.sha256((b'"q-1"', b"", b"", b"7", b"", b"")) == sha256(filled).hexdigest().encode()
    one = PayloadFormat.cut(
        orjson.dumps({"a": "%s%%", "b": "\x00latency\x00"}), {"latency": 1}
    )  # a single place
    assert one.fill((b"", b"", b"", b"12", b"", b"")) == b'{"a":"%s%%","b":12}'
    assert one.sha256((b"", b"", b"", b"12", b"", b"")) == sha256(b'{"a":"%s%%","b":12}').hexdigest().encode()


def test_a_format_led_by_the_times_hashes_as_its_fill_whether_the_times_repeat_or_not() -> None:
    # the times lead, as in the payload: the hash state after them is kept for the next call with the same ones
    data = orjson.dumps(
        {
            "a": "\x00issued\x00",
            "b": "\x00expires\x00",
            "c": "x%s" * 300,
            "d": "\x00quote_id\x00",
            "e": "\x00latency\x00",
        }
    )
    fmt = PayloadFormat.cut(data, {"issued": 1, "expires": 1, "quote_id": 1, "latency": 1})
    calls = [  # same times (kept), new times, the old times again, one time changed, the other changed
        ("t1", "e1", "q1"),
        ("t1", "e1", "q2"),
        ("t1", "e1", "q2"),
        ("t2", "e2", "q3"),
        ("t1", "e1", "q4"),
        ("t1", "e2", "q5"),
        ("t2", "e2", "q5"),
    ]
    for issued, expires, quote_id in calls:
        values = (
            b'"%s"' % quote_id.encode(),
            b'"%s"' % issued.encode(),
            b'"%s"' % expires.encode(),
            b"3",
            b"",
            b"",
        )
        assert fmt.sha256(values) == sha256(fmt.fill(values)).hexdigest().encode(), (
            issued,
            expires,
            quote_id,
        )
    # led by the quote id: nothing is kept, the hash starts after the first run
    unled = PayloadFormat.cut(
        orjson.dumps({"a": "\x00quote_id\x00", "b": "\x00issued\x00", "c": "\x00expires\x00"}),
        {"issued": 1, "expires": 1, "quote_id": 1},
    )
    for quote_id in (b'"q1"', b'"q2"'):
        values = (quote_id, b'"t"', b'"e"', b"3", b"", b"")
        assert unled.sha256(values) == sha256(unled.fill(values)).hexdigest().encode()


async def test_a_caller_changing_an_issued_payload_changes_no_other_quote() -> None:
    svc = service()
    first = await svc.quote(parse_quote_request(request("base:ETH->base:USDC", 50)))
    second = await svc.quote(parse_quote_request(request("base:ETH->base:USDC", 50)))
    first.payload["execution"]["blocker"] = "changed"
    first.payload["route"]["status"] = "changed"
    second.payload["intent"]["amount_usd"] = 0
    third = await svc.quote(parse_quote_request(request("base:ETH->base:USDC", 50)))
    assert third.payload["continuation_v3"]["quote_payload_sha256"] == reference(third.payload)
    assert orjson.loads(third.json) == third.payload and third.payload["intent"]["amount_usd"] == 50
    assert orjson.loads(second.json)["intent"]["amount_usd"] == 50  # the answered bytes never change


async def test_the_prepare_flag_flipping_gives_each_quote_its_own_flag() -> None:
    svc = service()
    first = await svc.quote(parse_quote_request(request("base:ETH->base:USDC", 50)))
    svc.config.prepare_ready_routes = frozenset({first.route.key})
    second = await svc.quote(parse_quote_request(request("base:ETH->base:USDC", 50)))
    assert second.body is first.body
    assert first.payload["execution"]["first_unsigned_action_supported"] is False
    assert second.payload["execution"]["first_unsigned_action_supported"] is True
    assert second.payload["continuation_v3"]["quote_payload_sha256"] == reference(second.payload)
