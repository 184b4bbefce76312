"""The Solana side of the whole-session e2e test (tests/e2e/test_sessions_solana.py, whose docstring says what is
real and what is not): a fake Solana JSON-RPC, the prepared instructions signed and run in LiteSVM as far as
LiteSVM can run them (no CCTP program: the burn's effect is added to the `getTransaction` answer), and Circle's
attested CCTP v2 message and Iris entry for that burn, as the test plays Circle."""

from __future__ import annotations

import base64
import hashlib
import json
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from _bridge_wire import parse_deposit_for_burn
from _sessions import b32
from eth_utils import keccak
from solders.account import Account as SolAccount
from solders.instruction import Instruction
from solders.keypair import Keypair
from solders.litesvm import LiteSVM
from solders.message import Message
from solders.pubkey import Pubkey
from solders.token.associated import get_associated_token_address
from solders.token.state import Mint, TokenAccount, TokenAccountState
from solders.transaction import Transaction
from tests.support.loopback import json_server
from tests.support.solana_swap_receipt import b58encode, to_instruction, ui_amount

from routequote.core.actions.cctp_message import encode_cctp_burn_message
from routequote.core.assets import ASSETS

USDC_MINT = str(ASSETS["solana:USDC"].address)
TOKEN_PROGRAM = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"
CCTP_TMM = "CCTPV2vPZJS2u2BBsUoscuikbYjnpFmbFsvVuJdgUMQe"  # TokenMessengerMinterV2 (deposit_for_burn)
SOLANA_DOMAIN, BASE_DOMAIN = 5, 6
SIG_FEE = 5_000  # lamports per signature (LiteSVM's and mainnet's)
EVENT_RENT = 3_900_000  # MessageSent event account rent (the burn's effect; as in solana_cctp_burn.json)
PLACEHOLDER_PROGRAM, PLACEHOLDER_ACCOUNT = 1_141_440, 1_461_600  # accounts LiteSVM does not hold
START_USDC, START_LAMPORTS = 250_000_000, 2_000_000_000
SLOT, BLOCK_TIME = 381_500_000, 1_795_400_000


def seeded(label: str) -> Keypair:
    """A fixed, public test key (never holds anything real): the recording is reproducible."""
    return Keypair.from_seed(hashlib.sha256(label.encode()).digest())


GOLDEN_WALLET = seeded("routequote solana session e2e wallet")
GOLDEN_EVENT = seeded("routequote solana session e2e event account")
GOLDEN_BASE_KEY = "0x" + keccak(text="routequote solana session e2e base wallet").hex()


# ---- the fake Solana JSON-RPC ------------------------------------------------------------------------------


@dataclass
class FakeSolanaRpc:
    """JSON-RPC over loopback HTTP: `getTransaction` -> the recorded result for a published signature, `null`
    for any other (unknown or not finalized yet); `getSignatureStatuses` -> `finalized` for a published one;
    other methods -> -32601; a batch call by call. Records every (method, params)."""

    transactions: dict[str, dict[str, Any]] = field(default_factory=dict)
    calls: list[tuple[str, Any]] = field(default_factory=list)
    url: str = ""

    def publish(self, result: dict[str, Any]) -> str:
        sig = str(result["transaction"]["signatures"][0])
        self.transactions[sig] = result
        return sig

    def answer(self, method: str, path: str, body: bytes) -> tuple[int, Any]:
        req = json.loads(body)
        return 200, [self.reply(r) for r in req] if isinstance(req, list) else self.reply(req)

    def reply(self, req: dict[str, Any]) -> dict[str, Any]:
        name, params = req.get("method"), req.get("params") or []
        self.calls.append((name, params))
        out: dict[str, Any] = {"jsonrpc": "2.0", "id": req.get("id")}
        if name == "getTransaction":
            out["result"] = self.transactions.get(params[0]) if params else None
        elif name == "getSignatureStatuses":  # a published transaction is final, any other unknown
            value = [
                {"confirmationStatus": "finalized", "err": None} if s in self.transactions else None
                for s in params[0]
            ]
            out["result"] = {"context": {"slot": 1}, "value": value}
        else:
            out["error"] = {"code": -32601, "message": "Method not found"}
        return out

    @contextmanager
    def running(self) -> Iterator[FakeSolanaRpc]:
        with json_server(self.answer) as self.url:
            yield self


# ---- the Solana side: sign, execute in LiteSVM what can run, produce the getTransaction answer -------------


def with_burn_amount(ix: Instruction, amount: int) -> Instruction:
    data = bytearray(bytes(ix.data))
    struct.pack_into("<Q", data, 8, amount)
    return Instruction(ix.program_id, bytes(data), list(ix.accounts))


def token_amount(acct: SolAccount | None) -> int | None:
    if acct is None or str(acct.owner) != TOKEN_PROGRAM or len(bytes(acct.data)) < 165:
        return None
    return int(TokenAccount.from_bytes(bytes(acct.data)[:165]).amount)


