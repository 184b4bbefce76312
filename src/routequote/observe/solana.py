"""SolanaChainReader: `getTransaction` at `finalized` commitment, JSON encoding, decoded into the port's dataclass.

Account keys are the message's static keys, then the address-table keys the node loaded (writable, then
readonly), which is the index space of `programIdIndex`, `accounts` and the balance arrays. Instruction
data arrives base58. Token amounts are `uiTokenAmount.amount` (a decimal string of base units), never the
float `uiAmount`. A `null` result (unknown or not yet finalized) is `None`.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Callable, Sequence
from typing import Any

import httpx
from solders.pubkey import Pubkey
from solders.signature import Signature

from routequote.core.sessions.reads import Facts, Read, SolanaTx
from routequote.errors import InvalidRequest
from routequote.market.jsonrpc import JsonRpcClient, RpcError, RpcTooLarge
from routequote.market.upstream import DEFAULT_MAX_BYTES, off_loop
from routequote.observe._common import Breaker, WireError, integer, unavailable
from routequote.ports import (
    ObservationUnavailable,
    SolanaAccount,
    SolanaInstruction,
    SolanaScanTooLarge,
    SolanaTokenAccount,
    SolanaTokenBalance,
    SolanaTransaction,
)

B58_ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_B58_INDEX = {c: i for i, c in enumerate(B58_ALPHABET)}
TOKEN_PROGRAMS = frozenset(
    {"TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA", "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb"}
)
TOKEN_ACCOUNT_HEAD = 72  # mint (32) + owner (32) + amount (u64 little-endian) of an SPL token account
GET_TRANSACTION_CONFIG = {"commitment": "finalized", "encoding": "json", "maxSupportedTransactionVersion": 0}


def b58decode(text: str) -> bytes:
    """Bitcoin-alphabet base58 (Solana instruction data); leading '1's are leading zero bytes."""
    if not isinstance(text, str):
        raise WireError(f"not base58: {text!r}")
    n = 0
    for ch in text:
        digit = _B58_INDEX.get(ch)
        if digit is None:
            raise WireError(f"not base58: {text!r}")
        n = n * 58 + digit
    body = n.to_bytes((n.bit_length() + 7) // 8, "big") if n else b""
    return b"\x00" * (len(text) - len(text.lstrip("1"))) + body


def _pubkey(value: Any, what: str) -> str:
    try:
        return str(Pubkey.from_string(value))
    except (ValueError, TypeError) as exc:
        raise WireError(f"{what}: not a public key: {value!r}") from exc


def _ints(value: Any, what: str) -> tuple[int, ...]:
    if not isinstance(value, list):
        raise WireError(f"{what}: not a list")
    return tuple(integer(v, what) for v in value)


def _token_balances(value: Any, what: str) -> tuple[SolanaTokenBalance, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise WireError(f"{what}: not a list")
    out = []
    for item in value:
        if not isinstance(item, dict) or not isinstance(item.get("uiTokenAmount"), dict):
            raise WireError(f"{what}: malformed entry")
        owner = item.get("owner")
        out.append(
            SolanaTokenBalance(
                account_index=integer(item.get("accountIndex"), f"{what}.accountIndex"),
                mint=_pubkey(item.get("mint"), f"{what}.mint"),
                owner=None if owner is None else _pubkey(owner, f"{what}.owner"),
                amount=integer(item["uiTokenAmount"].get("amount"), f"{what}.uiTokenAmount.amount"),
            )
        )
    return tuple(out)


def parse_get_transaction(signature: str, result: Any) -> SolanaTransaction | None:
    """A `getTransaction` result (JSON encoding) as a SolanaTransaction; None for `null`."""
    if result is None:
        return None
    if not isinstance(result, dict):
        raise WireError("getTransaction: not an object")
    tx, meta = result.get("transaction"), result.get("meta")
    if not isinstance(tx, dict) or not isinstance(meta, dict) or not isinstance(tx.get("message"), dict):
        raise WireError("getTransaction: transaction/meta missing (is the encoding 'json'?)")
    msg = tx["message"]
    sigs = tx.get("signatures")
    if not isinstance(sigs, list) or not sigs or sigs[0] != signature:
        raise WireError("getTransaction: answered for another signature")
    static = msg.get("accountKeys")
    if not isinstance(static, list):
        raise WireError("message.accountKeys: not a list (jsonParsed encoding is not accepted)")
    loaded = meta.get("loadedAddresses") or {}
    keys = tuple(
        _pubkey(k, "accountKeys")
        for k in [*static, *(loaded.get("writable") or []), *(loaded.get("readonly") or [])]
    )
    header = msg.get("header")
    if not isinstance(header, dict):
        raise WireError("message.header missing")
    n_signers = integer(header.get("numRequiredSignatures"), "header.numRequiredSignatures")
    if n_signers > len(static) or len(sigs) != n_signers:
        raise WireError("header.numRequiredSignatures does not match the keys / signatures")

    def key(i: Any) -> str:
        idx = integer(i, "account index")
        if idx >= len(keys):
            raise WireError(f"account index {idx} outside the {len(keys)} account keys")
        return keys[idx]

    raw_ixs = msg.get("instructions")
    if not isinstance(raw_ixs, list):
        raise WireError("message.instructions: not a list")
    instructions = []
    for ix in raw_ixs:
        if not isinstance(ix, dict) or not isinstance(ix.get("accounts"), list):
            raise WireError("instruction: malformed")
        instructions.append(
            SolanaInstruction(
                program_id=key(ix.get("programIdIndex")),
                accounts=tuple(key(a) for a in ix["accounts"]),
                data=b58decode(ix.get("data", "")),
            )
        )
    pre, post = _ints(meta.get("preBalances"), "preBalances"), _ints(meta.get("postBalances"), "postBalances")
    if len(pre) != len(keys) or len(post) != len(keys):
        raise WireError("pre/post balances do not cover the account keys")
    block_time = result.get("blockTime")
    logs = meta.get("logMessages") or []
    return SolanaTransaction(
        signature=signature,
        slot=integer(result.get("slot"), "slot"),
        block_time=None if block_time is None else integer(block_time, "blockTime"),
        err=meta.get("err"),
        fee=integer(meta.get("fee"), "meta.fee"),
        account_keys=keys,
        signers=keys[:n_signers],
        instructions=tuple(instructions),
        pre_balances=pre,
        post_balances=post,
        pre_token_balances=_token_balances(meta.get("preTokenBalances"), "preTokenBalances"),
        post_token_balances=_token_balances(meta.get("postTokenBalances"), "postTokenBalances"),
        log_messages=tuple(str(m) for m in logs),
    )


STATUS_BATCH = 256  # getSignatureStatuses takes at most 256 signatures a call
BLOCKS_RANGE = (
    500_000  # getBlocks: end_slot at most this far past start_slot (the node clamps it to its root)
)
GET_BLOCK_CONFIG = {
    "commitment": "finalized",
    "transactionDetails": "signatures",
    "rewards": False,
    "maxSupportedTransactionVersion": 0,
}
COMMITMENTS = ("processed", "confirmed", "finalized")


def parse_signature_status(status: Any) -> str | None:
    if status is None:
        return None
    commitment = status.get("confirmationStatus") if isinstance(status, dict) else None
    if commitment not in COMMITMENTS:
        raise WireError("getSignatureStatuses: not a status")
    return str(commitment)


def slot_number(value: Any, what: str) -> int:
    """A slot as the node sends it: a JSON integer, never a string, a float or a bool."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise WireError(f"{what}: not a slot: {value!r}")
    return value


