"""Circle CCTP v2 messages: parse and encode the bytes `MessageTransmitterV2.receiveMessage` takes.

Dependency-free (standard library only) so the action builders, the caller-side verifier and the evidence
code (Iris answers, `MessageSent` logs) can all import it.

Layout (circlefin/evm-cctp-contracts `src/messages/v2/MessageV2.sol` and `BurnMessageV2.sol`; uintNN are
big-endian, left-padded; bytes32 as is):

    header (148 bytes)                         burn message body (228 bytes + hookData)
    version                    uint32    0     version           uint32    0
    sourceDomain               uint32    4     burnToken         bytes32   4
    destinationDomain          uint32    8     mintRecipient     bytes32   36
    nonce                      bytes32   12    amount            uint256   68
    sender                     bytes32   44    messageSender     bytes32   100
    recipient                  bytes32   76    maxFee            uint256   132
    destinationCaller          bytes32   108   feeExecuted       uint256   164
    minFinalityThreshold       uint32    140   expirationBlock   uint256   196
    finalityThresholdExecuted  uint32    144   hookData          bytes     228
    messageBody                bytes     148

The source chain emits the message with nonce, finalityThresholdExecuted, feeExecuted and expirationBlock
empty; the attested message Iris returns has them filled in, and that is the one `receiveMessage` takes.
The mint pays `amount - feeExecuted` to `mintRecipient`. CCTP v2 uses message version 1 and burn-message
body version 1.
"""

from __future__ import annotations

from typing import Any

HEADER_LENGTH = 148
BURN_BODY_LENGTH = 228  # without hookData
CCTP_V2_MESSAGE_VERSION = 1
CCTP_V2_BURN_BODY_VERSION = 1
ZERO32 = b"\x00" * 32

# (name, offset, size, kind): kind "u" = unsigned big-endian integer, "b" = bytes32 shown as 0x-hex
HEADER_FIELDS: tuple[tuple[str, int, int, str], ...] = (
    ("version", 0, 4, "u"),
    ("source_domain", 4, 4, "u"),
    ("destination_domain", 8, 4, "u"),
    ("nonce", 12, 32, "b"),
    ("sender", 44, 32, "b"),
    ("recipient", 76, 32, "b"),
    ("destination_caller", 108, 32, "b"),
    ("min_finality_threshold", 140, 4, "u"),
    ("finality_threshold_executed", 144, 4, "u"),
)
BURN_FIELDS: tuple[tuple[str, int, int, str], ...] = (
    ("version", 0, 4, "u"),
    ("burn_token", 4, 32, "b"),
    ("mint_recipient", 36, 32, "b"),
    ("amount", 68, 32, "u"),
    ("message_sender", 100, 32, "b"),
    ("max_fee", 132, 32, "u"),
    ("fee_executed", 164, 32, "u"),
    ("expiration_block", 196, 32, "u"),
)


class CctpMessageError(ValueError):
    """The bytes are not a CCTP v2 (burn) message."""


def _hex(b: bytes) -> str:
    return "0x" + b.hex()


def _read(data: bytes, fields: tuple[tuple[str, int, int, str], ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, offset, size, kind in fields:
        raw = data[offset : offset + size]
        out[name] = int.from_bytes(raw, "big") if kind == "u" else _hex(raw)
    return out


def parse_cctp_message(message: bytes, *, require_burn: bool = True) -> dict[str, Any]:
    """The fields of a CCTP v2 message. Integers are Python ints; bytes32 fields, `message_body` and
    `hook_data` are lower-case 0x-hex strings. `burn` holds the BurnMessageV2 body (None only when
    `require_burn` is False and the body is shorter than a burn message). Raises CctpMessageError."""
    if not isinstance(message, bytes | bytearray):
        raise CctpMessageError("a CCTP message must be bytes")
    data = bytes(message)
    if len(data) < HEADER_LENGTH:
        raise CctpMessageError(f"a CCTP v2 message is at least {HEADER_LENGTH} bytes, got {len(data)}")
    out = _read(data, HEADER_FIELDS)
    body = data[HEADER_LENGTH:]
    out["message_body"] = _hex(body)
    if len(body) < BURN_BODY_LENGTH:
        if require_burn:
            raise CctpMessageError(
                f"a CCTP v2 burn message body is at least {BURN_BODY_LENGTH} bytes, got {len(body)}"
            )
        out["burn"] = None
        return out
    burn = _read(body, BURN_FIELDS)
    burn["hook_data"] = _hex(body[BURN_BODY_LENGTH:])
    out["burn"] = burn
    return out


def _b32(value: bytes | str, name: str) -> bytes:
    raw = (
        bytes.fromhex(value[2:] if value.startswith("0x") else value)
        if isinstance(value, str)
        else bytes(value)
    )
    if len(raw) != 32:
        raise CctpMessageError(f"{name} must be 32 bytes")
    return raw


def _u(value: int, size: int, name: str) -> bytes:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 1 << (8 * size):
        raise CctpMessageError(f"{name} must be an unsigned {8 * size}-bit integer")
    return value.to_bytes(size, "big")


def encode_cctp_burn_message(
    *,
    source_domain: int,
    destination_domain: int,
    nonce: bytes | str,
    sender: bytes | str,
    recipient: bytes | str,
    destination_caller: bytes | str,
    min_finality_threshold: int,
    finality_threshold_executed: int,
    burn_token: bytes | str,
    mint_recipient: bytes | str,
    amount: int,
    message_sender: bytes | str,
    max_fee: int,
    fee_executed: int,
    expiration_block: int,
    hook_data: bytes = b"",
    version: int = CCTP_V2_MESSAGE_VERSION,
    body_version: int = CCTP_V2_BURN_BODY_VERSION,
) -> bytes:
    """The packed bytes of a CCTP v2 burn message (the inverse of `parse_cctp_message`)."""
    header = (
        _u(version, 4, "version")
        + _u(source_domain, 4, "source_domain")
        + _u(destination_domain, 4, "destination_domain")
        + _b32(nonce, "nonce")
        + _b32(sender, "sender")
        + _b32(recipient, "recipient")
        + _b32(destination_caller, "destination_caller")
        + _u(min_finality_threshold, 4, "min_finality_threshold")
        + _u(finality_threshold_executed, 4, "finality_threshold_executed")
    )
    body = (
        _u(body_version, 4, "body_version")
        + _b32(burn_token, "burn_token")
        + _b32(mint_recipient, "mint_recipient")
        + _u(amount, 32, "amount")
        + _b32(message_sender, "message_sender")
        + _u(max_fee, 32, "max_fee")
        + _u(fee_executed, 32, "fee_executed")
        + _u(expiration_block, 32, "expiration_block")
        + bytes(hook_data)
    )
    return header + body


def bytes32_hex(value: bytes) -> str:
    """A 32-byte value in the parser's form (lower-case 0x-hex)."""
    return _hex(_b32(value, "value"))
