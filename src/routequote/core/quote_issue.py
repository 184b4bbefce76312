"""Issuing quotes fast: what every quote of one QuoteBody shares is encoded once.

Two quotes of one body (one route, amount and market version, with one TTL and prepare flag) differ only in
their id, their two times, their latency and the two hashes over those. The first quote of a body is
assembled by the reference `quote.issue` and serialised whole. The second compiles an `IssueTemplate`: the
reference assembly is run once more with a named placeholder at each per-quote place, and three encodings
are kept as constant runs around the placeholders. These are the response JSON, the typed-canonical bytes
that quote_payload_sha256 hashes, and the canonical JSON of the fingerprint claim.

The template is used, from the second quote on, only if filled with the first quote's values it gives that
quote's exact bytes. If it does not, the body keeps the reference path, so a template can cost speed but
never correctness. Filling the runs costs two ISO times, two SHA-256 hashes and a bytes %-format per
encoding; the payload's hash, whose places start with the two times, starts after them for every quote but
the first of a millisecond.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from hashlib import sha256
from operator import itemgetter
from typing import Any, NamedTuple

import orjson

from routequote.core.hashing import CanonicalTemplate, Hole, canonical_json_numberless, typed_canonical
from routequote.core.intent import QuoteIntent, amount_decimal
from routequote.core.quote import (
    FINGERPRINT_SPEC,
    QuoteBody,
    continuation_fields,
    iso_ms,
    issue,
    quote_fields,
    substituted_payload,
)

# the per-quote places, by placeholder name; a fill is handed their values in this order
PER_QUOTE = _NAMES = ("quote_id", "issued", "expires", "latency", "payload_sha", "fingerprint")
_ID, _ISSUED, _EXPIRES, _LATENCY, _PAYLOAD_SHA, _FINGERPRINT = _NAMES
_MARKS = {name: f"\x00{name}\x00" for name in _NAMES}  # orjson writes NUL as \u0000: never in a real value
_TOKEN = re.compile(rb'"\\u0000(' + b"|".join(n.encode() for n in _NAMES) + rb')\\u0000"')
_MILLISECONDS = [b"%03dZ" % ms for ms in range(1000)]  # an ISO time's end
_TYPED_MS = [typed_canonical(ms) for ms in range(1000)]  # a quote's latency, typed-canonical


class PayloadFormat:
    """Constant runs with a named value between each two."""

    __slots__ = (
        "_after",
        "_first",
        "_head",
        "_kept",
        "_pattern",
        "_pick",
        "_pick_rest",
        "_rest",
        "last",
        "names",
        "runs",
    )

    def __init__(self, runs: Sequence[bytes], names: Sequence[str]) -> None:
        self.names = tuple(names)
        self.runs, self.last = tuple(runs[:-1]), runs[-1]
        # the runs as one bytes %-pattern: a fill is one C call (the runs' own % doubled), not a Python join
        escaped = [run.replace(b"%", b"%%") for run in runs]
        self._pattern = b"%s".join(escaped)
        self._first = sha256(runs[0])  # the hash state after the first run, copied by `sha256`
        order = [_NAMES.index(n) for n in names]
        self._pick = _picker(order)
        # the leading places that hold the two times (they change once a millisecond): the hash state after them
        # and the run that follows is kept, and quotes of the same millisecond start from it. In the payload the
        # times come first and are followed by most of its bytes.
        lead = 0
        while lead < len(order) and names[lead] in (_ISSUED, _EXPIRES):
            lead += 1
        self._head = _picker(order[:lead]) if lead else None
        self._after = b"%s".join([b"", *escaped[1 : lead + 1]])  # what the leading values are followed by
        self._rest = b"%s".join([b"", *escaped[lead + 1 :]])  # what follows them
        self._pick_rest = _picker(order[lead:])
        # the leading values of the last call, and the hash state after them
        self._kept: tuple[tuple[bytes, ...], Any] | None = None

    @classmethod
    def cut(cls, data: bytes, expected: dict[str, int]) -> PayloadFormat:
        """`data` cut at each placeholder's JSON token (as orjson writes it)."""
        runs: list[bytes] = []
        names: list[str] = []
        at = 0
        for m in _TOKEN.finditer(data):
            runs.append(data[at : m.start()])
            names.append(m.group(1).decode())
            at = m.end()
        runs.append(data[at:])
        found = {n: names.count(n) for n in expected}
        # a placeholder caught inside a longer string would leave a NUL behind: refuse the template then
        if found != expected or any(b"\\u0000" in run for run in runs):
            raise ValueError(f"placeholders found {found}, expected {expected}")
        return cls(runs, names)

    def fill(self, values: tuple[bytes, ...]) -> bytes:
        return self._pattern % self._pick(values)

    def sha256(self, values: tuple[bytes, ...]) -> bytes:
        """The hex SHA-256 of `fill(values)`, from the state after the first run, or after the leading times
        when the last call had the same ones."""
        if self._head is None:
            digest = self._first.copy()
        else:
            head, kept = self._head(values), self._kept
            if kept is not None and kept[0] == head:
                digest = kept[1].copy()
            else:
                digest = self._first.copy()
                digest.update(self._after % head)
                self._kept = (head, digest.copy())
        digest.update(self._rest % self._pick_rest(values))
        return digest.hexdigest().encode()


