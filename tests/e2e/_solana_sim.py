"""The Solana side of the whole-route suite: a fake JSON-RPC and a SIMULATOR of what cannot run offline.

Nothing here is an execution of Circle's or LayerZero's Solana programs: no package ships their `.so`.

* `FakeSolanaRpc`: loopback JSON-RPC answering `getTransaction` with what the test published (`null` before),
  in the RPC's JSON wire format, which the production reader (`routequote.observe.solana`) parses.
* `simulate_delivery`: a hand-made delivery transaction with the balances the test names (the hostile tests'
  arrivals that no bridge made: a stranger's transfer, another recipient's or another GUID's delivery, a failed
  mint). The route runs themselves execute in one LiteSVM per run (`_solana_vm.py`, `_solana_programs.py`).
* `simulate_solana_swap`: the swap simulator held against the observer (`test_solana_swap_simulator.py`).
"""

from __future__ import annotations

import base64
import json
import struct
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from solders.account import Account as SolAccount
from solders.hash import Hash
from solders.instruction import AccountMeta, Instruction
from solders.keypair import Keypair
from solders.litesvm import LiteSVM
from solders.message import Message
from solders.pubkey import Pubkey
from solders.token.associated import get_associated_token_address
from solders.token.state import Mint, TokenAccount, TokenAccountState
from solders.transaction import Transaction

from routequote.core.assets import ASSETS

TOKEN_PROGRAM = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"
CCTP_TMM = "CCTPV2vPZJS2u2BBsUoscuikbYjnpFmbFsvVuJdgUMQe"  # TokenMessengerMinterV2 (deposit_for_burn)
CCTP_MTV2 = "CCTPV2Sm4AdWt5296sk4P66VBZ7bEhcARwFaaS9YPbeC"  # MessageTransmitterV2 (receive_message)
SIG_FEE = 5_000
EVENT_RENT = 3_900_000
PLACEHOLDER_PROGRAM, PLACEHOLDER_ACCOUNT = 1_141_440, 1_461_600  # accounts LiteSVM does not hold
START_LAMPORTS = 2_000_000_000
SOLANA_USDC = ASSETS["solana:USDC"]
SOLANA_USDG = ASSETS["solana:USDG"]


def b58encode(raw: bytes) -> str:
    alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
    n, out = int.from_bytes(raw, "big"), ""
    while n:
        n, r = divmod(n, 58)
        out = alphabet[r] + out
    return "1" * (len(raw) - len(raw.lstrip(b"\x00"))) + out


def ui_amount(amount: int, decimals: int = 6) -> dict[str, Any]:
    whole, frac = divmod(amount, 10**decimals)
    text = f"{whole}.{frac:0{decimals}d}".rstrip("0").rstrip(".")
    return {"amount": str(amount), "decimals": decimals, "uiAmount": float(text), "uiAmountString": text}


def to_instruction(d: dict[str, Any]) -> Instruction:
    metas = [AccountMeta(Pubkey.from_string(k["pubkey"]), k["isSigner"], k["isWritable"]) for k in d["keys"]]
    return Instruction(Pubkey.from_string(d["programId"]), base64.b64decode(d["data"]), metas)


