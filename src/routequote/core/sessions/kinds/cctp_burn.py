"""CCTP v2 burn on EVM (`depositForBurn`): the `DepositForBurn` and `MessageSent` logs the TokenMessenger and
MessageTransmitter emitted must carry exactly the prepared amount, domains, recipient and finality. Next step:
the bridge goes in flight; its mint is followed by `cctp_mint_evm` or `cctp_mint_solana`. (The Solana burn is
checked with the rest of its transaction in `evidence_solana`.)"""

from __future__ import annotations

from typing import Any

from eth_abi.abi import decode
from eth_utils.address import to_checksum_address

from routequote.core.assets import CHAINS, Chain
from routequote.core.chain import EvmTransaction
from routequote.core.sessions.entries import CctpBurn
from routequote.core.sessions.evidence_common import (
    EvmSend,
    ObservationRejected,
    SendEvidence,
    logs_named,
    lower_address,
    topic_address,
    topic_int,
)


def send_evidence(send: EvmSend) -> SendEvidence:
    return SendEvidence(bridge=burn_evidence(send.action, send.call, send.tx, send.sender))


def burn_evidence(action: dict[str, Any], call: Any, tx: EvmTransaction, sender: str) -> dict[str, Any]:
    if call is None or call.name != "depositForBurn":
        raise ValueError("a prepared CCTP step is depositForBurn")
    amount, domain, mint_recipient, burn_token, _caller, max_fee, finality = call.args
    found = []
    for lg in logs_named(tx, "DepositForBurn", tx.to):
        if len(lg.topics) != 4:
            continue
        l_amount, l_recipient, l_domain, _dtm, _dc, l_max_fee, _hook = decode(
            ["uint256", "bytes32", "uint32", "bytes32", "bytes32", "uint256", "bytes"], lg.data
        )
        if (
            lower_address(topic_address(lg.topics[1])) == lower_address(burn_token)
            and lower_address(topic_address(lg.topics[2])) == lower_address(sender)
            and topic_int(lg.topics[3]) == finality
            and (l_amount, l_recipient, l_domain, l_max_fee) == (amount, mint_recipient, domain, max_fee)
        ):
            found.append(lg)
    if len(found) != 1:
        raise ObservationRejected(
            "observation_bridge_mismatch",
            "the burn did not emit exactly one DepositForBurn matching the action",
        )
    messages = [decode(["bytes"], lg.data)[0] for lg in logs_named(tx, "MessageSent")]
    source = CHAINS[Chain(str(action.get("chain")))].cctp_domain
    return CctpBurn.of(
        kind="cctp",
        source_domain=source,
        destination_domain=domain,
        source_tx=tx.tx_hash,
        source_block=tx.block_number,
        burn_token=str(to_checksum_address(burn_token)),
        burn_amount=amount,
        max_fee=max_fee,
        min_finality_threshold=finality,
        mint_recipient="0x" + bytes(mint_recipient).hex(),
        message_sent="0x" + bytes(messages[0]).hex() if len(messages) == 1 else None,
    ).to_json()
