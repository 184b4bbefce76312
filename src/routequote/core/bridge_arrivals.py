"""Solana arrivals bound to their bridge message (pure; the session engine calls these on a finalized
`getTransaction` it read itself, whoever named the signature).

A transaction that merely raised the wallet's balance proves nothing: a plain SPL `TransferChecked` from another
wallet does that too. An arrival counts only as the bridge's own delivery of this session's message:

* CCTP to Solana (`verify_cctp_solana_mint`): a successful transaction with a top-level MessageTransmitterV2
  `receive_message` whose message bytes are exactly this session's attested message (so the same source domain,
  nonce, burn and recipient), naming the recipient's USDC token account where the program credits it. The amount
  is that account's USDC balance delta, capped at what the message mints (`amount - feeExecuted`).
* OFT to Solana (`verify_oft_solana_delivery`): a successful transaction with a top-level `lz_receive` on the
  pinned OFT program whose `LzReceiveParams` carry this session's GUID, source endpoint and sender (the Robinhood
  OFT), and an OFT message (`sendTo` bytes32 ++ `amountSD` u64 big-endian) paying the session's recipient. The
  amount is the recipient's USDG balance delta, capped at the message's amount.

Refusals (`ObservationRejected`): a failed transaction `observation_reverted`; no such delivery, or the delivery
of another message / GUID `observation_bridge_mismatch`; a delivery to another recipient or crediting nothing
`observation_wrong_recipient`.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass, field
from typing import Any

from routequote.core.actions.cctp_message import CctpMessageError, parse_cctp_message
from routequote.core.actions.cctp_solana_receive import MT, decode_receive_message_data
from routequote.core.actions.common import associated_token_address
from routequote.core.assets import ASSETS
from routequote.core.chain import SolanaTransaction
from routequote.core.sessions.evidence_common import ObservationRejected

LZ_RECEIVE_DISCRIMINATOR = hashlib.sha256(b"global:lz_receive").digest()[:8]
RECIPIENT_ACCOUNT_INDEX = 15  # the mint recipient's token account in receive_message's accounts


@dataclass(frozen=True, slots=True)
class Arrival:
    """A verified bridge delivery: what reached the recipient, in which transaction, for which message."""

    amount_base: int
    tx_id: str
    block_time: int | None
    bridge: dict[str, Any] = field(default_factory=dict)


def _token_delta(tx: SolanaTransaction, account: str, mint: str) -> int:
    def total(balances: Any) -> int:
        return sum(
            int(b.amount)
            for b in balances
            if b.mint == mint
            and b.account_index < len(tx.account_keys)
            and tx.account_keys[b.account_index] == account
        )

    return total(tx.post_token_balances) - total(tx.pre_token_balances)


def _succeeded(tx: SolanaTransaction) -> None:
    if tx.err is not None:
        raise ObservationRejected("observation_reverted", f"{tx.signature} failed on chain", tx=tx.signature)


def verify_cctp_solana_mint(tx: SolanaTransaction, *, message: bytes, recipient_owner: str) -> Arrival:
    """The USDC this session's attested CCTP `message` minted to `recipient_owner` in `tx` (see module doc)."""
    _succeeded(tx)
    try:
        m = parse_cctp_message(message)
    except CctpMessageError as exc:
        raise ObservationRejected(
            "observation_bridge_mismatch", f"the session's message is malformed: {exc}"
        ) from exc
    usdc = ASSETS["solana:USDC"]
    recipient_account = str(associated_token_address(recipient_owner, usdc))
    receives = []
    for ix in tx.instructions:
        if ix.program_id != str(MT):
            continue
        decoded = decode_receive_message_data(ix.data)
        if decoded is not None:
            receives.append((ix, decoded[0]))
    ours = [ix for ix, msg in receives if msg == message]
    if not ours:
        detail = (
            "receive_message of another message (another burn, nonce or recipient)"
            if receives
            else "no MessageTransmitterV2 receive_message (a plain token transfer is not a CCTP mint)"
        )
        raise ObservationRejected(
            "observation_bridge_mismatch", f"{tx.signature}: {detail}", tx=tx.signature, nonce=m["nonce"]
        )
    burn = m["burn"]
    if burn["mint_recipient"] != "0x" + bytes(associated_token_address(recipient_owner, usdc)).hex():
        raise ObservationRejected(
            "observation_wrong_recipient", "the attested message mints to another account", tx=tx.signature
        )
    ix = ours[0]
    if (
        len(ix.accounts) <= RECIPIENT_ACCOUNT_INDEX
        or ix.accounts[RECIPIENT_ACCOUNT_INDEX] != recipient_account
    ):
        raise ObservationRejected(
            "observation_wrong_recipient", "the mint names another token account", tx=tx.signature
        )
    delta = _token_delta(tx, recipient_account, usdc.address or "")
    if delta <= 0:
        raise ObservationRejected(
            "observation_wrong_recipient",
            f"{tx.signature} credited nothing to {recipient_account}",
            tx=tx.signature,
        )
    minted = burn["amount"] - burn["fee_executed"]
    return Arrival(
        amount_base=min(delta, minted),
        tx_id=tx.signature,
        block_time=tx.block_time,
        bridge={
            "kind": "cctp_receive_message",
            "source_domain": m["source_domain"],
            "nonce": m["nonce"],
            "recipient_token_account": recipient_account,
            "minted_base": minted,
        },
    )


