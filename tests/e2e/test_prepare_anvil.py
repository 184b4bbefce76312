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
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from _evm import AnvilChain, balance_of
from _evm import deploy_all as _deploy_all
from _evm import sign_and_send as _sign_and_send
from eth_abi import decode
from eth_account import Account
from eth_utils import keccak
from tests.unit.actions.support import FEE_RECIPIENTS, SOLANA_WALLET, make_env, prepare_route

from routequote.core.actions.common import address_to_bytes32, associated_token_address
from routequote.core.actions.evm import DEFAULT_DEPLOYMENTS
from routequote.core.assets import Chain
from routequote.verify import verify_bundle

pytestmark = pytest.mark.chain
CHAIN_ID = 8453
FUNDS_DEPOSITED = (
    "0x"
    + keccak(
        text="FundsDeposited(bytes32,bytes32,uint256,uint256,uint256,uint256,uint32,uint32,uint32,bytes32,bytes32,bytes32,bytes)"
    ).hex()
)


CHAINS_BY_ID = {8453: Chain.BASE, 42161: Chain.ARBITRUM, 4663: Chain.ROBINHOOD}
STABLE = {
    Chain.BASE: "USDC",
    Chain.ARBITRUM: "USDC",
    Chain.ROBINHOOD: "USDG",
}  # the 6-decimals token6 plays it


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
def swap_chain(
    request: pytest.FixtureRequest, anvil_factory: Callable[[int], AnvilChain]
) -> Iterator[AnvilChain]:
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


def _gas_paid(receipts: list[dict[str, Any]]) -> int:
    return sum(int(r["gasUsed"], 16) * int(r["effectiveGasPrice"], 16) for r in receipts)


def _wallet(chain: AnvilChain, a: dict[str, Any]) -> tuple[str, str]:
    acct = Account.create()
    chain.send(acct.address, "0x", value=10 * 10**18)
    chain.transact(a["token6"], "mint(address,uint256)", acct.address, 10_000 * 10**6)
    return acct.address, acct.key.hex()


def _prepare(
    chain: AnvilChain, a: dict[str, Any], route: str, wallets: dict[str, str], amount: int = 100
) -> Any:
    block = chain.rpc.call("eth_getBlockByNumber", "latest", False)
    deps = _deployments(a, CHAINS_BY_ID[chain.chain_id])
    env = make_env(deps, start=datetime.fromtimestamp(int(block["timestamp"], 16), UTC))
    p = asyncio.run(prepare_route(env, route, amount, wallets=wallets))
    findings = verify_bundle(p.bundle, **{**p.verify_kwargs(), "deployments": deps})
    assert [f for f in findings if f.severity == "error"] == [], findings
    # priced from the embedded snapshot: the receipt says so and the default verifier refuses it
    assert p.bundle["unsigned_action"]["safety_receipt"]["bounds"]["basis"] == "modelled"
    strict = {**p.verify_kwargs(), "deployments": deps, "accept_modelled_bounds": False}
    assert [f.code for f in verify_bundle(p.bundle, **strict) if f.severity == "error"] == [
        "bounds_modelled_not_live"
    ]
    return p


def test_eth_to_usdc_swap_executes(swap_chain: AnvilChain) -> None:
    chain, a = swap_chain, swap_chain.addresses
    name, stable = CHAINS_BY_ID[chain.chain_id].value, STABLE[CHAINS_BY_ID[chain.chain_id]]
    who, key = _wallet(chain, a)
    fee_to = FEE_RECIPIENTS["evm"]
    p = _prepare(chain, a, f"{name}:ETH->{name}:{stable}", {name: who})
    action = p.bundle["unsigned_action"]
    input_base, fee, min_out = (
        int(action["inputAmount"]),
        int(action["routeFee"]),
        int(action["minimumOutput"]),
    )
    assert fee == input_base // 10_000 > 0
    before = (
        _eth(chain, who),
        balance_of(chain, a["token6"], who),
        _eth(chain, fee_to),
        balance_of(chain, a["weth"], who),
    )
    receipts = _sign_and_send(chain, key, action["transactions"])
    got_usdc = balance_of(chain, a["token6"], who) - before[1]
    assert got_usdc >= min_out
    assert _eth(chain, fee_to) - before[2] == fee
    assert before[0] - _eth(chain, who) == input_base + _gas_paid(
        receipts
    )  # exactly input + gas, nothing else
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
    input_base, fee, min_out = (
        int(action["inputAmount"]),
        int(action["routeFee"]),
        int(action["minimumOutput"]),
    )
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


