"""The v1 corridor's destination settlement executed on a local chain (anvil, chain id 8453).

EntryPoint v0.7 and SimpleAccountFactory come from the `@account-abstraction/contracts@0.7.0` npm artifacts
(`npm pack` into `tests/e2e/.npm-cache/packs`, never committed); the EntryPoint's code is placed at its
canonical address, so the builder's default is what runs. USDC is `standins/UsdcPermitStandIn.sol` (6
decimals, EIP-2612 permit under USDC's domain), compiled with solc-js; Uniswap v3 (factory, position manager,
SwapRouter02, WETH9) is deployed as in the prepare tests, with a WETH / stand-in USDC pool at the snapshot
price. The test plays the wallet (it signs the permit and the userOpHash with a throwaway key) and the bundler
(`handleOps` from another account); the service side only builds the plan. The mined transaction is read back
by the production `JsonRpcEvmReader` and judged by `verify_userop_settlement`.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import tarfile
from collections.abc import Callable, Iterator
from dataclasses import replace
from math import isqrt
from typing import Any

import httpx
import pytest
from _evm import (
    CACHE,
    ETH_PRICE_USDC,
    FEE,
    MAX_UINT256,
    AnvilChain,
    ToolchainUnavailable,
    calldata,
    deploy_all,
    deploy_raw,
)
from _sessions import compile_standins
from eth_abi import decode
from eth_account import Account
from eth_account.messages import encode_defunct, encode_typed_data

from routequote.core.actions import erc4337 as aa
from routequote.core.sessions.evidence import ObservationRejected
from routequote.core.sessions.evidence_4337 import verify_userop_settlement
from routequote.observe.evm import JsonRpcEvmReader
from routequote.ports import EvmTransaction
from routequote.verify import verify_settlement_plan

pytestmark = pytest.mark.chain
CHAIN_ID = 8453
AA_PKG = "@account-abstraction/contracts@0.7.0"
AA_TGZ = "account-abstraction-contracts-0.7.0.tgz"
AA_ARTIFACTS = ("EntryPoint", "SimpleAccountFactory", "SimpleAccount")
USDC_IN = 250_000_000  # 250 USDC, as if minted by CCTP


def aa_artifacts() -> dict[str, dict[str, Any]]:
    """{name: {abi, bytecode}} from the npm tarball of @account-abstraction/contracts 0.7.0."""
    packs = CACHE / "packs"
    tgz = packs / AA_TGZ
    if not tgz.exists():
        npm = shutil.which("npm")
        if npm is None or shutil.which("node") is None:
            raise ToolchainUnavailable("node/npm not found on PATH: cannot fetch the ERC-4337 artifacts")
        packs.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(
            [npm, "pack", "--cache", str(CACHE / "npm"), AA_PKG],
            cwd=packs,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if proc.returncode != 0 or not tgz.exists():
            raise ToolchainUnavailable(f"npm pack {AA_PKG} failed (offline?): {proc.stderr.strip()[-300:]}")
    out = {}
    with tarfile.open(tgz) as tf:
        for name in AA_ARTIFACTS:
            f = tf.extractfile(f"package/artifacts/{name}.json")
            assert f is not None, name
            data = json.loads(f.read())
            out[name] = {"abi": data["abi"], "bytecode": data["bytecode"]}
    return out


def _eth(chain: AnvilChain, who: str) -> int:
    return int(chain.rpc.call("eth_getBalance", who, "latest"), 16)


def _eth_call(chain: AnvilChain, req: dict[str, str]) -> bytes:
    return bytes.fromhex(chain.rpc.call("eth_call", req, "latest")[2:])


def _now(chain: AnvilChain) -> int:
    return int(chain.rpc.call("eth_getBlockByNumber", "latest", False)["timestamp"], 16)


@pytest.fixture(scope="module")
def aa_chain(anvil_factory: Callable[[int], AnvilChain]) -> Iterator[dict[str, Any]]:
    chain = anvil_factory(CHAIN_ID)
    deploy_all(chain)
    try:
        standins = compile_standins()
        arts = aa_artifacts()
    except ToolchainUnavailable as e:
        pytest.skip(f"ERC-4337 toolchain unavailable: {e}")
    module_snap = chain.snapshot()
    a = dict(chain.addresses)
    built = deploy_raw(chain, arts["EntryPoint"], [])
    assert (
        chain.rpc.call("anvil_setCode", aa.ENTRY_POINT_V07, chain.rpc.call("eth_getCode", built, "latest"))
        is None
    )
    a["entry_point"] = aa.ENTRY_POINT_V07
    a["aa_factory"] = deploy_raw(chain, arts["SimpleAccountFactory"], ["address"], aa.ENTRY_POINT_V07)
    usdc = a["usdc"] = deploy_raw(chain, standins["UsdcPermitStandIn"], [])
    weth, me = a["weth"], chain.deployer
    chain.transact(usdc, "mint(address,uint256)", me, 10**9 * 10**6)
    chain.send(weth, calldata("deposit()"), value=1000 * 10**18)
    for tok in (usdc, weth):
        chain.transact(tok, "approve(address,uint256)", a["npm"], MAX_UINT256)
    t0, t1 = sorted((weth, usdc), key=lambda x: int(x, 16))
    num, den = (ETH_PRICE_USDC, 10**18) if t0 == weth else (10**18, ETH_PRICE_USDC)
    chain.transact(
        a["npm"],
        "createAndInitializePoolIfNecessary(address,address,uint24,uint160)",
        t0,
        t1,
        FEE,
        isqrt(num * (1 << 192) // den),
    )
    amt_weth, amt_usdc = 500 * 10**18, 500 * ETH_PRICE_USDC
    amounts = (amt_weth, amt_usdc) if t0 == weth else (amt_usdc, amt_weth)
    chain.transact(
        a["npm"],
        "mint((address,address,uint24,int24,int24,uint256,uint256,uint256,uint256,address,uint256))",
        (t0, t1, FEE, -887270, 887270, amounts[0], amounts[1], 0, 0, me, 2**40),
    )
    yield {"chain": chain, "a": a, "arts": arts}
    chain.revert(module_snap)


@pytest.fixture
def env(aa_chain: dict[str, Any]) -> Iterator[dict[str, Any]]:
    chain: AnvilChain = aa_chain["chain"]
    snap = chain.snapshot()
    yield aa_chain
    chain.revert(snap)


def _wallet(chain: AnvilChain, a: dict[str, Any]) -> tuple[str, str]:
    """A fresh destination wallet holding only the 'minted' USDC: no ETH at all."""
    acct = Account.create()
    chain.transact(a["usdc"], "mint(address,uint256)", acct.address, USDC_IN)
    return acct.address, acct.key.hex()


def _minimum(amount: int, slippage_bps: int = 200) -> int:
    return amount * 10**18 // ETH_PRICE_USDC * (10_000 - slippage_bps) // 10_000


def _plan(
    chain: AnvilChain, a: dict[str, Any], wallet: str, *, minimum: int, salt: int = 0
) -> dict[str, Any]:
    """The service side: caller-side reads, then the builder."""
    account = aa.decode_address(_eth_call(chain, aa.account_address_call(a["aa_factory"], wallet, salt)))
    deployed = chain.rpc.call("eth_getCode", account, "latest") not in ("0x", "0x0")
    nonce = aa.decode_uint(_eth_call(chain, aa.entry_point_nonce_call(aa.ENTRY_POINT_V07, account)))
    permit_nonce = aa.decode_uint(_eth_call(chain, aa.permit_nonce_call(a["usdc"], wallet)))
    req = aa.SettlementRequest(
        chain_id=CHAIN_ID,
        wallet=wallet,
        smart_account=account,
        account_deployed=deployed,
        entry_point_nonce=nonce,
        permit_nonce=permit_nonce,
        usdc=a["usdc"],
        weth=a["weth"],
        router=a["router02"],
        pool_fee=FEE,
        amount_in=USDC_IN,
        minimum_eth_out=minimum,
        now_unix=_now(chain),
        factory=a["aa_factory"],
        salt=salt,
    )
    return aa.build_settlement_plan(req)


def _sign_and_bundle(
    chain: AnvilChain, plan: dict[str, Any], key: str, *, prefund: bool = True
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The wallet signs the permit, then the userOpHash; the test as bundler submits handleOps. Returns
    (the signed plan, the bundler's receipt)."""
    permit_sig = Account.sign_message(
        encode_typed_data(full_message=plan["permit"]["typedData"]), key
    ).signature
    signed = aa.attach_permit_signature(plan, permit_sig)
    op_hash = bytes.fromhex(signed["userOpHash"][2:])
    owner_sig = Account.sign_message(encode_defunct(primitive=op_hash), key).signature
    op = aa.packed_user_operation(signed, owner_sig)
    # the EntryPoint's own getUserOpHash agrees with the plan's
    (on_chain,) = decode(
        ["bytes32"],
        _eth_call(
            chain, {"to": aa.ENTRY_POINT_V07, "data": calldata(f"getUserOpHash({aa.PACKED_USER_OP})", op)}
        ),
    )
    assert on_chain == op_hash
    if prefund:  # no paymaster: the account pays its gas, at most maxGasCostWei
        chain.send(signed["smartAccount"], "0x", value=int(plan["bounds"]["maxGasCostWei"]))
    bundler = chain.accounts[1]
    data = aa.handle_ops_call_data([op], bundler)
    receipt = chain.send(aa.ENTRY_POINT_V07, "0x" + data.hex(), sender=bundler, gas=5_000_000)
    return signed, receipt


