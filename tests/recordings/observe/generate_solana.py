"""Regenerate `solana_*.json` here (run by hand, offline): `getTransaction` answers in the RPC's documented JSON
wire format (`encoding: "json"`, `maxSupportedTransactionVersion: 0`), for a transaction compiled with solders
from the prepared `solana:USDC->arbitrum:USDC` bundle of `tests/golden/actions_bundles.json`, with a wallet-added
ComputeBudget instruction first (the only addition the evidence accepts), and balances consistent with what the
instructions do: the 1 bp fee into a newly created fee-recipient USDC account, the net amount burned, the
MessageSent event account's rent, the fee payer's 2-signature fee. Signatures are placeholders (the keys are not
ours); the observer only checks their shape.

    .venv/bin/python tests/recordings/observe/generate_solana.py
"""

from __future__ import annotations

import base64
import hashlib
import json
import struct
from pathlib import Path
from typing import Any

from solders.hash import Hash
from solders.instruction import AccountMeta, Instruction
from solders.message import Message
from solders.pubkey import Pubkey

HERE = Path(__file__).resolve().parent
GOLDEN = HERE.parents[1] / "golden" / "actions_bundles.json"
ROUTE = "solana:USDC->arbitrum:USDC"
USDC = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"
TOKEN_PROGRAM = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"
COMPUTE_BUDGET = Pubkey.from_string("ComputeBudget111111111111111111111111111111")
ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
SLOT, BLOCK_TIME = 381_442_917, 1_795_323_300
ATA_RENT, EVENT_RENT, SIG_FEE = 2_039_280, 3_900_000, 5_000
CALLER_USDC_BEFORE, CALLER_LAMPORTS_BEFORE = 250_000_000, 1_000_000_000


def b58encode(raw: bytes) -> str:
    n = int.from_bytes(raw, "big")
    out = ""
    while n:
        n, r = divmod(n, 58)
        out = ALPHABET[r] + out
    return "1" * (len(raw) - len(raw.lstrip(b"\x00"))) + out


def placeholder_signature(label: str) -> str:
    return b58encode(hashlib.sha512(label.encode()).digest())


def instruction(d: dict[str, Any]) -> Instruction:
    metas = [AccountMeta(Pubkey.from_string(k["pubkey"]), k["isSigner"], k["isWritable"]) for k in d["keys"]]
    return Instruction(Pubkey.from_string(d["programId"]), base64.b64decode(d["data"]), metas)


def token_balance(index: int, owner: str, amount: int) -> dict[str, Any]:
    return {
        "accountIndex": index,
        "mint": USDC,
        "owner": owner,
        "programId": TOKEN_PROGRAM,
        "uiTokenAmount": {
            "amount": str(amount),
            "decimals": 6,
            "uiAmount": amount / 10**6,
            "uiAmountString": f"{amount / 10**6:g}",
        },
    }


def build(
    action: dict[str, Any], *, label: str, extra: list[Instruction] | None = None, err: Any = None
) -> dict[str, Any]:
    caller = action["feePayer"]
    set_limit = Instruction(COMPUTE_BUDGET, bytes([2]) + struct.pack("<I", 200_000), [])
    ixs = [set_limit, *(instruction(d) for d in action["instructions"]), *(extra or [])]
    blockhash = Hash(hashlib.sha256(label.encode()).digest())
    msg = Message.new_with_blockhash(ixs, Pubkey.from_string(caller), blockhash)
    keys = [str(k) for k in msg.account_keys]
    h = msg.header
    fee = SIG_FEE * h.num_required_signatures
    fee_ata, caller_ata = action["feeRecipientTokenAccount"], action["instructions"][1]["keys"][0]["pubkey"]
    event_account = action["requiredSigners"][1]
    route_fee, net = int(action["routeFee"]), int(action["netInputAmount"])
    pre = [0] * len(keys)
    pre[keys.index(caller)] = CALLER_LAMPORTS_BEFORE
    pre[keys.index(caller_ata)] = ATA_RENT
    post = list(pre)
    pre_tok = [token_balance(keys.index(caller_ata), caller, CALLER_USDC_BEFORE)]
    if err is None:
        post[keys.index(caller)] -= fee + ATA_RENT + EVENT_RENT
        post[keys.index(fee_ata)] = ATA_RENT
        post[keys.index(event_account)] = EVENT_RENT
        post_tok = [
            token_balance(keys.index(caller_ata), caller, CALLER_USDC_BEFORE - route_fee - net),
            token_balance(keys.index(fee_ata), action["feeRecipient"], route_fee),
        ]
    else:
        post[keys.index(caller)] -= fee
        post_tok = list(pre_tok)
    for i, k in enumerate(
        keys
    ):  # accounts that exist before (programs, PDAs, mint) hold lamports that do not move
        if pre[i] == 0 and k not in (fee_ata, event_account):
            pre[i] = 1_141_440 if msg.is_key_called_as_program(i) else 1_461_600
            post[i] = pre[i]
    signatures = [placeholder_signature(f"{label}:{i}") for i in range(h.num_required_signatures)]
    return {
        "blockTime": BLOCK_TIME,
        "meta": {
            "computeUnitsConsumed": 87_311,
            "err": err,
            "fee": fee,
            "innerInstructions": [],
            "loadedAddresses": {"readonly": [], "writable": []},
            "logMessages": [
                f"Program {k} invoke [1]" for k in dict.fromkeys(str(ix.program_id) for ix in ixs)
            ],
            "postBalances": post,
            "postTokenBalances": post_tok,
            "preBalances": pre,
            "preTokenBalances": pre_tok,
            "rewards": [],
            "status": {"Ok": None} if err is None else {"Err": err},
        },
        "slot": SLOT,
        "transaction": {
            "message": {
                "accountKeys": keys,
                "header": {
                    "numReadonlySignedAccounts": h.num_readonly_signed_accounts,
                    "numReadonlyUnsignedAccounts": h.num_readonly_unsigned_accounts,
                    "numRequiredSignatures": h.num_required_signatures,
                },
                "instructions": [
                    {
                        "accounts": list(ci.accounts),
                        "data": b58encode(bytes(ci.data)),
                        "programIdIndex": ci.program_id_index,
                        "stackHeight": None,
                    }
                    for ci in msg.instructions
                ],
                "recentBlockhash": str(blockhash),
            },
            "signatures": signatures,
        },
        "version": "legacy",
    }


