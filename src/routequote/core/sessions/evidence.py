"""What the chain shows a step did, held against the action that was prepared for it. Pure: no I/O.

The observers (`routequote.observe`) read transactions; this module decides what they prove. A transaction
proves nothing unless it is exactly one of the prepared transactions (chain, sender, target, value, calldata)
or, on Solana, carries exactly the prepared instructions in order. Amounts come only from what the chain
recorded: ERC-20 `Transfer` logs, the WETH9 `Withdrawal` the router made, the bridge contracts' own events,
Solana pre/post balances. Nothing is ever taken from the caller.

Events (topic0 = keccak256 of the canonical signature; indexed fields noted, all checked in tests against
the contracts' published ABIs):

* ERC-20 `Transfer(address indexed from, address indexed to, uint256 value)`
* WETH9 `Withdrawal(address indexed src, uint256 wad)`
* Circle TokenMessengerV2 `DepositForBurn(address indexed burnToken, uint256 amount, address indexed depositor,
  bytes32 mintRecipient, uint32 destinationDomain, bytes32 destinationTokenMessenger, bytes32 destinationCaller,
  uint256 maxFee, uint32 indexed minFinalityThreshold, bytes hookData)`; MessageTransmitterV2 `MessageSent(bytes)`,
  `MessageReceived(address indexed caller, uint32 sourceDomain, bytes32 indexed nonce, bytes32 sender,
  uint32 indexed finalityThresholdExecuted, bytes messageBody)`; BaseTokenMessenger `MintAndWithdraw(address
  indexed mintRecipient, uint256 amount, address indexed mintToken, uint256 feeCollected)`
* Across SpokePool `FundsDeposited(bytes32 inputToken, bytes32 outputToken, uint256 inputAmount, uint256
  outputAmount, uint256 indexed destinationChainId, uint256 indexed depositId, uint32 quoteTimestamp, uint32
  fillDeadline, uint32 exclusivityDeadline, bytes32 indexed depositor, bytes32 recipient, bytes32 exclusiveRelayer,
  bytes message)` and `FilledRelay(bytes32 inputToken, bytes32 outputToken, uint256 inputAmount, uint256
  outputAmount, uint256 repaymentChainId, uint256 indexed originChainId, uint256 indexed depositId, uint32
  fillDeadline, uint32 exclusivityDeadline, bytes32 exclusiveRelayer, bytes32 indexed relayer, bytes32 depositor,
  bytes32 recipient, bytes32 messageHash, (bytes32 updatedRecipient, bytes32 updatedMessageHash, uint256
  updatedOutputAmount, uint8 fillType) relayExecutionInfo)`
* LayerZero OFT `OFTSent(bytes32 indexed guid, uint32 dstEid, address indexed fromAddress, uint256 amountSentLD,
  uint256 amountReceivedLD)`, `OFTReceived(bytes32 indexed guid, uint32 srcEid, address indexed toAddress,
  uint256 amountReceivedLD)`
"""

from __future__ import annotations

import base64
import re
import struct
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from eth_abi.abi import decode
from eth_utils.abi import function_signature_to_4byte_selector
from eth_utils.address import to_checksum_address
from eth_utils.crypto import keccak
from solders.pubkey import Pubkey

from routequote.core.actions.evm import ROUTER_ADDRESS_THIS, decode_call
from routequote.core.assets import ASSETS, CHAINS, Asset, Chain, Token
from routequote.core.chain import EvmLog, EvmTransaction, SolanaTransaction
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

EVM_TX_RE = re.compile(r"0x[0-9a-fA-F]{64}")
SOLANA_SIG_RE = re.compile(r"[1-9A-HJ-NP-Za-km-z]{64,88}")

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


# ---- small decoders ----------------------------------------------------------------------------------


def _amount(value: Any, what: str) -> int:
    """A base-unit amount of the prepared action: an int or a decimal string (never a float or bool)."""
    if isinstance(value, bool):
        raise ValueError(f"{what}: not an amount")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    raise ValueError(f"{what}: not an amount: {value!r}")


def _lower(address: str | None) -> str:
    return (address or "").lower()


def _topic_address(topic: str) -> str:
    return str(to_checksum_address("0x" + topic[-40:]))


def _topic_int(topic: str) -> int:
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


def _logs(tx: EvmTransaction, name: str, emitter: str | None = None) -> list[EvmLog]:
    return [
        lg
        for lg in tx.logs
        if lg.topics
        and lg.topics[0] == TOPIC0[name]
        and (emitter is None or _lower(lg.address) == _lower(emitter))
    ]


