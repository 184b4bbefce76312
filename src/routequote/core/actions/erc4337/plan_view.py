"""A stored or built plan read back as typed fields (`PlanView`), and what follows from it once signed: the
permit signature attached, the `PackedUserOperation` for `handleOps` and its JSON-RPC form."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from routequote.core.actions.common import checksum
from routequote.core.actions.erc4337.abi import hex_bytes, hex_quantity, unpack_uint128_pair
from routequote.core.actions.erc4337.permit import NO_PERMIT_SIGNATURE, permit_digest, split_signature
from routequote.core.actions.erc4337.plan import PLAN_KIND, PLAN_VERSION
from routequote.core.actions.erc4337.user_operation import settlement_calls, user_op_hash


def _get(mapping: Any, key: str) -> Any:
    if not isinstance(mapping, Mapping) or key not in mapping:
        raise ValueError(f"plan: missing {key}")
    return mapping[key]


def _int(value: Any, what: str) -> int:
    """An integer field: an int, a decimal string or a 0x quantity (never a bool or float)."""
    if isinstance(value, bool):
        raise ValueError(f"{what}: not an integer")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isascii():
        if value.startswith("0x") and len(value) > 2:
            return int(value, 16)
        if value.isdigit():
            return int(value)
    raise ValueError(f"{what}: not an integer: {value!r}")


def _bytes(value: Any, what: str) -> bytes:
    if not isinstance(value, str) or not value.startswith("0x"):
        raise ValueError(f"{what}: not 0x-hex")
    return bytes.fromhex(value[2:])


@dataclass(frozen=True, slots=True)
class PlanView:
    """The typed fields of a plan dict (as built, or as stored and read back)."""

    chain_id: int
    entry_point: str
    wallet: str
    smart_account: str
    account_deployed: bool
    factory: str
    salt: int
    prepared_at: int
    usdc: str
    weth: str
    router: str
    pool_fee: int
    amount_in: int
    minimum_eth_out: int
    deadline: int
    permit_nonce: int
    permit_name: str
    permit_version: str
    sender: str
    nonce: int
    init_code: bytes
    account_gas_limits: bytes
    pre_verification_gas: int
    gas_fees: bytes
    paymaster_and_data: bytes
    call_data: bytes | None
    permit_signature: str | None

    @classmethod
    def parse(cls, plan: Any) -> PlanView:
        """ValueError when a field is missing or malformed."""
        if _get(plan, "kind") != PLAN_KIND or _get(plan, "version") != PLAN_VERSION:
            raise ValueError("not an ERC-4337 settlement plan of this version")
        b, op, permit = _get(plan, "bounds"), _get(plan, "userOperation"), _get(plan, "permit")
        domain = _get(_get(permit, "typedData"), "domain")
        call_data, sig = _get(op, "callData"), _get(permit, "signature")
        deployed = _get(plan, "accountDeployed")
        if not isinstance(deployed, bool):
            raise ValueError("plan: accountDeployed is a boolean")
        name, version = _get(domain, "name"), _get(domain, "version")
        if not isinstance(name, str) or not isinstance(version, str):
            raise ValueError("plan: permit domain name/version are strings")
        if sig is not None and not isinstance(sig, str):
            raise ValueError("plan: permit.signature is a hex string or null")
        return cls(
            chain_id=_int(_get(plan, "chainId"), "chainId"),
            entry_point=checksum(str(_get(plan, "entryPoint"))),
            wallet=checksum(str(_get(plan, "wallet"))),
            smart_account=checksum(str(_get(plan, "smartAccount"))),
            account_deployed=deployed,
            factory=checksum(str(_get(plan, "factory"))),
            salt=_int(_get(plan, "salt"), "salt"),
            prepared_at=_int(_get(plan, "preparedAt"), "preparedAt"),
            usdc=checksum(str(_get(b, "usdc"))),
            weth=checksum(str(_get(b, "weth"))),
            router=checksum(str(_get(b, "router"))),
            pool_fee=_int(_get(b, "poolFee"), "poolFee"),
            amount_in=_int(_get(b, "exactUsdcIn"), "exactUsdcIn"),
            minimum_eth_out=_int(_get(b, "minimumEthOut"), "minimumEthOut"),
            deadline=_int(_get(b, "permitDeadline"), "permitDeadline"),
            permit_nonce=_int(_get(b, "permitNonce"), "permitNonce"),
            permit_name=name,
            permit_version=version,
            sender=checksum(str(_get(op, "sender"))),
            nonce=_int(_get(op, "nonce"), "nonce"),
            init_code=_bytes(_get(op, "initCode"), "initCode"),
            account_gas_limits=_bytes(_get(op, "accountGasLimits"), "accountGasLimits"),
            pre_verification_gas=_int(_get(op, "preVerificationGas"), "preVerificationGas"),
            gas_fees=_bytes(_get(op, "gasFees"), "gasFees"),
            paymaster_and_data=_bytes(_get(op, "paymasterAndData"), "paymasterAndData"),
            call_data=None if call_data is None else _bytes(call_data, "callData"),
            permit_signature=sig,
        )

    def expected_call_data(self, permit_vrs: tuple[int, bytes, bytes] = NO_PERMIT_SIGNATURE) -> bytes:
        """The callData re-derived from the plan's bounds with this permit signature."""
        return settlement_calls(
            usdc=self.usdc,
            router=self.router,
            weth=self.weth,
            wallet=self.wallet,
            account=self.smart_account,
            amount_in=self.amount_in,
            minimum_eth_out=self.minimum_eth_out,
            pool_fee=self.pool_fee,
            deadline=self.deadline,
            permit_vrs=permit_vrs,
        ).call_data

    def user_op_hash(self, call_data: bytes) -> bytes:
        return user_op_hash(
            sender=self.sender,
            nonce=self.nonce,
            init_code=self.init_code,
            call_data=call_data,
            account_gas_limits=self.account_gas_limits,
            pre_verification_gas=self.pre_verification_gas,
            gas_fees=self.gas_fees,
            paymaster_and_data=self.paymaster_and_data,
            entry_point=self.entry_point,
            chain_id=self.chain_id,
        )

    def permit_digest(self) -> bytes:
        return permit_digest(
            name=self.permit_name,
            version=self.permit_version,
            chain_id=self.chain_id,
            token=self.usdc,
            owner=self.wallet,
            spender=self.smart_account,
            value=self.amount_in,
            nonce=self.permit_nonce,
            deadline=self.deadline,
        )


