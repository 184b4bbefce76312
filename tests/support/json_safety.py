"""Walks any JSON answer and fails on what a JavaScript client cannot read exactly.

`JSON.parse` turns an integer above 2**53 - 1 into the nearest double: 320456329813654644 becomes ...660.
Such an integer may appear only where the spec fixes the type as integer (`intent.estimated_input_base`),
and then an exact decimal-string twin sits beside `intent` (the spec closes `intent` itself):
`estimated_input_base_decimal` in the object that holds `intent`."""

from __future__ import annotations

from typing import Any

MAX_SAFE_INTEGER = 2**53 - 1
# (object key, integer key) the spec fixes -> the decimal-string twin in the object holding that object
SPEC_FIXED_INTEGERS = {("intent", "estimated_input_base"): "estimated_input_base_decimal"}


def unsafe_integers(value: Any, path: str = "$") -> list[str]:
    """Every path holding an integer JavaScript would round, unless spec-fixed with its exact twin."""
    found: list[str] = []
    # (value, path, allowed: the one integer value this position may hold because its twin is present)
    stack: list[tuple[Any, str, int | None]] = [(value, path, None)]
    while stack:
        item, where, allowed = stack.pop()
        if isinstance(item, bool):
            continue
        if isinstance(item, int):
            if abs(item) > MAX_SAFE_INTEGER and item != allowed:
                found.append(f"{where} = {item}")
        elif isinstance(item, dict):
            for k, v in item.items():
                if isinstance(v, dict):
                    for (outer, inner), twin in SPEC_FIXED_INTEGERS.items():
                        if k == outer and isinstance(v.get(inner), int) and item.get(twin) == str(v[inner]):
                            stack.append((v[inner], f"{where}.{k}.{inner}", v[inner]))
                            v = {kk: vv for kk, vv in v.items() if kk != inner}
                stack.append((v, f"{where}.{k}", None))
        elif isinstance(item, list):
            stack.extend((v, f"{where}[{i}]", None) for i, v in enumerate(item))
    return found


def assert_javascript_safe(value: Any) -> None:
    bad = unsafe_integers(value)
    assert not bad, f"integers above 2**53-1 a JavaScript client would round: {bad[:10]}"


def assert_twins_exact(quote: dict[str, Any]) -> None:
    """A quote's spec-fixed integer has its exact decimal-string twin beside `intent`."""
    for (outer, inner), twin in SPEC_FIXED_INTEGERS.items():
        assert quote[twin] == str(quote[outer][inner]), (quote[outer][inner], quote.get(twin))


def json_walk_size(value: Any) -> tuple[int, int]:
    """(nodes, deepest level) as the public MCP adapter's safety walk counts them: every JSON value is one
    node (the root too), the root is level 0, each array item or object member one level deeper."""
    nodes, deepest = 0, 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        nodes += 1
        deepest = max(deepest, depth)
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return nodes, deepest
