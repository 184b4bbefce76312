"""How the test suite carried each route and step kind to `complete` (package data written by `make routes-doc`
from the whole-route suite's results; `docs/routes.md` is the full table). Served in `/v2/capabilities`."""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any

RESOURCE = "route_proof.json"


@lru_cache(maxsize=1)
def route_proof() -> dict[str, Any] | None:
    """The summary, or None when this build ships none (never a guess)."""
    try:
        text = resources.files("routequote.data").joinpath(RESOURCE).read_text("utf-8")
    except FileNotFoundError:
        return None
    doc: dict[str, Any] = json.loads(text)
    return doc
