"""One whole session for `solana:USDC->base:USDC` (one circle_cctp step): the burn on Solana, Circle's
attestation, the mint on base. Real HTTP (uvicorn, the real composition root, SQLite store); the production
observers read a fake Solana JSON-RPC (loopback), a fake Circle Iris (loopback, `_sessions.FakeIris`) and
anvil (chain id 8453).

Solana side. The wallet (a solders Keypair) and the MessageSent event account (a fresh Keypair: its public key
is `event_signer_public`) sign the prepared instructions; the test signs, never the service. The transaction
runs in LiteSVM (solders 0.29) as far as LiteSVM can run it: the USDC mint (6 decimals, SPL Token) and the
wallet's funded token account are set up, and the fee recipient's associated token account creation and the
fee `TransferChecked` execute for real. **Circle's CCTP v2 programs are not available to LiteSVM** (no package
carries their `.so`; the full signed transaction fails in LiteSVM for that reason, which the test checks), so
the transaction runs without its `deposit_for_burn` instruction, and the `getTransaction` answer of the FULL
signed transaction is produced in the RPC's JSON wire format from what LiteSVM did, plus the burn's effect:
the burned amount (the instruction's) leaves the wallet's token account, the second signature's fee and the
MessageSent account's rent leave the wallet. CCTP accounts LiteSVM does not hold carry placeholder lamports
that do not move; `innerInstructions` is left empty (the production reader does not use it); the logs are
LiteSVM's, then the burn's. The answer for the session below is deterministic (fixed keys, LiteSVM's
deterministic blockhash) and committed as `tests/recordings/observe/solana_session_cctp_burn.json`; the test
compares what it produced with it (regenerate: `ROUTEQUOTE_UPDATE_RECORDINGS=1`).

Base side. Circle is played by the test: Iris answers 404 first, then `complete` with a CCTP v2 message
consistent with the burn (encoded by `encode_cctp_burn_message`), which the CCTP v2 stand-ins of `standins/`
(compiled at test time) accept: a STAND-IN MessageTransmitterV2 / TokenMessengerV2, not Circle's contracts.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import struct
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from _bridge_wire import parse_deposit_for_burn
from _evm import AnvilChain, ToolchainUnavailable, balance_of, sign_and_send
from _sessions import (
    SESSION_HEADER,
    FakeIris,
    SessionApi,
    approval,
    b32,
    compile_standins,
    intent,
    new_key,
    new_token,
)
from eth_abi import encode
from eth_account import Account
from eth_utils import keccak, to_checksum_address
from solders.account import Account as SolAccount
from solders.instruction import AccountMeta, Instruction
from solders.keypair import Keypair
from solders.litesvm import LiteSVM
from solders.message import Message
from solders.pubkey import Pubkey
from solders.token.associated import get_associated_token_address
from solders.token.state import Mint, TokenAccount, TokenAccountState
from solders.transaction import Transaction
from tests.support.loopback import json_server
from tests.support.server import free_port, running_server

from routequote.app import create_app
from routequote.config import Settings
from routequote.core.actions.cctp_message import encode_cctp_burn_message
from routequote.core.actions.evm import DEFAULT_DEPLOYMENTS
from routequote.core.assets import ASSETS, Chain

pytestmark = pytest.mark.chain

ROUTE = "solana:USDC->base:USDC"
USDC_MINT = str(ASSETS["solana:USDC"].address)
TOKEN_PROGRAM = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"
CCTP_TMM = "CCTPV2vPZJS2u2BBsUoscuikbYjnpFmbFsvVuJdgUMQe"  # TokenMessengerMinterV2 (deposit_for_burn)
SOLANA_DOMAIN, BASE_DOMAIN = 5, 6
GOLDEN = Path(__file__).resolve().parents[1] / "recordings" / "observe" / "solana_session_cctp_burn.json"
UPDATE_ENV = "ROUTEQUOTE_UPDATE_RECORDINGS"

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


def with_burn_amount(ix: Instruction, amount: int) -> Instruction:
    data = bytearray(bytes(ix.data))
    struct.pack_into("<Q", data, 8, amount)
    return Instruction(ix.program_id, bytes(data), list(ix.accounts))


def ui_amount(amount: int, decimals: int = 6) -> dict[str, Any]:
    whole, frac = divmod(amount, 10**decimals)
    text = f"{whole}.{frac:0{decimals}d}".rstrip("0").rstrip(".")
    # `uiAmount` is the wire's float (the reader never uses it); `amount` is the decimal string of base units
    return {"amount": str(amount), "decimals": decimals, "uiAmount": float(text), "uiAmountString": text}


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


# ---- the environment ---------------------------------------------------------------------------------------


@dataclass
class Env:
    api: SessionApi
    chain: AnvilChain
    rpc: FakeSolanaRpc
    iris: FakeIris
    usdc: str
    messenger: str
    transmitter: str


@pytest.fixture(scope="module")
def env(
    anvil_factory: Callable[[int], AnvilChain], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Env]:
    chain = anvil_factory(8453)
    try:
        standins = compile_standins()
    except ToolchainUnavailable as e:
        pytest.skip(f"solc-js unavailable: {e}")

    def deploy(name: str, types: list[str], *args: Any) -> str:
        art = standins[name]
        receipt = chain.send(None, art["bytecode"] + (encode(types, list(args)).hex() if types else ""))
        return str(to_checksum_address(receipt["contractAddress"]))

    # this module's own local USDC and CCTP v2 stand-ins on base, knowing Solana's TokenMessengerMinterV2 (5)
    usdc = chain.deploy(
        "MintableERC20", ["string", "string", "uint8"], "USD Coin (test, solana session)", "USDC", 6
    )
    transmitter = deploy("MessageTransmitterV2StandIn", ["uint32"], BASE_DOMAIN)
    messenger = deploy("TokenMessengerV2StandIn", ["address"], transmitter)
    chain.transact(
        messenger,
        "addRemoteTokenMessenger(uint32,bytes32)",
        SOLANA_DOMAIN,
        bytes(Pubkey.from_string(CCTP_TMM)),
    )
    chain.transact(
        messenger,
        "linkTokenPair(address,uint32,bytes32)",
        usdc,
        SOLANA_DOMAIN,
        bytes(Pubkey.from_string(USDC_MINT)),
    )
    chain.transact(usdc, "addMinter(address)", messenger)
    base = DEFAULT_DEPLOYMENTS[Chain.BASE]
    deployments = {
        Chain.BASE: base.with_overrides(
            message_transmitter_v2=transmitter,
            token_messenger_v2=messenger,
            tokens={**base.tokens, "USDC": usdc},
        )
    }
    db = tmp_path_factory.mktemp("solana-sessions") / "s.sqlite3"
    with FakeSolanaRpc().running() as rpc, FakeIris().running() as iris:
        port = free_port()
        settings = Settings(
            rate_limit="off",
            port=port,
            rpc_url_solana=rpc.url,
            rpc_url_base=chain.url,
            iris_url=iris.url,
            finality_confirmations="base=1,arbitrum=1,robinhood=1",
            database_url=f"sqlite+aiosqlite:///{db}",
        )
        with running_server(create_app(settings, deployments=deployments), port) as url:
            api = SessionApi(url)
            try:
                yield Env(api, chain, rpc, iris, usdc, messenger, transmitter)
            finally:
                api.close()


@dataclass
class Started:
    sid: str
    token: str
    session: dict[str, Any]
    action: dict[str, Any]
    quote: dict[str, Any]
    base_wallet: str


def start_session(env: Env, wallet: Keypair, event: Keypair, base_key: str) -> Started:
    base_wallet = str(Account.from_key(base_key).address)
    token, key = new_token(), new_key("create")
    q = env.api.quote(ROUTE, 100)
    body = {
        "caller_approved": True,
        **intent(ROUTE, 100),
        "wallets": {"solana": str(wallet.pubkey()), "base": base_wallet},
        "event_signer_public": str(event.pubkey()),
        "approval_v3": approval(q, key),
        "idempotency_key": key,
    }
    r = env.api.http.post("/v2/session", json=body, headers={SESSION_HEADER: token})
    assert r.status_code == 201, r.text
    s = r.json()
    assert (
        s["status"] == "action_ready"
        and s["step_count"] == 1
        and s["current_action"]["unsigned_action"]["family"] == "solana"
    )
    action = s["current_action"]["unsigned_action"]
    assert action["feePayer"] == str(wallet.pubkey()) and str(event.pubkey()) in action["requiredSigners"]
    return Started(s["session_id"], token, s, action, q, base_wallet)


def observe(env: Env, st: Started, hashes: list[str] | None) -> Any:
    return env.api.observe(st.sid, st.token, hashes)


def refused(env: Env, st: Started, hashes: list[str], reason: str) -> None:
    """The observation is refused with `reason` and the session does not move (status, version, step)."""
    before = env.api.read(st.sid, st.token)
    r = observe(env, st, hashes)
    assert r.status_code == 400 and r.json()["reason_class"] == reason, r.text
    after = env.api.read(st.sid, st.token)
    for k in ("status", "session_version", "current_step", "phase", "steps", "funds"):
        assert after[k] == before[k], k


# ---- the tests ---------------------------------------------------------------------------------------------


def test_whole_session_solana_usdc_to_base_usdc(env: Env) -> None:
    st = start_session(env, GOLDEN_WALLET, GOLDEN_EVENT, GOLDEN_BASE_KEY)
    action = st.action
    burn_ix = action["instructions"][-1]
    f = parse_deposit_for_burn(base64.b64decode(burn_ix["data"]))
    route_fee, net = int(action["routeFee"]), int(action["netInputAmount"])
    assert f["amount"] == net and int(action["inputAmount"]) == route_fee + net
    assert f["domain"] == BASE_DOMAIN and f["mint_recipient"] == b32(st.base_wallet)

    burn = solana_burn(action, GOLDEN_WALLET, GOLDEN_EVENT)
    assert burn.burned == net and burn.fee_paid == route_fee
    assert burn.wallet_usdc_after == START_USDC - route_fee - net
    doc = {
        "route": ROUTE,
        "note": "produced by tests/e2e/test_sessions_solana.py (see its docstring)",
        "signature": burn.signature,
        "instructions": action["instructions"],
        "response": {"jsonrpc": "2.0", "id": 1, "result": burn.result},
    }
    if os.environ.get(UPDATE_ENV) == "1":
        GOLDEN.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    assert GOLDEN.exists(), f"no {GOLDEN.name}: generate it with {UPDATE_ENV}=1 and review it"
    assert json.loads(GOLDEN.read_text()) == json.loads(json.dumps(doc)), (
        f"the getTransaction answer drifted from {GOLDEN.name}: regenerate with {UPDATE_ENV}=1 and review"
    )

    # submitted, not finalized yet: the RPC answers null -> awaiting the source receipt
    r = observe(env, st, [burn.signature])
    assert r.status_code == 200 and r.json()["status"] == "awaiting_source_receipt", r.text
    assert (
        "getTransaction",
        [
            burn.signature,
            {"commitment": "finalized", "encoding": "json", "maxSupportedTransactionVersion": 0},
        ],
    ) in env.rpc.calls
    env.rpc.publish(burn.result)
    r = observe(env, st, [burn.signature])
    assert r.status_code == 200, r.text
    s = r.json()
    assert (
        s["status"] == "awaiting_destination"
        and s["next_operation"] == "observe"
        and s["current_action"] is None
    )
    bridge = s["steps"][0]["bridge"]
    assert (
        bridge["kind"] == "cctp"
        and bridge["source_domain"] == SOLANA_DOMAIN
        and bridge["source_tx"] == burn.signature
    )
    assert bridge["burn_amount"] == net and bridge["destination_domain"] == BASE_DOMAIN
    assert s["funds"]["state"] == "in_flight" and s["funds"]["endpoint"] == "base:USDC"

    # Iris has not indexed the burn: 404 -> still awaiting the destination
    r = observe(env, st, None)
    assert r.status_code == 200 and r.json()["status"] == "awaiting_destination", r.text
    assert r.json()["steps"][0]["destination_status"] == "awaiting_attestation"
    assert any(
        p.startswith(f"/v2/messages/{SOLANA_DOMAIN}?") and burn.signature in p for p in env.iris.requests
    )

    # Circle attests: the message of this burn, the fast-transfer fee executed within maxFee
    expected_out = int(st.quote["direct_route_summary"]["steps"][0]["expected_output_base"])
    fee_executed = max(0, min(f["max_fee"], net - expected_out))
    message = attested_message(
        burn_ix,
        str(GOLDEN_WALLET.pubkey()),
        env.messenger,
        nonce=hashlib.sha256(b"solana session nonce").digest(),
        fee_executed=fee_executed,
    )
    env.iris.publish(SOLANA_DOMAIN, burn.signature, [iris_solana_item(message, ATTESTATION, env.messenger)])
    r = observe(env, st, None)
    assert r.status_code == 200, r.text
    s = r.json()
    assert s["status"] == "action_ready" and s["phase"] == "destination", s
    mint_action = s["current_action"]["unsigned_action"]
    assert mint_action["kinds"] == ["cctp_receive_message"] and len(mint_action["transactions"]) == 1
    tx = mint_action["transactions"][0]
    assert (
        tx["to"].lower() == env.transmitter.lower() and tx["from"] == st.base_wallet and tx["chainId"] == 8453
    )

    # the caller signs and sends the receiveMessage on base (anvil) with its own key
    env.chain.send(st.base_wallet, "0x", value=10**18)  # gas money
    before = balance_of(env.chain, env.usdc, st.base_wallet)
    (receipt,) = sign_and_send(env.chain, GOLDEN_BASE_KEY, [tx])
    minted = balance_of(env.chain, env.usdc, st.base_wallet) - before
    assert minted == net - fee_executed
    r = observe(env, st, [receipt["transactionHash"]])
    assert r.status_code == 200, r.text
    s = r.json()
    assert s["status"] == "complete" and s["next_operation"] == "none"
    assert s["funds"]["state"] == "delivered" and int(s["funds"]["amount_base"]) == minted

    rec = env.api.read(st.sid, st.token, "receipt")["receipt"]
    step = rec["steps"][0]
    assert int(step["actual"]["output_base"]) == minted
    assert int(step["actual"]["input_base"]) == route_fee + net
    assert int(step["actual"]["service_fee_paid_base"]) == route_fee
    assert step["actual"]["network_fee"] == {"lamports": str(burn.result["meta"]["fee"])}
    assert step["actual"]["source_tx_ids"] == [burn.signature]
    assert [h.lower() for h in step["actual"]["destination_tx_ids"]] == [receipt["transactionHash"].lower()]
    assert step["actual"]["block_times"] == [BLOCK_TIME]
    route = rec["route"]
    exp = int(route["quoted_expected_output_base"])
    assert route["complete"] is True and int(route["actual_output_base"]) == minted
    assert route["at_or_above_minimum"] is (minted >= int(route["quoted_minimum_output_base"])) is True
    assert route["realized_vs_quoted_expected_bps"] == round(float(Fraction(minted - exp, exp) * 10_000), 2)
    # realized cost: the quoted expected cost, scaled by what actually arrived against what was expected
    exp_cost = Fraction(str(st.quote["cost_summary"]["expected_total_cost_percent"])) * 100
    realized = 10_000 - (10_000 - exp_cost) * Fraction(minted, exp)
    assert route["realized_cost_bps"] == round(float(realized), 2) and route["realized_cost_bps"] > 0


def test_hostile_observations_leave_the_session_unchanged(env: Env) -> None:
    wallet, event = Keypair(), Keypair()
    base_key = "0x" + os.urandom(32).hex()
    st = start_session(env, wallet, event, base_key)
    net = int(st.action["netInputAmount"])

    # reverted on chain (meta.err set): refused, nothing advances
    failed = solana_burn(st.action, wallet, event, reverted=True, expire=1)
    assert failed.result["meta"]["err"] is not None
    env.rpc.publish(failed.result)
    refused(env, st, [failed.signature], "observation_reverted")

    # not the prepared transaction: the burn names another amount
    other = solana_burn(st.action, wallet, event, burn_amount=net - 1, expire=2)
    assert other.burned == net - 1
    env.rpc.publish(other.result)
    refused(env, st, [other.signature], "observation_not_prepared_action")
    assert env.api.read(st.sid, st.token)["status"] == "action_ready"

    # the real burn advances it; an attested message minting to another recipient is refused
    burn = solana_burn(st.action, wallet, event)
    env.rpc.publish(burn.result)
    r = observe(env, st, [burn.signature])
    assert r.status_code == 200 and r.json()["status"] == "awaiting_destination", r.text
    stranger = b32("0x" + "5a" * 20)
    message = attested_message(
        st.action["instructions"][-1],
        str(wallet.pubkey()),
        env.messenger,
        nonce=hashlib.sha256(b"hostile nonce").digest(),
        fee_executed=0,
        mint_recipient=stranger,
    )
    env.iris.publish(SOLANA_DOMAIN, burn.signature, [iris_solana_item(message, ATTESTATION, env.messenger)])
    before = env.api.read(st.sid, st.token)
    r = observe(env, st, None)
    assert r.status_code == 400, r.text
    assert r.json()["reason_class"] == "observation_bridge_mismatch", r.text
    assert "another account" in r.json()["message"], r.text
    after = env.api.read(st.sid, st.token)
    assert after["status"] == "awaiting_destination" and after["current_action"] is None
    for k in ("session_version", "steps", "funds", "phase"):
        assert after[k] == before[k], k
