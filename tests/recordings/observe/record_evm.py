"""Regenerate `evm_*.json` here (run by hand; needs node/npm for anvil, like the e2e tests).

Runs the scenarios of `tests/e2e/test_observe_anvil.py` on a fresh anvil (chain id 8453) and stores, for each,
the prepared `unsigned_action`, the transaction hashes, and anvil's raw JSON-RPC answers to exactly the calls
`JsonRpcEvmReader` makes (`eth_getTransactionByHash`, `eth_getTransactionReceipt`, `eth_getBlockByNumber`,
`eth_blockNumber`, `eth_chainId`), in the node's own wire format, untouched.

    .venv/bin/python tests/recordings/observe/record_evm.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "e2e")]

from _evm import balance_of, deploy_uniswap, ensure_toolchain, start_anvil  # noqa: E402
from test_observe_anvil import fund_wallet, run_route  # noqa: E402
from test_prepare_anvil import CHAIN_ID, _deploy_all  # noqa: E402

SCENARIOS = {
    "evm_eth_to_usdc": ("base:ETH->base:USDC", 100, False),
    "evm_usdc_to_eth": ("base:USDC->base:ETH", 250, False),
    "evm_usdc_to_eth_reverted": ("base:USDC->base:ETH", 250, True),
    "evm_across_deposit": ("base:USDC->robinhood:USDG", 100, False),
}


def record() -> None:
    anvil, artifacts = ensure_toolchain()
    chain = start_anvil(anvil, artifacts, CHAIN_ID)
    try:
        deploy_uniswap(chain)
        a = _deploy_all(chain)
        who = fund_wallet(chain, a)
        for name, (route, amount, revert) in SCENARIOS.items():
            before_eth = int(chain.rpc.call("eth_getBalance", who, "latest"), 16)
            before_usdc = balance_of(chain, a["token6"], who)
            action, hashes = run_route(chain, a, route, amount, revert=revert)
            rpc: dict[str, Any] = {
                "eth_chainId": chain.rpc.call("eth_chainId"),
                "eth_blockNumber": chain.rpc.call("eth_blockNumber"),
                "transactions": {},
            }
            for h in hashes:
                receipt = chain.rpc.call("eth_getTransactionReceipt", h)
                rpc["transactions"][h] = {
                    "eth_getTransactionByHash": chain.rpc.call("eth_getTransactionByHash", h),
                    "eth_getTransactionReceipt": receipt,
                    "eth_getBlockByNumber": chain.rpc.call(
                        "eth_getBlockByNumber", receipt["blockNumber"], False
                    ),
                }
            doc = {
                "route": route,
                "wallet": who,
                "unsigned_action": {k: v for k, v in action.items() if k != "safety_receipt"},
                "tx_hashes": hashes,
                "rpc": rpc,
                "wallet_change": {
                    "eth_wei": int(chain.rpc.call("eth_getBalance", who, "latest"), 16) - before_eth,
                    "usdc_base": balance_of(chain, a["token6"], who) - before_usdc,
                },
                "local_contracts": {k: a[k] for k in ("weth", "token6", "router02", "local_spoke")},
            }
            (HERE / f"{name}.json").write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
            print(name, len(hashes), "transactions")
    finally:
        chain.stop()


if __name__ == "__main__":
    record()
