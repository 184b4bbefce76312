"""Bytes per quote result, per agent endpoint, before and after the decision view (docs/api.md).

Against `routequote serve` (a subprocess, rate limits off), for every one of the 72 routes at one amount, over
real HTTP with plain JSON-RPC posts (no SDK in the way), it measures what each answer carries:

- `/mcp` `service_v2_quote`: the text block and `structuredContent`. Before: the text was the structured
  result serialized, so before = 2 x structuredContent; after = the text block (the decision view) +
  structuredContent (the full quote, unchanged).
- `/mcp/v2` `service_v2_quote`: text + structuredContent, default (after) and with `detail: "full"` (what
  the default was before: the same `{quote, guidance}`).
- A2A quote skill: the reply's data part, default (after) and `"detail": "full"` (before).

Prints the median, minimum and maximum per endpoint and the ratio before / after, in one run.

Run: .venv/bin/python bench/quote_sizes_bench.py [--amount 137.5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).parent))

from _harness import served  # noqa: E402

from routequote.core.routes import ROUTES  # noqa: E402

MCP_HEADERS = {"Accept": "application/json, text/event-stream"}
CAMEL = {"from_chain": "fromChain", "from_token": "fromToken", "to_chain": "toChain", "to_token": "toToken"}


def _bytes(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def _mcp(http: httpx.Client, path: str, args: dict[str, Any]) -> tuple[int, int]:
    """(text bytes, structuredContent bytes) of one service_v2_quote call."""
    call = {"name": "service_v2_quote", "arguments": args}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}
    result = http.post(path, json=body, headers=MCP_HEADERS).json()["result"]
    assert result.get("isError") is False, result
    return len(result["content"][0]["text"].encode()), _bytes(result["structuredContent"])


def _a2a(http: httpx.Client, data: dict[str, Any]) -> int:
    message = {
        "role": "ROLE_USER",
        "messageId": "sizes",
        "parts": [{"data": data, "mediaType": "application/json"}],
    }
    body = {"jsonrpc": "2.0", "id": "1", "method": "SendMessage", "params": {"message": message}}
    reply = http.post("/a2a", json=body, headers={"A2A-Version": "1.0"}).json()
    part = reply["result"]["message"]["parts"][0]["data"]
    assert "error" not in part, part
    return _bytes(part)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--amount", type=float, default=137.5)
    amount = parser.parse_args().amount
    rows: dict[str, tuple[list[int], list[int]]] = {
        "/mcp service_v2_quote (text + structuredContent)": ([], []),
        "/mcp service_v2_quote (text block only)": ([], []),
        "/mcp/v2 service_v2_quote (text + structuredContent)": ([], []),
        "A2A quote skill (data part)": ([], []),
    }
    with served() as url, httpx.Client(base_url=url, timeout=60) as http:
        for key in ROUTES:
            (fc, ft), (tc, tt) = (side.split(":") for side in key.split("->"))
            args = {"from_chain": fc, "from_token": ft, "to_chain": tc, "to_token": tt, "amount_usd": amount}
            text, structured = _mcp(http, "/mcp", args)
            spec, spec_text = (
                rows["/mcp service_v2_quote (text + structuredContent)"],
                rows["/mcp service_v2_quote (text block only)"],
            )
            spec[0].append(2 * structured)
            spec[1].append(text + structured)
            spec_text[0].append(structured)
            spec_text[1].append(text)
            full = sum(_mcp(http, "/mcp/v2", {**args, "detail": "full"}))
            decision = sum(_mcp(http, "/mcp/v2", args))
            rows["/mcp/v2 service_v2_quote (text + structuredContent)"][0].append(full)
            rows["/mcp/v2 service_v2_quote (text + structuredContent)"][1].append(decision)
            camel = {CAMEL.get(k, "amountUsd"): v for k, v in args.items()}
            rows["A2A quote skill (data part)"][0].append(_a2a(http, {**camel, "detail": "full"}))
            rows["A2A quote skill (data part)"][1].append(_a2a(http, camel))
    print(f"bytes per quote result, {len(ROUTES)} routes at ${amount}: median (min..max)")
    print(f"{'endpoint':55} {'before':>22} {'after':>22} {'before/after':>12}")
    for name, (before, after) in rows.items():
        b, a = statistics.median(before), statistics.median(after)
        print(
            f"{name:55} {b:>8.0f} ({min(before)}..{max(before)}) {a:>8.0f} ({min(after)}..{max(after)}) "
            f"{b / a:>11.1f}x"
        )


if __name__ == "__main__":
    main()
