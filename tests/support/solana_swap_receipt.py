"""The wallet side of a Solana swap in tests: the `getTransaction` answer (the RPC's wire format) of a signed
prepared Raydium SOL -> USDC transaction, with the swap's token-balance effect (the Raydium program does not run
here: the answer is a stand-in built from the signed transaction), and the wire helpers it uses."""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from solders.hash import Hash
from solders.instruction import AccountMeta, Instruction
from solders.keypair import Keypair
from solders.message import Message
from solders.pubkey import Pubkey
from solders.token.associated import get_associated_token_address
from solders.transaction import Transaction

from routequote.core.assets import ASSETS

USDC_MINT = str(ASSETS["solana:USDC"].address)
TOKEN_PROGRAM = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"
WSOL = "So11111111111111111111111111111111111111112"


def b58encode(raw: bytes) -> str:
    alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
    n, out = int.from_bytes(raw, "big"), ""
    while n:
        n, r = divmod(n, 58)
        out = alphabet[r] + out
    return "1" * (len(raw) - len(raw.lstrip(b"\x00"))) + out


def to_instruction(d: dict[str, Any]) -> Instruction:
    metas = [AccountMeta(Pubkey.from_string(k["pubkey"]), k["isSigner"], k["isWritable"]) for k in d["keys"]]
    return Instruction(Pubkey.from_string(d["programId"]), base64.b64decode(d["data"]), metas)


def ui_amount(amount: int, decimals: int = 6) -> dict[str, Any]:
    whole, frac = divmod(amount, 10**decimals)
    text = f"{whole}.{frac:0{decimals}d}".rstrip("0").rstrip(".")
    # `uiAmount` is the wire's float (the reader never uses it); `amount` is the decimal string of base units
    return {"amount": str(amount), "decimals": decimals, "uiAmount": float(text), "uiAmountString": text}


def swap_result(
    action: dict[str, Any], wallet: Keypair, usdc_out: int, slot: int
) -> tuple[str, dict[str, Any]]:
    """The `getTransaction` answer of the signed prepared Raydium transaction: its instructions as signed, the
    fee TransferChecked and the wrap visible in the token balances, the swap's USDC delivered to the wallet."""
    ixs = [to_instruction(d) for d in action["instructions"]]
    blockhash = Hash(hashlib.sha256(f"blockhash {slot}".encode()).digest())
    message = Message.new_with_blockhash(ixs, wallet.pubkey(), blockhash)
    signed = Transaction([wallet], message, blockhash)
    signed.verify()
    keys = [str(k) for k in message.account_keys]
    owner = str(wallet.pubkey())
    usdc_ata = str(get_associated_token_address(wallet.pubkey(), Pubkey.from_string(USDC_MINT)))
    fee_ata = str(action.get("feeRecipientTokenAccount"))
    route_fee = int(action.get("routeFee") or 0)

    def bal(account: str, mint: str, amount: int, holder: str) -> dict[str, Any]:
        return {
            "accountIndex": keys.index(account),
            "mint": mint,
            "owner": holder,
            "programId": TOKEN_PROGRAM,
            "uiTokenAmount": ui_amount(amount, 9 if mint == WSOL else 6),
        }

    fee_owner = "DevFeeRecipientP1aceho1der11111111111111111"
    pre_tokens = [bal(fee_ata, WSOL, 0, fee_owner)] if route_fee else []
    post_tokens = [
        *([bal(fee_ata, WSOL, route_fee, fee_owner)] if route_fee else []),
        bal(usdc_ata, USDC_MINT, usdc_out, owner),
    ]
    n = len(keys)
    pre, post = [2_000_000_000] + [1_000_000] * (n - 1), [1_000_000_000] + [1_000_000] * (n - 1)
    h = message.header
    result = {
        "blockTime": 1_795_400_000 + slot % 1000,
        "slot": slot,
        "version": "legacy",
        "meta": {
            "computeUnitsConsumed": 120_000,
            "err": None,
            "fee": 5000,
            "innerInstructions": [],
            "loadedAddresses": {"readonly": [], "writable": []},
            "logMessages": ["Program CAMMCzo5YL8w4VFF8KVHrK22GGUsp5VTaW7grrKgrWqK success"],
            "postBalances": post,
            "postTokenBalances": post_tokens,
            "preBalances": pre,
            "preTokenBalances": pre_tokens,
            "rewards": [],
            "status": {"Ok": None},
        },
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
                    for ci in message.instructions
                ],
                "recentBlockhash": str(blockhash),
            },
            "signatures": [str(s) for s in signed.signatures],
        },
    }
    return str(signed.signatures[0]), result