def test_stricter_caller_minimum_reverts_when_pool_cannot_meet_it(
    snapshot: AnvilChain, base_chain: dict[str, Any]
) -> None:
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
    tampered = dict(
        txs[-1],
        data="0x"
        + encode_call(
            "multicall", call.args[0], [encode_call("exactInputSingle", tuple(params)), call.args[1][1]]
        ).hex(),
    )
    _sign_and_send(chain, key, txs[:-1])
    from _evm import RpcError

    with pytest.raises(RpcError):
        _sign_and_send(chain, key, [tampered])


def test_cross_chain_first_step_across_deposit_executes(
    snapshot: AnvilChain, base_chain: dict[str, Any]
) -> None:
    chain, a = snapshot, base_chain
    who, key = _wallet(chain, a)
    rh = "0x3333333333333333333333333333333333333333"
    fee_to = FEE_RECIPIENTS["evm"]
    p = _prepare(chain, a, "base:USDC->robinhood:USDG", {"base": who, "robinhood": rh})
    action = p.bundle["unsigned_action"]
    input_base, fee, net = int(action["inputAmount"]), int(action["routeFee"]), int(action["netInputAmount"])
    step_min = int(p.quote["direct_route_summary"]["steps"][0]["minimum_output_base"])
    spoke = a["local_spoke"]
    before = (
        balance_of(chain, a["token6"], who),
        balance_of(chain, a["token6"], fee_to),
        balance_of(chain, a["token6"], spoke),
    )
    receipts = _sign_and_send(chain, key, action["transactions"])
    assert before[0] - balance_of(chain, a["token6"], who) == input_base
    assert balance_of(chain, a["token6"], fee_to) - before[1] == fee == input_base // 10_000
    assert balance_of(chain, a["token6"], spoke) - before[2] == net
    logs = [lg for lg in receipts[-1]["logs"] if lg["topics"][0] == FUNDS_DEPOSITED]
    assert len(logs) == 1
    lg = logs[0]
    assert int(lg["topics"][1], 16) == 4663 and bytes.fromhex(lg["topics"][3][2:]) == address_to_bytes32(who)
    t_in, t_out, amt_in, amt_out, qts, fill_deadline, _excl, recipient, relayer, message = decode(
        [
            "bytes32",
            "bytes32",
            "uint256",
            "uint256",
            "uint32",
            "uint32",
            "uint32",
            "bytes32",
            "bytes32",
            "bytes",
        ],
        bytes.fromhex(lg["data"][2:]),
    )
    assert amt_in == net and amt_out >= step_min and recipient == address_to_bytes32(rh)
    assert t_in == address_to_bytes32(a["token6"]) and relayer == bytes(32) and message == b""
    assert fill_deadline <= qts + 900


def test_cross_chain_first_step_cctp_calldata_accepted_by_v2_mock(
    snapshot: AnvilChain, base_chain: dict[str, Any]
) -> None:
    chain, a = snapshot, base_chain
    who, key = _wallet(chain, a)
    fee_to = FEE_RECIPIENTS["evm"]
    p = _prepare(chain, a, "base:USDC->solana:USDC", {"base": who, "solana": SOLANA_WALLET})
    action = p.bundle["unsigned_action"]
    fee, net = int(action["routeFee"]), int(action["netInputAmount"])
    before = (balance_of(chain, a["token6"], who), balance_of(chain, a["token6"], fee_to))
    _sign_and_send(chain, key, action["transactions"])
    assert balance_of(chain, a["token6"], fee_to) - before[1] == fee
    assert (
        before[0] - balance_of(chain, a["token6"], who) == fee
    )  # the mock records the burn, moves no tokens
    call = chain.call(
        a["mock_cctp"],
        "lastDepositForBurnCall()",
        ["uint256", "uint32", "bytes32", "address", "bytes32", "uint256", "uint32"],
    )
    amount, domain, mint_recipient, burn_token, dest_caller, max_fee, finality = call
    assert (amount, domain, finality) == (net, 5, 1000)
    assert burn_token.lower() == a["token6"].lower() and dest_caller == bytes(32) and 0 < max_fee < amount
    from routequote.core.assets import ASSETS

    assert mint_recipient == bytes(associated_token_address(SOLANA_WALLET, ASSETS["solana:USDC"]))
    (allowance,) = chain.call(a["token6"], "allowance(address,address)", ["uint256"], who, a["mock_cctp"])
    assert allowance == net
