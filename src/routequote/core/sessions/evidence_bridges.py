"""Bridge evidence: the CCTP burn and mint, the Across deposit and fill, the OFT send and receive. Pure."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from eth_abi.abi import decode
from eth_utils.address import to_checksum_address
from eth_utils.crypto import keccak

from routequote.core.assets import CHAINS, Chain
from routequote.core.chain import EvmLog, EvmTransaction
from routequote.core.sessions.evidence_common import (
    CCTP_BURN_BODY_BYTES,
    CCTP_HEADER_BYTES,
    LZ_EID_SOLANA,
    RECEIVE_MESSAGE_SELECTOR,
    TOPIC0,
    ZERO_ADDRESS,
    ObservationRejected,
    StepEvidence,
    _logs,
    _lower,
    _network_fee,
    _topic_address,
    _topic_int,
    bytes32_to_address,
    bytes32_to_recipient,
    erc20_transfers,
    uint_topic,
)


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
