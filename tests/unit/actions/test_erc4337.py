"""The ERC-4337 settlement plan (routequote.core.actions.erc4337): golden hashes computed by hand, the permit
digest against eth_account's EIP-712 encoder, the callData decoded call by call, the caller-side verifier
(`verify_settlement_plan`) refusing each tampered bound, and the evidence check
(`verify_userop_settlement`) on synthetic mined transactions."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import pytest
from eth_abi import decode, encode
from eth_account import Account
from eth_account.messages import encode_defunct, encode_typed_data
from eth_utils import keccak, to_checksum_address

from routequote.core.actions import erc4337 as aa
from routequote.core.actions.common import ActionUnavailable
from routequote.core.actions.evm import ROUTER_ADDRESS_THIS, decode_call, encode_call
from routequote.core.sessions.evidence import TOPIC0, ObservationRejected
from routequote.core.sessions.evidence_4337 import TOPIC0_4337, verify_userop_settlement
from routequote.ports import EvmLog, EvmTransaction
from routequote.verify import verify_settlement_plan

OWNER = Account.from_key("0x" + keccak(text="routequote erc4337 unit test owner").hex())
WALLET = OWNER.address
ACCOUNT = "0xA11cea11CEA11CEA11cEa11CeA11ceA11CEA11Ce"
USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
WETH = "0x4200000000000000000000000000000000000006"
ROUTER = "0x2626664c2603336E57B271c5C0b26F421741e481"
NOW = 1_790_000_000
AMOUNT = 99_876_543  # 99.876543 USDC
MIN_OUT = 31_000_000_000_000_000  # 0.031 ETH


def request(**changes: Any) -> aa.SettlementRequest:
    base = aa.SettlementRequest(
        chain_id=8453,
        wallet=WALLET,
        smart_account=ACCOUNT,
        account_deployed=False,
        entry_point_nonce=0,
        permit_nonce=3,
        usdc=USDC,
        weth=WETH,
        router=ROUTER,
        pool_fee=500,
        amount_in=AMOUNT,
        minimum_eth_out=MIN_OUT,
        now_unix=NOW,
        deadline_unix=NOW + 240,
        salt=7,
    )
    return replace(base, **changes)


def verify_kwargs(**changes: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "wallet": WALLET,
        "smart_account": ACCOUNT,
        "chain_id": 8453,
        "entry_point": aa.ENTRY_POINT_V07,
        "usdc": USDC,
        "router": ROUTER,
        "weth": WETH,
        "minimum_eth_out": MIN_OUT,
        "now_unix": NOW + 5,
        "amount_in": AMOUNT,
        "factory": aa.SIMPLE_ACCOUNT_FACTORY_V07,
        "salt": 7,
    }
    out.update(changes)
    return out


def sign_permit(plan: dict[str, Any]) -> str:
    signed = Account.sign_message(encode_typed_data(full_message=plan["permit"]["typedData"]), OWNER.key)
    return "0x" + signed.signature.hex()


def signed_plan(**changes: Any) -> dict[str, Any]:
    plan = aa.build_settlement_plan(request(**changes))
    return aa.attach_permit_signature(plan, sign_permit(plan))


def errors(findings: list[Any]) -> set[str]:
    return {f.code for f in findings if f.severity == "error"}


def word(x: int | bytes | str) -> bytes:
    if isinstance(x, str):
        return bytes.fromhex(x[2:]).rjust(32, b"\x00")
    if isinstance(x, bytes):
        assert len(x) == 32
        return x
    return x.to_bytes(32, "big")


# ---- golden --------------------------------------------------------------------------------------------


def test_user_op_hash_matches_a_hand_computation() -> None:
    plan = signed_plan()
    op = plan["userOperation"]
    init, data = bytes.fromhex(op["initCode"][2:]), bytes.fromhex(op["callData"][2:])
    # abi.encode of static words is plain concatenation of 32-byte words: done by hand, no eth_abi
    inner = keccak(
        word(ACCOUNT)
        + word(0)
        + keccak(init)
        + keccak(data)
        + bytes.fromhex(op["accountGasLimits"][2:])
        + word(int(op["preVerificationGas"], 16))
        + bytes.fromhex(op["gasFees"][2:])
        + keccak(b"")
    )
    want = keccak(inner + word(aa.ENTRY_POINT_V07) + word(8453))
    assert plan["userOpHash"] == "0x" + want.hex()
    # the packed gas words: verification ‖ call and priority ‖ max fee, 128 bits each
    gas = aa.DEFAULT_GAS
    assert (
        op["accountGasLimits"]
        == "0x" + (gas.verification_gas_limit << 128 | gas.call_gas_limit).to_bytes(32, "big").hex()
    )
    assert (
        op["gasFees"]
        == "0x" + (gas.max_priority_fee_per_gas << 128 | gas.max_fee_per_gas).to_bytes(32, "big").hex()
    )
    # a different chain id or EntryPoint gives another hash
    view = aa.PlanView.parse(plan)
    assert aa.user_op_hash(**{**_hash_fields(view, data), "chain_id": 42161}) != want
    assert aa.user_op_hash(**_hash_fields(view, data)) == want


def _hash_fields(view: aa.PlanView, data: bytes) -> dict[str, Any]:
    return dict(
        sender=view.sender,
        nonce=view.nonce,
        init_code=view.init_code,
        call_data=data,
        account_gas_limits=view.account_gas_limits,
        pre_verification_gas=view.pre_verification_gas,
        gas_fees=view.gas_fees,
        paymaster_and_data=b"",
        entry_point=view.entry_point,
        chain_id=view.chain_id,
    )


def test_permit_digest_is_the_eip712_hash_and_the_wallet_signs_it() -> None:
    plan = aa.build_settlement_plan(request())
    typed = plan["permit"]["typedData"]
    assert typed["domain"] == {"name": "USD Coin", "version": "2", "chainId": 8453, "verifyingContract": USDC}
    assert typed["message"] == {
        "owner": WALLET,
        "spender": ACCOUNT,
        "value": str(AMOUNT),
        "nonce": "3",
        "deadline": str(NOW + 240),
    }
    signable = encode_typed_data(full_message=typed)
    eip712 = keccak(b"\x19" + signable.version + signable.header + signable.body)
    assert plan["permit"]["digest"] == "0x" + eip712.hex()
    # and by hand: domain separator and struct hash of the published type strings
    domain = keccak(
        keccak(text="EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)")
        + keccak(text="USD Coin")
        + keccak(text="2")
        + word(8453)
        + word(USDC)
    )
    struct = keccak(
        keccak(text="Permit(address owner,address spender,uint256 value,uint256 nonce,uint256 deadline)")
        + word(WALLET)
        + word(ACCOUNT)
        + word(AMOUNT)
        + word(3)
        + word(NOW + 240)
    )
    assert eip712 == keccak(b"\x19\x01" + domain + struct)
    sig = sign_permit(plan)
    assert Account._recover_hash(eip712, signature=bytes.fromhex(sig[2:])) == WALLET


def test_call_data_decodes_to_the_four_bounded_calls() -> None:
    plan = signed_plan()
    data = bytes.fromhex(plan["userOperation"]["callData"][2:])
    assert data[:4] == keccak(text="executeBatch(address[],uint256[],bytes[])")[:4]
    dest, values, funcs = decode(["address[]", "uint256[]", "bytes[]"], data[4:])
    assert [to_checksum_address(d) for d in dest] == [USDC, USDC, USDC, ROUTER]
    assert list(values) == [0, 0, 0, 0]
    permit = decode(["address", "address", "uint256", "uint256", "uint8", "bytes32", "bytes32"], funcs[0][4:])
    sig = bytes.fromhex(plan["permit"]["signature"][2:])
    assert funcs[0][:4] == keccak(text="permit(address,address,uint256,uint256,uint8,bytes32,bytes32)")[:4]
    assert (to_checksum_address(permit[0]), to_checksum_address(permit[1]), permit[2], permit[3]) == (
        WALLET,
        ACCOUNT,
        AMOUNT,
        NOW + 240,
    )
    assert (permit[4], permit[5], permit[6]) == (sig[64], sig[:32], sig[32:64])
    assert funcs[1][:4] == keccak(text="transferFrom(address,address,uint256)")[:4]
    assert decode(["address", "address", "uint256"], funcs[1][4:]) == (
        WALLET.lower(),
        ACCOUNT.lower(),
        AMOUNT,
    )
    approve = decode_call(funcs[2])
    assert approve is not None and approve.name == "approve" and approve.args == (ROUTER.lower(), AMOUNT)
    multicall = decode_call(funcs[3])
    assert multicall is not None and multicall.name == "multicall" and multicall.args[0] == NOW + 240
    swap, unwrap = (decode_call(bytes(c)) for c in multicall.args[1])
    assert swap is not None and swap.name == "exactInputSingle"
    assert swap.args[0] == (USDC.lower(), WETH.lower(), 500, ROUTER_ADDRESS_THIS, AMOUNT, MIN_OUT, 0)
    assert unwrap is not None and unwrap.name == "unwrapWETH9" and unwrap.args == (MIN_OUT, WALLET.lower())
    # the counterfactual account: initCode = factory ‖ createAccount(wallet, salt)
    init = bytes.fromhex(plan["userOperation"]["initCode"][2:])
    assert init[:20] == bytes.fromhex(aa.SIMPLE_ACCOUNT_FACTORY_V07[2:])
    assert init[20:24] == keccak(text="createAccount(address,uint256)")[:4]
    assert decode(["address", "uint256"], init[24:]) == (WALLET.lower(), 7)
    assert aa.build_settlement_plan(request(account_deployed=True))["userOperation"]["initCode"] == "0x"


def test_bounds_are_stated_and_nothing_is_signed_by_the_service() -> None:
    plan = aa.build_settlement_plan(request())
    b = plan["bounds"]
    assert (b["exactUsdcIn"], b["minimumEthOut"], b["ethRecipient"]) == (str(AMOUNT), str(MIN_OUT), WALLET)
    assert b["permitDeadline"] == b["swapDeadline"] == b["validUntil"] == NOW + 240
    assert b["targets"] == [USDC, ROUTER] and b["serviceFee"] == "0"
    g = aa.DEFAULT_GAS
    assert int(b["maxGasCostWei"]) == g.max_fee_per_gas * (
        g.verification_gas_limit + g.call_gas_limit + g.pre_verification_gas
    )
    assert plan["userOperation"]["callData"] is None and plan["userOpHash"] is None
    assert plan["userOperation"]["signature"] is None and plan["permit"]["signature"] is None
    assert plan["serverSigning"] is False and plan["serverSubmission"] is False
    assert aa.build_settlement_plan(request(deadline_unix=None))["bounds"]["permitDeadline"] == NOW + 300


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"deadline_unix": NOW + 301}, "permit_deadline_out_of_bounds"),
        ({"deadline_unix": NOW + 5}, "permit_deadline_out_of_bounds"),
        ({"pool_fee": 123}, "uniswap_pool_fee_unknown"),
        ({"amount_in": 0}, "amount_below_route_minimum"),
        ({"minimum_eth_out": 0}, "minimum_output_not_positive"),
        ({"gas": replace(aa.DEFAULT_GAS, call_gas_limit=10)}, "user_op_gas_out_of_bounds"),
        ({"gas": replace(aa.DEFAULT_GAS, max_priority_fee_per_gas=3 * 10**9)}, "user_op_gas_out_of_bounds"),
        ({"gas": replace(aa.DEFAULT_GAS, max_fee_per_gas=10**11)}, "user_op_gas_cost_too_high"),
        ({"chain_id": 4663}, "usdc_permit_domain_unknown"),
        ({"smart_account": WALLET}, "smart_account_is_wallet"),
    ],
)
def test_builder_refuses_bounds_it_cannot_keep(changes: dict[str, Any], reason: str) -> None:
    with pytest.raises(ActionUnavailable) as err:
        aa.build_settlement_plan(request(**changes))
    assert err.value.reason == reason


def test_signature_helpers() -> None:
    plan = aa.build_settlement_plan(request())
    sig = bytes.fromhex(sign_permit(plan)[2:])
    v, r, s = aa.split_signature(sig)
    assert (v, r, s) == (sig[64], sig[:32], sig[32:64])
    assert aa.split_signature(sig[:64] + bytes([sig[64] - 27])) == (v, r, s)
    high_s = (
        0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141 - int.from_bytes(s, "big")
    ).to_bytes(32, "big")
    for bad in (sig[:64], sig[:64] + b"\x05", r + high_s + bytes([v])):
        with pytest.raises(ValueError):
            aa.split_signature(bad)
    # the owner's signature over the userOpHash goes into the packed operation and the RPC form
    signed = aa.attach_permit_signature(plan, sig)
    owner_sig = Account.sign_message(
        encode_defunct(primitive=bytes.fromhex(signed["userOpHash"][2:])), OWNER.key
    ).signature
    op = aa.packed_user_operation(signed, owner_sig)
    assert op[0] == ACCOUNT and op[8] == bytes(owner_sig)
    rpc = aa.rpc_user_operation(signed, owner_sig)
    assert (
        rpc["factory"] == aa.SIMPLE_ACCOUNT_FACTORY_V07
        and rpc["callData"] == signed["userOperation"]["callData"]
    )
    assert int(rpc["callGasLimit"], 16) == aa.DEFAULT_GAS.call_gas_limit
    with pytest.raises(ValueError):
        aa.packed_user_operation(plan, owner_sig)  # the permit signature is not attached yet


def test_read_calls() -> None:
    call = aa.account_address_call(aa.SIMPLE_ACCOUNT_FACTORY_V07, WALLET, 7)
    assert call["to"] == aa.SIMPLE_ACCOUNT_FACTORY_V07
    assert (
        call["data"] == "0x" + (keccak(text="getAddress(address,uint256)")[:4] + word(WALLET) + word(7)).hex()
    )
    nonce = aa.entry_point_nonce_call(aa.ENTRY_POINT_V07, ACCOUNT)
    assert (
        nonce["data"] == "0x" + (keccak(text="getNonce(address,uint192)")[:4] + word(ACCOUNT) + word(0)).hex()
    )
    assert aa.permit_nonce_call(USDC, WALLET)["data"][:10] == "0x" + keccak(text="nonces(address)")[:4].hex()
    assert aa.decode_uint(word(5)) == 5 and aa.decode_address(word(ACCOUNT)) == ACCOUNT


# ---- the caller-side verifier ------------------------------------------------------------------------------


def test_verifier_accepts_the_plan_before_and_after_the_permit_signature() -> None:
    plan = aa.build_settlement_plan(request())
    assert verify_settlement_plan(plan, **verify_kwargs()) == []
    assert (
        verify_settlement_plan(aa.attach_permit_signature(plan, sign_permit(plan)), **verify_kwargs()) == []
    )
    deployed = aa.build_settlement_plan(request(account_deployed=True, entry_point_nonce=4))
    assert verify_settlement_plan(deployed, **verify_kwargs()) == []


def _swap_in_template(plan: dict[str, Any], **changes: Any) -> None:
    """Rewrite the plan's callData template as the service could (its bounds left as they were)."""
    kwargs = dict(
        usdc=USDC,
        router=ROUTER,
        weth=WETH,
        wallet=WALLET,
        account=ACCOUNT,
        amount_in=AMOUNT,
        minimum_eth_out=MIN_OUT,
        pool_fee=500,
        deadline=NOW + 240,
    )
    kwargs.update(changes)
    plan["callDataTemplate"] = "0x" + aa.settlement_calls(**kwargs).call_data.hex()  # type: ignore[arg-type]


