"""The decoders every evidence rule shares: event topics, log filters, amounts, the rejection an
observation gets when it proves nothing, and `StepEvidence`. Pure: no I/O."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from eth_utils.abi import function_signature_to_4byte_selector
from eth_utils.address import to_checksum_address
from eth_utils.crypto import keccak
from solders.pubkey import Pubkey

from routequote.core.chain import EvmLog, EvmTransaction
from routequote.core.field_rules import EVM_TX_HASH_RE, SOLANA_SIGNATURE_RE
from routequote.errors import InvalidRequest

EVENT_SIGNATURES: dict[str, str] = {
    "Transfer": "Transfer(address,address,uint256)",
    "Withdrawal": "Withdrawal(address,uint256)",
    "DepositForBurn": "DepositForBurn(address,uint256,address,bytes32,uint32,bytes32,bytes32,uint256,uint32,bytes)",
    "MessageSent": "MessageSent(bytes)",
    "MessageReceived": "MessageReceived(address,uint32,bytes32,bytes32,uint32,bytes)",
    "MintAndWithdraw": "MintAndWithdraw(address,uint256,address,uint256)",
    "FundsDeposited": (
        "FundsDeposited(bytes32,bytes32,uint256,uint256,uint256,uint256,uint32,uint32,uint32,bytes32,bytes32,bytes32,bytes)"
    ),
    "FilledRelay": (
        "FilledRelay(bytes32,bytes32,uint256,uint256,uint256,uint256,uint256,uint32,uint32,bytes32,bytes32,bytes32,"
        "bytes32,bytes32,(bytes32,bytes32,uint256,uint8))"
    ),
    "OFTSent": "OFTSent(bytes32,uint32,address,uint256,uint256)",
    "OFTReceived": "OFTReceived(bytes32,uint32,address,uint256)",
}
TOPIC0: dict[str, str] = {name: "0x" + keccak(text=sig).hex() for name, sig in EVENT_SIGNATURES.items()}
RECEIVE_MESSAGE_SELECTOR = function_signature_to_4byte_selector("receiveMessage(bytes,bytes)")
ZERO_ADDRESS = "0x0000000000000000000000000000000000000000"
COMPUTE_BUDGET_PROGRAM = "ComputeBudget111111111111111111111111111111"
SYSTEM_PROGRAM = "11111111111111111111111111111111"
LZ_EID_SOLANA = 30168
CCTP_HEADER_BYTES = 148
CCTP_BURN_BODY_BYTES = 228

EVM_TX_RE = EVM_TX_HASH_RE  # the one home of the transaction id rules: core/field_rules.py
SOLANA_SIG_RE = SOLANA_SIGNATURE_RE

REJECTION_REASONS = frozenset(
    {
        "observation_not_prepared_action",
        "observation_reverted",
        "observation_below_step_minimum",
        "observation_wrong_recipient",
        "observation_incomplete",
        "observation_wrong_chain",
        "observation_bridge_mismatch",
    }
)


class ObservationRejected(InvalidRequest):
    """What the caller named does not prove the step: nothing may advance (REST 400 with this reason)."""

    def __init__(self, reason_class: str, message: str = "", **details: Any) -> None:
        if reason_class not in REJECTION_REASONS:
            raise ValueError(f"unknown observation rejection {reason_class}")
        super().__init__(reason_class, message, details={"observation": details} if details else None)


@dataclass(frozen=True)
class StepEvidence:
    status: Literal["final", "pending"]
    tx_ids: tuple[str, ...]
    actual_input_base: int | None = None
    actual_output_base: int | None = None
    service_fee_paid_base: int = 0
    network_fee: dict[str, int] = field(default_factory=dict)
    block_times: tuple[int, ...] = ()
    bridge: dict[str, Any] | None = None

    @classmethod
    def pending(cls, tx_ids: Sequence[str]) -> StepEvidence:
        """Found but not final yet, or not found at all: nothing is decided."""
        return cls("pending", tuple(tx_ids))

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["tx_ids"] = list(self.tx_ids)
        out["block_times"] = list(self.block_times)
        return out


@dataclass(frozen=True)
class EvmSend:
    """The step's own transaction of a prepared EVM action (its last), as its kind's evidence rule reads it."""

    action: dict[str, Any]
    call: Any  # the prepared calldata, decoded (`core.actions.evm.decode_call`)
    tx: EvmTransaction
    recipient: str
    minimum: int
    sender: str


@dataclass(frozen=True)
class SendEvidence:
    """What an EVM send proved: a swap's output, or a bridge's source evidence (and any fee it paid besides gas)."""

    output: int | None = None
    bridge: dict[str, Any] | None = None
    extra_network_fee: dict[str, int] = field(default_factory=dict)


# ---- small decoders ----------------------------------------------------------------------------------


def base_amount(value: Any, what: str) -> int:
    """A base-unit amount of the prepared action: an int or a decimal string (never a float or bool)."""
    if isinstance(value, bool):
        raise ValueError(f"{what}: not an amount")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    raise ValueError(f"{what}: not an amount: {value!r}")


def lower_address(address: str | None) -> str:
    return (address or "").lower()


def topic_address(topic: str) -> str:
    return str(to_checksum_address("0x" + topic[-40:]))


def topic_int(topic: str) -> int:
    return int(topic, 16)


def uint_topic(value: int) -> str:
    return "0x" + value.to_bytes(32, "big").hex()


def address_topic(address: str) -> str:
    return "0x" + bytes.fromhex(address[2:]).rjust(32, b"\x00").hex()


def bytes32_to_address(raw: bytes) -> str | None:
    """The EVM address in a left-padded bytes32, or None when the top 12 bytes are not zero."""
    if len(raw) != 32 or raw[:12] != b"\x00" * 12:
        return None
    return str(to_checksum_address("0x" + raw[12:].hex()))


def bytes32_to_recipient(raw: bytes, solana: bool) -> str:
    if solana:
        return str(Pubkey.from_bytes(raw))
    address = bytes32_to_address(raw)
    return address if address is not None else "0x" + raw.hex()


def logs_named(tx: EvmTransaction, name: str, emitter: str | None = None) -> list[EvmLog]:
    return [
        lg
        for lg in tx.logs
        if lg.topics
        and lg.topics[0] == TOPIC0[name]
        and (emitter is None or lower_address(lg.address) == lower_address(emitter))
    ]


def erc20_transfers(tx: EvmTransaction, token: str) -> list[tuple[str, str, int]]:
    """(from, to, value) of every standard `Transfer` log the token emitted in the transaction."""
    out = []
    for lg in logs_named(tx, "Transfer", token):
        if len(lg.topics) == 3 and len(lg.data) == 32:
            out.append(
                (topic_address(lg.topics[1]), topic_address(lg.topics[2]), int.from_bytes(lg.data, "big"))
            )
    return out


def prepared_matches(p: dict[str, Any], tx: EvmTransaction) -> bool:
    data = p.get("data") or "0x"
    return (
        tx.chain_id == p.get("chainId")
        and lower_address(tx.sender) == lower_address(p.get("from"))
        and lower_address(tx.to) == lower_address(p.get("to"))
        and tx.value == base_amount(p.get("value", "0"), "transaction value")
        and tx.input == bytes.fromhex(data[2:])
    )


def network_fee_of(txs: Sequence[EvmTransaction]) -> dict[str, int]:
    return {"wei": sum(t.gas_used * t.effective_gas_price for t in txs)}
