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

from collections.abc import Sequence
from typing import Any

from routequote.core.actions.evm import ROUTER_ADDRESS_THIS, decode_call
from routequote.core.chain import EvmTransaction
from routequote.core.sessions.evidence_bridges import (
    _across_deposit,
    _cctp_burn,
    _oft_sent,
    across_fill_topics,
    cctp_received_topics,
    parse_cctp_message,
    parse_oft_received,
    verify_across_fill,
    verify_cctp_mint,
)
from routequote.core.sessions.evidence_common import (
    CCTP_BURN_BODY_BYTES,
    CCTP_HEADER_BYTES,
    COMPUTE_BUDGET_PROGRAM,
    EVENT_SIGNATURES,
    EVM_TX_RE,
    LZ_EID_SOLANA,
    RECEIVE_MESSAGE_SELECTOR,
    REJECTION_REASONS,
    SOLANA_SIG_RE,
    SYSTEM_PROGRAM,
    TOPIC0,
    ZERO_ADDRESS,
    ObservationRejected,
    StepEvidence,
    _amount,
    _logs,
    _lower,
    _network_fee,
    _prepared_matches,
    _topic_address,
    address_topic,
    bytes32_to_address,
    bytes32_to_recipient,
    erc20_transfers,
    uint_topic,
)
from routequote.core.sessions.evidence_solana import (
    verify_solana_action,
    verify_solana_delivery,
)

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


__all__ = [
    "verify_evm_action",
    "CCTP_BURN_BODY_BYTES",
    "CCTP_HEADER_BYTES",
    "COMPUTE_BUDGET_PROGRAM",
    "EVENT_SIGNATURES",
    "EVM_TX_RE",
    "LZ_EID_SOLANA",
    "ObservationRejected",
    "RECEIVE_MESSAGE_SELECTOR",
    "REJECTION_REASONS",
    "SOLANA_SIG_RE",
    "SYSTEM_PROGRAM",
    "StepEvidence",
    "TOPIC0",
    "ZERO_ADDRESS",
    "_across_deposit",
    "_cctp_burn",
    "_oft_sent",
    "across_fill_topics",
    "address_topic",
    "bytes32_to_address",
    "bytes32_to_recipient",
    "cctp_received_topics",
    "erc20_transfers",
    "parse_cctp_message",
    "parse_oft_received",
    "uint_topic",
    "verify_across_fill",
    "verify_cctp_mint",
    "verify_solana_action",
    "verify_solana_delivery",
]