def _picker(order: Sequence[int]) -> Callable[[tuple[bytes, ...]], tuple[bytes, ...]]:
    """The values at `order`, as a tuple (itemgetter of one index gives no tuple)."""
    if len(order) == 1:
        only = order[0]
        return lambda values: (values[only],)
    return itemgetter(*order) if order else lambda values: ()


def _holes(value: Any) -> Any:
    """`value` with each placeholder string replaced by a typed-canonical `Hole` of the same name."""
    if type(value) is dict:
        return {k: _holes(v) for k, v in value.items()}
    if type(value) is list:
        return [_holes(v) for v in value]
    if type(value) is str and value.startswith("\x00") and value.endswith("\x00"):
        return Hole(value.strip("\x00"))
    return value


class IssueTemplate:
    """The compiled issue of one body: `fill` is byte-equal to `orjson.dumps(issue(...))` for any id, time and
    latency."""

    __slots__ = (
        "__weakref__",  # a shared store keeps what it derived from a template (its stored runs) beside it
        "_claim",
        "_heads",
        "_json",
        "_millisecond",
        "_payload",
        "_second",
        "_times",
        "_ttl",
    )

    def __init__(
        self,
        body: QuoteBody,
        *,
        ttl_seconds: int,
        first_unsigned_action_supported: bool,
        prepare_blocker: str | None = None,
    ) -> None:
        if type(ttl_seconds) is not int:
            raise TypeError("the template's times need a TTL of whole seconds")
        m = _MARKS
        quote = quote_fields(
            body,
            quote_id=m[_ID],
            issued=m[_ISSUED],
            expires=m[_EXPIRES],
            ttl_seconds=ttl_seconds,
            latency_ms=m[_LATENCY],
            first_unsigned_action_supported=first_unsigned_action_supported,
            prepare_blocker=prepare_blocker,
        )
        hashed = CanonicalTemplate.of(_holes(substituted_payload(quote)))
        if sorted(hashed.holes) != sorted((_ID, _ISSUED, _EXPIRES, _LATENCY)):
            raise ValueError(f"the payload hash's placeholders are {hashed.holes}")
        self._payload = PayloadFormat(hashed.runs, hashed.holes)
        continuation = continuation_fields(
            body,
            quote,
            amount_usd_decimal=amount_decimal(body.intent["amount_usd"]),
            payload_sha256=m[_PAYLOAD_SHA],
        )
        once = {_ID: 1, _ISSUED: 1, _EXPIRES: 1, _PAYLOAD_SHA: 1}
        self._claim = PayloadFormat.cut(
            canonical_json_numberless(continuation["quote_fingerprint_claim"]), once
        )
        continuation["quote_fingerprint"] = m[_FINGERPRINT]
        continuation["quote_fingerprint_spec"] = FINGERPRINT_SPEC
        quote["continuation_v3"] = continuation
        # the id and both times appear in the quote, the continuation and its claim
        every = {_ID: 3, _ISSUED: 3, _EXPIRES: 3, _LATENCY: 1, _PAYLOAD_SHA: 2, _FINGERPRINT: 1}
        self._json = PayloadFormat.cut(orjson.dumps(quote), every)
        self._ttl = timedelta(seconds=ttl_seconds)
        # the latest quote's whole second and millisecond, and its times' encodings (shared by every quote
        # issued in the same millisecond: several, under load)
        self._second: datetime | None = None
        self._heads = (b"", b"")
        self._millisecond = -1
        self._times: tuple[bytes, bytes, bytes, bytes] = (b"", b"", b"", b"")

    def _encoded_times(self, issued_at: datetime) -> tuple[bytes, bytes, bytes, bytes]:
        """The issue and expiry times' iso_ms, typed-canonical then as JSON. The TTL is whole seconds, so both
        times end in the same milliseconds, and what comes before them changes once a second."""
        last, same_second = self._second, False
        if last is not None:
            try:  # a subtraction, not replace(microsecond=0) and a comparison: those cost ten times as much
                into = issued_at - last
                # a negative gap has days == -1; iso_ms writes a time's own fields, so the zone must match too
                same_second = not (into.days or into.seconds) and issued_at.tzinfo is last.tzinfo
            except TypeError:  # one time naive, the other aware
                pass
        if not same_second:
            second = issued_at.replace(microsecond=0)
            self._second, self._millisecond = second, -1
            self._heads = (iso_ms(second)[:-4].encode(), iso_ms(second + self._ttl)[:-4].encode())
        millisecond = issued_at.microsecond // 1000
        if millisecond != self._millisecond:
            tail = _MILLISECONDS[millisecond]
            issued, expires = (
                self._heads[0] + tail,
                self._heads[1] + tail,
            )  # ASCII: JSON is the text in quotes
            self._millisecond = millisecond
            self._times = (
                b"s%d:%s" % (len(issued), issued),
                b"s%d:%s" % (len(expires), expires),
                b'"%s"' % issued,
                b'"%s"' % expires,
            )
        return self._times

    def fill(self, quote_id: str, issued_at: datetime, latency_ms: int) -> tuple[bytes, tuple[bytes, ...]]:
        """The quote's JSON, and the JSON of its per-quote values (in `PER_QUOTE` order)."""
        typed_issued, typed_expires, json_issued, json_expires = self._encoded_times(issued_at)
        raw_id = quote_id.encode()
        typed_latency = _TYPED_MS[latency_ms] if 0 <= latency_ms < 1000 else typed_canonical(latency_ms)
        payload_sha = self._payload.sha256(
            (b"s%d:%s" % (len(raw_id), raw_id), typed_issued, typed_expires, typed_latency)
        )
        json_id, json_sha = orjson.dumps(quote_id), b'"%s"' % payload_sha
        fingerprint = self._claim.sha256((json_id, json_issued, json_expires, b"", json_sha))
        values = (json_id, json_issued, json_expires, b"%d" % latency_ms, json_sha, b'"%s"' % fingerprint)
        return self._json.fill(values), values

    def json_runs(self) -> tuple[list[bytes], tuple[str, ...]]:
        """The response JSON's constant runs and the per-quote value between each two (see `fill_json`)."""
        return [*self._json.runs, self._json.last], self._json.names