def _tamper(name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    plan = copy.deepcopy(aa.build_settlement_plan(request()))
    other = "0x000000000000000000000000000000000000dEaD"
    kwargs: dict[str, Any] = {}
    if name == "recipient_in_calldata":
        _swap_in_template(plan, wallet=other)  # unwrapWETH9 to another address (and transferFrom from it)
    elif name == "recipient_bound":
        plan["bounds"]["ethRecipient"] = other
    elif name == "amount":
        plan = aa.build_settlement_plan(request(amount_in=AMOUNT + 1))
    elif name == "amount_in_calldata":
        _swap_in_template(plan, amount_in=AMOUNT * 2)
    elif name == "minimum":
        plan = aa.build_settlement_plan(request(minimum_eth_out=MIN_OUT - 1))
    elif name == "minimum_in_calldata":
        _swap_in_template(plan, minimum_eth_out=1)
    elif name == "target":
        plan = aa.build_settlement_plan(request(router=other))
    elif name == "target_in_calldata":
        _swap_in_template(plan, router=other)
    elif name == "deadline_far":
        plan = aa.build_settlement_plan(request(deadline_unix=NOW + 300))
        kwargs = {"now_unix": NOW - 100}
    elif name == "deadline_past":
        kwargs = {"now_unix": NOW + 241}
    elif name == "deadline_in_calldata":
        _swap_in_template(plan, deadline=NOW + 3000)
    elif name == "account":
        kwargs = {"smart_account": "0x000000000000000000000000000000000000bEEF"}
    elif name == "init_code_owner":
        plan["userOperation"]["initCode"] = "0x" + aa.init_code(aa.SIMPLE_ACCOUNT_FACTORY_V07, other, 7).hex()
    elif name == "paymaster":
        plan["userOperation"]["paymasterAndData"] = "0x" + "11" * 52
    elif name == "gas":
        plan["userOperation"]["gasFees"] = "0x" + aa.pack_uint128_pair(10**6, 10**12).hex()
    elif name == "permit_spender":
        plan["permit"]["typedData"]["message"]["spender"] = other
    elif name == "custody":
        plan["serverSigning"] = True
    elif name == "chain":
        kwargs = {"chain_id": 42161}
    return plan, kwargs


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("recipient_in_calldata", "settlement_calldata_mismatch"),
        ("recipient_bound", "settlement_wrong_recipient"),
        ("amount", "settlement_amount_mismatch"),
        ("amount_in_calldata", "settlement_calldata_mismatch"),
        ("minimum", "settlement_minimum_below_yours"),
        ("minimum_in_calldata", "settlement_calldata_mismatch"),
        ("target", "settlement_wrong_target"),
        ("target_in_calldata", "settlement_calldata_mismatch"),
        ("deadline_far", "settlement_deadline_out_of_bounds"),
        ("deadline_past", "settlement_deadline_out_of_bounds"),
        ("deadline_in_calldata", "settlement_calldata_mismatch"),
        ("account", "settlement_wrong_account"),
        ("init_code_owner", "settlement_init_code_mismatch"),
        ("paymaster", "settlement_paymaster_not_empty"),
        ("gas", "user_op_gas_cost_too_high"),
        ("permit_spender", "settlement_permit_mismatch"),
        ("custody", "custody_flag_not_false"),
        ("chain", "settlement_wrong_chain"),
    ],
)
def test_verifier_refuses_each_tampered_bound(name: str, code: str) -> None:
    plan, kwargs = _tamper(name)
    assert code in errors(verify_settlement_plan(plan, **verify_kwargs(**kwargs)))


