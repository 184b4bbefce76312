"""The destination settlement of the v1 corridor: one unsigned ERC-4337 user operation (EntryPoint v0.7).

Pure: no I/O, no clock, no keys. Everything the chain knows (the account address, whether it is deployed,
the EntryPoint nonce, the USDC permit nonce) is read by the caller and handed in.

Design
------
The CCTP mint lands USDC in the destination wallet, an EOA (`wallet`) that may hold no ETH. The settlement
is ONE `PackedUserOperation` sent by the wallet's smart account, a `SimpleAccount` of
`@account-abstraction/contracts` 0.7.0 whose owner is the wallet (`sender` = the account; when it is not
deployed yet, `initCode = factory ‖ createAccount(wallet, salt)` and `sender` is the counterfactual address
`factory.getAddress(wallet, salt)`, read by the caller). Its callData is
`SimpleAccount.executeBatch(dest[4], value[4] = 0, func[4])`:

1. `USDC.permit(wallet, account, amount, deadline, v, r, s)` - EIP-2612, signed by the wallet (the plan
   carries the EIP-712 typed data; `attach_permit_signature` puts v, r, s into the callData);
2. `USDC.transferFrom(wallet, account, amount)` - exactly the amount, nothing more can move;
3. `USDC.approve(router, amount)` from the account - an exact allowance, consumed by the swap;
4. `SwapRouter02.multicall(deadline, [exactInputSingle(USDC, WETH, fee, ADDRESS_THIS, amount, minimum, 0),
   unwrapWETH9(minimum, wallet)])` - the ETH lands in the wallet, never in the account.

No service fee is taken here (the corridor's fee is on the Solana swap). `paymasterAndData` is empty, so
the account pays the gas from its EntryPoint deposit or ETH balance: at most `maxGasCostWei` =
maxFeePerGas x (verificationGasLimit + callGasLimit + preVerificationGas); it must hold that much before
the operation is submitted (a zero-fee operation is possible when a bundler sponsors it).

Signing order (the service never signs): the wallet signs the permit typed data; the caller (or any
agent, with this pure module) calls `attach_permit_signature`, which yields the final callData and the
`userOpHash` (v0.7: `keccak256(abi.encode(keccak256(abi.encode(sender, nonce, keccak(initCode),
keccak(callData), accountGasLimits, preVerificationGas, gasFees, keccak(paymasterAndData))), entryPoint,
chainId))`); the wallet then signs the userOpHash as an EIP-191 personal message (SimpleAccount v0.7
recovers `toEthSignedMessageHash(userOpHash)`), and a bundler submits `handleOps`.

Bounds the plan states (`bounds`): exact USDC in, minimum ETH out and its recipient (the wallet), the
permit deadline (= the swap deadline, at most `MAX_PERMIT_WINDOW_SECONDS` after preparation), the targets
allowlist (USDC and the router only, every value 0), the pool fee, and the gas cap. The user operation's
validity is bounded by that deadline: after it, the permit and the swap revert. `routequote.verify.
verify_settlement_plan` re-derives the callData byte for byte from the caller's own values;
`routequote.core.sessions.evidence_4337.verify_userop_settlement` holds the mined `handleOps` to the plan.

Pinned addresses: EntryPoint v0.7 `0x0000000071727De22E5E9d8BAf0edAc6f37da032` (chains.md §7);
SimpleAccountFactory v0.7 `0x91E60e0613810449d098b0b5Ec8b51A0FE8c8985` (eth-infinitism deployment, two
independent third-party catalogs agree); USDC's EIP-712 domain `{name: "USD Coin", version: "2"}` on Base
and Arbitrum (chains.md §2, confirm with `name()` / `version()` when online).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from eth_abi.abi import decode, encode
from eth_utils.abi import function_signature_to_4byte_selector
from eth_utils.crypto import keccak

from routequote.core.actions.common import ActionUnavailable, checksum
from routequote.core.actions.evm import ROUTER_ADDRESS_THIS, encode_call

ENTRY_POINT_V07 = "0x0000000071727De22E5E9d8BAf0edAc6f37da032"
SIMPLE_ACCOUNT_FACTORY_V07 = "0x91E60e0613810449d098b0b5Ec8b51A0FE8c8985"
USDC_PERMIT_DOMAIN: dict[int, tuple[str, str]] = {8453: ("USD Coin", "2"), 42161: ("USD Coin", "2")}
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
SECP256K1_HALF_N = 0x7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0

PACKED_USER_OP = "(address,uint256,bytes,bytes,bytes32,uint256,bytes32,bytes,bytes)"
SIGNATURES: dict[str, str] = {
    "permit": "permit(address,address,uint256,uint256,uint8,bytes32,bytes32)",
    "transferFrom": "transferFrom(address,address,uint256)",
    "executeBatch": "executeBatch(address[],uint256[],bytes[])",
    "createAccount": "createAccount(address,uint256)",
    "getAddress": "getAddress(address,uint256)",
    "getNonce": "getNonce(address,uint192)",
    "nonces": "nonces(address)",
    "handleOps": f"handleOps({PACKED_USER_OP}[],address)",
}
ARG_TYPES: dict[str, list[str]] = {
    "permit": ["address", "address", "uint256", "uint256", "uint8", "bytes32", "bytes32"],
    "transferFrom": ["address", "address", "uint256"],
    "executeBatch": ["address[]", "uint256[]", "bytes[]"],
    "createAccount": ["address", "uint256"],
    "getAddress": ["address", "uint256"],
    "getNonce": ["address", "uint192"],
    "nonces": ["address"],
    "handleOps": [f"{PACKED_USER_OP}[]", "address"],
}
SELECTORS: dict[str, bytes] = {
    name: function_signature_to_4byte_selector(sig) for name, sig in SIGNATURES.items()
}

EIP712_DOMAIN_TYPE = "EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"
PERMIT_TYPE = "Permit(address owner,address spender,uint256 value,uint256 nonce,uint256 deadline)"


def call(name: str, *args: Any) -> bytes:
    """ABI-encoded call of one of this module's functions (`SIGNATURES`)."""
    return SELECTORS[name] + encode(ARG_TYPES[name], list(args))


