"""Prepared swaps signed by a test key, sent to a local chain (anvil, chain id 8453), read back by the production
`JsonRpcEvmReader` and judged by `verify_evm_action`: the evidence's actual output is exactly the wallet's balance
change, the input exactly what left the wallet, and a prepared swap whose minimum the pool cannot meet reverts on
chain and is refused as `observation_reverted`. Reuses the local Uniswap v3 deployment of `test_prepare_anvil.py`.

The scenario helpers here also produce the recordings in `tests/recordings/observe/` (see `record_evm.py` there).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from _evm import AnvilChain, balance_of
from eth_account import Account
from eth_utils import keccak
from test_prepare_anvil import CHAIN_ID, _deploy_all, _prepare

from routequote.core.actions.evm import decode_call, encode_call
from routequote.core.sessions.evidence import ObservationRejected, StepEvidence, verify_evm_action
from routequote.observe.evm import JsonRpcEvmReader
from routequote.ports import EvmTransaction

pytestmark = pytest.mark.chain
# a fixed, public test key (keccak of a label): recordings are reproducible; it never holds anything real
TEST_KEY = "0x" + keccak(text="routequote observe e2e test key").hex()


def fund_wallet(chain: AnvilChain, a: dict[str, Any], key: str = TEST_KEY) -> str:
    who = str(Account.from_key(key).address)
    chain.send(who, "0x", value=10 * 10**18)
    chain.transact(a["token6"], "mint(address,uint256)", who, 10_000 * 10**6)
    return who


def sign_and_send(
    chain: AnvilChain, key: str, txs: list[dict[str, Any]], *, gas: int | None = None
) -> list[str]:
    """The wallet: nonce and fees filled in, each transaction signed, sent and mined before the next. With `gas`
    given no estimate is made, so a transaction that will revert is still mined (and recorded as reverted)."""
    hashes = []
    for tx in txs:
        sender = tx["from"]
        base_fee = int(chain.rpc.call("eth_getBlockByNumber", "latest", False)["baseFeePerGas"], 16)
        full = {
            "to": tx["to"],
            "value": int(tx["value"]),
            "data": tx["data"],
            "chainId": tx["chainId"],
            "type": 2,
            "nonce": int(chain.rpc.call("eth_getTransactionCount", sender, "pending"), 16),
            "maxPriorityFeePerGas": 10**6,
            "maxFeePerGas": 2 * base_fee + 10**6,
        }
        if gas is None:
            est = {"from": sender, "to": tx["to"], "value": hex(int(tx["value"])), "data": tx["data"]}
            full["gas"] = int(chain.rpc.call("eth_estimateGas", est), 16) * 12 // 10
        else:
            full["gas"] = gas
        raw = Account.sign_transaction(full, key).raw_transaction
        h = chain.rpc.call("eth_sendRawTransaction", "0x" + raw.hex())
        for _ in range(500):
            if chain.rpc.call("eth_getTransactionReceipt", h) is not None:
                break
            time.sleep(0.01)
        hashes.append(h)
    return hashes


def with_doubled_minimum(action: dict[str, Any]) -> dict[str, Any]:
    """The same prepared swap with a minimum twice the quote's: a prepared action the pool cannot satisfy."""
    txs = [dict(t) for t in action["transactions"]]
    call = decode_call(bytes.fromhex(txs[-1]["data"][2:]))
    assert call is not None and call.name == "multicall"
    inner = [decode_call(bytes(c)) for c in call.args[1]]
    assert inner[0] is not None
    params = list(inner[0].args[0])
    params[5] = params[5] * 2
    calls = [encode_call("exactInputSingle", tuple(params))]
    if len(inner) > 1 and inner[1] is not None:
        calls.append(encode_call("unwrapWETH9", params[5], inner[1].args[1]))
    txs[-1]["data"] = "0x" + encode_call("multicall", call.args[0], calls).hex()
    return {**action, "transactions": txs, "minimumOutput": str(params[5])}


def run_route(
    chain: AnvilChain,
    a: dict[str, Any],
    route: str,
    amount: int = 100,
    *,
    revert: bool = False,
    key: str = TEST_KEY,
) -> tuple[dict[str, Any], list[str]]:
    who = str(Account.from_key(key).address)
    chains = {side.split(":")[0] for side in route.split("->")}
    p = _prepare(chain, a, route, dict.fromkeys(sorted(chains), who), amount=amount)
    action = p.bundle["unsigned_action"]
    if revert:
        action = with_doubled_minimum(action)
        hashes = sign_and_send(chain, key, action["transactions"][:-1])
        hashes += sign_and_send(chain, key, action["transactions"][-1:], gas=1_000_000)
    else:
        hashes = sign_and_send(chain, key, action["transactions"])
    return action, hashes