def test_verifier_refuses_a_tampered_signed_plan_and_malformed_input() -> None:
    plan = signed_plan()
    bad_hash = dict(plan, userOpHash="0x" + "00" * 32)
    assert errors(verify_settlement_plan(bad_hash, **verify_kwargs())) == {"settlement_user_op_hash_mismatch"}
    other = signed_plan(minimum_eth_out=1)  # callData of a plan with minimum 1, bounds of the real plan
    spliced = dict(
        plan, userOperation=dict(plan["userOperation"], callData=other["userOperation"]["callData"])
    )
    assert "settlement_calldata_mismatch" in errors(verify_settlement_plan(spliced, **verify_kwargs()))
    owner_signed = dict(plan, userOperation=dict(plan["userOperation"], signature="0x" + "11" * 65))
    assert "settlement_owner_signature_present" in errors(
        verify_settlement_plan(owner_signed, **verify_kwargs())
    )
    for junk in (None, [], {"kind": "erc4337_settlement"}, dict(plan, bounds="x"), dict(plan, salt=True)):
        assert "settlement_plan_malformed" in errors(verify_settlement_plan(junk, **verify_kwargs()))


# ---- the evidence check on synthetic mined transactions ----------------------------------------------------


def _mined(
    plan: dict[str, Any],
    *,
    success: bool = True,
    eth_out: int = MIN_OUT + 5,
    chain_id: int = 8453,
    confirmations: int = 3,
    other_op_first: bool = True,
) -> tuple[EvmTransaction, str]:
    owner_sig = Account.sign_message(
        encode_defunct(primitive=bytes.fromhex(plan["userOpHash"][2:])), OWNER.key
    ).signature
    op = aa.packed_user_operation(plan, owner_sig)
    ep = aa.ENTRY_POINT_V07
    other = (
        "0x000000000000000000000000000000000000bEEF",
        0,
        b"",
        b"",
        op[4],
        50_000,
        op[6],
        b"",
        b"\x01" * 65,
    )
    data = aa.handle_ops_call_data(
        [other, op] if other_op_first else [op], "0x000000000000000000000000000000000000b0b0"
    )
    h = "0x" + "ab" * 32
    logs: list[EvmLog] = []

    def log(address: str, topics: list[str], payload: bytes) -> None:
        logs.append(EvmLog(address, tuple(topics), payload, len(logs), h, 10))

    def t(address: str) -> str:
        return "0x" + bytes.fromhex(address[2:]).rjust(32, b"\x00").hex()

    log(ep, [TOPIC0_4337["BeforeExecution"]], b"")
    if other_op_first:  # another operation of the bundle unwraps WETH too: not ours
        log(WETH, [TOPIC0["Withdrawal"], t(ROUTER)], word(10**18))
        log(
            ep,
            [TOPIC0_4337["UserOperationEvent"], "0x" + "cd" * 32, t(other[0]), t("0x" + "00" * 20)],
            encode(["uint256", "bool", "uint256", "uint256"], [0, True, 1, 1]),
        )
    if success:
        log(USDC, [TOPIC0["Transfer"], t(WALLET), t(ACCOUNT)], word(AMOUNT))
        log(WETH, [TOPIC0["Withdrawal"], t(ROUTER)], word(eth_out))
    log(
        ep,
        [TOPIC0_4337["UserOperationEvent"], plan["userOpHash"], t(ACCOUNT), t("0x" + "00" * 20)],
        encode(["uint256", "bool", "uint256", "uint256"], [0, success, 123_456, 789]),
    )
    tx = EvmTransaction(
        chain_id,
        h,
        "0x000000000000000000000000000000000000b0b0",
        ep,
        0,
        data,
        1,
        10,
        NOW + 20,
        confirmations,
        500_000,
        10**9,
        tuple(logs),
    )
    return tx, plan["userOpHash"]