def decode_args(name: str, data: bytes) -> tuple[Any, ...]:
    """The arguments of a call to `name`; ValueError on another selector or non-canonical encoding."""
    if data[:4] != SELECTORS[name]:
        raise ValueError(f"not a {name} call")
    args = tuple(decode(ARG_TYPES[name], data[4:]))
    if encode(ARG_TYPES[name], list(args)) != data[4:]:
        raise ValueError(f"non-canonical {name} calldata")
    return args


# ---- the parts ---------------------------------------------------------------------------------------


def pack_uint128_pair(high: int, low: int) -> bytes:
    """bytes32 of two uint128: accountGasLimits (verification ‖ call) and gasFees (priority ‖ max fee)."""
    if not (0 <= high < 1 << 128 and 0 <= low < 1 << 128):
        raise ValueError("a packed gas field is two uint128")
    return ((high << 128) | low).to_bytes(32, "big")


def unpack_uint128_pair(packed: bytes) -> tuple[int, int]:
    value = int.from_bytes(packed, "big")
    return value >> 128, value & ((1 << 128) - 1)


def init_code(factory: str, owner: str, salt: int) -> bytes:
    """`factory ‖ createAccount(owner, salt)`: what deploys the SimpleAccount in the first operation."""
    return bytes.fromhex(checksum(factory)[2:]) + call("createAccount", checksum(owner), salt)


def permit_typed_data(
    *,
    name: str,
    version: str,
    chain_id: int,
    token: str,
    owner: str,
    spender: str,
    value: int,
    nonce: int,
    deadline: int,
) -> dict[str, Any]:
    """The EIP-712 typed data (eth_signTypedData_v4 shape; uint256 as decimal strings) of an EIP-2612 permit."""
    return {
        "types": {
            "EIP712Domain": [
                {"name": "name", "type": "string"},
                {"name": "version", "type": "string"},
                {"name": "chainId", "type": "uint256"},
                {"name": "verifyingContract", "type": "address"},
            ],
            "Permit": [
                {"name": "owner", "type": "address"},
                {"name": "spender", "type": "address"},
                {"name": "value", "type": "uint256"},
                {"name": "nonce", "type": "uint256"},
                {"name": "deadline", "type": "uint256"},
            ],
        },
        "primaryType": "Permit",
        "domain": {
            "name": name,
            "version": version,
            "chainId": chain_id,
            "verifyingContract": checksum(token),
        },
        "message": {
            "owner": checksum(owner),
            "spender": checksum(spender),
            "value": str(value),
            "nonce": str(nonce),
            "deadline": str(deadline),
        },
    }