def _read_back(chain: AnvilChain, tx_hash: str) -> EvmTransaction:
    async def go() -> EvmTransaction | None:
        async with httpx.AsyncClient() as client:
            return await JsonRpcEvmReader({"base": chain.url}, client, timeout=5).transaction("base", tx_hash)

    tx = asyncio.run(go())
    assert tx is not None
    return tx


def _evidence(tx: EvmTransaction, plan: dict[str, Any], a: dict[str, Any]) -> Any:
    return verify_userop_settlement(
        tx,
        plan=plan,
        entry_point=aa.ENTRY_POINT_V07,
        account=plan["smartAccount"],
        wallet=plan["wallet"],
        weth=a["weth"],
        minimum_eth_out=int(plan["bounds"]["minimumEthOut"]),
        required_confirmations=1,
    )


def test_settlement_user_operation_executes_and_is_verified(env: dict[str, Any]) -> None:
    chain, a = env["chain"], env["a"]
    wallet, key = _wallet(chain, a)
    minimum = _minimum(USDC_IN)
    plan = _plan(chain, a, wallet, minimum=minimum)
    account = plan["smartAccount"]
    assert plan["accountDeployed"] is False and plan["userOperation"]["initCode"] != "0x"
    kwargs = dict(
        wallet=wallet,
        smart_account=account,
        chain_id=CHAIN_ID,
        entry_point=aa.ENTRY_POINT_V07,
        usdc=a["usdc"],
        router=a["router02"],
        weth=a["weth"],
        minimum_eth_out=minimum,
        now_unix=_now(chain),
        amount_in=USDC_IN,
        factory=a["aa_factory"],
        salt=0,
    )
    assert verify_settlement_plan(plan, **kwargs) == []
    eth_before = _eth(chain, wallet)
    assert eth_before == 0
    signed, receipt = _sign_and_bundle(chain, plan, key)
    assert verify_settlement_plan(signed, **kwargs) == []  # the signed plan verifies too
    received = _eth(chain, wallet) - eth_before  # the wallet paid no gas: the account did
    tx = _read_back(chain, receipt["transactionHash"])
    ev = _evidence(tx, plan, a)  # held against the plan as stored, before the permit signature
    assert ev.status == "final"
    assert ev.actual_output_base == received >= minimum
    assert ev.actual_input_base == USDC_IN
    assert ev.bridge is not None and ev.bridge["user_op_hash"] == signed["userOpHash"]
    assert 0 < ev.network_fee["wei"] <= int(plan["bounds"]["maxGasCostWei"])
    # exactly the amount moved, nothing stays behind
    (usdc_left,) = chain.call(a["usdc"], "balanceOf(address)", ["uint256"], wallet)
    (usdc_account,) = chain.call(a["usdc"], "balanceOf(address)", ["uint256"], account)
    (allowance,) = chain.call(a["usdc"], "allowance(address,address)", ["uint256"], account, a["router02"])
    assert (usdc_left, usdc_account, allowance) == (0, 0, 0)
    assert _eth(chain, a["router02"]) == 0
    (owner,) = chain.call(account, "owner()", ["address"])
    assert owner.lower() == wallet.lower()  # the counterfactual account was deployed, owned by the wallet
    # the same bundle named again is the same evidence; with more confirmations required it is pending
    assert _evidence(_read_back(chain, receipt["transactionHash"]), signed, a) == ev
    pending = verify_userop_settlement(
        tx,
        plan=plan,
        entry_point=aa.ENTRY_POINT_V07,
        account=account,
        wallet=wallet,
        weth=a["weth"],
        minimum_eth_out=minimum,
        required_confirmations=tx.confirmations + 5,
    )
    assert pending.status == "pending"