def _evidence(plan: dict[str, Any], tx: EvmTransaction, **changes: Any) -> Any:
    kwargs: dict[str, Any] = dict(
        plan=plan,
        entry_point=aa.ENTRY_POINT_V07,
        account=ACCOUNT,
        wallet=WALLET,
        weth=WETH,
        minimum_eth_out=MIN_OUT,
        required_confirmations=2,
    )
    kwargs.update(changes)
    return verify_userop_settlement(tx, **kwargs)


def test_evidence_reads_only_the_plans_operation() -> None:
    stored = aa.build_settlement_plan(request())  # as the session stores it: before the permit signature
    signed = aa.attach_permit_signature(stored, sign_permit(stored))
    tx, op_hash = _mined(signed)
    ev = _evidence(stored, tx, user_op_hash=op_hash)
    assert ev.status == "final" and ev.tx_ids == (tx.tx_hash,)
    assert (ev.actual_input_base, ev.actual_output_base, ev.service_fee_paid_base) == (AMOUNT, MIN_OUT + 5, 0)
    assert ev.network_fee == {"wei": 123_456}
    assert (
        ev.bridge is not None
        and ev.bridge["user_op_hash"] == op_hash
        and ev.bridge["kind"] == "erc4337_user_operation"
    )
    assert _evidence(stored, _mined(signed, confirmations=1)[0]).status == "pending"


