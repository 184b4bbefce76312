"""The caller-side chain reads the plan needs (account address, EntryPoint nonce, USDC permit nonce): the
eth_call each one is, and the decoders of their results."""

from __future__ import annotations

from eth_abi.abi import decode

from routequote.core.actions.common import checksum
from routequote.core.actions.erc4337.abi import call, hex_bytes


def account_address_call(factory: str, owner: str, salt: int = 0) -> dict[str, str]:
    """eth_call {to, data} of `SimpleAccountFactory.getAddress(owner, salt)`; decode with `decode_address`."""
    return {"to": checksum(factory), "data": hex_bytes(call("getAddress", checksum(owner), salt))}


def entry_point_nonce_call(entry_point: str, sender: str, key: int = 0) -> dict[str, str]:
    """eth_call {to, data} of `EntryPoint.getNonce(sender, key)`; decode with `decode_uint`."""
    return {"to": checksum(entry_point), "data": hex_bytes(call("getNonce", checksum(sender), key))}


def permit_nonce_call(usdc: str, owner: str) -> dict[str, str]:
    """eth_call {to, data} of `USDC.nonces(owner)`; decode with `decode_uint`."""
    return {"to": checksum(usdc), "data": hex_bytes(call("nonces", checksum(owner)))}


def decode_uint(result: bytes) -> int:
    return int(decode(["uint256"], result)[0])


def decode_address(result: bytes) -> str:
    return checksum(str(decode(["address"], result)[0]))
