"""Compact JSON text for stored documents and events: orjson where it round-trips exactly, the standard
library otherwise (integers beyond 64 bits, which orjson refuses). No NaN, no infinities."""

from __future__ import annotations

import json
from typing import Any

import orjson


def json_dumps(value: Any) -> str:
    try:
        raw = orjson.dumps(value)
        if orjson.loads(raw) == value:
            return raw.decode()
    except (TypeError, ValueError):  # orjson refuses ints beyond 64 bits, non-str keys, invalid UTF-8
        pass
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def json_loads(text: str | bytes) -> Any:
    return json.loads(text)