@pytest.mark.parametrize(
    ("case", "reason"),
    [
        ("reverted_op", "observation_reverted"),
        ("other_minimum", "observation_not_prepared_action"),
        ("wrong_chain", "observation_wrong_chain"),
        ("not_entry_point", "observation_not_prepared_action"),
        ("named_hash_differs", "observation_not_prepared_action"),
        ("reverted_tx", "observation_reverted"),
    ],
)
def test_evidence_refuses(case: str, reason: str) -> None:
    stored = aa.build_settlement_plan(request())
    signed = aa.attach_permit_signature(stored, sign_permit(stored))
    kwargs: dict[str, Any] = {}
    if case == "reverted_op":
        tx, _ = _mined(signed, success=False)
    elif case == "other_minimum":  # the same wallet re-signed an operation whose minimum was lowered
        lowered = aa.build_settlement_plan(request(minimum_eth_out=1))
        tx, _ = _mined(aa.attach_permit_signature(lowered, sign_permit(lowered)))
    elif case == "wrong_chain":
        tx, _ = _mined(signed, chain_id=42161)
    elif case == "not_entry_point":
        tx = replace(_mined(signed)[0], to=ROUTER)
    elif case == "named_hash_differs":
        tx, _ = _mined(signed)
        kwargs = {"user_op_hash": "0x" + "00" * 32}
    else:
        tx = replace(_mined(signed)[0], status=0)
    with pytest.raises(ObservationRejected) as err:
        _evidence(stored, tx, **kwargs)
    assert err.value.reason_class == reason


def test_evidence_checks_the_session_values_against_the_plan() -> None:
    stored = aa.build_settlement_plan(request())
    tx, _ = _mined(aa.attach_permit_signature(stored, sign_permit(stored)))
    with pytest.raises(ValueError):
        _evidence(stored, tx, wallet="0x000000000000000000000000000000000000dEaD")
    with pytest.raises(ValueError):
        _evidence(stored, tx, minimum_eth_out=1)


def test_encode_call_is_shared_with_the_prepare_builder() -> None:
    """The swap part is built by the same SwapRouter02 encoder as /v2/prepare's swaps."""
    calls = aa.settlement_calls(
        usdc=USDC,
        router=ROUTER,
        weth=WETH,
        wallet=WALLET,
        account=ACCOUNT,
        amount_in=AMOUNT,
        minimum_eth_out=MIN_OUT,
        pool_fee=500,
        deadline=NOW + 240,
    )
    swap = encode_call("exactInputSingle", (USDC, WETH, 500, ROUTER_ADDRESS_THIS, AMOUNT, MIN_OUT, 0))
    assert calls.calls[3][2] == encode_call(
        "multicall", NOW + 240, [swap, encode_call("unwrapWETH9", MIN_OUT, WALLET)]
    )