def test_second_settlement_from_a_deployed_account(env: dict[str, Any]) -> None:
    """Once deployed, the plan has no initCode and the next EntryPoint nonce; the permit nonce moved on."""
    chain, a = env["chain"], env["a"]
    wallet, key = _wallet(chain, a)
    first = _plan(chain, a, wallet, minimum=_minimum(USDC_IN))
    _sign_and_bundle(chain, first, key)
    chain.transact(a["usdc"], "mint(address,uint256)", wallet, USDC_IN)
    second = _plan(chain, a, wallet, minimum=_minimum(USDC_IN))
    assert second["accountDeployed"] is True and second["userOperation"]["initCode"] == "0x"
    assert int(second["userOperation"]["nonce"], 16) == 1 and second["bounds"]["permitNonce"] == "1"
    before = _eth(chain, wallet)
    _signed, receipt = _sign_and_bundle(chain, second, key)
    ev = _evidence(_read_back(chain, receipt["transactionHash"]), second, a)
    assert ev.actual_output_base == _eth(chain, wallet) - before >= _minimum(USDC_IN)


def test_user_operation_whose_call_data_differs_from_the_plan_is_refused(env: dict[str, Any]) -> None:
    """The wallet is talked into signing an operation with a lowered minimum: it executes on chain, but it is
    not the prepared plan, so the step is not proven."""
    chain, a = env["chain"], env["a"]
    wallet, key = _wallet(chain, a)
    plan = _plan(chain, a, wallet, minimum=_minimum(USDC_IN))
    lowered = _plan(chain, a, wallet, minimum=1)
    _signed, receipt = _sign_and_bundle(chain, lowered, key)
    assert _eth(chain, wallet) >= _minimum(USDC_IN)  # it did execute
    tx = _read_back(chain, receipt["transactionHash"])
    with pytest.raises(ObservationRejected) as err:
        _evidence(tx, plan, a)
    assert err.value.reason_class == "observation_not_prepared_action"
    assert "callData differs" in err.value.message
    # and the caller-side verifier refuses the lowered plan before anything is signed
    codes = {
        f.code
        for f in verify_settlement_plan(
            lowered,
            wallet=wallet,
            smart_account=plan["smartAccount"],
            chain_id=CHAIN_ID,
            entry_point=aa.ENTRY_POINT_V07,
            usdc=a["usdc"],
            router=a["router02"],
            weth=a["weth"],
            minimum_eth_out=_minimum(USDC_IN),
            now_unix=_now(chain),
        )
    }
    assert "settlement_minimum_below_yours" in codes