def erc20_transfers(tx: EvmTransaction, token: str) -> list[tuple[str, str, int]]:
    """(from, to, value) of every standard `Transfer` log the token emitted in the transaction."""
    out = []
    for lg in _logs(tx, "Transfer", token):
        if len(lg.topics) == 3 and len(lg.data) == 32:
            out.append(
                (_topic_address(lg.topics[1]), _topic_address(lg.topics[2]), int.from_bytes(lg.data, "big"))
            )
    return out


def _prepared_matches(p: dict[str, Any], tx: EvmTransaction) -> bool:
    data = p.get("data") or "0x"
    return (
        tx.chain_id == p.get("chainId")
        and _lower(tx.sender) == _lower(p.get("from"))
        and _lower(tx.to) == _lower(p.get("to"))
        and tx.value == _amount(p.get("value", "0"), "transaction value")
        and tx.input == bytes.fromhex(data[2:])
    )


def _network_fee(txs: Sequence[EvmTransaction]) -> dict[str, int]:
    return {"wei": sum(t.gas_used * t.effective_gas_price for t in txs)}


# ---- EVM: the prepared action ------------------------------------------------------------------------


def verify_evm_action(
    action: dict[str, Any], txs: Sequence[EvmTransaction], *, required_confirmations: int
) -> StepEvidence:
    """Evidence for one prepared EVM action from the mined transactions the caller named (see module doc)."""
    prepared: list[dict[str, Any]] = list(action.get("transactions") or [])
    kinds: list[str] = list(action.get("kinds") or [])
    if not prepared or len(kinds) != len(prepared):
        raise ValueError("not a prepared EVM action (transactions and kinds)")
    chain_id = action.get("chainId")
    unique: dict[str, EvmTransaction] = {}
    for tx in txs:
        unique.setdefault(tx.tx_hash.lower(), tx)
    for tx in unique.values():
        if tx.chain_id != chain_id:
            raise ObservationRejected(
                "observation_wrong_chain",
                f"{tx.tx_hash} is on chain {tx.chain_id}, the action is on {chain_id}",
                tx=tx.tx_hash,
            )
    matched: list[EvmTransaction | None] = [None] * len(prepared)
    for tx in unique.values():
        slot = next(
            (i for i, p in enumerate(prepared) if matched[i] is None and _prepared_matches(p, tx)), None
        )
        if slot is None:
            raise ObservationRejected(
                "observation_not_prepared_action",
                f"{tx.tx_hash} is not one of the prepared transactions (sender, target, value and calldata must be"
                " exactly as prepared)",
                tx=tx.tx_hash,
            )
        matched[slot] = tx
    missing = [i for i, m in enumerate(matched) if m is None]
    if missing:
        raise ObservationRejected(
            "observation_incomplete",
            f"prepared transaction(s) {missing} ({', '.join(kinds[i] for i in missing)}) not named",
            missing_transaction_indexes=missing,
        )
    done = [m for m in matched if m is not None]
    for tx in done:
        if tx.status != 1:
            raise ObservationRejected(
                "observation_reverted", f"{tx.tx_hash} reverted on chain", tx=tx.tx_hash
            )
    tx_ids = tuple(t.tx_hash for t in done)
    if any(t.confirmations < required_confirmations for t in done):
        return StepEvidence.pending(tx_ids)
    sender = str(prepared[0]["from"])
    fee_paid = _fee_paid(action, prepared, kinds, done, sender)
    actual_input = _evm_input(prepared, kinds, done, sender)
    last, last_p, kind = done[-1], prepared[-1], kinds[-1]
    call = decode_call(bytes.fromhex(str(last_p["data"])[2:]))
    minimum = _amount(action.get("minimumOutput"), "minimumOutput")
    recipient = str(action.get("recipient"))
    output: int | None = None
    bridge: dict[str, Any] | None = None
    network_fee = _network_fee(done)
    if kind == "uniswap_v3_swap":
        output = _uniswap_output(call, last, recipient)
    elif kind == "cctp_deposit_for_burn":
        bridge = _cctp_burn(action, call, last, sender)
    elif kind == "across_deposit":
        bridge = _across_deposit(call, last, recipient, minimum)
    elif kind == "oft_send":
        bridge = _oft_sent(call, last, recipient, minimum, sender)
        network_fee["layerzero_native_fee_sent_wei"] = last.value
    else:
        raise ValueError(f"no evidence rule for an EVM step of kind {kind}")
    if output is not None and output < minimum:
        raise ObservationRejected(
            "observation_below_step_minimum",
            f"the step delivered {output}, below its minimum {minimum}",
            actual_output_base=str(output),
            minimum_output_base=str(minimum),
        )
    return StepEvidence(
        status="final",
        tx_ids=tx_ids,
        actual_input_base=actual_input,
        actual_output_base=output,
        service_fee_paid_base=fee_paid,
        network_fee=network_fee,
        block_times=tuple(t.block_timestamp for t in done),
        bridge=bridge,
    )


