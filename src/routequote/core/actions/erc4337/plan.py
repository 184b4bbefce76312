"""The unsigned settlement plan: its bounds (permit window, pool fee tiers, gas), the request it is built
from, and `build_settlement_plan`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from routequote.core.actions.common import ActionUnavailable, checksum
from routequote.core.actions.erc4337.abi import (
    ENTRY_POINT_V07,
    SIMPLE_ACCOUNT_FACTORY_V07,
    hex_bytes,
    hex_quantity,
    init_code,
    pack_uint128_pair,
)
from routequote.core.actions.erc4337.permit import USDC_PERMIT_DOMAIN, permit_digest, permit_typed_data
from routequote.core.actions.erc4337.user_operation import settlement_calls

PLAN_KIND = "erc4337_settlement"
PLAN_VERSION = "routequote.erc4337_settlement.v1"
MAX_PERMIT_WINDOW_SECONDS = 300
MIN_PERMIT_WINDOW_SECONDS = 30
UNISWAP_FEE_TIERS = frozenset({100, 500, 3000, 10000})
# sane bounds on the gas fields (inclusive): a deployment in validation needs ~300k, the batch ~250k
GAS_BOUNDS: dict[str, tuple[int, int]] = {
    "verificationGasLimit": (50_000, 2_000_000),
    "callGasLimit": (100_000, 3_000_000),
    "preVerificationGas": (21_000, 5_000_000),
    "maxFeePerGas": (0, 10**12),  # 1000 gwei
    "maxPriorityFeePerGas": (0, 10**12),
}
MAX_GAS_COST_WEI = 10**16  # 0.01 ETH: the most the account may be charged for this one operation


@dataclass(frozen=True, slots=True)
class GasSettings:
    verification_gas_limit: int
    call_gas_limit: int
    pre_verification_gas: int
    max_fee_per_gas: int
    max_priority_fee_per_gas: int

    def as_fields(self) -> dict[str, int]:
        return {
            "verificationGasLimit": self.verification_gas_limit,
            "callGasLimit": self.call_gas_limit,
            "preVerificationGas": self.pre_verification_gas,
            "maxFeePerGas": self.max_fee_per_gas,
            "maxPriorityFeePerGas": self.max_priority_fee_per_gas,
        }

    @property
    def max_cost_wei(self) -> int:
        return self.max_fee_per_gas * (
            self.verification_gas_limit + self.call_gas_limit + self.pre_verification_gas
        )


DEFAULT_GAS = GasSettings(
    verification_gas_limit=600_000,
    call_gas_limit=600_000,
    pre_verification_gas=100_000,
    max_fee_per_gas=2 * 10**9,
    max_priority_fee_per_gas=10**6,
)


@dataclass(frozen=True, slots=True)
class SettlementRequest:
    """Everything the plan is built from. `smart_account`, `account_deployed`, `entry_point_nonce` and
    `permit_nonce` are the caller-side chain reads (see `account_address_call`, `entry_point_nonce_call`,
    `permit_nonce_call`)."""

    chain_id: int
    wallet: str  # the destination EOA: CCTP mint recipient, account owner, permit signer, ETH recipient
    smart_account: str  # factory.getAddress(wallet, salt)
    account_deployed: bool
    entry_point_nonce: int  # EntryPoint.getNonce(smart_account, 0)
    permit_nonce: int  # USDC.nonces(wallet)
    usdc: str
    weth: str
    router: str  # Uniswap SwapRouter02
    pool_fee: int  # Uniswap v3 fee tier in pips
    amount_in: int  # exact USDC (6 decimals): the verified mint
    minimum_eth_out: int  # wei
    now_unix: int
    gas: GasSettings = DEFAULT_GAS
    deadline_unix: int | None = None  # default now + MAX_PERMIT_WINDOW_SECONDS
    entry_point: str = ENTRY_POINT_V07
    factory: str = SIMPLE_ACCOUNT_FACTORY_V07
    salt: int = 0
    permit_name: str | None = None  # default USDC_PERMIT_DOMAIN[chain_id]
    permit_version: str | None = None
    max_gas_cost_wei: int = MAX_GAS_COST_WEI


def check_gas(gas: Mapping[str, int], max_gas_cost_wei: int) -> list[tuple[str, str]]:
    """(code, message) for every gas field out of its bound (`GAS_BOUNDS`, priority <= max fee, cost cap)."""
    out: list[tuple[str, str]] = []
    for name, (lo, hi) in GAS_BOUNDS.items():
        value = gas.get(name)
        if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
            out.append(("user_op_gas_out_of_bounds", f"{name} = {value!r} is outside [{lo}, {hi}]"))
    if out:
        return out
    if gas["maxPriorityFeePerGas"] > gas["maxFeePerGas"]:
        out.append(("user_op_gas_out_of_bounds", "maxPriorityFeePerGas exceeds maxFeePerGas"))
    cost = gas["maxFeePerGas"] * (
        gas["verificationGasLimit"] + gas["callGasLimit"] + gas["preVerificationGas"]
    )
    if cost > max_gas_cost_wei:
        out.append(
            ("user_op_gas_cost_too_high", f"the operation may cost {cost} wei, above {max_gas_cost_wei}")
        )
    return out


def build_settlement_plan(req: SettlementRequest) -> dict[str, Any]:
    """The unsigned settlement plan (JSON-ready). Raises `ActionUnavailable` when a bound cannot hold.

    `userOperation.callData` and `userOpHash` are null until the wallet's permit signature is attached
    (`attach_permit_signature`); `callDataTemplate` is the callData with v = 0, r = s = 0."""
    if req.amount_in <= 0:
        raise ActionUnavailable("amount_below_route_minimum", "the settlement needs a positive USDC amount")
    if req.minimum_eth_out <= 0:
        raise ActionUnavailable("minimum_output_not_positive", "the swap needs a positive minimum ETH out")
    if req.pool_fee not in UNISWAP_FEE_TIERS:
        raise ActionUnavailable(
            "uniswap_pool_fee_unknown", f"pool fee {req.pool_fee} is not a Uniswap v3 tier"
        )
    deadline = req.now_unix + MAX_PERMIT_WINDOW_SECONDS if req.deadline_unix is None else req.deadline_unix
    if not req.now_unix + MIN_PERMIT_WINDOW_SECONDS <= deadline <= req.now_unix + MAX_PERMIT_WINDOW_SECONDS:
        raise ActionUnavailable(
            "permit_deadline_out_of_bounds",
            f"the permit deadline must be {MIN_PERMIT_WINDOW_SECONDS}..{MAX_PERMIT_WINDOW_SECONDS} s after now",
        )
    gas_problems = check_gas(req.gas.as_fields(), req.max_gas_cost_wei)
    if gas_problems:
        raise ActionUnavailable(gas_problems[0][0], "; ".join(m for _c, m in gas_problems))
    domain = USDC_PERMIT_DOMAIN.get(req.chain_id, (None, None))
    name, version = req.permit_name or domain[0], req.permit_version or domain[1]
    if name is None or version is None:
        raise ActionUnavailable(
            "usdc_permit_domain_unknown", f"no pinned USDC EIP-712 domain on {req.chain_id}"
        )
    wallet, account = checksum(req.wallet), checksum(req.smart_account)
    if wallet == account:
        raise ActionUnavailable("smart_account_is_wallet", "the smart account cannot be the wallet itself")
    if req.entry_point_nonce < 0 or req.permit_nonce < 0 or req.salt < 0:
        raise ActionUnavailable("nonce_invalid", "nonces and salt are unsigned")
    calls = settlement_calls(
        usdc=req.usdc,
        router=req.router,
        weth=req.weth,
        wallet=wallet,
        account=account,
        amount_in=req.amount_in,
        minimum_eth_out=req.minimum_eth_out,
        pool_fee=req.pool_fee,
        deadline=deadline,
    )
    permit: dict[str, Any] = {
        "name": name,
        "version": version,
        "chain_id": req.chain_id,
        "token": req.usdc,
        "owner": wallet,
        "spender": account,
        "value": req.amount_in,
        "nonce": req.permit_nonce,
        "deadline": deadline,
    }
    g = req.gas
    init = b"" if req.account_deployed else init_code(req.factory, wallet, req.salt)
    return {
        "kind": PLAN_KIND,
        "version": PLAN_VERSION,
        "chainId": req.chain_id,
        "entryPoint": checksum(req.entry_point),
        "entryPointVersion": "0.7",
        "wallet": wallet,
        "smartAccount": account,
        "accountDeployed": req.account_deployed,
        "factory": checksum(req.factory),
        "salt": str(req.salt),
        "preparedAt": req.now_unix,
        "permit": {
            "typedData": permit_typed_data(**permit),
            "digest": hex_bytes(permit_digest(**permit)),
            "signer": wallet,
            "signature": None,
        },
        "userOperation": {
            "sender": account,
            "nonce": hex_quantity(req.entry_point_nonce),
            "initCode": hex_bytes(init),
            "callData": None,
            "accountGasLimits": hex_bytes(pack_uint128_pair(g.verification_gas_limit, g.call_gas_limit)),
            "preVerificationGas": hex_quantity(g.pre_verification_gas),
            "gasFees": hex_bytes(pack_uint128_pair(g.max_priority_fee_per_gas, g.max_fee_per_gas)),
            "paymasterAndData": "0x",
            "signature": None,
        },
        "callDataTemplate": hex_bytes(calls.call_data),
        "gas": {k: str(v) for k, v in g.as_fields().items()},
        "userOpHash": None,
        "ownerSignature": {
            "signer": wallet,
            "scheme": "eip191_personal_sign",
            "message": "the 32 bytes of userOpHash (SimpleAccount v0.7 recovers toEthSignedMessageHash(userOpHash))",
        },
        "calls": [
            {
                "target": calls.calls[0][0],
                "value": "0",
                "function": "permit",
                "note": "EIP-2612, signed by the wallet",
            },
            {
                "target": calls.calls[1][0],
                "value": "0",
                "function": "transferFrom",
                "from": wallet,
                "to": account,
                "amount": str(req.amount_in),
            },
            {
                "target": calls.calls[2][0],
                "value": "0",
                "function": "approve",
                "spender": checksum(req.router),
                "amount": str(req.amount_in),
            },
            {
                "target": calls.calls[3][0],
                "value": "0",
                "function": "multicall",
                "inner": ["exactInputSingle(USDC->WETH to the router)", "unwrapWETH9(minimum, wallet)"],
            },
        ],
        "bounds": {
            "exactUsdcIn": str(req.amount_in),
            "minimumEthOut": str(req.minimum_eth_out),
            "ethRecipient": wallet,
            "permitDeadline": deadline,
            "swapDeadline": deadline,
            "validUntil": deadline,
            "poolFee": req.pool_fee,
            "usdc": checksum(req.usdc),
            "weth": checksum(req.weth),
            "router": checksum(req.router),
            "targets": [checksum(req.usdc), checksum(req.router)],
            "values": "all zero",
            "maxGasCostWei": str(g.max_cost_wei),
            "gasCapWei": str(req.max_gas_cost_wei),
            "serviceFee": "0",
            "permitNonce": str(req.permit_nonce),
        },
        "serverSigning": False,
        "serverSubmission": False,
    }
