"""Pieces both action families use: the refusal exception, EVM address forms and the Solana account keys
(associated token accounts) an EVM step may name, e.g. a CCTP mint recipient on Solana.

A leaf module: it imports no other builder module, so `evm` and `solana` both import it at top level and
never each other.
"""

from __future__ import annotations

import functools

from eth_utils.address import to_checksum_address
from solders.pubkey import Pubkey
from solders.token.associated import get_associated_token_address

from routequote.core.assets import SPL_TOKEN_PROGRAM, Asset

ZERO_BYTES32 = b"\x00" * 32


class ActionUnavailable(Exception):
    """The step cannot be built correctly (a contract or account is not pinned). `reason` is snake_case."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(detail or reason)
        self.reason = reason
        self.detail = detail or reason


@functools.lru_cache(maxsize=4096)
def checksum(address: str) -> str:
    """The EIP-55 form. Remembered: building an action names the same few contracts, tokens and wallets many
    times, and each form costs a Keccak-256 (about 16 us here). An invalid address raises and is not kept."""
    return str(to_checksum_address(address))


def address_to_bytes32(address: str) -> bytes:
    """An EVM address left-padded to 32 bytes (CCTP / Across bytes32 address form)."""
    return b"\x00" * 12 + bytes.fromhex(checksum(address)[2:])


def pubkey(address: str | Pubkey) -> Pubkey:
    return address if isinstance(address, Pubkey) else Pubkey.from_string(address)


def solana_pubkey_bytes(address: str) -> bytes:
    return bytes(Pubkey.from_string(address))


def token_program(a: Asset) -> Pubkey:
    return Pubkey.from_string(a.token_program or SPL_TOKEN_PROGRAM)


def mint(a: Asset) -> Pubkey:
    addr = a.address or a.wrapped_address
    assert addr is not None
    return Pubkey.from_string(addr)


def associated_token_address(owner: str | Pubkey, a: Asset) -> Pubkey:
    """The owner's associated token account for the asset's mint under the mint's token program."""
    return get_associated_token_address(pubkey(owner), mint(a), token_program(a))