TOKEN_MESSENGER_V2 = "0x28b5a0e9C621a5BadaA536219b3a228C8168cf5d"
TOKEN_MESSENGER_MINTER_V2 = "CCTPV2vPZJS2u2BBsUoscuikbYjnpFmbFsvVuJdgUMQe"


def cctp_message(action: dict[str, Any], *, nonce: bytes, executed: int, fee_executed: int) -> bytes:
    """The attested CCTP v2 message of the prepared burn (MessageV2 header + BurnMessageV2 body)."""
    burn = base64.b64decode(action["instructions"][-1]["data"])
    amount, domain = struct.unpack_from("<QI", burn, 8)
    max_fee, finality = struct.unpack_from("<QI", burn, 84)
    header = (
        struct.pack(">III", 1, 5, domain)
        + nonce
        + bytes(Pubkey.from_string(TOKEN_MESSENGER_MINTER_V2))
        + bytes(12)
        + bytes.fromhex(TOKEN_MESSENGER_V2[2:])
        + bytes(32)
        + struct.pack(">II", finality, executed)
    )
    body = (
        struct.pack(">I", 1)
        + bytes(Pubkey.from_string(USDC))
        + burn[20:52]
        + amount.to_bytes(32, "big")
        + bytes(Pubkey.from_string(action["feePayer"]))
        + max_fee.to_bytes(32, "big")
        + fee_executed.to_bytes(32, "big")
        + (0).to_bytes(32, "big")
    )
    return header + body


def iris_answer(action: dict[str, Any], message: bytes, *, status: str, attestation: str) -> dict[str, Any]:
    amount = int.from_bytes(message[148 + 68 : 148 + 100], "big")
    return {
        "messages": [
            {
                "attestation": attestation,
                "cctpVersion": 2,
                "decodedMessage": {
                    "decodedMessageBody": {
                        "amount": str(amount),
                        "burnToken": USDC,
                        "expirationBlock": "0",
                        "feeExecuted": str(int.from_bytes(message[148 + 164 : 148 + 196], "big")),
                        "hookData": "",
                        "maxFee": str(int.from_bytes(message[148 + 132 : 148 + 164], "big")),
                        "messageSender": action["feePayer"],
                        "mintRecipient": action["recipient"],
                    },
                    "destinationCaller": "0x" + "00" * 32,
                    "destinationDomain": "3",
                    "finalityThresholdExecuted": str(int.from_bytes(message[144:148], "big")),
                    "messageBody": "0x" + message[148:].hex(),
                    "minFinalityThreshold": "1000",
                    "nonce": "0x" + message[12:44].hex(),
                    "recipient": TOKEN_MESSENGER_V2,
                    "sender": TOKEN_MESSENGER_MINTER_V2,
                    "sourceDomain": "5",
                },
                "delayReason": None,
                "eventNonce": "0x" + message[12:44].hex(),
                "message": "0x" + message.hex(),
                "status": status,
            }
        ]
    }


def main() -> None:
    action = json.loads(GOLDEN.read_text())[ROUTE]["unsigned_action"]
    action = {k: v for k, v in action.items() if k != "safety_receipt"}
    memo = Instruction(Pubkey.from_string("MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr"), b"hi", [])
    cases = {
        "solana_cctp_burn": build(action, label="ok"),
        "solana_cctp_burn_failed": build(
            action, label="failed", err={"InstructionError": [3, {"Custom": 1}]}
        ),
        "solana_cctp_burn_extra_instruction": build(action, label="extra", extra=[memo]),
    }
    for name, result in cases.items():
        sig = result["transaction"]["signatures"][0]
        doc = {
            "route": ROUTE,
            "unsigned_action": action,
            "signature": sig,
            "response": {"jsonrpc": "2.0", "id": 1, "result": result},
        }
        (HERE / f"{name}.json").write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
        print(name, sig[:12])
    nonce = hashlib.sha256(b"iris nonce").digest()
    done = cctp_message(action, nonce=nonce, executed=1000, fee_executed=9_999)
    waiting = cctp_message(action, nonce=bytes(32), executed=0, fee_executed=0)
    attestation = (
        "0x" + b"".join(hashlib.sha512(f"attester {i}".encode()).digest() + b"\x1b" for i in (1, 2)).hex()
    )
    iris = {
        "source_signature": cases["solana_cctp_burn"]["transaction"]["signatures"][0],
        "complete": iris_answer(action, done, status="complete", attestation=attestation),
        "pending": iris_answer(action, waiting, status="pending_confirmations", attestation="PENDING"),
        "not_found": {"code": 404, "error": "Message hash not found"},
    }
    (HERE / "iris_v2_messages.json").write_text(json.dumps(iris, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