def _fee_paid(
    action: dict[str, Any],
    prepared: list[dict[str, Any]],
    kinds: list[str],
    done: list[EvmTransaction],
    sender: str,
) -> int:
    if "service_fee_transfer" not in kinds:
        return 0
    i = kinds.index("service_fee_transfer")
    p, tx = prepared[i], done[i]
    fee_to = str(action.get("feeRecipient"))
    want = _amount(action.get("routeFee"), "routeFee")
    if (p.get("data") or "0x") == "0x":
        if _lower(tx.to) != _lower(fee_to):
            raise ObservationRejected(
                "observation_wrong_recipient", "the service fee went to another address"
            )
        paid = tx.value
    else:
        paid = sum(
            v
            for f, t, v in erc20_transfers(tx, str(p["to"]))
            if _lower(f) == _lower(sender) and _lower(t) == _lower(fee_to)
        )
    if paid != want:
        raise ObservationRejected(
            "observation_not_prepared_action",
            f"the service fee paid was {paid}, the action prepared {want}",
            tx=tx.tx_hash,
        )
    return paid


def _evm_input(
    prepared: list[dict[str, Any]], kinds: list[str], done: list[EvmTransaction], sender: str
) -> int:
    """What the wallet spent on the step, fee included: ERC-20 moved out of it, or native value for ETH in."""
    if "erc20_approve" in kinds:
        token = str(prepared[kinds.index("erc20_approve")]["to"])
        return sum(v for tx in done for f, _t, v in erc20_transfers(tx, token) if _lower(f) == _lower(sender))
    return sum(tx.value for tx in done)


def _uniswap_output(call: Any, tx: EvmTransaction, recipient: str) -> int:
    if call is None or call.name != "multicall":
        raise ValueError("a prepared Uniswap step is a SwapRouter02 multicall")
    inner = [decode_call(bytes(c)) for c in call.args[1]]
    swap = inner[0]
    if swap is None or swap.name != "exactInputSingle":
        raise ValueError("a prepared Uniswap step starts with exactInputSingle")
    token_out, swap_recipient = str(swap.args[0][1]), str(swap.args[0][3])
    if _lower(swap_recipient) == _lower(ROUTER_ADDRESS_THIS):
        unwrap = inner[1] if len(inner) > 1 else None
        if unwrap is None or unwrap.name != "unwrapWETH9":
            raise ValueError("a swap to the router must be followed by unwrapWETH9")
        if _lower(str(unwrap.args[1])) != _lower(recipient):
            raise ObservationRejected(
                "observation_wrong_recipient", "the unwrapped ETH goes to another address"
            )
        # WETH9 Withdrawal(src = router, wad): the router unwrapped exactly what it then sends to the recipient
        return sum(
            int.from_bytes(lg.data, "big")
            for lg in _logs(tx, "Withdrawal", token_out)
            if len(lg.topics) == 2
            and len(lg.data) == 32
            and _lower(_topic_address(lg.topics[1])) == _lower(tx.to)
        )
    if _lower(swap_recipient) != _lower(recipient):
        raise ObservationRejected("observation_wrong_recipient", "the swap output goes to another address")
    moved = erc20_transfers(tx, token_out)
    got = sum(v for _f, t, v in moved if _lower(t) == _lower(recipient))
    if got == 0 and moved:
        raise ObservationRejected("observation_wrong_recipient", "the swap output went to another address")
    return got