def permit_digest(
    *,
    name: str,
    version: str,
    chain_id: int,
    token: str,
    owner: str,
    spender: str,
    value: int,
    nonce: int,
    deadline: int,
) -> bytes:
    """keccak256(0x1901 ‖ domainSeparator ‖ structHash) of the permit: what the wallet's signature covers."""
    domain = keccak(
        encode(
            ["bytes32", "bytes32", "bytes32", "uint256", "address"],
            [
                keccak(text=EIP712_DOMAIN_TYPE),
                keccak(text=name),
                keccak(text=version),
                chain_id,
                checksum(token),
            ],
        )
    )
    struct_hash = keccak(
        encode(
            ["bytes32", "address", "address", "uint256", "uint256", "uint256"],
            [keccak(text=PERMIT_TYPE), checksum(owner), checksum(spender), value, nonce, deadline],
        )
    )
    return keccak(b"\x19\x01" + domain + struct_hash)


def split_signature(signature: bytes | str) -> tuple[int, bytes, bytes]:
    """(v, r, s) of a 65-byte r ‖ s ‖ v secp256k1 signature; v 0/1 is read as 27/28. ValueError when it is
    not one, or when s is in the upper half (ecrecover-based permits reject those)."""
    raw = (
        bytes.fromhex(signature[2:] if signature.startswith("0x") else signature)
        if isinstance(signature, str)
        else bytes(signature)
    )
    if len(raw) != 65:
        raise ValueError("a signature is 65 bytes (r ‖ s ‖ v)")
    r, s, v = raw[:32], raw[32:64], raw[64]
    if v in (0, 1):
        v += 27
    if v not in (27, 28):
        raise ValueError("signature v must be 27 or 28")
    if not 0 < int.from_bytes(s, "big") <= SECP256K1_HALF_N or int.from_bytes(r, "big") == 0:
        raise ValueError("signature s must be in the lower half of the curve order (and r, s non-zero)")
    return v, r, s


NO_PERMIT_SIGNATURE: tuple[int, bytes, bytes] = (0, b"\x00" * 32, b"\x00" * 32)


@dataclass(frozen=True, slots=True)
class SettlementCalls:
    """The four calls of the batch, as (target, value, data)."""

    calls: tuple[tuple[str, int, bytes], ...]

    @property
    def call_data(self) -> bytes:
        return call(
            "executeBatch",
            [t for t, _v, _d in self.calls],
            [v for _t, v, _d in self.calls],
            [d for _t, _v, d in self.calls],
        )


def settlement_calls(
    *,
    usdc: str,
    router: str,
    weth: str,
    wallet: str,
    account: str,
    amount_in: int,
    minimum_eth_out: int,
    pool_fee: int,
    deadline: int,
    permit_vrs: tuple[int, bytes, bytes] = NO_PERMIT_SIGNATURE,
) -> SettlementCalls:
    """permit, transferFrom, approve, multicall(exactInputSingle, unwrapWETH9) - see the module doc."""
    usdc, router, weth = checksum(usdc), checksum(router), checksum(weth)
    wallet, account = checksum(wallet), checksum(account)
    v, r, s = permit_vrs
    swap = encode_call(
        "exactInputSingle", (usdc, weth, pool_fee, ROUTER_ADDRESS_THIS, amount_in, minimum_eth_out, 0)
    )
    unwrap = encode_call("unwrapWETH9", minimum_eth_out, wallet)
    return SettlementCalls(
        (
            (usdc, 0, call("permit", wallet, account, amount_in, deadline, v, r, s)),
            (usdc, 0, call("transferFrom", wallet, account, amount_in)),
            (usdc, 0, encode_call("approve", router, amount_in)),
            (router, 0, encode_call("multicall", deadline, [swap, unwrap])),
        )
    )


def user_op_hash(
    *,
    sender: str,
    nonce: int,
    init_code: bytes,
    call_data: bytes,
    account_gas_limits: bytes,
    pre_verification_gas: int,
    gas_fees: bytes,
    paymaster_and_data: bytes,
    entry_point: str,
    chain_id: int,
) -> bytes:
    """EntryPoint v0.7 `getUserOpHash`."""
    inner = keccak(
        encode(
            ["address", "uint256", "bytes32", "bytes32", "bytes32", "uint256", "bytes32", "bytes32"],
            [
                checksum(sender),
                nonce,
                keccak(init_code),
                keccak(call_data),
                account_gas_limits,
                pre_verification_gas,
                gas_fees,
                keccak(paymaster_and_data),
            ],
        )
    )
    return keccak(encode(["bytes32", "address", "uint256"], [inner, checksum(entry_point), chain_id]))