@dataclass
class FakeSolanaRpc:
    """`getTransaction` -> the published result for a signature, `null` for any other; `getSignatureStatuses` ->
    `finalized` for a published signature, `null` for any other; `getAccountInfo` -> the account data the test
    set (base64), `null` value for any other; other methods -32601. A batch is answered call by call."""

    transactions: dict[str, dict[str, Any]] = field(default_factory=dict)
    accounts: dict[str, bytes] = field(default_factory=dict)  # address -> data, for getAccountInfo
    calls: list[tuple[str, Any]] = field(default_factory=list)
    url: str = ""

    def publish(self, result: dict[str, Any]) -> str:
        sig = str(result["transaction"]["signatures"][0])
        self.transactions[sig] = result
        return sig

    def reply(self, req: dict[str, Any]) -> dict[str, Any]:
        """One JSON-RPC call's answer (a batch is answered call by call)."""
        method, params = req.get("method"), req.get("params") or []
        self.calls.append((method, params))
        out: dict[str, Any] = {"jsonrpc": "2.0", "id": req.get("id")}
        if method == "getTransaction":
            out["result"] = self.transactions.get(params[0]) if params else None
        elif method == "getSignatureStatuses":  # a published transaction is final, anything else unknown
            value = [self._status(sig) for sig in params[0]]
            out["result"] = {"context": {"slot": 1}, "value": value}
        elif method == "getAccountInfo":
            data = self.accounts.get(params[0]) if params else None
            value = (
                None
                if data is None
                else {
                    "data": [base64.b64encode(data).decode(), "base64"],
                    "executable": False,
                    "lamports": 1_000_000,
                    "owner": CCTP_TMM,
                    "rentEpoch": 0,
                    "space": len(data),
                }
            )
            out["result"] = {"context": {"slot": 1}, "value": value}
        else:
            out["error"] = {"code": -32601, "message": "Method not found"}
        return out

    def _status(self, signature: str) -> dict[str, Any] | None:
        result = self.transactions.get(signature)
        if result is None:
            return None
        err = (result.get("meta") or {}).get("err")
        return {
            "slot": result.get("slot", 1),
            "confirmations": None,
            "err": err,
            "confirmationStatus": "finalized",
        }

    @contextmanager
    def running(self) -> Iterator[FakeSolanaRpc]:
        rpc = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                req = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
                out: Any = [rpc.reply(r) for r in req] if isinstance(req, list) else rpc.reply(req)
                raw = json.dumps(out).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        self.url = f"http://127.0.0.1:{server.server_address[1]}"
        try:
            yield self
        finally:
            server.shutdown()
            server.server_close()
            thread.join(timeout=5)


def _message_json(message: Message, blockhash: Hash) -> dict[str, Any]:
    h = message.header
    return {
        "accountKeys": [str(k) for k in message.account_keys],
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
    }


def _result(
    message: Message,
    blockhash: Hash,
    signed: Transaction,
    *,
    fee: int,
    pre: list[int],
    post: list[int],
    pre_tokens: list[dict[str, Any]],
    post_tokens: list[dict[str, Any]],
    logs: list[str],
    units: int,
    slot: int,
) -> dict[str, Any]:
    return {
        "blockTime": int(time.time()),
        "meta": {
            "computeUnitsConsumed": units,
            "err": None,
            "fee": fee,
            "innerInstructions": [],
            "loadedAddresses": {"readonly": [], "writable": []},
            "logMessages": logs,
            "postBalances": post,
            "postTokenBalances": post_tokens,
            "preBalances": pre,
            "preTokenBalances": pre_tokens,
            "rewards": [],
            "status": {"Ok": None},
        },
        "slot": slot,
        "transaction": {
            "message": _message_json(message, blockhash),
            "signatures": [str(s) for s in signed.signatures],
        },
        "version": "legacy",
    }


def simulate_delivery(
    *,
    relayer: Keypair,
    owner: str,
    token: str,
    amount: int,
    pre_amount: int,
    program: str,
    data: bytes,
    slot: int,
    instruction: Instruction | None = None,
    instructions: list[Instruction] | None = None,
    failed: bool = False,
    cosigners: list[Keypair] | None = None,
) -> dict[str, Any]:
    """A SIMULATED Solana delivery of `amount` of `token` (USDC or USDG) into `owner`'s associated token account:
    one instruction (`instruction`, else one of `program` with `data`: receive_message / lz_receive / a plain
    transfer), or the prepared `instructions` in order, signed by `relayer` (the fee payer). `failed`: the
    transaction failed on chain (an error, no token moved)."""
    asset = SOLANA_USDC if token == "USDC" else SOLANA_USDG
    mint = Pubkey.from_string(str(asset.address))
    token_program = Pubkey.from_string(str(asset.token_program))
    ata = get_associated_token_address(Pubkey.from_string(owner), mint, token_program)
    ix = instruction or Instruction(
        Pubkey.from_string(program),
        data,
        [
            AccountMeta(relayer.pubkey(), True, True),
            AccountMeta(ata, False, True),
            AccountMeta(mint, False, True),
            AccountMeta(token_program, False, False),
        ],
    )
    blockhash = Hash.new_unique()
    message = Message.new_with_blockhash(instructions or [ix], relayer.pubkey(), blockhash)
    signed = Transaction([relayer, *(cosigners or [])], message, blockhash)
    keys = [str(k) for k in message.account_keys]
    i_ata = keys.index(str(ata))
    if failed:
        amount = 0
    pre = [START_LAMPORTS if k == str(relayer.pubkey()) else PLACEHOLDER_ACCOUNT for k in keys]
    post = list(pre)
    post[0] -= SIG_FEE

    def bal(n: int) -> list[dict[str, Any]]:
        return [
            {
                "accountIndex": i_ata,
                "mint": str(mint),
                "owner": owner,
                "programId": str(token_program),
                "uiTokenAmount": ui_amount(n, asset.decimals),
            }
        ]

    logs = [
        f"Program {ix.program_id} invoke [1]",
        "Program log: SIMULATED delivery (routequote test simulator; the program is not executed)",
        f"Program {ix.program_id} success",
    ]
    result = _result(
        message,
        blockhash,
        signed,
        fee=SIG_FEE,
        pre=pre,
        post=post,
        pre_tokens=bal(pre_amount),
        post_tokens=bal(pre_amount + amount),
        logs=logs,
        units=30_000,
        slot=slot,
    )
    if failed:
        result["meta"]["err"] = {"InstructionError": [0, {"Custom": 1}]}
        result["meta"]["logMessages"] = [
            logs[0],
            f"Program {ix.program_id} failed: custom program error: 0x1",
        ]
    return result


