"""Agent surfaces benchmark: req/s of the MCP tool `service_v2_quote` and of the A2A quote skill against
POST /v2/quote, all in the same server (one uvicorn worker), and where the time of one request goes.

1. Over HTTP with wrk (Debian package `wrk`), interleaved, best of 2: REST POST /v2/quote, MCP
   `tools/call service_v2_quote` (stateless JSON, no initialize), A2A `SendMessage` (JSON-RPC, DataPart).
   Every body rotates through all 72 routes x {1, 50, 1000} USD. Before measuring, one reply of each
   kind is checked to be a success (wrk itself only sees HTTP status codes). Prints the ratios.
2. In-process split of one call: the service alone, our MCP adapter (argument validation, result
   envelope, guidance, JSON text), our A2A agent (dispatch, number narrowing, guidance) and the SDK's
   DataPart conversion, next to the per-request time seen over HTTP. The gap is the SDKs' own cost.

Run: .venv/bin/python bench/agents_bench.py [--duration 8] [--connections 32]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import shutil
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).parent))

from _harness import BODIES, lua_script, served, wrk  # noqa: E402

from routequote.clock import SystemClock, UuidFactory  # noqa: E402
from routequote.market.snapshot import EmbeddedSnapshot  # noqa: E402
from routequote.service import RouteQuoteService, ServiceConfig  # noqa: E402
from routequote.storage.quotes import MemoryQuoteStore  # noqa: E402

CAMEL = {
    "from_chain": "fromChain",
    "from_token": "fromToken",
    "to_chain": "toChain",
    "to_token": "toToken",
    "amount_usd": "amountUsd",
}


def rest_body(b: dict[str, Any], _: int) -> dict[str, Any]:
    return b


def mcp_body(b: dict[str, Any], i: int) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": i,
        "method": "tools/call",
        "params": {"name": "service_v2_quote", "arguments": b},
    }


def a2a_body(b: dict[str, Any], i: int) -> dict[str, Any]:
    data = {CAMEL[k]: v for k, v in b.items()}
    message = {
        "role": "ROLE_USER",
        "messageId": f"bench-{i}",
        "parts": [{"data": data, "mediaType": "application/json"}],
    }
    return {"jsonrpc": "2.0", "id": str(i), "method": "SendMessage", "params": {"message": message}}


SURFACES: dict[str, tuple[str, Callable[[dict[str, Any], int], dict[str, Any]], dict[str, str]]] = {
    "rest /v2/quote": ("/v2/quote", rest_body, {}),
    "mcp service_v2_quote": ("/mcp", mcp_body, {"Accept": "application/json, text/event-stream"}),
    "a2a quote skill": ("/a2a", a2a_body, {"A2A-Version": "1.0"}),
}


def check_success(base: str) -> None:
    """wrk sees only status codes; make sure each surface really answers with a quote."""
    b = BODIES[5]
    for name, (path, make, headers) in SURFACES.items():
        reply = httpx.post(base + path, json=make(b, 1), headers=headers, timeout=30).json()
        if path == "/mcp":
            ok = (
                "result" in reply
                and not reply["result"].get("isError")
                and "quote" in reply["result"]["structuredContent"]
            )
        elif path == "/a2a":
            ok = "quote" in reply.get("result", {}).get("message", {}).get("parts", [{}])[0].get("data", {})
        else:
            ok = "quote_id" in reply
        if not ok:
            raise SystemExit(f"{name} did not return a quote: {str(reply)[:300]}")


def over_http(duration: int, connections: int) -> dict[str, float]:
    with served() as base, contextlib.ExitStack() as stack:
        check_success(base)
        scripts = {
            name: stack.enter_context(lua_script(make, headers))
            for name, (_, make, headers) in SURFACES.items()
        }
        for name, (path, _, _) in SURFACES.items():  # warm-up
            wrk(base + path, 2, connections, scripts[name])
        rows = []
        for _ in range(2):  # interleave so the machine's noise is shared fairly
            for name, (path, _, _) in SURFACES.items():
                rows.append((name, *wrk(base + path, duration, connections, scripts[name])))
    best = {name: max(r[1] for r in rows if r[0] == name) for name in SURFACES}
    print(f"HTTP, 1 uvicorn worker, wrk -t1 -c{connections} -d{duration}s (interleaved, best of 2):")
    for name, rps, lat in rows:
        print(f"  {name:22s} {rps:9.0f} req/s  {lat}")
    rest = best["rest /v2/quote"]
    print(
        f"  ratio mcp/rest = {best['mcp service_v2_quote'] / rest:.3f}   "
        f"ratio a2a/rest = {best['a2a quote skill'] / rest:.3f}"
    )
    return best


async def per_call(fn: Callable[[int], Awaitable[Any]], n: int) -> float:
    for i in range(min(n, len(BODIES))):  # warm the pricing cache: the HTTP runs are warm too
        await fn(i)
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for i in range(n):
            await fn(i)
        best = min(best, (time.perf_counter() - t0) / n)
    return best * 1e6


def in_process(n: int) -> dict[str, float]:
    import mcp.types as mt

    from routequote.surfaces.a2a_agent import RouteQuoteAgent, data_part, quote_operation
    from routequote.surfaces.mcp_tools import core_tools, tool_result

    service = RouteQuoteService(
        EmbeddedSnapshot(), MemoryQuoteStore(), SystemClock(), UuidFactory(), ServiceConfig()
    )
    tool = next(t for t in core_tools(service) if t.name == "service_v2_quote")
    agent = RouteQuoteAgent({"quote": quote_operation(service)})
    camel = [{CAMEL[k]: float(v) if k == "amount_usd" else v for k, v in b.items()} for b in BODIES]

    async def svc(i: int) -> Any:
        return await service.quote_request(BODIES[i % len(BODIES)])

    async def mcp_ours(i: int) -> Any:
        args = BODIES[i % len(BODIES)]
        tool.model.model_validate(args)
        return tool_result(await tool.run(args))

    async def mcp_wire(i: int) -> Any:  # + the SDK's serialization of our result (pydantic, by alias)
        result: mt.CallToolResult = await mcp_ours(i)
        return result.model_dump_json(by_alias=True, exclude_none=True)

    async def a2a_ours(i: int) -> Any:
        return await agent.handle([camel[i % len(camel)]])

    async def a2a_part(i: int) -> Any:  # + the SDK's DataPart (protobuf Value) conversion of our reply
        return data_part(await a2a_ours(i))

    out = {
        "service.quote_request": asyncio.run(per_call(svc, n)),
        "mcp: ours (validate+run+envelope)": asyncio.run(per_call(mcp_ours, n)),
        "mcp: ours + result serialization": asyncio.run(per_call(mcp_wire, n)),
        "a2a: ours (dispatch+run+narrow)": asyncio.run(per_call(a2a_ours, n)),
        "a2a: ours + DataPart conversion": asyncio.run(per_call(a2a_part, n)),
    }
    print(f"in-process, per call (best of 3 x {n} calls, warm pricing cache):")
    for k, v in out.items():
        print(f"  {k:38s} {v:8.0f} us")
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--duration", type=int, default=8)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--skip-http", action="store_true")
    args = parser.parse_args()
    split = in_process(args.calls)
    if args.skip_http or not shutil.which("wrk"):
        if not args.skip_http:
            print("HTTP benchmark skipped: wrk is not installed (apt-get install wrk)")
        return
    best = over_http(args.duration, args.connections)
    print("where one request's time goes (1 worker: 1e6 / req/s is the server time per request):")
    rest_us = 1e6 / best["rest /v2/quote"]
    for name, ours_key in (
        ("mcp service_v2_quote", "mcp: ours (validate+run+envelope)"),
        ("a2a quote skill", "a2a: ours (dispatch+run+narrow)"),
    ):
        total = 1e6 / best[name]
        ours_extra = split[ours_key] - split["service.quote_request"]
        print(
            f"  {name:22s} {total:7.0f} us/request: service {split['service.quote_request']:.0f} us, our adapter "
            f"+{ours_extra:.0f} us, REST framing of the same quote {rest_us - split['service.quote_request']:.0f} us, "
            f"left to the SDK stack ~{total - split[ours_key]:.0f} us"
        )


if __name__ == "__main__":
    main()
