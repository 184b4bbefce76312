"""Prepared transactions executed on real local chains (anvil, chain ids 8453, 42161 and, for the swaps, 4663).

A throwaway key signs exactly the transactions POST /v2/prepare's service returns (the builder is pointed
at the locally deployed WETH9 / 6-decimals token / Uniswap v3 SwapRouter02 / Across SpokePool through
its `EvmDeployment` input) and sends them in order. Checked from balances and logs: the wallet receives at
least the quoted minimum, the fee recipient receives exactly floor(input/10000), the exact approval is
consumed, and nothing else moves. CCTP v2 has no deployable bytecode: its depositForBurn is sent to
Across's MockCCTPMessengerV2 (same v2 signature; it records the call but moves no tokens).
"""

from __future__ import annotations

import asyncio
import json
import tarfile
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from math import isqrt
from typing import Any

import pytest
from _evm import CACHE, MAX_UINT256, ZERO_ADDRESS, AnvilChain, balance_of, calldata
from eth_abi import decode, encode
from eth_account import Account
from eth_utils import keccak, to_checksum_address
from tests.unit.actions.support import FEE_RECIPIENTS, SOLANA_WALLET, make_env, prepare_route

from routequote.core.actions.common import address_to_bytes32, associated_token_address
from routequote.core.actions.evm import DEFAULT_DEPLOYMENTS
from routequote.core.assets import Chain
from routequote.verify import verify_bundle

pytestmark = pytest.mark.chain
CHAIN_ID = 8453
FEE = 500
ETH_PRICE_USDC = 3120_550000  # USDC base units per 1e18 wei, as in the embedded snapshot
FUNDS_DEPOSITED = "0x" + keccak(
    text="FundsDeposited(bytes32,bytes32,uint256,uint256,uint256,uint256,uint32,uint32,uint32,bytes32,bytes32,bytes32,bytes)"
).hex()


def _across_artifact(name: str, folder: str | None = None) -> dict[str, Any]:
    with tarfile.open(CACHE / "packs" / "across-protocol-contracts-5.0.27.tgz") as tf:
        f = tf.extractfile(f"package/dist/evm/artifacts/{folder or name}.sol/{name}.json")
        assert f is not None
        data: dict[str, Any] = json.loads(f.read())
    return data


def _deploy_raw(chain: AnvilChain, artifact: dict[str, Any], types: list[str], *args: Any) -> str:
    code = artifact["bytecode"] if artifact["bytecode"].startswith("0x") else "0x" + artifact["bytecode"]
    receipt = chain.send(None, code + (encode(types, list(args)).hex() if types else ""))
    return str(to_checksum_address(receipt["contractAddress"]))


CHAINS_BY_ID = {8453: Chain.BASE, 42161: Chain.ARBITRUM, 4663: Chain.ROBINHOOD}
STABLE = {Chain.BASE: "USDC", Chain.ARBITRUM: "USDC", Chain.ROBINHOOD: "USDG"}  # the 6-decimals token6 plays it


