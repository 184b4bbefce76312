"""The venues' own swap math, as the route suite's Solana swap simulator's model of Raydium CLMM and Orca Whirlpool.

The programs cannot run offline, so a simulated swap pays what the venue's own SDK computes on the pool state:
`@raydium-io/raydium-sdk-v2` `swapInternal` and `@orca-so/whirlpools-core` `swapQuoteByInputToken`, run by
`tests/reference/clmm_ref.cjs` (the same harness and npm install as the CLMM equality tests,
tests/integration/test_clmm_reference.py) as one long-lived node process answering a line per swap. Nothing
here calls `routequote.core.clmm`: the pool's state (price, liquidity, ticks) is the input, never its math.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any

from _evm import ToolchainUnavailable

REF_DIR = Path(__file__).resolve().parents[1] / "reference"
NEEDED = ("@orca-so/whirlpools-core", "@raydium-io/raydium-sdk-v2")


def pool_json(pool: Any) -> dict[str, Any]:
    """A CLMM pool's state in the harness's request shape (`clmm_ref.cjs` POOL)."""
    return {
        "fee_pips": pool.fee_pips,
        "tick_spacing": pool.tick_spacing,
        "sqrt_price": str(pool.sqrt_price),
        "tick_current": pool.tick_current,
        "liquidity": str(pool.liquidity),
        "ticks": [[t, str(n)] for t, n in pool.ticks],
        "tick_array_range": list(pool.tick_array_range) if pool.tick_array_range else None,
    }


class VenueSdk:
    """`swap(venue, pool, zero_for_one, amount_in)` -> the SDK's amount out, from one node process."""

    def __init__(self) -> None:
        node, npm = shutil.which("node"), shutil.which("npm")
        if node is None or npm is None:
            raise ToolchainUnavailable("node/npm not found on PATH: cannot run the venues' SDK math")
        mods = REF_DIR / "node_modules"
        if not all((mods / p).exists() for p in NEEDED):
            proc = subprocess.run(
                [npm, "install", "--no-audit", "--no-fund", "--cache", str(REF_DIR / ".npm-cache")],
                cwd=REF_DIR,
                capture_output=True,
                text=True,
                timeout=900,
            )
            if proc.returncode != 0 or not all((mods / p).exists() for p in NEEDED):
                raise ToolchainUnavailable(f"npm install in tests/reference failed: {proc.stderr[-400:]}")
        self._proc = subprocess.Popen(
            [node, str(REF_DIR / "clmm_ref.cjs"), "--lines"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        self._lock = threading.Lock()

    def swap(self, venue: str, pool: Any, zero_for_one: bool, amount_in: int) -> int:
        op = {
            "op": "swap",
            "venue": venue,
            "pool": pool_json(pool),
            "swaps": [[zero_for_one, str(amount_in)]],
        }
        with self._lock:
            assert self._proc.stdin is not None and self._proc.stdout is not None
            self._proc.stdin.write(json.dumps({"ops": [op]}) + "\n")
            self._proc.stdin.flush()
            line = self._proc.stdout.readline()
        answer = json.loads(line)
        assert "error" not in answer, answer
        result = answer["results"][0][0]
        assert result["ok"], f"the {venue} SDK refused the swap: {result.get('error')}"
        assert int(result["amount_in"]) == amount_in, f"the {venue} pool cannot take {amount_in}: {result}"
        return int(result["amount_out"])

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        self._proc.wait(timeout=10)
