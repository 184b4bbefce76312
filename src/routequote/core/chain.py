"""What the chain shows, as plain data: the facts a session step is judged on (`core.sessions.evidence`).

The observers (`routequote.observe`) turn wire answers into these; the core decides what they prove. They
live in the core so that the core never imports a port or an adapter to name them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class EvmLog:
    address: str  # checksummed
    topics: tuple[str, ...]  # 0x + 64 hex, lower-case
    data: bytes
    log_index: int
    tx_hash: str
    block_number: int


@dataclass(frozen=True, slots=True)
class EvmTransaction:
    """A mined EVM transaction and its receipt, as the chain shows it."""

    chain_id: int
    tx_hash: str
    sender: str  # checksummed
    to: str | None  # checksummed; None for a contract creation
    value: int
    input: bytes
    status: int  # 1 success, 0 reverted
    block_number: int
    block_timestamp: int
    confirmations: int  # latest block - block_number + 1
    gas_used: int
    effective_gas_price: int
    logs: tuple[EvmLog, ...]


@dataclass(frozen=True, slots=True)
class SolanaTokenBalance:
    account_index: int
    mint: str
    owner: str | None
    amount: int  # base units


@dataclass(frozen=True, slots=True)
class SolanaInstruction:
    program_id: str
    accounts: tuple[str, ...]
    data: bytes


@dataclass(frozen=True, slots=True)
class SolanaTransaction:
    """A finalized Solana transaction (getTransaction at `finalized`), decoded."""

    signature: str
    slot: int
    block_time: int | None
    err: Any  # None on success
    fee: int
    account_keys: tuple[str, ...]  # static keys then loaded addresses (writable, readonly)
    signers: tuple[str, ...]
    instructions: tuple[SolanaInstruction, ...]  # top-level, in order
    pre_balances: tuple[int, ...]
    post_balances: tuple[int, ...]
    pre_token_balances: tuple[SolanaTokenBalance, ...]
    post_token_balances: tuple[SolanaTokenBalance, ...]
    log_messages: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CctpMessage:
    """One CCTP v2 message as Circle Iris `/v2/messages/{sourceDomain}?transactionHash=` reports it."""

    status: str  # "complete" | "pending_confirmations" | ...
    message: bytes | None
    attestation: bytes | None
    source_domain: int
    destination_domain: int
    nonce: str | None
    amount: int | None  # decodedMessageBody.amount
    mint_recipient: str | None  # 0x + 64 hex (bytes32)
    max_fee: int | None
    fee_executed: int | None
    min_finality_threshold: int | None
    finality_threshold_executed: int | None


class ObservationUnavailable(Exception):
    """A chain (or Iris) cannot be read now: no RPC configured, timeout, breaker open, or a contract the read
    needs is not pinned (REST 503). Raised by the readers, the gatherer and a step kind alike
    (`routequote.ports` re-exports it)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


__all__ = [
    "CctpMessage",
    "EvmLog",
    "EvmTransaction",
    "ObservationUnavailable",
    "SolanaInstruction",
    "SolanaTokenBalance",
    "SolanaTransaction",
]