def _cctp_burn(action: dict[str, Any], call: Any, tx: EvmTransaction, sender: str) -> dict[str, Any]:
    if call is None or call.name != "depositForBurn":
        raise ValueError("a prepared CCTP step is depositForBurn")
    amount, domain, mint_recipient, burn_token, _caller, max_fee, finality = call.args
    found = []
    for lg in _logs(tx, "DepositForBurn", tx.to):
        if len(lg.topics) != 4:
            continue
        l_amount, l_recipient, l_domain, _dtm, _dc, l_max_fee, _hook = decode(
            ["uint256", "bytes32", "uint32", "bytes32", "bytes32", "uint256", "bytes"], lg.data
        )
        if (
            _lower(_topic_address(lg.topics[1])) == _lower(burn_token)
            and _lower(_topic_address(lg.topics[2])) == _lower(sender)
            and _topic_int(lg.topics[3]) == finality
            and (l_amount, l_recipient, l_domain, l_max_fee) == (amount, mint_recipient, domain, max_fee)
        ):
            found.append(lg)
    if len(found) != 1:
        raise ObservationRejected(
            "observation_bridge_mismatch",
            "the burn did not emit exactly one DepositForBurn matching the action",
        )
    messages = [decode(["bytes"], lg.data)[0] for lg in _logs(tx, "MessageSent")]
    source = CHAINS[Chain(str(action.get("chain")))].cctp_domain
    return {
        "kind": "cctp",
        "source_domain": source,
        "destination_domain": domain,
        "source_tx": tx.tx_hash,
        "source_block": tx.block_number,
        "burn_token": str(to_checksum_address(burn_token)),
        "burn_amount": amount,
        "max_fee": max_fee,
        "min_finality_threshold": finality,
        "mint_recipient": "0x" + bytes(mint_recipient).hex(),
        "message_sent": "0x" + bytes(messages[0]).hex() if len(messages) == 1 else None,
    }


def _across_deposit(call: Any, tx: EvmTransaction, recipient: str, minimum: int) -> dict[str, Any]:
    if call is None or call.name != "deposit":
        raise ValueError("a prepared Across step is SpokePool.deposit")
    (_depositor, p_recipient, p_in, p_out, p_in_amount, p_out_amount, p_dest, *_rest) = call.args
    if bytes32_to_address(p_recipient) is None or _lower(bytes32_to_address(p_recipient)) != _lower(
        recipient
    ):
        raise ObservationRejected("observation_wrong_recipient", "the deposit pays another recipient")
    found = []
    for lg in _logs(tx, "FundsDeposited", tx.to):
        if len(lg.topics) != 4:
            continue
        t_in, t_out, in_amount, out_amount, _qt, fill_deadline, _ex, l_recipient, _relayer, _msg = decode(
            [
                "bytes32",
                "bytes32",
                "uint256",
                "uint256",
                "uint32",
                "uint32",
                "uint32",
                "bytes32",
                "bytes32",
                "bytes",
            ],
            lg.data,
        )
        if (t_in, t_out, in_amount, l_recipient, _topic_int(lg.topics[1])) == (
            p_in,
            p_out,
            p_in_amount,
            p_recipient,
            p_dest,
        ):
            found.append((lg, out_amount, fill_deadline, bytes(_relayer), bytes(_msg)))
    if len(found) != 1:
        raise ObservationRejected(
            "observation_bridge_mismatch",
            "the deposit did not emit exactly one FundsDeposited matching the action",
        )
    lg, out_amount, fill_deadline, exclusive_relayer, message = found[0]
    if out_amount < minimum or out_amount != p_out_amount:
        raise ObservationRejected(
            "observation_below_step_minimum",
            f"the deposit promises {out_amount}, below the step minimum {minimum}",
        )
    return {
        "kind": "across",
        "origin_chain_id": tx.chain_id,
        "destination_chain_id": p_dest,
        "deposit_id": _topic_int(lg.topics[2]),
        "input_amount": p_in_amount,
        "input_token": "0x" + bytes(p_in).hex(),
        "depositor": lg.topics[3],
        "exclusive_relayer": "0x" + exclusive_relayer.hex(),
        "message_hash": "0x" + (bytes(32) if not message else keccak(message)).hex(),
        "output_amount": out_amount,
        "output_token": bytes32_to_address(p_out) or "0x" + bytes(p_out).hex(),
        "recipient": str(to_checksum_address(recipient)),
        "fill_deadline": fill_deadline,
        "spoke_pool": tx.to,
        "source_tx": tx.tx_hash,
        "source_block": tx.block_number,
    }


def _oft_sent(call: Any, tx: EvmTransaction, recipient: str, minimum: int, sender: str) -> dict[str, Any]:
    if call is None or call.name != "send":
        raise ValueError("a prepared OFT step is send(SendParam, MessagingFee, refund)")
    dst_eid, to, amount_ld, min_amount_ld = call.args[0][:4]
    to_text = bytes32_to_recipient(bytes(to), dst_eid == LZ_EID_SOLANA)
    if to_text != recipient and _lower(to_text) != _lower(recipient):
        raise ObservationRejected("observation_wrong_recipient", "the OFT send pays another recipient")
    found = []
    for lg in _logs(tx, "OFTSent", tx.to):
        if len(lg.topics) != 3 or _lower(_topic_address(lg.topics[2])) != _lower(sender):
            continue
        eid, sent, received = decode(["uint32", "uint256", "uint256"], lg.data)
        if eid == dst_eid and sent <= amount_ld:
            found.append((lg.topics[1], sent, received))
    if len(found) != 1:
        raise ObservationRejected(
            "observation_bridge_mismatch", "the send did not emit exactly one matching OFTSent"
        )
    guid, sent, received = found[0]
    if received < max(minimum, min_amount_ld):
        raise ObservationRejected(
            "observation_below_step_minimum", f"the OFT delivers {received}, below the step minimum {minimum}"
        )
    return {
        "kind": "oft",
        "guid": guid,
        "dst_eid": dst_eid,
        "amount_sent": sent,
        "amount_received": received,
        "to": to_text,
        "oft": tx.to,
        "source_tx": tx.tx_hash,
        "source_block": tx.block_number,
    }


