"""The bridges' wire formats, written in the test from the protocols' own specifications and independent of the
core's codecs (`routequote.core.bridge_arrivals`, `core.actions.cctp_message`): what the route suite carries
from one chain to the other is decoded and re-encoded here, so a mistake in the core's codec cannot cancel out.

* CCTP v2 `MessageV2` + `BurnMessageV2` (Circle's `MessageV2.sol` / `BurnMessageV2.sol`): a 148-byte header
  (version u32, sourceDomain u32, destinationDomain u32, nonce bytes32, sender bytes32, recipient bytes32,
  destinationCaller bytes32, minFinalityThreshold u32, finalityThresholdExecuted u32) and the burn body
  (version u32, burnToken bytes32, mintRecipient bytes32, amount u256, messageSender bytes32, maxFee u256,
  feeExecuted u256, expirationBlock u256, hookData), big-endian.
* LayerZero v2 `PacketSent(bytes encodedPayload, bytes options, address sendLibrary)`: encodedPayload is the
  packet header (version u8, nonce u64, srcEid u32, sender bytes32, dstEid u32, receiver bytes32, per
  `PacketV1Codec.sol`) then guid bytes32 and the OFT message (`OFTMsgCodec.sol`: sendTo bytes32, amountSD u64).
* Anchor instruction data on Solana: `sha256("global:<name>")[:8]` + borsh args: `lz_receive`
  (LzReceiveParams {src_eid u32, sender [32], nonce u64, guid [32], message Vec<u8>, extra_data Vec<u8>}),
  `receive_message` (ReceiveMessageParams {message Vec<u8>, attestation Vec<u8>}), `deposit_for_burn`
  (amount u64, destination_domain u32, mint_recipient [32], destination_caller [32], max_fee u64,
  min_finality_threshold u32).
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass
from typing import Any

from eth_abi import decode
from eth_utils import keccak

PACKET_SENT_TOPIC = "0x" + keccak(text="PacketSent(bytes,bytes,address)").hex()


def anchor(name: str) -> bytes:
    return hashlib.sha256(f"global:{name}".encode()).digest()[:8]


# ---- CCTP v2 ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CctpBurn:
    source_domain: int
    destination_domain: int
    nonce: bytes
    sender: bytes
    recipient: bytes
    destination_caller: bytes
    min_finality: int
    finality_executed: int
    burn_token: bytes
    mint_recipient: bytes
    amount: int
    message_sender: bytes
    max_fee: int
    fee_executed: int
    expiration_block: int

    def encode(self) -> bytes:
        header = (
            struct.pack(">III", 1, self.source_domain, self.destination_domain)
            + self.nonce
            + self.sender
            + self.recipient
            + self.destination_caller
            + struct.pack(">II", self.min_finality, self.finality_executed)
        )
        body = (
            struct.pack(">I", 1)
            + self.burn_token
            + self.mint_recipient
            + self.amount.to_bytes(32, "big")
            + self.message_sender
            + self.max_fee.to_bytes(32, "big")
            + self.fee_executed.to_bytes(32, "big")
            + self.expiration_block.to_bytes(32, "big")
        )
        return header + body


def decode_cctp(message: bytes) -> CctpBurn:
    assert len(message) >= 148 + 228, f"a CCTP v2 burn message is at least 376 bytes, not {len(message)}"
    version, src, dst = struct.unpack_from(">III", message, 0)
    assert version == 1 and struct.unpack_from(">I", message, 148)[0] == 1, "CCTP v2 message and burn body"

    def u256(at: int) -> int:
        return int.from_bytes(message[148 + at : 148 + at + 32], "big")

    return CctpBurn(
        source_domain=src,
        destination_domain=dst,
        nonce=message[12:44],
        sender=message[44:76],
        recipient=message[76:108],
        destination_caller=message[108:140],
        min_finality=struct.unpack_from(">I", message, 140)[0],
        finality_executed=struct.unpack_from(">I", message, 144)[0],
        burn_token=message[152:184],
        mint_recipient=message[184:216],
        amount=u256(68),
        message_sender=message[248:280],
        max_fee=u256(132),
        fee_executed=u256(164),
        expiration_block=u256(196),
    )


def iris_fee(amount: int, max_fee: int, bps_milli: int) -> int:
    """What the test's Iris executes: `bps_milli` thousandths of a basis point of the burn, rounded up, never
    above the burn's maxFee (Circle's rule: feeExecuted <= maxFee)."""
    return min(max_fee, -(-amount * bps_milli // 10_000_000))


def receive_message_data(message: bytes, attestation: bytes) -> bytes:
    return anchor("receive_message") + _vec(message) + _vec(attestation)


def parse_receive_message(data: bytes) -> tuple[bytes, bytes]:
    assert data[:8] == anchor("receive_message"), "not receive_message"
    message, at = _read_vec(data, 8)
    attestation, at = _read_vec(data, at)
    assert at == len(data), "receive_message carries exactly its two vectors"
    return message, attestation


def parse_deposit_for_burn(data: bytes) -> dict[str, Any]:
    assert data[:8] == anchor("deposit_for_burn") and len(data) == 96, "deposit_for_burn data is 96 bytes"
    amount, domain = struct.unpack_from("<QI", data, 8)
    max_fee, finality = struct.unpack_from("<QI", data, 84)
    return {
        "amount": amount,
        "domain": domain,
        "mint_recipient": data[20:52],
        "destination_caller": data[52:84],
        "max_fee": max_fee,
        "min_finality": finality,
    }


# ---- LayerZero v2 / OFT -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Packet:
    nonce: int
    src_eid: int
    sender: bytes
    dst_eid: int
    receiver: bytes
    guid: bytes
    message: bytes  # the OFT message as sent

    @property
    def send_to(self) -> bytes:
        return self.message[:32]

    @property
    def amount_sd(self) -> int:
        return int.from_bytes(self.message[32:40], "big")


def packet_sent(receipt: dict[str, Any], endpoint: str) -> Packet:
    """The one PacketSent the endpoint emitted in this receipt, decoded."""
    logs = [
        lg
        for lg in receipt["logs"]
        if lg["address"].lower() == endpoint.lower() and lg["topics"] and lg["topics"][0] == PACKET_SENT_TOPIC
    ]
    assert len(logs) == 1, f"{len(logs)} PacketSent logs"
    payload, _options, _library = decode(["bytes", "bytes", "address"], bytes.fromhex(logs[0]["data"][2:]))
    p = bytes(payload)
    assert p[0] == 1, f"packet version {p[0]}"
    nonce, src_eid = struct.unpack_from(">QI", p, 1)
    (dst_eid,) = struct.unpack_from(">I", p, 45)
    return Packet(nonce, src_eid, p[13:45], dst_eid, p[49:81], p[81:113], p[113:])


def lz_receive_data(p: Packet) -> bytes:
    return (
        anchor("lz_receive")
        + struct.pack("<I", p.src_eid)
        + p.sender
        + struct.pack("<Q", p.nonce)
        + p.guid
        + _vec(p.message)
        + _vec(b"")
    )


def parse_lz_receive(data: bytes) -> Packet:
    assert data[:8] == anchor("lz_receive"), "not lz_receive"
    src_eid, sender, nonce, guid = (
        struct.unpack_from("<I", data, 8)[0],
        data[12:44],
        struct.unpack_from("<Q", data, 44)[0],
        data[52:84],
    )
    message, at = _read_vec(data, 84)
    _extra, at = _read_vec(data, at)
    assert at == len(data)
    return Packet(nonce, src_eid, sender, 0, b"", guid, message)


def _vec(b: bytes) -> bytes:
    return struct.pack("<I", len(b)) + b


def _read_vec(data: bytes, at: int) -> tuple[bytes, int]:
    (n,) = struct.unpack_from("<I", data, at)
    return data[at + 4 : at + 4 + n], at + 4 + n
