"""What hostile input the service refuses, in one place (pure: no I/O; every surface calls these).

- `loads_strict(raw)`: the only JSON reader for request bodies (REST, MCP, A2A). UTF-8 only; every string
  (key or value) made of Unicode scalar values (no lone surrogate); no key twice in an object, at any
  depth; no NaN/Infinity; every number literal judged by its exact decimal value: a non-integer literal
  must equal the shortest form of the double the service computes with (`0.99999999999999999999` is not
  1.0: refused), and no literal longer than MAX_NUMBER_CHARS; at most MAX_JSON_DEPTH levels of nesting.
  Each broken rule is an `InvalidRequest` with its own reason_class; no message carries input.
- `safe_name(name)`: how an error names a caller-chosen key: the name itself when it is a short plain
  identifier that does not look like secret material, otherwise a fixed placeholder. Nothing else of a
  caller's key ever reaches an answer.
- `looks_secret_name` / `looks_secret_value`: secret-shaped material (hex private keys with or without
  0x/0X in any case, 128-hex Ed25519 secret keys, long base58 keypairs, BIP-39-like mnemonics, names that
  carry a secret word or such material).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from decimal import Decimal, InvalidOperation
from typing import Any

from routequote.errors import InvalidRequest

MAX_BODY_BYTES = 1_048_576  # every JSON POST, on every surface
MAX_JSON_DEPTH = 32
MAX_NUMBER_CHARS = 400
REDACTED = "<redacted-name>"

SECRET_WORDS = (
    "private",
    "secret",
    "seed",
    "mnemonic",
    "passphrase",
    "password",
    "keypair",
    "signature",
    "signed_transaction",
    "signedtransaction",
    "signed_tx",
    "signedtx",
    "raw_tx",
    "rawtx",
)
_HEX_KEY = re.compile(r"(?:0[xX])?(?:[0-9a-fA-F]{64}|[0-9a-fA-F]{128})")
_HEX64 = re.compile(r"[0-9a-fA-F]{64}")
_BASE58_LONG = re.compile(r"[1-9A-HJ-NP-Za-km-z]{80,90}")
_MNEMONIC = re.compile(r"[a-z]+(?: [a-z]+){11,23}")
_SAFE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,39}")
_HEXISH_RUN = re.compile(r"[0-9a-fA-F]{12}")
_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


# ---- secret-shaped material -------------------------------------------------------------------------


def looks_secret_value(value: str, *, hash_field: bool = False) -> bool:
    """A string that looks like a private key, secret key, keypair or mnemonic. In a hash field, 64 hex
    characters without a 0x prefix are a hash by contract and pass."""
    s = value.strip()
    if _HEX_KEY.fullmatch(s) and not (hash_field and _HEX64.fullmatch(s)):
        return True
    return bool(_BASE58_LONG.fullmatch(s) or _MNEMONIC.fullmatch(s))


def looks_secret_name(name: str) -> bool:
    """A key name that carries a secret word or secret-shaped material (names are never echoed then)."""
    lowered = name.lower().replace("-", "_")
    if any(w in lowered for w in SECRET_WORDS):
        return True
    return looks_secret_value(name) or bool(_HEX64.search(name))


def safe_name(name: object) -> str:
    """The caller's key as an error may show it: a short plain identifier with no long hex-like run and few
    digits is shown; anything else (long, odd characters, secret-shaped) is a fixed placeholder."""
    if (
        isinstance(name, str)
        and _SAFE_NAME.fullmatch(name)
        and not _HEXISH_RUN.search(name)
        and sum(c.isdigit() for c in name) <= 6
    ):  # a secret *word* in a plain name (`private_key`) is shown: it names the rule, it is not material
        return name
    return REDACTED


def name_list(names: Iterable[object], limit: int = 200) -> str:
    """`a, b, <redacted-name>` for an error message, bounded."""
    return ", ".join(dict.fromkeys(safe_name(n) for n in names))[:limit]


# ---- strict JSON --------------------------------------------------------------------------------------


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise InvalidRequest("duplicate_key", "an object names the same key twice; every key must be unique")
    return obj


def _float(text: str) -> float:
    if len(text) > MAX_NUMBER_CHARS:
        raise InvalidRequest(
            "number_too_long", f"a number literal is longer than {MAX_NUMBER_CHARS} characters"
        )
    value = float(text)
    try:
        exact = math.isfinite(value) and Decimal(repr(value)) == Decimal(text)
    except InvalidOperation:  # pragma: no cover - the scanner only hands over valid literals
        exact = False
    if not exact:
        raise InvalidRequest(
            "inexact_number",
            "a number must be exactly the value a 64-bit double holds in its shortest form (at most 15 "
            "significant digits is always safe); this literal would be silently rounded, so it is refused",
        )
    return value


def _int(text: str) -> int:
    if len(text) > MAX_NUMBER_CHARS:
        raise InvalidRequest(
            "number_too_long", f"a number literal is longer than {MAX_NUMBER_CHARS} characters"
        )
    return int(text)


def _constant(name: str) -> Any:
    raise InvalidRequest("non_finite_number", f"{name} is not a JSON number")


_DECODER = json.JSONDecoder(
    object_pairs_hook=_object, parse_float=_float, parse_int=_int, parse_constant=_constant
)


def check_tree(value: Any, *, strings: bool = True) -> None:
    """Nesting depth and (when `strings`) Unicode scalar values of every key and string in a JSON tree."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            items: Iterable[Any] = node.values()
            if strings and any(isinstance(k, str) and _SURROGATE.search(k) for k in node):
                raise _not_unicode()
        elif isinstance(node, list):
            items = node
        else:
            continue
        if depth > MAX_JSON_DEPTH:
            raise InvalidRequest("nesting_too_deep", f"JSON nesting is limited to {MAX_JSON_DEPTH} levels")
        for child in items:
            if isinstance(child, dict | list):
                stack.append((child, depth + 1))
            elif strings and isinstance(child, str) and _SURROGATE.search(child):
                raise _not_unicode()


def _not_unicode() -> InvalidRequest:
    return InvalidRequest(
        "invalid_unicode", "every string must be valid Unicode (a lone surrogate escape is not)"
    )


def loads_strict(raw: bytes | str) -> Any:
    """The parsed body, or InvalidRequest naming the rule it breaks (see the module docstring)."""
    if isinstance(raw, bytes):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidRequest("malformed_json", "request body is not UTF-8 JSON") from None
    else:
        text = raw
        if _SURROGATE.search(text):
            raise _not_unicode()
    if not text.strip():
        raise InvalidRequest("malformed_json", "request body is empty")
    try:
        value = _DECODER.decode(text)
    except RecursionError:
        raise InvalidRequest(
            "nesting_too_deep", f"JSON nesting is limited to {MAX_JSON_DEPTH} levels"
        ) from None
    except ValueError:  # JSONDecodeError and int() limits: never the parser's text (it quotes input)
        raise InvalidRequest("malformed_json", "request body is not valid JSON") from None
    check_tree(value, strings=_SURROGATE_ESCAPE.search(text) is not None)
    return value