def fill_json(runs: Sequence[bytes], names: Sequence[str], values: Sequence[bytes]) -> bytes:
    """A quote's JSON from a template's `json_runs` and its per-quote values (JSON, in `PER_QUOTE` order)."""
    if len(runs) != len(names) + 1 or len(values) != len(PER_QUOTE):
        raise ValueError("runs, names and values do not fit together")
    # a plain interleave: a lookup fills once, so the hash states a `PayloadFormat` prepares would be wasted
    parts = [runs[0]]
    for name, run in zip(names, runs[1:], strict=True):
        parts += (values[_NAMES.index(name)], run)
    return b"".join(parts)


class IssuedJson(NamedTuple):
    json: bytes  # the QuoteResponse
    template: IssueTemplate | None  # the compiled issue it was filled from (None: the reference assembly)
    values: tuple[bytes, ...]  # with a template: the JSON of the per-quote values, in `PER_QUOTE` order


_NO_TEMPLATE = object()  # this body's template did not reproduce its first quote: the reference path only


def issue_json(
    body: QuoteBody,
    *,
    intent: QuoteIntent,
    quote_id: str,
    issued_at: datetime,
    ttl_seconds: int,
    latency_ms: int,
    first_unsigned_action_supported: bool,
    prepare_blocker: str | None = None,
) -> IssuedJson:
    """The QuoteResponse JSON of one issued quote, as `orjson.dumps(issue(...))` gives it.

    `intent` must be the one `body` was priced for (its amount is in `body.intent`)."""
    key = (ttl_seconds, first_unsigned_action_supported, prepare_blocker)
    slot = body.issue_templates.get(key)
    if type(slot) is tuple:  # the second quote of this body: compile, and check against the first
        try:
            template = IssueTemplate(
                body,
                ttl_seconds=ttl_seconds,
                first_unsigned_action_supported=first_unsigned_action_supported,
                prepare_blocker=prepare_blocker,
            )
            checked = template.fill(*slot[:3])[0] == slot[3]
        except (ValueError, TypeError):
            checked = False
        slot = body.issue_templates[key] = template if checked else _NO_TEMPLATE
    if type(slot) is IssueTemplate and type(latency_ms) is int:
        json, values = slot.fill(quote_id, issued_at, latency_ms)
        return IssuedJson(json, slot, values)
    data = orjson.dumps(
        issue(
            body,
            intent=intent,
            quote_id=quote_id,
            issued_at=issued_at,
            ttl_seconds=ttl_seconds,
            latency_ms=latency_ms,
            first_unsigned_action_supported=first_unsigned_action_supported,
            prepare_blocker=prepare_blocker,
        )
    )
    if slot is None:  # the first quote of this body: kept to check the template against
        body.issue_templates[key] = (quote_id, issued_at, latency_ms, data)
    return IssuedJson(data, None, ())