def attach_permit_signature(plan: Mapping[str, Any], signature: bytes | str) -> dict[str, Any]:
    """A copy of the plan with the wallet's permit signature in the callData and the resulting `userOpHash`
    (which the wallet then signs). Pure; ValueError on a malformed plan or signature."""
    view = PlanView.parse(plan)
    vrs = split_signature(signature)
    call_data = view.expected_call_data(vrs)
    out = dict(plan)
    out["permit"] = {**plan["permit"], "signature": hex_bytes(bytes(vrs[1] + vrs[2] + bytes([vrs[0]])))}
    out["userOperation"] = {**plan["userOperation"], "callData": hex_bytes(call_data)}
    out["userOpHash"] = hex_bytes(view.user_op_hash(call_data))
    return out


def packed_user_operation(plan: Mapping[str, Any], owner_signature: bytes | str) -> tuple[Any, ...]:
    """The `PackedUserOperation` tuple for `handleOps`, from a plan with its permit signature attached and the
    owner's signature over the userOpHash (65 bytes)."""
    view = PlanView.parse(plan)
    if view.call_data is None:
        raise ValueError("attach the permit signature first")
    v, r, s = split_signature(owner_signature)
    return (
        view.sender,
        view.nonce,
        view.init_code,
        view.call_data,
        view.account_gas_limits,
        view.pre_verification_gas,
        view.gas_fees,
        view.paymaster_and_data,
        r + s + bytes([v]),
    )


def rpc_user_operation(plan: Mapping[str, Any], owner_signature: bytes | str) -> dict[str, str]:
    """The unpacked JSON-RPC form (`eth_sendUserOperation`, EntryPoint v0.7) of the same operation."""
    op = packed_user_operation(plan, owner_signature)
    vgl, cgl = unpack_uint128_pair(op[4])
    prio, max_fee = unpack_uint128_pair(op[6])
    out = {
        "sender": op[0],
        "nonce": hex_quantity(op[1]),
        "callData": hex_bytes(op[3]),
        "callGasLimit": hex_quantity(cgl),
        "verificationGasLimit": hex_quantity(vgl),
        "preVerificationGas": hex_quantity(op[5]),
        "maxFeePerGas": hex_quantity(max_fee),
        "maxPriorityFeePerGas": hex_quantity(prio),
        "signature": hex_bytes(op[8]),
    }
    if op[2]:
        out["factory"] = checksum("0x" + op[2][:20].hex())
        out["factoryData"] = hex_bytes(op[2][20:])
    return out