def read_back(chain: AnvilChain, hashes: list[str]) -> list[EvmTransaction]:
    async def go() -> list[EvmTransaction]:
        async with httpx.AsyncClient() as client:
            # a hang bound: anvil on a busy machine may take longer than a node is given in service
            reader = JsonRpcEvmReader({"base": chain.url}, client, timeout=60)
            out = [await reader.transaction("base", h) for h in hashes]
        assert all(t is not None for t in out)
        return [t for t in out if t is not None]

    return asyncio.run(go())


def _eth(chain: AnvilChain, who: str) -> int:
    return int(chain.rpc.call("eth_getBalance", who, "latest"), 16)


@pytest.fixture
def local(anvil_factory: Callable[[int], AnvilChain]) -> Iterator[tuple[AnvilChain, dict[str, Any], str]]:
    chain = anvil_factory(CHAIN_ID)
    a = _deploy_all(chain)
    snap = chain.snapshot()
    who = fund_wallet(chain, a)
    yield chain, a, who
    chain.revert(snap)


def test_eth_to_usdc_evidence_equals_the_wallets_balance_change(
    local: tuple[AnvilChain, dict[str, Any], str],
) -> None:
    chain, a, who = local
    before_eth, before_usdc = _eth(chain, who), balance_of(chain, a["token6"], who)
    action, hashes = run_route(chain, a, "base:ETH->base:USDC")
    ev = verify_evm_action(action, read_back(chain, hashes), required_confirmations=1)
    assert ev.status == "final" and ev.tx_ids == tuple(h.lower() for h in hashes)
    assert (
        ev.actual_output_base
        == balance_of(chain, a["token6"], who) - before_usdc
        >= int(action["minimumOutput"])
    )
    assert ev.actual_input_base == int(action["inputAmount"])
    assert before_eth - _eth(chain, who) == ev.actual_input_base + ev.network_fee["wei"]
    assert ev.service_fee_paid_base == int(action["routeFee"]) > 0 and ev.bridge is None
    assert len(ev.block_times) == 2 and all(t > 0 for t in ev.block_times)


def test_usdc_to_eth_evidence_equals_the_wallets_balance_change(
    local: tuple[AnvilChain, dict[str, Any], str],
) -> None:
    chain, a, who = local
    before_eth, before_usdc = _eth(chain, who), balance_of(chain, a["token6"], who)
    action, hashes = run_route(chain, a, "base:USDC->base:ETH", amount=250)
    ev = verify_evm_action(action, read_back(chain, hashes), required_confirmations=1)
    assert ev.status == "final" and len(ev.tx_ids) == 3
    assert ev.actual_output_base == _eth(chain, who) - before_eth + ev.network_fee["wei"]
    assert ev.actual_output_base >= int(action["minimumOutput"])
    assert (
        ev.actual_input_base
        == before_usdc - balance_of(chain, a["token6"], who)
        == int(action["inputAmount"])
    )
    assert ev.service_fee_paid_base == int(action["routeFee"])


def test_confirmations_below_the_required_depth_are_pending_then_final(
    local: tuple[AnvilChain, dict[str, Any], str],
) -> None:
    chain, a, _who = local
    action, hashes = run_route(chain, a, "base:ETH->base:USDC")
    assert verify_evm_action(
        action, read_back(chain, hashes), required_confirmations=5
    ) == StepEvidence.pending(tuple(h.lower() for h in hashes))
    chain.rpc.call("anvil_mine", "0x4")
    assert verify_evm_action(action, read_back(chain, hashes), required_confirmations=5).status == "final"


def test_prepared_swap_whose_minimum_the_pool_cannot_meet_reverts_and_is_refused(
    local: tuple[AnvilChain, dict[str, Any], str],
) -> None:
    chain, a, _who = local
    action, hashes = run_route(chain, a, "base:USDC->base:ETH", revert=True)
    txs = read_back(chain, hashes)
    assert [t.status for t in txs] == [1, 1, 0]
    with pytest.raises(ObservationRejected) as err:
        verify_evm_action(action, txs, required_confirmations=1)
    assert err.value.reason_class == "observation_reverted"
    assert err.value.details["observation"]["tx"] == hashes[-1].lower()


def test_a_transaction_of_another_action_is_not_evidence(
    local: tuple[AnvilChain, dict[str, Any], str],
) -> None:
    chain, a, _who = local
    action, hashes = run_route(chain, a, "base:ETH->base:USDC")
    _other, other_hashes = run_route(chain, a, "base:ETH->base:USDC", amount=101)
    txs = read_back(chain, [hashes[0], other_hashes[1]])
    with pytest.raises(ObservationRejected) as err:
        verify_evm_action(action, txs, required_confirmations=1)
    assert err.value.reason_class == "observation_not_prepared_action"
