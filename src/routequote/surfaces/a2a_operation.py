"""One A2A operation (the fields it accepts and its handler) and the value rules every operation shares:
whole-number doubles narrowed back to int, integers beyond 2**53 - 1 sent as decimal strings, secret-looking
keys refused by name, and the camelCase quote fields."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog

from routequote.input_rules import looks_secret_name, safe_name

MEDIA = "application/json"
MAX_SAFE_INTEGER = 2**53 - 1

QUOTE_FIELDS = {
    "fromChain": "from_chain",
    "fromToken": "from_token",
    "toChain": "to_chain",
    "toToken": "to_token",
    "amountUsd": "amount_usd",
}
# Keys that look like secrets are refused anywhere in a request: this agent only ever needs public data.
SECRET_KEY = re.compile(
    r"(private|secret|seed|mnemonic|passphrase|password|keypair|signed_?transaction|signature|raw_?tx|"
    r"api_?key|access_?token|auth_?token|bearer)",
    re.IGNORECASE,
)

log = structlog.get_logger("routequote.a2a")

Handler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


@dataclass(frozen=True, slots=True)
class Operation:
    """One operation of the agent: the fields it accepts (besides `operation`) and its handler."""

    name: str
    fields: frozenset[str]
    run: Handler
    secret_exempt: frozenset[str] = field(default_factory=frozenset)  # capability fields, e.g. sessionToken


# ---- value narrowing ------------------------------------------------------------------------------------


def narrow_numbers(value: Any) -> Any:
    """Whole-number doubles back to int (what the caller meant when it wrote 1000)."""
    if isinstance(value, float) and value.is_integer() and abs(value) <= MAX_SAFE_INTEGER:
        return int(value)
    if isinstance(value, dict):
        return {k: narrow_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [narrow_numbers(v) for v in value]
    return value


def a2a_safe(value: Any) -> Any:
    """Integers a double cannot hold exactly become decimal strings before they enter a DataPart."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and abs(value) > MAX_SAFE_INTEGER:
        return str(value)
    if isinstance(value, dict):
        return {k: a2a_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [a2a_safe(v) for v in value]
    return value


def secret_keys(value: Any, exempt: frozenset[str], path: str = "", shown: str = "") -> list[str]:
    """Paths of keys that look like secrets: a secret word or secret-shaped material in the name (names
    only; values are never looked at or reported). Reported with `safe_name` segments: never the name."""
    found: list[str] = []
    if isinstance(value, dict):
        for k, v in value.items():
            name = str(k)
            here = f"{path}.{name}" if path else name
            seen = f"{shown}.{safe_name(name)}" if shown else safe_name(name)
            if here not in exempt and (SECRET_KEY.search(name) or looks_secret_name(name)):
                found.append(seen)
            found += secret_keys(v, exempt, here, seen)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found += secret_keys(v, exempt, f"{path}[{i}]", f"{shown}[{i}]")
    return found


def quote_body(data: Mapping[str, Any]) -> dict[str, Any]:
    """camelCase quote fields -> the REST QuoteRequest body (absent fields stay absent)."""
    return {snake: data[camel] for camel, snake in QUOTE_FIELDS.items() if camel in data}
