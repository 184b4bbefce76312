"""The EIP-2612 permit the wallet signs for the settlement: its EIP-712 typed data and digest, and the
checks on a secp256k1 signature."""

from __future__ import annotations

from typing import Any

from eth_abi.abi import encode
from eth_utils.crypto import keccak

from routequote.core.actions.common import checksum

USDC_PERMIT_DOMAIN: dict[int, tuple[str, str]] = {8453: ("USD Coin", "2"), 42161: ("USD Coin", "2")}
SECP256K1_HALF_N = 0x7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0

EIP712_DOMAIN_TYPE = "EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"
PERMIT_TYPE = "Permit(address owner,address spender,uint256 value,uint256 nonce,uint256 deadline)"


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
