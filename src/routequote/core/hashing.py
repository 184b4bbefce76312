"""Canonical encodings and the hashes that bind quotes, approvals and actions.

`canonical_json` is sorted-key compact UTF-8 JSON, byte-equal to JS `JSON.stringify` over sorted keys
for the values we emit (integral numbers as integers, no NaN). `typed_canonical` is the
typed-canonical-v1 byte encoding used for the full quote payload hash: unlike JSON it tells 1 from
1.0 from "1" and needs no number formatting agreement between languages.
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
from typing import Any

import orjson

TYPED_CANONICAL_SPEC = (
    "routequote-typed-canonical-v1: n=null t=true f=false; number=d+16 hex of IEEE-754 binary64 big-endian "
    "(integral numbers beyond +-9007199254740991 rejected); string=s<utf8 byte length>:<utf8>; "
    "array=a<count>:[items]; object=o<count>:{key value pairs sorted by utf8 key bytes}; sha256 hex of the bytes"
)
CANONICAL_JSON_SPEC = "UTF-8 JSON with lexicographically sorted keys and compact separators"
MAX_SAFE_INTEGER = 9_007_199_254_740_991


def canonical_json(value: Any) -> bytes:
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode()


def canonical_json_numberless(value: Any) -> bytes:
    """canonical_json for values holding only strings, booleans, null, lists and objects (no numbers):
    orjson's sorted output is byte-equal there and several times faster (number formatting is where
    orjson and JS differ, hence the restriction, which is checked by a test)."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def canonical_sha256(value: Any) -> str:
    return sha256_hex(canonical_json(value))


class Encoded:
    """A subtree already in typed-canonical bytes (lets callers reuse the encoding of unchanged parts)."""

    __slots__ = ("raw",)

    def __init__(self, raw: bytes) -> None:
        self.raw = raw


class Hole:
    """A named gap in a value encoded as a `CanonicalTemplate`: filled with a value's encoding on each use."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"Hole({self.name!r})"


def _encode(value: Any, out: list[Any]) -> None:
    # dispatch on the exact type, most frequent first: this runs for every issued quote
    t = type(value)
    if t is str:
        raw = value.encode("utf-8")  # raises on lone surrogates
        out.append(b"s%d:" % len(raw) + raw)
    elif t is Encoded:
        out.append(value.raw)
    elif t is dict:
        items = sorted((k.encode("utf-8"), v) for k, v in value.items())
        out.append(b"o%d:{" % len(items))
        for key, item in items:
            out.append(b"s%d:" % len(key) + key)
            _encode(item, out)
        out.append(b"}")
    elif t is bool:
        out.append(b"t" if value else b"f")
    elif t is int:
        if abs(value) > MAX_SAFE_INTEGER:
            raise ValueError("integer outside the exactly representable range; substitute a decimal string")
        out.append(b"d" + struct.pack(">d", float(value)).hex().encode())
    elif value is None:
        out.append(b"n")
    elif t is float:
        if not math.isfinite(value):
            raise ValueError("non-finite number")
        out.append(b"d" + struct.pack(">d", value).hex().encode())
    elif t is list or t is tuple:
        out.append(b"a%d:[" % len(value))
        for item in value:
            _encode(item, out)
        out.append(b"]")
    elif t is Hole:
        out.append(value)  # only CanonicalTemplate.of accepts a hole; typed_canonical's join refuses it
    elif isinstance(value, bool | int | str | float | dict | list | tuple):  # subclasses, e.g. StrEnum
        base: Any = next(b for b in (bool, int, str, float, dict, list, tuple) if isinstance(value, b))
        _encode(base(value), out)
    else:
        raise TypeError(f"cannot encode {t.__name__}")


def typed_canonical(value: Any) -> bytes:
    out: list[bytes] = []
    _encode(value, out)
    return b"".join(out)


def typed_canonical_sha256(value: Any) -> str:
    return sha256_hex(typed_canonical(value))


class CanonicalTemplate:
    """The typed-canonical bytes of a value holding `Hole`s: its constant runs, encoded once, and the holes
    between them. `fill(values)` is byte-equal to `typed_canonical` of the value with every hole replaced by
    `values[hole.name]` (a hole's position depends only on its key, never on the value filled in)."""

    __slots__ = ("_holes", "_runs")

    def __init__(self, runs: list[bytes], holes: list[str]) -> None:
        self._runs = runs  # len(holes) + 1 constant runs: run, hole, run, hole, ..., run
        self._holes = holes

    @property
    def runs(self) -> tuple[bytes, ...]:
        return tuple(self._runs)

    @property
    def holes(self) -> tuple[str, ...]:
        return tuple(self._holes)

    @classmethod
    def of(cls, value: Any) -> CanonicalTemplate:
        out: list[Any] = []
        _encode(value, out)
        runs: list[bytes] = []
        holes: list[str] = []
        current: list[bytes] = []
        for piece in out:
            if type(piece) is Hole:
                runs.append(b"".join(current))
                holes.append(piece.name)
                current = []
            else:
                current.append(piece)
        runs.append(b"".join(current))
        return cls(runs, holes)

    def fill(self, values: dict[str, Any]) -> bytes:
        runs = self._runs
        out = [runs[0]]
        for i, name in enumerate(self._holes, 1):
            _encode(values[name], out)
            out.append(runs[i])
        return b"".join(out)