def test_user_operation_that_reverts_in_execution_is_refused(env: dict[str, Any]) -> None:
    """A minimum the pool cannot meet: handleOps succeeds, the operation's execution reverts (success = false,
    the account still pays gas), nothing reaches the wallet, and the evidence says observation_reverted."""
    chain, a = env["chain"], env["a"]
    wallet, key = _wallet(chain, a)
    greedy = _plan(chain, a, wallet, minimum=USDC_IN * 10**18 // ETH_PRICE_USDC * 2)
    _signed, receipt = _sign_and_bundle(chain, greedy, key)
    assert _eth(chain, wallet) == 0
    (usdc_left,) = chain.call(a["usdc"], "balanceOf(address)", ["uint256"], wallet)
    assert usdc_left == USDC_IN  # the whole batch reverted, the permit and transfer too
    with pytest.raises(ObservationRejected) as err:
        _evidence(_read_back(chain, receipt["transactionHash"]), greedy, a)
    assert err.value.reason_class == "observation_reverted"


def test_plan_with_the_wrong_chain_is_refused_by_the_evidence(env: dict[str, Any]) -> None:
    chain, a = env["chain"], env["a"]
    wallet, key = _wallet(chain, a)
    plan = _plan(chain, a, wallet, minimum=_minimum(USDC_IN))
    _signed, receipt = _sign_and_bundle(chain, plan, key)
    tx = replace(_read_back(chain, receipt["transactionHash"]), chain_id=42161)
    with pytest.raises(ObservationRejected) as err:
        _evidence(tx, plan, a)
    assert err.value.reason_class == "observation_wrong_chain"
