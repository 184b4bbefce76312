"""The ERC-4337 settlement's ABI: the pinned EntryPoint v0.7 and SimpleAccountFactory addresses, the
function signatures the settlement calls or reads, and their encoders and decoders."""

from __future__ import annotations

from typing import Any

from eth_abi.abi import decode, encode
from eth_utils.abi import function_signature_to_4byte_selector

from routequote.core.actions.common import checksum

ENTRY_POINT_V07 = "0x0000000071727De22E5E9d8BAf0edAc6f37da032"
SIMPLE_ACCOUNT_FACTORY_V07 = "0x91E60e0613810449d098b0b5Ec8b51A0FE8c8985"

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


def handle_ops_call_data(ops: list[tuple[Any, ...]], beneficiary: str) -> bytes:
    return call("handleOps", ops, checksum(beneficiary))


def hex_quantity(value: int) -> str:
    return hex(value)


def hex_bytes(raw: bytes) -> str:
    return "0x" + raw.hex()