# ---- Raydium CLMM / Orca Whirlpool swaps: LiteSVM for the SPL parts, the swap's effect by the CLMM math ------

SWAP_PROGRAMS = {
    "whirLbMiicVdio4qvUfM5KAg6Ct8VwpYzGff3uctyCc": "orca_whirlpool",
    "CAMMCzo5YL8w4VFF8KVHrK22GGUsp5VTaW7grrKgrWqK": "raydium_clmm",
}
NATIVE_MINT = "So11111111111111111111111111111111111111112"


@dataclass
class SimulatedSwap:
    signature: str
    result: dict[str, Any]
    amount_in: int  # what the swap consumed (net of the service fee)
    amount_out: int  # what the CLMM math pays


def _set_token_amount(svm: LiteSVM, account: Pubkey, delta: int, native: bool) -> None:
    acct = svm.get_account(account)
    assert acct is not None, f"{account} does not exist when the swap runs"
    data = bytearray(bytes(acct.data))
    struct.pack_into("<Q", data, 64, struct.unpack_from("<Q", data, 64)[0] + delta)  # TokenAccount.amount
    lamports = acct.lamports + (delta if native else 0)  # a wSOL account's lamports carry its amount
    svm.set_account(account, SolAccount(lamports, bytes(data), acct.owner, acct.executable, acct.rent_epoch))