@dataclass
class SolanaBurn:
    signature: str
    result: dict[str, Any]  # the getTransaction result (JSON encoding)
    burned: int
    fee_paid: int
    wallet_usdc_before: int
    wallet_usdc_after: int


def solana_burn(
    action: dict[str, Any],
    wallet: Keypair,
    event: Keypair,
    *,
    burn_amount: int | None = None,
    reverted: bool = False,
    expire: int = 0,
) -> SolanaBurn:
    """Sign the prepared instructions (wallet + event account), run in LiteSVM all but the CCTP burn, and
    produce the `getTransaction` answer of the whole signed transaction. `burn_amount` tampers with the burn
    (a transaction that is not the prepared one); `reverted` records it as failed on chain (only the fee
    moves); `expire` advances LiteSVM's blockhash (another signature for the same instructions)."""
    ixs = [to_instruction(d) for d in action["instructions"]]
    assert [str(ix.program_id) for ix in ixs].count(CCTP_TMM) == 1 and str(ixs[-1].program_id) == CCTP_TMM
    if burn_amount is not None:
        ixs[-1] = with_burn_amount(ixs[-1], burn_amount)
    burned = parse_deposit_for_burn(bytes(ixs[-1].data))["amount"]
    owner = wallet.pubkey()
    svm = LiteSVM()
    for _ in range(expire):
        svm.expire_blockhash()
    svm.airdrop(owner, START_LAMPORTS)
    mint = Pubkey.from_string(USDC_MINT)
    token_program = Pubkey.from_string(TOKEN_PROGRAM)
    rent = svm.minimum_balance_for_rent_exemption(165)
    svm.set_account(
        mint,
        SolAccount(
            svm.minimum_balance_for_rent_exemption(82),
            bytes(Mint(Pubkey.new_unique(), 10**15, 6, True, None)),
            token_program,
            False,
            0,
        ),
    )
    wallet_ata = get_associated_token_address(owner, mint, token_program)
    state = TokenAccount(mint, owner, START_USDC, None, TokenAccountState.Initialized, None, 0, None)
    svm.set_account(wallet_ata, SolAccount(rent, bytes(state), token_program, False, 0))
    assert svm.get_account(Pubkey.from_string(CCTP_TMM)) is None  # no CCTP program in LiteSVM

    blockhash = svm.latest_blockhash()
    message = Message.new_with_blockhash(ixs, owner, blockhash)
    signed = Transaction(
        [wallet, event], message, blockhash
    )  # the wallet's and the event account's signatures
    signed.verify()
    whole = svm.simulate_transaction(signed)
    assert hasattr(whole, "err"), "the full transaction cannot run in LiteSVM: its CCTP program is missing"

    keys = [str(k) for k in message.account_keys]
    pubkeys = list(message.account_keys)
    pre_accounts = [svm.get_account(k) for k in pubkeys]
    runnable = Transaction([wallet], Message.new_with_blockhash(ixs[:-1], owner, blockhash), blockhash)
    meta = svm.send_transaction(runnable)
    assert not hasattr(meta, "err"), meta.err()
    post_accounts = [svm.get_account(k) for k in pubkeys]

    w, ev, ata = keys.index(str(owner)), keys.index(str(event.pubkey())), keys.index(str(wallet_ata))
    fee_ata = keys.index(str(action["feeRecipientTokenAccount"]))
    pre = [a.lamports if a is not None else 0 for a in pre_accounts]
    post = [a.lamports if a is not None else 0 for a in post_accounts]
    created_rent = post[fee_ata] - pre[fee_ata]
    assert (
        created_rent == rent and pre[w] - post[w] == SIG_FEE + created_rent
    )  # LiteSVM charged one signature
    for i, (a, b) in enumerate(zip(pre_accounts, post_accounts, strict=True)):
        if a is None and b is None and i != ev:  # the CCTP programs and PDAs: not in LiteSVM
            pre[i] = post[i] = (
                PLACEHOLDER_PROGRAM if message.is_key_called_as_program(i) else PLACEHOLDER_ACCOUNT
            )
    n_sig = message.header.num_required_signatures
    fee = SIG_FEE * n_sig
    post[w] -= SIG_FEE * (n_sig - 1) + EVENT_RENT  # the second signature; the MessageSent account's rent
    post[ev] = EVENT_RENT

    def balances(accounts: list[SolAccount | None], burn: int) -> list[dict[str, Any]]:
        out = []
        for i, acct in enumerate(accounts):
            amount = token_amount(acct)
            if amount is None:
                continue
            if i == ata:
                amount -= burn
            assert acct is not None
            owner_key = str(TokenAccount.from_bytes(bytes(acct.data)[:165]).owner)
            out.append(
                {
                    "accountIndex": i,
                    "mint": USDC_MINT,
                    "owner": owner_key,
                    "programId": TOKEN_PROGRAM,
                    "uiTokenAmount": ui_amount(amount),
                }
            )
        return out

    pre_tokens, post_tokens = balances(pre_accounts, 0), balances(post_accounts, burned)
    logs = [
        *meta.logs(),
        f"Program {CCTP_TMM} invoke [1]",
        "Program log: Instruction: DepositForBurn",
        f"Program {CCTP_TMM} success",
    ]
    err: Any = None
    if reverted:  # a failed transaction: every instruction's effect is rolled back, the fee is still paid
        err = {"InstructionError": [len(ixs) - 1, {"Custom": 1}]}
        post = list(pre)
        post[w] -= fee
        post_tokens = list(pre_tokens)
        logs = [*logs[:-1], f"Program {CCTP_TMM} failed: custom program error: 0x1"]
    h = message.header
    result = {
        "blockTime": BLOCK_TIME,
        "meta": {
            "computeUnitsConsumed": meta.compute_units_consumed(),
            "err": err,
            "fee": fee,
            "innerInstructions": [],
            "loadedAddresses": {"readonly": [], "writable": []},
            "logMessages": logs,
            "postBalances": post,
            "postTokenBalances": post_tokens,
            "preBalances": pre,
            "preTokenBalances": pre_tokens,
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
                    for ci in message.instructions
                ],
                "recentBlockhash": str(blockhash),
            },
            "signatures": [str(s) for s in signed.signatures],
        },
        "version": "legacy",
    }
    fee_paid = (
        int(post_tokens[[t["accountIndex"] for t in post_tokens].index(fee_ata)]["uiTokenAmount"]["amount"])
        if not reverted
        else 0
    )
    after = next(int(t["uiTokenAmount"]["amount"]) for t in post_tokens if t["accountIndex"] == ata)
    return SolanaBurn(str(signed.signatures[0]), result, burned, fee_paid, START_USDC, after)