def _heavy(result: Any) -> bool:
    """A transaction big enough that decoding it belongs off the event loop (many logs or instructions)."""
    meta = result.get("meta") if isinstance(result, dict) else None
    logs = meta.get("logMessages") if isinstance(meta, dict) else None
    return isinstance(logs, list) and len(logs) >= 500


class JsonRpcSolanaReader:
    """SolanaChainReader on one Solana RPC URL (None: not configured, every read is unavailable)."""

    name = "solana"

    def __init__(
        self,
        url: str | None,
        client: httpx.AsyncClient,
        *,
        timeout: float = 1.5,
        failure_threshold: int = 3,
        cooldown_seconds: float = 15.0,
        clock: Callable[[], float] = time.monotonic,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        self.rpc = JsonRpcClient(url, client, timeout=timeout, max_bytes=max_bytes) if url else None
        self.breaker = Breaker(self.name, failure_threshold, cooldown_seconds, clock)

    def configured(self) -> bool:
        return self.rpc is not None

    async def transaction(self, signature: str) -> SolanaTransaction | None:
        try:
            Signature.from_string(signature)
        except (ValueError, TypeError) as exc:
            raise InvalidRequest(
                "invalid_transaction_signature", "a Solana signature is 64 bytes in base58"
            ) from exc
        rpc = self.configured_rpc()

        async def read() -> SolanaTransaction | None:
            result = await rpc.call("getTransaction", [signature, GET_TRANSACTION_CONFIG])
            return await off_loop(parse_get_transaction, signature, result, heavy=_heavy(result))

        return await self.breaker.guard(read(), "getTransaction")

    async def batch_transactions(self, reads: Sequence[Read]) -> tuple[Facts, dict[Read, BaseException]]:
        """Every `SolanaTx` read as `getTransaction` calls in one JSON-RPC batch (one HTTP request per
        `max_batch` calls, split further when an answer passes the size limit), each decoded exactly as
        `transaction()` does (ports.SolanaBatchReader). A call the node refused or answered with garbage fails
        its read alone; a batch that fails as a whole raises, through the breaker."""
        failed: dict[Read, BaseException] = {}
        wanted: list[SolanaTx] = []
        for r in dict.fromkeys(reads):
            if not isinstance(r, SolanaTx):
                raise ValueError(f"not a Solana transaction read: {r!r}")
            try:
                Signature.from_string(r.signature)
            except (ValueError, TypeError):
                failed[r] = InvalidRequest(
                    "invalid_transaction_signature", "a Solana signature is 64 bytes in base58"
                )
                continue
            wanted.append(r)
        if self.rpc is None:
            raise ObservationUnavailable(
                "chain_rpc_not_configured",
                "no RPC URL is configured for solana: its transactions cannot be observed",
            )
        if not wanted:
            return Facts(), failed
        self.breaker.check()
        calls = [("getTransaction", [r.signature, GET_TRANSACTION_CONFIG]) for r in wanted]
        try:
            answers = await self.rpc.batch_within_limit(calls)
        except RpcError as exc:
            self.breaker.failure()
            raise unavailable(exc, self.name, "getTransaction") from None
        txs: dict[SolanaTx, SolanaTransaction | None] = {}
        for r, result in zip(wanted, answers, strict=True):
            try:
                if isinstance(result, Exception):
                    raise result
                txs[r] = await off_loop(parse_get_transaction, r.signature, result, heavy=_heavy(result))
            except (RpcError, WireError) as exc:
                failed[r] = unavailable(exc, self.name, "getTransaction")
        if any(isinstance(e, ObservationUnavailable) for e in failed.values()):
            self.breaker.failure()
        else:
            self.breaker.success()
        return Facts(solana_txs=txs), failed

    async def signature_statuses(self, signatures: Sequence[str]) -> dict[str, str | None]:
        """Each signature's `confirmationStatus` (None: unknown to the node), `getSignatureStatuses` with
        `searchTransactionHistory` (a signature first seen may have landed long ago), 256 signatures a call,
        all calls in one request (ports.SolanaStatusReader). Any failure or garbage raises."""
        rpc = self.configured_rpc()
        chunks = [list(signatures[i : i + STATUS_BATCH]) for i in range(0, len(signatures), STATUS_BATCH)]

        async def read() -> dict[str, str | None]:
            calls = [("getSignatureStatuses", [c, {"searchTransactionHistory": True}]) for c in chunks]
            answers = await rpc.batch(calls) if calls else []
            out: dict[str, str | None] = {}
            for chunk, answer in zip(chunks, answers, strict=True):
                value = answer.get("value") if isinstance(answer, dict) else None
                if not isinstance(value, list) or len(value) != len(chunk):
                    raise WireError("getSignatureStatuses: value is not one status per signature")
                for sig, status in zip(chunk, value, strict=True):
                    out[sig] = parse_signature_status(status)
            return out

        return await self.breaker.guard(read(), "getSignatureStatuses")

    def configured_rpc(self) -> JsonRpcClient:
        """The node's client once the breaker lets a call through; ObservationUnavailable without an RPC URL."""
        if self.rpc is None:
            raise ObservationUnavailable(
                "chain_rpc_not_configured",
                "no RPC URL is configured for solana: its transactions cannot be observed",
            )
        self.breaker.check()
        return self.rpc

    async def finalized_slot(self) -> int:
        """ports.SolanaBlockScanner: the latest finalized slot (`getSlot`)."""
        rpc = self.configured_rpc()

        async def read() -> int:
            return slot_number(await rpc.call("getSlot", [{"commitment": "finalized"}]), "getSlot")

        return await self.breaker.guard(read(), "getSlot")

    async def finalized_blocks(self, start_slot: int) -> list[int]:
        """ports.SolanaBlockScanner: `getBlocks(start_slot, start_slot + 500,000)` at finalized (the node ends
        the list at its finalized root). A list past the size limit raises SolanaScanTooLarge."""
        rpc = self.configured_rpc()
        end = start_slot + BLOCKS_RANGE

        async def read() -> list[int] | None:
            try:
                result = await rpc.call("getBlocks", [start_slot, end, {"commitment": "finalized"}])
            except RpcTooLarge:
                return None
            if not isinstance(result, list):
                raise WireError("getBlocks: not a list")
            slots = [slot_number(v, "getBlocks") for v in result]
            if slots != sorted(set(slots)) or (slots and not start_slot <= slots[0] <= slots[-1] <= end):
                raise WireError("getBlocks: slots not ascending within the range asked")
            return slots

        got = await self.breaker.guard(read(), "getBlocks")
        if got is None:
            raise self._too_large("getBlocks")
        return got

    async def block_signatures(self, slots: Sequence[int]) -> dict[int, frozenset[str]]:
        """ports.SolanaBlockScanner: `getBlock` of each slot with transactionDetails `signatures` (no rewards,
        finalized), in one request (split where the answers pass the size limit); a single block past it raises
        SolanaScanTooLarge (the breaker counts no failure: the node answered). Any error or garbage raises."""
        rpc = self.configured_rpc()
        wanted = list(dict.fromkeys(slots))

        async def read() -> dict[int, frozenset[str]] | None:
            calls = [("getBlock", [slot, GET_BLOCK_CONFIG]) for slot in wanted]
            try:
                answers = await rpc.batch_within_limit(calls) if calls else []
            except RpcTooLarge:
                return None
            out: dict[int, frozenset[str]] = {}
            for slot, answer in zip(wanted, answers, strict=True):
                if isinstance(answer, Exception):
                    raise answer
                sigs = answer.get("signatures") if isinstance(answer, dict) else None
                if not isinstance(sigs, list) or not all(isinstance(s, str) for s in sigs):
                    raise WireError("getBlock: no signatures list (transactionDetails 'signatures')")
                out[slot] = frozenset(sigs)
            return out

        got = await self.breaker.guard(read(), "getBlock")
        if got is None:
            raise self._too_large("getBlock")
        return got

    def _too_large(self, method: str) -> SolanaScanTooLarge:
        return SolanaScanTooLarge(
            f"rpc_too_large:{self.name}", f"{self.name} RPC: a {method} answer passed the response size limit"
        )

    def _account_rpc(self, address: str) -> JsonRpcClient:
        """The RPC an account read goes to, once the address is a Solana key, an RPC URL is set and the
        breaker is closed."""
        try:
            Pubkey.from_string(address)
        except ValueError as exc:
            raise InvalidRequest("invalid_address", "not a Solana address") from exc
        if self.rpc is None:
            raise ObservationUnavailable(
                "chain_rpc_not_configured:solana",
                "no RPC URL is configured for solana: its accounts cannot be read",
            )
        self.breaker.check()
        return self.rpc

    async def account_data(self, address: str) -> bytes | None:
        """SolanaAccountReader: a finalized account's data."""
        rpc = self._account_rpc(address)

        async def read() -> bytes | None:
            return parse_account_data(
                await rpc.call("getAccountInfo", [address, {"commitment": "finalized", "encoding": "base64"}])
            )

        return await self.breaker.guard(read(), "getAccountInfo")

    async def account_info(self, address: str) -> SolanaAccount | None:
        """An account's owner, executable flag and lamports at `finalized` (no data: a zero-length slice)."""
        rpc = self._account_rpc(address)
        config = {"commitment": "finalized", "encoding": "base64", "dataSlice": {"offset": 0, "length": 0}}

        async def read() -> SolanaAccount | None:
            return parse_account_info(await rpc.call("getAccountInfo", [address, config]))

        return await self.breaker.guard(read(), "getAccountInfo")

    async def token_account(self, address: str) -> SolanaTokenAccount | None:
        """SolanaPreflightReader: the SPL token account at `address` (its first 72 bytes), None if none."""
        rpc = self._account_rpc(address)
        config = {
            "commitment": "finalized",
            "encoding": "base64",
            "dataSlice": {"offset": 0, "length": TOKEN_ACCOUNT_HEAD},
        }

        async def read() -> SolanaTokenAccount | None:
            return parse_token_account(await rpc.call("getAccountInfo", [address, config]))

        return await self.breaker.guard(read(), "getAccountInfo")

    async def fee_for_message(self, build: Callable[[str], str]) -> int | None:
        """SolanaPreflightReader: `getLatestBlockhash`, then `getFeeForMessage` of `build(blockhash)` (the
        node's fee for that message: signatures and any priority fee it sets); None when the node has none."""
        if self.rpc is None:
            raise ObservationUnavailable(
                "chain_rpc_not_configured:solana",
                "no RPC URL is configured for solana: no fee can be read",
            )
        self.breaker.check()
        rpc = self.rpc

        async def read() -> int | None:
            latest = await rpc.call("getLatestBlockhash", [{"commitment": "finalized"}])
            value = latest.get("value") if isinstance(latest, dict) else None
            blockhash = value.get("blockhash") if isinstance(value, dict) else None
            if not isinstance(blockhash, str):
                raise WireError("getLatestBlockhash: no blockhash")
            try:
                message = build(blockhash)
            except ValueError as exc:
                raise WireError("getLatestBlockhash: not a blockhash") from exc
            fee = await rpc.call("getFeeForMessage", [message, {"commitment": "processed"}])
            if not isinstance(fee, dict) or "value" not in fee:
                raise WireError("getFeeForMessage: no value")
            return None if fee["value"] is None else integer(fee["value"], "getFeeForMessage.value")

        return await self.breaker.guard(read(), "getFeeForMessage")


def parse_token_account(result: Any) -> SolanaTokenAccount | None:
    """`getAccountInfo` (base64, first 72 bytes) -> the token account's program, mint, owner and amount; None
    when there is no account. An account another program owns carries no token fields (mint and owner empty,
    amount 0): the caller sees its program is not a token program."""
    if not isinstance(result, dict) or not isinstance(result.get("value"), dict | None):
        raise WireError("getAccountInfo: no value")
    info = parse_account_info(result)
    if info is None:
        return None
    if info.owner not in TOKEN_PROGRAMS:
        return SolanaTokenAccount(program=info.owner, mint="", owner="", amount=0)
    data = parse_account_data(result) or b""
    if len(data) < TOKEN_ACCOUNT_HEAD:
        raise WireError("getAccountInfo: a token account shorter than 72 bytes")
    return SolanaTokenAccount(
        program=info.owner,
        mint=str(Pubkey.from_bytes(data[:32])),
        owner=str(Pubkey.from_bytes(data[32:64])),
        amount=int.from_bytes(data[64:72], "little"),
    )


def parse_account_data(result: Any) -> bytes | None:
    """`getAccountInfo` (base64) -> the account's data, None when the account does not exist."""
    if not isinstance(result, dict) or "value" not in result:
        raise WireError("getAccountInfo: no value")
    value = result["value"]
    if value is None:
        return None
    data = value.get("data") if isinstance(value, dict) else None
    if not isinstance(data, list) or len(data) != 2 or data[1] != "base64" or not isinstance(data[0], str):
        raise WireError("getAccountInfo: data is not [base64, 'base64']")
    try:
        return base64.b64decode(data[0], validate=True)
    except ValueError as exc:
        raise WireError("getAccountInfo: data is not base64") from exc


def parse_account_info(result: Any) -> SolanaAccount | None:
    """`getAccountInfo` -> the account's owner, executable flag and lamports; None when there is no account."""
    if not isinstance(result, dict) or "value" not in result:
        raise WireError("getAccountInfo: no value")
    value = result["value"]
    if value is None:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("executable"), bool):
        raise WireError("getAccountInfo: value is not an account")
    return SolanaAccount(
        owner=_pubkey(value.get("owner"), "getAccountInfo.owner"),
        executable=value["executable"],
        lamports=integer(value.get("lamports"), "getAccountInfo.lamports"),
    )