# ---- EVM: bridge destinations ------------------------------------------------------------------------


def parse_cctp_message(message: bytes) -> dict[str, Any]:
    """A CCTP v2 message: the 148-byte header (MessageV2) and the burn body (BurnMessageV2), ints and hex."""
    if len(message) < CCTP_HEADER_BYTES + CCTP_BURN_BODY_BYTES:
        raise ValueError(
            f"a CCTP v2 burn message is at least {CCTP_HEADER_BYTES + CCTP_BURN_BODY_BYTES} bytes"
        )
    h, b = message[:CCTP_HEADER_BYTES], message[CCTP_HEADER_BYTES:]

    def u32(raw: bytes, at: int) -> int:
        return int.from_bytes(raw[at : at + 4], "big")

    def w(raw: bytes, at: int) -> bytes:
        return raw[at : at + 32]

    return {
        "version": u32(h, 0),
        "source_domain": u32(h, 4),
        "destination_domain": u32(h, 8),
        "nonce": "0x" + w(h, 12).hex(),
        "sender": "0x" + w(h, 44).hex(),
        "recipient": "0x" + w(h, 76).hex(),
        "destination_caller": "0x" + w(h, 108).hex(),
        "min_finality_threshold": u32(h, 140),
        "finality_threshold_executed": u32(h, 144),
        "body_version": u32(b, 0),
        "burn_token": "0x" + w(b, 4).hex(),
        "mint_recipient": "0x" + w(b, 36).hex(),
        "amount": int.from_bytes(w(b, 68), "big"),
        "message_sender": "0x" + w(b, 100).hex(),
        "max_fee": int.from_bytes(w(b, 132), "big"),
        "fee_executed": int.from_bytes(w(b, 164), "big"),
        "expiration_block": int.from_bytes(w(b, 196), "big"),
        "hook_data": "0x" + b[CCTP_BURN_BODY_BYTES:].hex(),
        "message_body": b,
    }


def cctp_received_topics(message: bytes) -> list[str | None]:
    """eth_getLogs topics for the destination MessageTransmitterV2's `MessageReceived` of this message."""
    return [TOPIC0["MessageReceived"], None, parse_cctp_message(message)["nonce"]]


def verify_cctp_mint(
    tx: EvmTransaction,
    *,
    message: bytes,
    attestation: bytes,
    usdc: str,
    recipient: str,
    transmitter: str,
    required_confirmations: int,
    minimum_output: int | None = None,
) -> StepEvidence:
    """The destination mint of one attested CCTP message. The transaction must have received exactly this message
    at the pinned MessageTransmitterV2 (`MessageReceived` with its source domain, nonce and body). When it called
    `receiveMessage` directly its calldata must carry this message; the attestation may be another valid one
    (Circle re-attests expired fast messages) since the contract verified it on chain. Output is the USDC minted
    to the recipient (`Transfer` from the zero address)."""
    m = parse_cctp_message(message)
    if tx.status != 1:
        raise ObservationRejected("observation_reverted", f"{tx.tx_hash} reverted on chain", tx=tx.tx_hash)
    if _lower(tx.to) == _lower(transmitter):
        ok = tx.input[:4] == RECEIVE_MESSAGE_SELECTOR
        if ok:
            try:
                got_message, _got_attestation = decode(["bytes", "bytes"], tx.input[4:])
            except Exception:  # noqa: BLE001 - any undecodable calldata is simply not this message
                ok = False
            else:
                ok = bytes(got_message) == message
        if not ok:
            raise ObservationRejected(
                "observation_not_prepared_action",
                "the transaction does not call receiveMessage with this message",
            )
    received = False
    for lg in _logs(tx, "MessageReceived", transmitter):
        if len(lg.topics) != 4 or lg.topics[2] != m["nonce"]:
            continue
        src, _sender, body = decode(["uint32", "bytes32", "bytes"], lg.data)
        received = received or (src == m["source_domain"] and bytes(body) == m["message_body"])
    if not received:
        raise ObservationRejected(
            "observation_not_prepared_action",
            "the transaction did not receive this CCTP message",
            tx=tx.tx_hash,
        )
    if tx.confirmations < required_confirmations:
        return StepEvidence.pending((tx.tx_hash,))
    minted = erc20_transfers(tx, usdc)
    output = sum(v for f, t, v in minted if _lower(f) == ZERO_ADDRESS and _lower(t) == _lower(recipient))
    if output == 0:
        raise ObservationRejected("observation_wrong_recipient", "no USDC was minted to the recipient")
    if minimum_output is not None and output < minimum_output:
        raise ObservationRejected(
            "observation_below_step_minimum",
            f"the mint delivered {output}, below the step minimum {minimum_output}",
        )
    fee = m["fee_executed"]
    for lg in _logs(tx, "MintAndWithdraw"):
        if len(lg.topics) == 3 and _lower(_topic_address(lg.topics[1])) == _lower(recipient):
            fee = int(decode(["uint256", "uint256"], lg.data)[1])
    return StepEvidence(
        status="final",
        tx_ids=(tx.tx_hash,),
        actual_input_base=None,
        actual_output_base=output,
        network_fee=_network_fee([tx]),
        block_times=(tx.block_timestamp,),
        bridge={
            "kind": "cctp_mint",
            "source_domain": m["source_domain"],
            "nonce": m["nonce"],
            "amount": m["amount"],
            "fee_executed": fee,
            "finality_threshold_executed": m["finality_threshold_executed"],
            "mint_tx": tx.tx_hash,
        },
    )