# ---- Circle, played by the test ----------------------------------------------------------------------------


def attested_message(
    burn_ix: dict[str, Any],
    wallet: str,
    messenger: str,
    *,
    nonce: bytes,
    fee_executed: int,
    mint_recipient: bytes | None = None,
) -> bytes:
    """The CCTP v2 message Iris attests for this Solana burn (finalityThresholdExecuted = its threshold)."""
    f = parse_deposit_for_burn(base64.b64decode(burn_ix["data"]))
    return encode_cctp_burn_message(
        source_domain=SOLANA_DOMAIN,
        destination_domain=f["domain"],
        nonce=nonce,
        sender=bytes(Pubkey.from_string(CCTP_TMM)),
        recipient=b32(messenger),
        destination_caller=f["destination_caller"],
        min_finality_threshold=f["min_finality"],
        finality_threshold_executed=f["min_finality"],
        burn_token=bytes(Pubkey.from_string(USDC_MINT)),
        mint_recipient=mint_recipient if mint_recipient is not None else f["mint_recipient"],
        amount=f["amount"],
        message_sender=bytes(Pubkey.from_string(wallet)),
        max_fee=f["max_fee"],
        fee_executed=fee_executed,
        expiration_block=0,
    )


def iris_solana_item(message: bytes, attestation: bytes, messenger: str) -> dict[str, Any]:
    """One `/v2/messages/5` entry as Iris shows a Solana-source burn (Solana keys base58, EVM ones hex)."""
    b = 148

    def u(at: int, n: int) -> str:
        return str(int.from_bytes(message[at : at + n], "big"))

    return {
        "attestation": "0x" + attestation.hex(),
        "cctpVersion": 2,
        "decodedMessage": {
            "decodedMessageBody": {
                "amount": u(b + 68, 32),
                "burnToken": USDC_MINT,
                "expirationBlock": u(b + 196, 32),
                "feeExecuted": u(b + 164, 32),
                "hookData": None,
                "maxFee": u(b + 132, 32),
                "messageSender": b58encode(message[b + 100 : b + 132]),
                "mintRecipient": "0x" + message[b + 48 : b + 68].hex(),
            },
            "destinationCaller": "0x" + message[108:140].hex(),
            "destinationDomain": u(8, 4),
            "finalityThresholdExecuted": u(144, 4),
            "messageBody": "0x" + message[b:].hex(),
            "minFinalityThreshold": u(140, 4),
            "nonce": "0x" + message[12:44].hex(),
            "recipient": messenger.lower(),
            "sender": CCTP_TMM,
            "sourceDomain": u(4, 4),
        },
        "delayReason": None,
        "eventNonce": "0x" + message[12:44].hex(),
        "message": "0x" + message.hex(),
        "status": "complete",
    }


ATTESTATION = b"".join(hashlib.sha512(f"test attester {i}".encode()).digest() + b"\x1c" for i in (1, 2))