def simulate_solana_swap(
    action: dict[str, Any],
    wallet: Keypair,
    amount_out: Any,
    balances: dict[str, int],
    slot: int,
) -> SimulatedSwap:
    """Execute a prepared Solana swap action: every SPL / System / ATA instruction runs in LiteSVM; the swap
    instruction (Raydium `swap_v2` / Orca `swap_v2`, whose programs are not available offline) is SIMULATED:
    `amount_out(net_in)` (the project's CLMM math over the pool the quote used) moves from nothing into the
    wallet's output account, `net_in` leaves its input account. `balances` holds the wallet's starting balances
    by asset key (solana:SOL in lamports). Returns the full transaction's `getTransaction` answer."""
    ixs = [to_instruction(d) for d in action["instructions"]]
    swap_at = [i for i, ix in enumerate(ixs) if str(ix.program_id) in SWAP_PROGRAMS]
    assert len(swap_at) == 1, "a prepared swap action has exactly one swap instruction"
    k = swap_at[0]
    owner = wallet.pubkey()
    src, dst = ASSETS[str(action["source"])], ASSETS[str(action["destination"])]
    svm = LiteSVM()
    svm.airdrop(owner, START_LAMPORTS + balances.get("solana:SOL", 0))
    rent = svm.minimum_balance_for_rent_exemption(165)
    for a in (SOLANA_USDC, SOLANA_USDG, ASSETS["solana:SOL"]):
        mint = Pubkey.from_string(str(a.address or a.wrapped_address))
        authority = None if a.address is None else Pubkey.new_unique()
        svm.set_account(
            mint,
            SolAccount(
                svm.minimum_balance_for_rent_exemption(82),
                bytes(Mint(authority, 10**15, a.decimals, True, None)),
                Pubkey.from_string(str(a.token_program)),
                False,
                0,
            ),
        )
    if src.address is not None:  # a token input: the wallet's funded associated token account
        mint, program = Pubkey.from_string(src.address), Pubkey.from_string(str(src.token_program))
        state = TokenAccount(
            mint, owner, balances[src.key], None, TokenAccountState.Initialized, None, 0, None
        )
        svm.set_account(
            get_associated_token_address(owner, mint, program),
            SolAccount(rent, bytes(state), program, False, 0),
        )
    blockhash = svm.latest_blockhash()
    message = Message.new_with_blockhash(ixs, owner, blockhash)
    signed = Transaction([wallet], message, blockhash)
    pubkeys = list(message.account_keys)
    keys = [str(k) for k in pubkeys]
    pre_accounts = [svm.get_account(p) for p in pubkeys]
    logs: list[str] = []
    charged = 0
    if k > 0:
        meta = svm.send_transaction(
            Transaction([wallet], Message.new_with_blockhash(ixs[:k], owner, blockhash), blockhash)
        )
        assert not hasattr(meta, "err"), meta
        logs += meta.logs()
        charged += SIG_FEE
    net_in = int(action["netInputAmount"])
    out = int(amount_out(net_in))

    def ata(a: Any) -> Pubkey:
        mint = Pubkey.from_string(str(a.address or a.wrapped_address))
        return get_associated_token_address(owner, mint, Pubkey.from_string(str(a.token_program)))

    _set_token_amount(svm, ata(src), -net_in, src.address is None)
    _set_token_amount(svm, ata(dst), out, dst.address is None)
    program = str(ixs[k].program_id)
    logs += [
        f"Program {program} invoke [1]",
        f"Program log: SIMULATED {SWAP_PROGRAMS[program]} swap_v2 (routequote test simulator, CLMM math): "
        f"in {net_in} out {out}",
        f"Program {program} success",
    ]
    if k + 1 < len(ixs):
        svm.expire_blockhash()
        tail = Message.new_with_blockhash(ixs[k + 1 :], owner, svm.latest_blockhash())
        meta = svm.send_transaction(Transaction([wallet], tail, svm.latest_blockhash()))
        assert not hasattr(meta, "err"), meta
        logs += meta.logs()
        charged += SIG_FEE
    post_accounts = [svm.get_account(p) for p in pubkeys]
    pre = [a.lamports if a is not None else 0 for a in pre_accounts]
    post = [a.lamports if a is not None else 0 for a in post_accounts]
    for i, (a, b) in enumerate(zip(pre_accounts, post_accounts, strict=True)):
        if a is None and b is None:  # the DEX program and its accounts: not in LiteSVM
            pre[i] = post[i] = (
                PLACEHOLDER_PROGRAM if message.is_key_called_as_program(i) else PLACEHOLDER_ACCOUNT
            )
    w = keys.index(str(owner))
    post[w] += charged - SIG_FEE  # one transaction, one signature: the fee is paid once

    def balances_of(accounts: list[SolAccount | None]) -> list[dict[str, Any]]:
        rows = []
        for i, acct in enumerate(accounts):
            if acct is None or len(bytes(acct.data)) < 165:
                continue
            if str(acct.owner) not in (TOKEN_PROGRAM, str(SOLANA_USDG.token_program)):
                continue
            tok = TokenAccount.from_bytes(bytes(acct.data)[:165])
            decimals = 9 if str(tok.mint) == NATIVE_MINT else 6
            rows.append(
                {
                    "accountIndex": i,
                    "mint": str(tok.mint),
                    "owner": str(tok.owner),
                    "programId": str(acct.owner),
                    "uiTokenAmount": ui_amount(int(tok.amount), decimals),
                }
            )
        return rows

    result = _result(
        message,
        blockhash,
        signed,
        fee=SIG_FEE,
        pre=pre,
        post=post,
        pre_tokens=balances_of(pre_accounts),
        post_tokens=balances_of(post_accounts),
        logs=logs,
        units=150_000,
        slot=slot,
    )
    return SimulatedSwap(str(signed.signatures[0]), result, net_in, out)