def across_fill_topics(bridge: dict[str, Any]) -> list[str | None]:
    """eth_getLogs topics for the destination SpokePool's `FilledRelay` of this deposit."""
    return [
        TOPIC0["FilledRelay"],
        uint_topic(int(bridge["origin_chain_id"])),
        uint_topic(int(bridge["deposit_id"])),
    ]


_FILLED_RELAY_DATA = [
    "bytes32",
    "bytes32",
    "uint256",
    "uint256",
    "uint256",
    "uint32",
    "uint32",
    "bytes32",
    "bytes32",
    "bytes32",
    "bytes32",
    "(bytes32,bytes32,uint256,uint8)",
]


def _is_the_deposits_fill(fields: tuple[Any, ...], bridge: dict[str, Any]) -> bool:
    """Whether a FilledRelay's relay data is exactly this deposit's (the fields its relay hash covers). Anyone
    can fill other relay data under the same (originChainId, depositId): such a fill is not this deposit's."""
    (
        t_in,
        t_out,
        in_amount,
        out_amount,
        _repay,
        fill_deadline,
        _ed,
        x_relayer,
        depositor,
        recipient,
        msg_hash,
        _info,
    ) = fields
    checks = [
        _lower(bytes32_to_address(t_out)) == _lower(str(bridge["output_token"])),
        int(in_amount) == int(bridge["input_amount"]),
        int(out_amount) == int(bridge["output_amount"]),
        int(fill_deadline) == int(bridge["fill_deadline"]),
        _lower(bytes32_to_address(recipient)) == _lower(str(bridge["recipient"])),
    ]
    optional = {
        "input_token": t_in,
        "depositor": depositor,
        "exclusive_relayer": x_relayer,
        "message_hash": msg_hash,
    }
    for key, raw in optional.items():  # present for deposits observed by this version
        if bridge.get(key) is not None:
            checks.append(("0x" + bytes(raw).hex()).lower() == str(bridge[key]).lower())
    return all(checks)


def verify_across_fill(
    logs: Sequence[EvmLog], bridge: dict[str, Any], *, spoke_pool: str
) -> tuple[int, str] | None:
    """(amount delivered, fill tx hash) of the relayer's `FilledRelay` for this deposit, or None before the fill.

    Only a fill of exactly the deposit's relay data counts; fills of other relay data under the same ids are
    skipped. The delivered amount and recipient are the relay-execution ones (a depositor speed-up may update
    them; the session then holds the amount to the step minimum)."""
    want_origin, want_id = int(bridge["origin_chain_id"]), int(bridge["deposit_id"])
    for lg in logs:
        if (
            _lower(lg.address) != _lower(spoke_pool)
            or len(lg.topics) != 4
            or lg.topics[0] != TOPIC0["FilledRelay"]
        ):
            continue
        if (_topic_int(lg.topics[1]), _topic_int(lg.topics[2])) != (want_origin, want_id):
            continue
        fields = tuple(decode(_FILLED_RELAY_DATA, lg.data))
        if not _is_the_deposits_fill(fields, bridge):
            continue
        updated_recipient, _umh, updated_amount, _fill_type = fields[-1]
        if _lower(bytes32_to_address(updated_recipient)) != _lower(str(bridge["recipient"])):
            raise ObservationRejected("observation_wrong_recipient", "the fill paid another recipient")
        return int(updated_amount), lg.tx_hash
    return None


