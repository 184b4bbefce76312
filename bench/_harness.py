"""Shared benchmark plumbing: the 216 quote bodies, a served instance, and wrk runs."""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx

from routequote.core.assets import ASSETS

# every route at the three evaluation amounts, so no benchmark measures one cached body
BODIES: list[dict[str, Any]] = [
    {
        "from_chain": a.chain.value,
        "from_token": a.token.value,
        "to_chain": b.chain.value,
        "to_token": b.token.value,
        "amount_usd": usd,
    }
    for a in ASSETS.values()
    for b in ASSETS.values()
    if a.key != b.key
    for usd in (1, 50, 1000)
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def served(workers: int = 1, **settings: str) -> Iterator[str]:
    """`routequote serve` in a subprocess with rate limits off (plus ROUTEQUOTE_<NAME> settings); yields its URL."""
    port = free_port()
    env = {
        **os.environ,
        "ROUTEQUOTE_RATE_LIMIT": "off",
        "ROUTEQUOTE_PORT": str(port),
        "ROUTEQUOTE_LOG_LEVEL": "warning",
    }
    env.update({f"ROUTEQUOTE_{k.upper()}": v for k, v in settings.items()})
    exe = Path(sys.executable).with_name("routequote")
    server = subprocess.Popen(
        [str(exe), "serve", "--workers", str(workers)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 30
        while True:
            try:
                if httpx.get(f"{base}/v2/status").status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.time() > deadline:
                raise SystemExit("server did not start")
            time.sleep(0.1)
        yield base
    finally:
        server.terminate()
        server.wait(10)


@contextlib.contextmanager
def lua_script(
    make: Callable[[dict[str, Any], int], dict[str, Any]], headers: dict[str, str]
) -> Iterator[str]:
    """A wrk script POSTing make(body, i) for every body in turn."""
    bodies = ",\n".join("[[" + json.dumps(make(b, i + 1)) + "]]" for i, b in enumerate(BODIES))
    extra = "".join(f"wrk.headers['{k}'] = '{v}'\n" for k, v in headers.items())
    lua = (
        "local bodies = {" + bodies + "}\nlocal i = 0\nwrk.method = 'POST'\n"
        "wrk.headers['Content-Type'] = 'application/json'\n"
        + extra
        + "request = function()\n  i = i % #bodies + 1\n  return wrk.format(nil, nil, nil, bodies[i])\nend\n"
    )
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write(lua)
    try:
        yield f.name
    finally:
        os.unlink(f.name)


def wrk(url: str, duration: int, connections: int, script: str | None = None) -> tuple[float, str]:
    """req/s and latency percentiles; refuses a run that saw any non-2xx answer."""
    cmd = [
        "wrk",
        "-t1",
        f"-c{connections}",
        f"-d{duration}s",
        "--latency",
        *(["-s", script] if script else []),
        url,
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    p50 = re.search(r"^\s+50%\s+(\S+)", out, re.M)
    p99 = re.search(r"^\s+99%\s+(\S+)", out, re.M)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if non2xx:
        raise SystemExit(f"wrk saw {non2xx.group(1)} non-2xx responses from {url}")
    return rps, f"p50 {p50.group(1) if p50 else '?'} p99 {p99.group(1) if p99 else '?'}"