@dataclass(frozen=True, slots=True)
class LzReceive:
    src_eid: int
    sender: bytes
    nonce: int
    guid: bytes
    message: bytes
    extra_data: bytes


def decode_lz_receive(data: bytes) -> LzReceive | None:
    """`lz_receive` data: discriminator + borsh LzReceiveParams {src_eid u32, sender [u8;32], nonce u64,
    guid [u8;32], message Vec<u8>, extra_data Vec<u8>}; None if it is not exactly that."""
    if data[:8] != LZ_RECEIVE_DISCRIMINATOR or len(data) < 8 + 4 + 32 + 8 + 32 + 4:
        return None
    (src_eid,) = struct.unpack_from("<I", data, 8)
    sender = data[12:44]
    (nonce,) = struct.unpack_from("<Q", data, 44)
    guid = data[52:84]
    (n,) = struct.unpack_from("<I", data, 84)
    if len(data) < 88 + n + 4:
        return None
    message = data[88 : 88 + n]
    (k,) = struct.unpack_from("<I", data, 88 + n)
    if len(data) != 92 + n + k:
        return None
    return LzReceive(src_eid, bytes(sender), nonce, bytes(guid), bytes(message), bytes(data[92 + n :]))


def encode_lz_receive(p: LzReceive) -> bytes:
    return (
        LZ_RECEIVE_DISCRIMINATOR
        + struct.pack("<I", p.src_eid)
        + p.sender
        + struct.pack("<Q", p.nonce)
        + p.guid
        + struct.pack("<I", len(p.message))
        + p.message
        + struct.pack("<I", len(p.extra_data))
        + p.extra_data
    )


def oft_message(send_to: bytes, amount_sd: int) -> bytes:
    """The OFT codec's message without a compose part: sendTo (32 bytes) ++ amountSD (u64 big-endian)."""
    return send_to + amount_sd.to_bytes(8, "big")


def verify_oft_solana_delivery(
    tx: SolanaTransaction,
    *,
    oft_program: str,
    guid: str,
    src_eid: int,
    source_oapp: bytes,
    recipient_owner: str,
    shared_to_local: int = 1,
) -> Arrival:
    """The USDG the LayerZero delivery of `guid` (emitted by this session's OFTSent on Robinhood, endpoint
    `src_eid`, OApp `source_oapp` as bytes32) credited to `recipient_owner` in `tx` (see module doc).
    `shared_to_local` converts the message's shared-decimal amount to base units (1 for USDG: 6 and 6)."""
    _succeeded(tx)
    want = bytes.fromhex(guid.removeprefix("0x"))
    lz = [
        d for ix in tx.instructions if ix.program_id == oft_program for d in [decode_lz_receive(ix.data)] if d
    ]
    ours = [d for d in lz if d.guid == want]
    if not ours:
        detail = (
            "the delivery of another GUID"
            if lz
            else "no lz_receive on the OFT program (a plain transfer is not a delivery)"
        )
        raise ObservationRejected("observation_bridge_mismatch", f"{tx.signature}: {detail}", tx=tx.signature)
    p = ours[0]
    if p.src_eid != src_eid or p.sender != source_oapp:
        raise ObservationRejected(
            "observation_bridge_mismatch", "the delivery comes from another endpoint or OApp", tx=tx.signature
        )
    if len(p.message) < 40:
        raise ObservationRejected(
            "observation_bridge_mismatch", "the OFT message is malformed", tx=tx.signature
        )
    send_to, amount_sd = p.message[:32], int.from_bytes(p.message[32:40], "big")
    from solders.pubkey import Pubkey

    if send_to != bytes(Pubkey.from_string(recipient_owner)):
        raise ObservationRejected(
            "observation_wrong_recipient", "the OFT message pays another recipient", tx=tx.signature
        )
    usdg = ASSETS["solana:USDG"]
    account = str(associated_token_address(recipient_owner, usdg))
    delta = _token_delta(tx, account, usdg.address or "")
    if delta <= 0:
        raise ObservationRejected(
            "observation_wrong_recipient", f"{tx.signature} credited nothing to {account}", tx=tx.signature
        )
    amount = amount_sd * shared_to_local
    return Arrival(
        amount_base=min(delta, amount),
        tx_id=tx.signature,
        block_time=tx.block_time,
        bridge={
            "kind": "layerzero_lz_receive",
            "guid": "0x" + p.guid.hex(),
            "src_eid": p.src_eid,
            "nonce": p.nonce,
            "recipient_token_account": account,
            "message_amount_base": amount,
        },
    )