def parse_oft_received(logs: Sequence[EvmLog], guid: str, *, oft: str) -> tuple[int, str, str] | None:
    """(amount received, recipient, tx hash) of an EVM `OFTReceived` for this guid, or None before delivery."""
    for lg in logs:
        if (
            _lower(lg.address) == _lower(oft)
            and len(lg.topics) == 3
            and lg.topics[0] == TOPIC0["OFTReceived"]
            and lg.topics[1] == guid.lower()
        ):
            _src_eid, amount = decode(["uint32", "uint256"], lg.data)
            return int(amount), _topic_address(lg.topics[2]), lg.tx_hash
    return None


# ---- Solana ------------------------------------------------------------------------------------------


def _token_delta(
    tx: SolanaTransaction, *, mint: str, owner: str | None = None, account: str | None = None
) -> int:
    def pick(balances: Sequence[Any]) -> int:
        total = 0
        for b in balances:
            if b.mint != mint:
                continue
            if owner is not None and b.owner != owner:
                continue
            if account is not None and tx.account_keys[b.account_index] != account:
                continue
            total += int(b.amount)
        return total

    return pick(tx.post_token_balances) - pick(tx.pre_token_balances)


def _token_balance(balances: Sequence[Any], keys: Sequence[str], account: str, mint: str) -> int:
    return sum(int(b.amount) for b in balances if b.mint == mint and keys[b.account_index] == account)


def _mint_of(a: Asset) -> str:
    addr = a.address or a.wrapped_address
    if addr is None:
        raise ValueError(f"{a.key} has no mint")
    return addr


def _ata(owner: str, a: Asset) -> str:
    from solders.token.associated import get_associated_token_address

    program = (
        Pubkey.from_string(a.token_program)
        if a.token_program
        else Pubkey.from_string("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA")
    )
    return str(
        get_associated_token_address(Pubkey.from_string(owner), Pubkey.from_string(_mint_of(a)), program)
    )


def verify_solana_action(action: dict[str, Any], tx: SolanaTransaction) -> StepEvidence:
    """Evidence for one prepared Solana action from its finalized transaction (see module doc)."""
    if tx.err is not None:
        raise ObservationRejected("observation_reverted", f"{tx.signature} failed on chain", tx=tx.signature)
    prepared = [
        (
            str(ix["programId"]),
            tuple(str(k["pubkey"]) for k in ix["keys"]),
            base64.b64decode(ix["data"], validate=True),
        )
        for ix in action.get("instructions") or []
    ]
    observed = [
        (ix.program_id, ix.accounts, ix.data)
        for ix in tx.instructions
        if ix.program_id != COMPUTE_BUDGET_PROGRAM
    ]
    if not prepared or observed != prepared:
        raise ObservationRejected(
            "observation_not_prepared_action",
            f"{tx.signature} does not carry exactly the prepared instructions in order (only ComputeBudget may be added)",
            tx=tx.signature,
        )
    fee_payer = str(action.get("feePayer"))
    required = {fee_payer, *(str(s) for s in action.get("requiredSigners") or [])}
    if not required <= set(tx.signers):
        raise ObservationRejected("observation_not_prepared_action", "the prepared signers did not sign it")
    kinds: list[str] = list(action.get("kinds") or [])
    src, dst = ASSETS[str(action.get("source"))], ASSETS[str(action.get("destination"))]
    src_mint = _mint_of(src)
    caller = str(action.get("sender") or fee_payer)
    fee_paid = 0
    if "service_fee_transfer_checked" in kinds:
        fee_account = str(action.get("feeRecipientTokenAccount"))
        fee_paid = _token_delta(tx, mint=src_mint, account=fee_account)
        want = _amount(action.get("routeFee"), "routeFee")
        if fee_paid != want:
            raise ObservationRejected(
                "observation_not_prepared_action",
                f"the service fee paid was {fee_paid}, the action prepared {want}",
            )
    if src.token is Token.SOL:
        wsol = _ata(caller, src)
        wrapped = sum(
            struct.unpack_from("<Q", data, 4)[0]
            for program, accounts, data in observed
            if program == SYSTEM_PROGRAM
            and len(data) == 12
            and data[:4] == b"\x02\x00\x00\x00"
            and len(accounts) == 2
            and accounts[1] == wsol
        )
        pre = _token_balance(tx.pre_token_balances, tx.account_keys, wsol, src_mint)
        post = _token_balance(tx.post_token_balances, tx.account_keys, wsol, src_mint)
        actual_input = pre + wrapped - post
    else:
        actual_input = -_token_delta(tx, mint=src_mint, owner=caller)
    minimum = _amount(action.get("minimumOutput"), "minimumOutput")
    recipient = str(action.get("recipient"))
    output: int | None = None
    bridge: dict[str, Any] | None = None
    if kinds and kinds[-1] == "cctp_deposit_for_burn":
        bridge = _solana_cctp_burn(prepared[-1], tx, actual_input - fee_paid, recipient)
    elif dst.chain is Chain.SOLANA and dst.token is Token.SOL:
        output = _lamports_received(tx, recipient)
    elif dst.chain is Chain.SOLANA:
        output = _token_delta(tx, mint=_mint_of(dst), owner=recipient)
    else:
        raise ValueError(f"no evidence rule for a Solana step to {dst.key}")
    if output is not None and output < minimum:
        raise ObservationRejected(
            "observation_below_step_minimum",
            f"the step delivered {output}, below its minimum {minimum}",
            actual_output_base=str(output),
            minimum_output_base=str(minimum),
        )
    return StepEvidence(
        status="final",
        tx_ids=(tx.signature,),
        actual_input_base=actual_input,
        actual_output_base=output,
        service_fee_paid_base=fee_paid,
        network_fee={"lamports": tx.fee},
        block_times=() if tx.block_time is None else (tx.block_time,),
        bridge=bridge,
    )