def _deploy_all(chain: AnvilChain) -> dict[str, Any]:
    """Pool WETH/USDC (0.05 %) at the snapshot price with deep full-range liquidity, an Across SpokePool and
    a mock CCTP v2 messenger, deployed once per session node."""
    a = chain.addresses
    me = chain.deployer
    if "local_spoke" in a and chain.rpc.call("eth_getCode", a["mock_cctp"], "latest") not in ("0x", "0x0"):
        return a  # already deployed on this node (and not reverted away by another module's snapshot)
    weth, usdc = a["weth"], a["token6"]
    chain.send(weth, calldata("deposit()"), value=2000 * 10**18)
    chain.transact(weth, "approve(address,uint256)", a["npm"], MAX_UINT256)
    t0, t1 = sorted((weth, usdc), key=lambda x: int(x, 16))
    # price = token1 base units per token0 base unit
    num, den = (ETH_PRICE_USDC, 10**18) if t0 == weth else (10**18, ETH_PRICE_USDC)
    sqrt_price = isqrt(num * (1 << 192) // den)
    chain.transact(a["npm"], "createAndInitializePoolIfNecessary(address,address,uint24,uint160)", t0, t1, FEE, sqrt_price)
    amt_weth, amt_usdc = 1000 * 10**18, 1000 * ETH_PRICE_USDC
    amounts = (amt_weth, amt_usdc) if t0 == weth else (amt_usdc, amt_weth)
    chain.transact(
        a["npm"],
        "mint((address,address,uint24,int24,int24,uint256,uint256,uint256,uint256,address,uint256))",
        (t0, t1, FEE, -887270, 887270, amounts[0], amounts[1], 0, 0, me, 2**40),
    )
    spoke_art = _across_artifact("Arbitrum_SpokePool")
    impl = _deploy_raw(
        chain, spoke_art, ["address", "uint32", "uint32", "address", "address", "uint32", "uint256", "address"],
        weth, 3600, 21600, ZERO_ADDRESS, ZERO_ADDRESS, 0, 0, ZERO_ADDRESS,
    )  # fmt: skip
    init = calldata("initialize(uint32,address,address,address)", 0, me, me, me)
    a["local_spoke"] = _deploy_raw(chain, _across_artifact("ERC1967Proxy"), ["address", "bytes"], impl, bytes.fromhex(init[2:]))
    minter = _deploy_raw(chain, _across_artifact("MockCCTPMinter", "MockCCTP"), [])
    a["mock_cctp"] = _deploy_raw(chain, _across_artifact("MockCCTPMessengerV2", "MockCCTP"), ["address", "address"], minter, me)
    return a


@pytest.fixture(scope="module")
def base_chain(anvil_factory: Callable[[int], AnvilChain]) -> dict[str, Any]:
    return _deploy_all(anvil_factory(CHAIN_ID))


@pytest.fixture
def snapshot(anvil_factory: Callable[[int], AnvilChain], base_chain: dict[str, Any]) -> Iterator[AnvilChain]:
    chain = anvil_factory(CHAIN_ID)
    snap = chain.snapshot()
    yield chain
    chain.revert(snap)


@pytest.fixture(params=sorted(CHAINS_BY_ID), ids=lambda c: f"chain{c}")
def swap_chain(request: pytest.FixtureRequest, anvil_factory: Callable[[int], AnvilChain]) -> Iterator[AnvilChain]:
    chain = anvil_factory(request.param)
    _deploy_all(chain)
    snap = chain.snapshot()
    yield chain
    chain.revert(snap)


def _deployments(a: dict[str, Any], chain: Chain = Chain.BASE) -> dict[Chain, Any]:
    dep = DEFAULT_DEPLOYMENTS[chain].with_overrides(
        tokens={STABLE[chain]: a["token6"], "WETH": a["weth"]},
        swap_router02=a["router02"],
        across_spoke_pool=a["local_spoke"],
        token_messenger_v2=a["mock_cctp"],
    )
    return {chain: dep}


def _eth(chain: AnvilChain, who: str) -> int:
    return int(chain.rpc.call("eth_getBalance", who, "latest"), 16)


def _sign_and_send(chain: AnvilChain, key: str, txs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The wallet side: fill nonce and fees, sign each prepared transaction, send, wait for success."""
    receipts = []
    for tx in txs:
        sender = tx["from"]
        full = {
            "to": tx["to"], "value": int(tx["value"]), "data": tx["data"], "chainId": tx["chainId"], "type": 2,
            "nonce": int(chain.rpc.call("eth_getTransactionCount", sender, "pending"), 16),
            "maxPriorityFeePerGas": 10**6,
        }  # fmt: skip
        base_fee = int(chain.rpc.call("eth_getBlockByNumber", "latest", False)["baseFeePerGas"], 16)
        full["maxFeePerGas"] = 2 * base_fee + 10**6
        est = {"from": sender, "to": tx["to"], "value": hex(int(tx["value"])), "data": tx["data"]}
        full["gas"] = int(chain.rpc.call("eth_estimateGas", est), 16) * 12 // 10
        raw = Account.sign_transaction(full, key).raw_transaction
        h = chain.rpc.call("eth_sendRawTransaction", "0x" + raw.hex())
        receipt = None
        for _ in range(500):
            receipt = chain.rpc.call("eth_getTransactionReceipt", h)
            if receipt is not None:
                break
            time.sleep(0.01)
        assert receipt is not None and int(receipt["status"], 16) == 1, receipt
        receipts.append(receipt)
    return receipts


def _gas_paid(receipts: list[dict[str, Any]]) -> int:
    return sum(int(r["gasUsed"], 16) * int(r["effectiveGasPrice"], 16) for r in receipts)


def _wallet(chain: AnvilChain, a: dict[str, Any]) -> tuple[str, str]:
    acct = Account.create()
    chain.send(acct.address, "0x", value=10 * 10**18)
    chain.transact(a["token6"], "mint(address,uint256)", acct.address, 10_000 * 10**6)
    return acct.address, acct.key.hex()


def _prepare(chain: AnvilChain, a: dict[str, Any], route: str, wallets: dict[str, str], amount: int = 100) -> Any:
    block = chain.rpc.call("eth_getBlockByNumber", "latest", False)
    deps = _deployments(a, CHAINS_BY_ID[chain.chain_id])
    env = make_env(deps, start=datetime.fromtimestamp(int(block["timestamp"], 16), UTC))
    p = asyncio.run(prepare_route(env, route, amount, wallets=wallets))
    findings = verify_bundle(p.bundle, **{**p.verify_kwargs(), "deployments": deps})
    assert [f for f in findings if f.severity == "error"] == [], findings
    return p


def test_eth_to_usdc_swap_executes(swap_chain: AnvilChain) -> None:
    chain, a = swap_chain, swap_chain.addresses
    name, stable = CHAINS_BY_ID[chain.chain_id].value, STABLE[CHAINS_BY_ID[chain.chain_id]]
    who, key = _wallet(chain, a)
    fee_to = FEE_RECIPIENTS["evm"]
    p = _prepare(chain, a, f"{name}:ETH->{name}:{stable}", {name: who})
    action = p.bundle["unsigned_action"]
    input_base, fee, min_out = int(action["inputAmount"]), int(action["routeFee"]), int(action["minimumOutput"])
    assert fee == input_base // 10_000 > 0
    before = (_eth(chain, who), balance_of(chain, a["token6"], who), _eth(chain, fee_to), balance_of(chain, a["weth"], who))
    receipts = _sign_and_send(chain, key, action["transactions"])
    got_usdc = balance_of(chain, a["token6"], who) - before[1]
    assert got_usdc >= min_out
    assert _eth(chain, fee_to) - before[2] == fee
    assert before[0] - _eth(chain, who) == input_base + _gas_paid(receipts)  # exactly input + gas, nothing else
    assert balance_of(chain, a["weth"], who) == before[3] == 0
    assert _eth(chain, a["router02"]) == 0 and balance_of(chain, a["weth"], a["router02"]) == 0
    assert balance_of(chain, a["token6"], fee_to) == 0


def test_usdc_to_eth_swap_executes(swap_chain: AnvilChain) -> None:
    chain, a = swap_chain, swap_chain.addresses
    name, stable = CHAINS_BY_ID[chain.chain_id].value, STABLE[CHAINS_BY_ID[chain.chain_id]]
    who, key = _wallet(chain, a)
    fee_to = FEE_RECIPIENTS["evm"]
    p = _prepare(chain, a, f"{name}:{stable}->{name}:ETH", {name: who}, amount=250)
    action = p.bundle["unsigned_action"]
    input_base, fee, min_out = int(action["inputAmount"]), int(action["routeFee"]), int(action["minimumOutput"])
    before = (_eth(chain, who), balance_of(chain, a["token6"], who), balance_of(chain, a["token6"], fee_to))
    receipts = _sign_and_send(chain, key, action["transactions"])
    assert before[1] - balance_of(chain, a["token6"], who) == input_base
    assert balance_of(chain, a["token6"], fee_to) - before[2] == fee == input_base // 10_000
    received_eth = _eth(chain, who) - before[0] + _gas_paid(receipts)
    assert received_eth >= min_out
    (allowance,) = chain.call(a["token6"], "allowance(address,address)", ["uint256"], who, a["router02"])
    assert allowance == 0  # the exact approval was consumed
    assert _eth(chain, a["router02"]) == 0 and balance_of(chain, a["weth"], a["router02"]) == 0
    assert balance_of(chain, a["weth"], who) == 0


def test_stricter_caller_minimum_reverts_when_pool_cannot_meet_it(snapshot: AnvilChain, base_chain: dict[str, Any]) -> None:
    """amountOutMinimum is enforced on chain: a prepared swap whose minimum exceeds what the pool pays reverts."""
    chain, a = snapshot, base_chain
    who, key = _wallet(chain, a)
    p = _prepare(chain, a, "base:USDC->base:ETH", {"base": who})
    txs = p.bundle["unsigned_action"]["transactions"]
    from routequote.core.actions.evm import decode_call, encode_call

    call = decode_call(bytes.fromhex(txs[-1]["data"][2:]))
    assert call is not None
    inner = decode_call(bytes(call.args[1][0]))
    assert inner is not None
    params = list(inner.args[0])
    params[5] = params[5] * 2
    tampered = dict(txs[-1], data="0x" + encode_call("multicall", call.args[0], [encode_call("exactInputSingle", tuple(params)), call.args[1][1]]).hex())
    _sign_and_send(chain, key, txs[:-1])
    from _evm import RpcError

    with pytest.raises(RpcError):
        _sign_and_send(chain, key, [tampered])


def test_cross_chain_first_step_across_deposit_executes(snapshot: AnvilChain, base_chain: dict[str, Any]) -> None:
    chain, a = snapshot, base_chain
    who, key = _wallet(chain, a)
    rh = "0x3333333333333333333333333333333333333333"
    fee_to = FEE_RECIPIENTS["evm"]
    p = _prepare(chain, a, "base:USDC->robinhood:USDG", {"base": who, "robinhood": rh})
    action = p.bundle["unsigned_action"]
    input_base, fee, net = int(action["inputAmount"]), int(action["routeFee"]), int(action["netInputAmount"])
    step_min = int(p.quote["direct_route_summary"]["steps"][0]["minimum_output_base"])
    spoke = a["local_spoke"]
    before = (balance_of(chain, a["token6"], who), balance_of(chain, a["token6"], fee_to), balance_of(chain, a["token6"], spoke))
    receipts = _sign_and_send(chain, key, action["transactions"])
    assert before[0] - balance_of(chain, a["token6"], who) == input_base
    assert balance_of(chain, a["token6"], fee_to) - before[1] == fee == input_base // 10_000
    assert balance_of(chain, a["token6"], spoke) - before[2] == net
    logs = [lg for lg in receipts[-1]["logs"] if lg["topics"][0] == FUNDS_DEPOSITED]
    assert len(logs) == 1
    lg = logs[0]
    assert int(lg["topics"][1], 16) == 4663 and bytes.fromhex(lg["topics"][3][2:]) == address_to_bytes32(who)
    t_in, t_out, amt_in, amt_out, qts, fill_deadline, _excl, recipient, relayer, message = decode(
        ["bytes32", "bytes32", "uint256", "uint256", "uint32", "uint32", "uint32", "bytes32", "bytes32", "bytes"],
        bytes.fromhex(lg["data"][2:]),
    )
    assert amt_in == net and amt_out >= step_min and recipient == address_to_bytes32(rh)
    assert t_in == address_to_bytes32(a["token6"]) and relayer == bytes(32) and message == b""
    assert fill_deadline <= qts + 900


def test_cross_chain_first_step_cctp_calldata_accepted_by_v2_mock(snapshot: AnvilChain, base_chain: dict[str, Any]) -> None:
    chain, a = snapshot, base_chain
    who, key = _wallet(chain, a)
    fee_to = FEE_RECIPIENTS["evm"]
    p = _prepare(chain, a, "base:USDC->solana:USDC", {"base": who, "solana": SOLANA_WALLET})
    action = p.bundle["unsigned_action"]
    fee, net = int(action["routeFee"]), int(action["netInputAmount"])
    before = (balance_of(chain, a["token6"], who), balance_of(chain, a["token6"], fee_to))
    _sign_and_send(chain, key, action["transactions"])
    assert balance_of(chain, a["token6"], fee_to) - before[1] == fee
    assert before[0] - balance_of(chain, a["token6"], who) == fee  # the mock records the burn, moves no tokens
    call = chain.call(a["mock_cctp"], "lastDepositForBurnCall()",
                      ["uint256", "uint32", "bytes32", "address", "bytes32", "uint256", "uint32"])  # fmt: skip
    amount, domain, mint_recipient, burn_token, dest_caller, max_fee, finality = call
    assert (amount, domain, finality) == (net, 5, 1000)
    assert burn_token.lower() == a["token6"].lower() and dest_caller == bytes(32) and 0 < max_fee < amount
    from routequote.core.assets import ASSETS

    assert mint_recipient == bytes(associated_token_address(SOLANA_WALLET, ASSETS["solana:USDC"]))
    (allowance,) = chain.call(a["token6"], "allowance(address,address)", ["uint256"], who, a["mock_cctp"])
    assert allowance == net