# ---- the plan ----------------------------------------------------------------------------------------


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


def _u(value: int) -> str:
    return hex(value)


def _h(raw: bytes) -> str:
    return "0x" + raw.hex()


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
            "digest": _h(permit_digest(**permit)),
            "signer": wallet,
            "signature": None,
        },
        "userOperation": {
            "sender": account,
            "nonce": _u(req.entry_point_nonce),
            "initCode": _h(init),
            "callData": None,
            "accountGasLimits": _h(pack_uint128_pair(g.verification_gas_limit, g.call_gas_limit)),
            "preVerificationGas": _u(g.pre_verification_gas),
            "gasFees": _h(pack_uint128_pair(g.max_priority_fee_per_gas, g.max_fee_per_gas)),
            "paymasterAndData": "0x",
            "signature": None,
        },
        "callDataTemplate": _h(calls.call_data),
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
    out["permit"] = {**plan["permit"], "signature": _h(bytes(vrs[1] + vrs[2] + bytes([vrs[0]])))}
    out["userOperation"] = {**plan["userOperation"], "callData": _h(call_data)}
    out["userOpHash"] = _h(view.user_op_hash(call_data))
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
        "nonce": _u(op[1]),
        "callData": _h(op[3]),
        "callGasLimit": _u(cgl),
        "verificationGasLimit": _u(vgl),
        "preVerificationGas": _u(op[5]),
        "maxFeePerGas": _u(max_fee),
        "maxPriorityFeePerGas": _u(prio),
        "signature": _h(op[8]),
    }
    if op[2]:
        out["factory"] = checksum("0x" + op[2][:20].hex())
        out["factoryData"] = _h(op[2][20:])
    return out


def handle_ops_call_data(ops: list[tuple[Any, ...]], beneficiary: str) -> bytes:
    return call("handleOps", ops, checksum(beneficiary))


# ---- the caller-side reads ---------------------------------------------------------------------------


def account_address_call(factory: str, owner: str, salt: int = 0) -> dict[str, str]:
    """eth_call {to, data} of `SimpleAccountFactory.getAddress(owner, salt)`; decode with `decode_address`."""
    return {"to": checksum(factory), "data": _h(call("getAddress", checksum(owner), salt))}


def entry_point_nonce_call(entry_point: str, sender: str, key: int = 0) -> dict[str, str]:
    """eth_call {to, data} of `EntryPoint.getNonce(sender, key)`; decode with `decode_uint`."""
    return {"to": checksum(entry_point), "data": _h(call("getNonce", checksum(sender), key))}


def permit_nonce_call(usdc: str, owner: str) -> dict[str, str]:
    """eth_call {to, data} of `USDC.nonces(owner)`; decode with `decode_uint`."""
    return {"to": checksum(usdc), "data": _h(call("nonces", checksum(owner)))}


def decode_uint(result: bytes) -> int:
    return int(decode(["uint256"], result)[0])


def decode_address(result: bytes) -> str:
    return checksum(str(decode(["address"], result)[0]))


__all__ = [
    "DEFAULT_GAS",
    "ENTRY_POINT_V07",
    "GAS_BOUNDS",
    "MAX_GAS_COST_WEI",
    "MAX_PERMIT_WINDOW_SECONDS",
    "PLAN_KIND",
    "PLAN_VERSION",
    "SIMPLE_ACCOUNT_FACTORY_V07",
    "USDC_PERMIT_DOMAIN",
    "GasSettings",
    "PlanView",
    "SettlementRequest",
    "account_address_call",
    "attach_permit_signature",
    "build_settlement_plan",
    "check_gas",
    "decode_address",
    "decode_uint",
    "entry_point_nonce_call",
    "handle_ops_call_data",
    "init_code",
    "packed_user_operation",
    "permit_digest",
    "permit_nonce_call",
    "permit_typed_data",
    "rpc_user_operation",
    "settlement_calls",
    "split_signature",
    "user_op_hash",
]