def _lamports_received(tx: SolanaTransaction, recipient: str) -> int:
    """SOL delivered to the recipient: its lamport change, plus the transaction fee and the rent of accounts
    this transaction created (both paid by the wallet when it is the fee payer, so not a smaller output)."""
    keys = tx.account_keys
    if recipient not in keys:
        return 0
    i = keys.index(recipient)
    delta = tx.post_balances[i] - tx.pre_balances[i]
    if keys[0] == recipient:
        delta += tx.fee
        delta += sum(
            post
            for k, (pre, post) in enumerate(zip(tx.pre_balances, tx.post_balances, strict=True))
            if k != i and pre == 0 and post > 0
        )
    return delta


def _solana_cctp_burn(
    prepared: tuple[str, tuple[str, ...], bytes], tx: SolanaTransaction, burned: int, recipient: str
) -> dict[str, Any]:
    _program, accounts, data = prepared
    if len(data) != 96:
        raise ValueError("a deposit_for_burn instruction carries 96 bytes")
    amount, domain = struct.unpack_from("<QI", data, 8)
    mint_recipient = data[20:52]
    max_fee, finality = struct.unpack_from("<QI", data, 84)
    if _lower(bytes32_to_address(mint_recipient)) != _lower(recipient):
        raise ObservationRejected("observation_wrong_recipient", "the burn mints to another recipient")
    if burned != amount:
        raise ObservationRejected(
            "observation_bridge_mismatch", f"the burn token account moved {burned}, the burn names {amount}"
        )
    return {
        "kind": "cctp",
        "source_domain": CHAINS[Chain.SOLANA].cctp_domain,
        "destination_domain": domain,
        "source_tx": tx.signature,
        "source_slot": tx.slot,
        "burn_amount": amount,
        "max_fee": max_fee,
        "min_finality_threshold": finality,
        "mint_recipient": "0x" + mint_recipient.hex(),
        "message_sent_event_account": accounts[11],
    }


def verify_solana_delivery(tx: SolanaTransaction, *, owner: str, mint: str) -> int:
    """Tokens of `mint` the transaction delivered to `owner` (any of its token accounts); > 0 or rejected."""
    if tx.err is not None:
        raise ObservationRejected("observation_reverted", f"{tx.signature} failed on chain", tx=tx.signature)
    got = _token_delta(tx, mint=mint, owner=owner)
    if got <= 0:
        raise ObservationRejected(
            "observation_wrong_recipient", f"{tx.signature} delivered nothing to {owner}"
        )
    return got


__all__ = [
    "EVENT_SIGNATURES",
    "TOPIC0",
    "ObservationRejected",
    "StepEvidence",
    "across_fill_topics",
    "address_topic",
    "cctp_received_topics",
    "parse_cctp_message",
    "parse_oft_received",
    "verify_across_fill",
    "verify_cctp_mint",
    "verify_evm_action",
    "verify_solana_action",
    "verify_solana_delivery",
]
