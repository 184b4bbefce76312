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

Each step kind's rule lives in its module (`core.sessions.kinds`); this module is their one public index
(the verifier, the observers and the tests import from here).
"""

from __future__ import annotations

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
from routequote.core.sessions.kinds.across import across_fill_topics, verify_across_fill
from routequote.core.sessions.kinds.across import deposit_evidence as _across_deposit
from routequote.core.sessions.kinds.cctp_burn import burn_evidence as _cctp_burn
from routequote.core.sessions.kinds.cctp_mint_evm import (
    cctp_received_topics,
    parse_cctp_message,
    verify_cctp_mint,
)
from routequote.core.sessions.kinds.oft import parse_oft_received
from routequote.core.sessions.kinds.oft import sent_evidence as _oft_sent
from routequote.core.sessions.kinds.source_evm import verify_evm_action

__all__ = [
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
    "verify_evm_action",
    "verify_solana_action",
    "verify_solana_delivery",
]
