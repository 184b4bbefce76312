"""The TypeScript client end to end on local chains (issue 44), with the chains, contracts and server of
test_sessions_anvil.py: a node script (clients/typescript/scripts/e2e-anvil.mjs) using only the TypeScript
client, viem and a throwaway test key quotes, prepares, verifies, signs and submits to anvil; then carries one
session of an EVM-only route (base:ETH->base:USDC) to `complete`. What happened is measured here, apart from
the script: the transactions on anvil, from the wallet, and the balance changes against the receipt."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from _session_world import ETH_USDC, FEE_RECIPIENT, World, eth, usd, wallet
from test_sessions_anvil import w, world
from tests.support.ts_package import built_package, run
from tests.support.ts_pinned import deployment_json

__all__ = ["w", "world"]  # the chain fixtures of test_sessions_anvil.py
pytestmark = [pytest.mark.chain, pytest.mark.node]


def _script(w: World, who: str, key: str, mode: str, tmp_path: Path) -> dict[str, Any]:
    package = built_package()
    config = {
        "baseUrl": w.api.url,
        "route": ETH_USDC,
        "amountUsd": 100,
        "walletChains": ["base"],
        "rpcUrls": {"base": w.base.url},
        "chainIds": {"base": w.base.chain_id},
        "wallet": who,
        "key": key if key.startswith("0x") else "0x" + key,
        "deployments": {c.value: deployment_json(d) for c, d in w.deployments.items()},
    }
    path = tmp_path / f"{mode}.json"
    path.write_text(json.dumps(config))
    done = run([str(shutil.which("node")), "scripts/e2e-anvil.mjs", str(path), mode], timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert package.is_dir()
    out: dict[str, Any] = json.loads(done.stdout)
    return out


def _mined_from(w: World, who: str, hashes: list[str]) -> None:
    """Every hash is a successful transaction on the local base chain, sent by the wallet itself."""
    for h in hashes:
        receipt = w.base.rpc.call("eth_getTransactionReceipt", h)
        assert receipt is not None and int(receipt["status"], 16) == 1, h
        assert receipt["from"].lower() == who.lower()


def test_quote_prepare_verify_sign_submit_with_the_typescript_client(w: World, tmp_path: Path) -> None:
    who, key = wallet(w)
    before = usd(w.base, who), eth(w.base, who), eth(w.base, FEE_RECIPIENT)
    out = _script(w, who, key, "one-shot", tmp_path)
    after = usd(w.base, who), eth(w.base, who), eth(w.base, FEE_RECIPIENT)
    # the client verified the action before signing; modelled bounds and the placeholder fee are said so
    assert out["warnings"] == ["bounds_modelled_accepted", "fee_recipient_not_pinned"], out
    assert len(out["hashes"]) == 2  # the native fee transfer, then the swap (ETH in: nothing to approve)
    _mined_from(w, who, out["hashes"])
    received = after[0] - before[0]
    assert received >= int(out["minimumOutput"]) > 0
    assert after[2] - before[2] == int(out["inputAmount"]) // 10_000  # the service fee, to its recipient
    assert before[1] - after[1] > int(out["inputAmount"])  # the input and the gas left the wallet


def test_a_session_carried_to_complete_by_the_typescript_client_alone(w: World, tmp_path: Path) -> None:
    who, key = wallet(w)
    before = usd(w.base, who)
    out = _script(w, who, key, "session", tmp_path)
    received = usd(w.base, who) - before
    assert out["status"] == "complete", out
    assert out["statuses"][0] == "action_ready" and out["statuses"][-1] == "complete"
    _mined_from(w, who, out["hashes"])
    assert out["funds"]["state"] == "delivered"
    route = out["receipt"]["route"]
    assert route["complete"] is True and int(route["actual_output_base"]) == received > 0
    assert int(route["actual_output_base"]) >= int(out["minimumOutputBase"])
