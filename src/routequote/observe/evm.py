"""EvmChainReader over the shared JSON-RPC client: one mined transaction with its receipt, logs, block height.

`transaction()` is two round trips: one batch of `eth_getTransactionByHash` + `eth_getTransactionReceipt` +
`eth_blockNumber` + `eth_chainId`, then `eth_getBlockByNumber(receipt block, false)` for the block time
(and to check the receipt's block hash is still canonical). Every chain has its own breaker.

A chain with no RPC URL raises `ObservationUnavailable("chain_rpc_not_configured", ...)`; a node that
answers for another chain id than the pinned one raises `rpc_wrong_chain:<chain>`; timeouts, transport and
protocol failures raise `rpc_<kind>:<chain>` (e.g. `rpc_timeout:base`), whose message names the method and a
classified reason, never what the node wrote. Nothing is retried here: the caller observes again. Bodies are
bounded (`max_bytes`), and a receipt or log list past `HEAVY_LOGS` entries is decoded in a worker thread so
one huge receipt cannot stall every other request.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import httpx
from eth_utils.address import to_checksum_address

from routequote.core.assets import CHAINS, Chain
from routequote.core.field_rules import EVM_ADDRESS_PATTERN, EVM_TX_HASH_PATTERN
from routequote.core.sessions.reads import Facts, LatestBlock, LogsSince, Read, TxByHash
from routequote.errors import InvalidRequest
from routequote.market.jsonrpc import JsonRpcClient, RpcError
from routequote.market.upstream import DEFAULT_MAX_BYTES, off_loop
from routequote.observe._common import (
    Breaker,
    WireError,
    data_bytes,
    hash32,
    quantity,
    unavailable,
)
from routequote.ports import BlockHead, BlockScan, EvmLog, EvmTransaction, ObservationUnavailable

TX_HASH = re.compile(EVM_TX_HASH_PATTERN)
ADDRESS = re.compile(EVM_ADDRESS_PATTERN)
HEAVY_LOGS = 500  # from this many logs on, decoding runs off the event loop


def default_chain_ids() -> dict[str, int]:
    return {
        c.value: info.chain_id
        for c, info in CHAINS.items()
        if info.chain_id is not None and c is not Chain.SOLANA
    }


def _address(value: Any, what: str) -> str:
    if not isinstance(value, str) or not ADDRESS.match(value):
        raise WireError(f"{what}: not an address: {value!r}")
    return str(to_checksum_address(value))


def parse_log(item: Any) -> EvmLog:
    if not isinstance(item, dict):
        raise WireError("log: not an object")
    topics = item.get("topics")
    if not isinstance(topics, list):
        raise WireError("log.topics: not a list")
    return EvmLog(
        address=_address(item.get("address"), "log.address"),
        topics=tuple(hash32(t, "log.topics") for t in topics),
        data=data_bytes(item.get("data"), "log.data"),
        log_index=quantity(item.get("logIndex"), "log.logIndex"),
        tx_hash=hash32(item.get("transactionHash"), "log.transactionHash"),
        block_number=quantity(item.get("blockNumber"), "log.blockNumber"),
    )


def _parse_logs(raw: list[Any]) -> list[EvmLog]:
    return [parse_log(item) for item in raw if not (isinstance(item, dict) and item.get("removed") is True)]


def parse_transaction(
    tx_hash: str, tx: Any, receipt: Any, block: Any, latest: int, chain_id: int
) -> EvmTransaction | None:
    """The wire objects of one mined transaction as an EvmTransaction; None when not mined or reorged away."""
    if tx is None or receipt is None or block is None:
        return None
    if not isinstance(tx, dict) or not isinstance(receipt, dict) or not isinstance(block, dict):
        raise WireError("transaction, receipt or block is not an object")
    want = tx_hash.lower()
    if (
        hash32(tx.get("hash"), "tx.hash") != want
        or hash32(receipt.get("transactionHash"), "receipt.hash") != want
    ):
        raise WireError("the node answered for another transaction hash")
    if tx.get("chainId") is not None and quantity(tx["chainId"], "tx.chainId") != chain_id:
        raise WireError("transaction chainId differs from the node's eth_chainId")
    block_number = quantity(receipt.get("blockNumber"), "receipt.blockNumber")
    if hash32(block.get("hash"), "block.hash") != hash32(receipt.get("blockHash"), "receipt.blockHash"):
        return None  # the receipt's block is no longer canonical: a reorg is in progress
    price = receipt.get("effectiveGasPrice", tx.get("gasPrice"))
    to = receipt.get("to", tx.get("to"))
    logs = receipt.get("logs")
    if not isinstance(logs, list):
        raise WireError("receipt.logs: not a list")
    return EvmTransaction(
        chain_id=chain_id,
        tx_hash=want,
        sender=_address(tx.get("from"), "tx.from"),
        to=None if to is None else _address(to, "tx.to"),
        value=quantity(tx.get("value"), "tx.value"),
        input=data_bytes(tx.get("input", tx.get("data")), "tx.input"),
        status=quantity(receipt.get("status"), "receipt.status"),
        block_number=block_number,
        block_timestamp=quantity(block.get("timestamp"), "block.timestamp"),
        confirmations=max(0, latest - block_number + 1),
        gas_used=quantity(receipt.get("gasUsed"), "receipt.gasUsed"),
        effective_gas_price=quantity(price, "receipt.effectiveGasPrice"),
        logs=tuple(parse_log(lg) for lg in logs),
    )


def parse_head(block: Any) -> BlockHead:
    if not isinstance(block, dict):
        raise WireError("eth_getBlockByNumber: not a block")
    return BlockHead(
        number=quantity(block.get("number"), "block.number"),
        hash=hash32(block.get("hash"), "block.hash"),
        parent_hash=hash32(block.get("parentHash"), "block.parentHash"),
    )


def parse_block_receipts(number: int, raw: Any) -> tuple[str, frozenset[str]]:
    """`eth_getBlockReceipts` of block `number`: its hash and its transactions' hashes (garbage raises)."""
    if not isinstance(raw, list):
        raise WireError("eth_getBlockReceipts: not a list")
    block_hash = "0x" + "0" * 64
    hashes = set()
    for receipt in raw:
        if (
            not isinstance(receipt, dict)
            or quantity(receipt.get("blockNumber"), "receipt.blockNumber") != number
        ):
            raise WireError("eth_getBlockReceipts: a receipt of another block")
        block_hash = hash32(receipt.get("blockHash"), "receipt.blockHash")
        hashes.add(hash32(receipt.get("transactionHash"), "receipt.transactionHash"))
    return block_hash, frozenset(hashes)


def log_filter(
    address: str, topics: Sequence[str | None], from_block: int, to_block: int | None
) -> dict[str, Any]:
    return {
        "address": str(to_checksum_address(address)),
        "topics": [None if t is None else t.lower() for t in topics],
        "fromBlock": hex(from_block),
        "toBlock": "latest" if to_block is None else hex(to_block),
    }


class JsonRpcEvmReader:
    """EvmChainReader for every chain with an RPC URL in `rpc_urls` (chain name -> URL)."""

    def __init__(
        self,
        rpc_urls: Mapping[str, str],
        client: httpx.AsyncClient,
        *,
        timeout: float = 1.5,
        failure_threshold: int = 3,
        cooldown_seconds: float = 15.0,
        chain_ids: Mapping[str, int] | None = None,
        clock: Callable[[], float] = time.monotonic,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        self.chain_ids = dict(chain_ids) if chain_ids is not None else default_chain_ids()
        self.rpcs = {
            chain: JsonRpcClient(url, client, timeout=timeout, max_bytes=max_bytes)
            for chain, url in rpc_urls.items()
            if url
        }
        self.breakers = {
            chain: Breaker(chain, failure_threshold, cooldown_seconds, clock) for chain in self.rpcs
        }
        self.chain_checked: set[str] = set()  # chains whose node's chain id the watcher's head read checked

    def configured(self, chain: str) -> bool:
        return chain in self.rpcs

    def rpc_for(self, chain: str) -> tuple[JsonRpcClient, Breaker]:
        """The chain's JSON-RPC client and its breaker (checked: an open breaker raises), or
        `chain_rpc_not_configured`. The contract-state reads (`evm_state.py`) share both."""
        if chain not in self.rpcs:
            raise ObservationUnavailable(
                "chain_rpc_not_configured",
                f"no RPC URL is configured for {chain}: its transactions cannot be observed",
            )
        breaker = self.breakers[chain]
        breaker.check()
        return self.rpcs[chain], breaker

    def check_chain_id(self, chain: str, raw: Any) -> int:
        """The node's `eth_chainId` answer, or `rpc_wrong_chain:<chain>` when it is not the pinned id."""
        got = quantity(raw, "eth_chainId")
        want = self.chain_ids.get(chain)
        if want is not None and got != want:  # the node's value is not repeated to the caller
            raise ObservationUnavailable(
                f"rpc_wrong_chain:{chain}", f"the RPC configured for {chain} does not serve chain id {want}"
            )
        return got

    async def transaction(self, chain: str, tx_hash: str) -> EvmTransaction | None:
        if not isinstance(tx_hash, str) or not TX_HASH.match(tx_hash):
            raise InvalidRequest("invalid_transaction_hash", "an EVM transaction hash is 0x + 64 hex digits")
        rpc, breaker = self.rpc_for(chain)

        async def read() -> EvmTransaction | None:
            tx, receipt, latest_raw, chain_raw = await rpc.batch(
                [
                    ("eth_getTransactionByHash", [tx_hash]),
                    ("eth_getTransactionReceipt", [tx_hash]),
                    ("eth_blockNumber", []),
                    ("eth_chainId", []),
                ]
            )
            chain_id = self.check_chain_id(chain, chain_raw)
            if tx is None or receipt is None:
                return None
            if not isinstance(receipt, dict):
                raise WireError("receipt: not an object")
            block = await rpc.call("eth_getBlockByNumber", [receipt.get("blockNumber"), False])
            logs = receipt.get("logs")
            return await off_loop(
                parse_transaction,
                tx_hash,
                tx,
                receipt,
                block,
                quantity(latest_raw, "eth_blockNumber"),
                chain_id,
                heavy=isinstance(logs, list) and len(logs) >= HEAVY_LOGS,
            )

        return await breaker.guard(read(), "eth_getTransactionReceipt")

    async def logs(
        self, chain: str, address: str, topics: list[str | None], from_block: int, to_block: int | None = None
    ) -> list[EvmLog]:
        rpc, breaker = self.rpc_for(chain)
        flt = log_filter(address, topics, from_block, to_block)

        async def read() -> list[EvmLog]:
            raw = await rpc.call("eth_getLogs", [flt])
            if not isinstance(raw, list):
                raise WireError("eth_getLogs: not a list")
            return await off_loop(_parse_logs, raw, heavy=len(raw) >= HEAVY_LOGS)

        return await breaker.guard(read(), "eth_getLogs")

    async def block_number(self, chain: str) -> int:
        rpc, breaker = self.rpc_for(chain)

        async def read() -> int:
            return quantity(await rpc.call("eth_blockNumber", []), "eth_blockNumber")

        return await breaker.guard(read(), "eth_blockNumber")

    # ---- many reads at once (the watcher's batched gatherer: ports.EvmBatchReader) ----------------------

    async def batch_read(self, chain: str, reads: Sequence[Read]) -> tuple[Facts, dict[Read, BaseException]]:
        """Every `TxByHash`, `LatestBlock` and `LogsSince` read of `chain` in two JSON-RPC batches (each one HTTP
        request per `max_batch` calls, split further when an answer passes the size limit): first `eth_chainId`
        (checked once), `eth_blockNumber` (once), every receipt and every `eth_getLogs`; then, for the mined
        ones only, `eth_getTransactionByHash` and `eth_getBlockByNumber` (once per block). Each transaction is
        decoded and checked exactly as `transaction()` does, with the same block height. A call the node
        refused or answered with garbage fails its read alone (`rpc_<kind>:<chain>`); a batch that fails as a
        whole (timeout, transport, wrong chain id) raises, through the chain's breaker."""
        rpc, breaker = self.rpc_for(chain)
        failed: dict[Read, BaseException] = {}
        hashes: list[TxByHash] = []
        heads: list[LatestBlock] = []
        searches: list[LogsSince] = []
        for r in dict.fromkeys(reads):
            if isinstance(r, TxByHash) and r.chain == chain:
                if isinstance(r.tx_hash, str) and TX_HASH.match(r.tx_hash):
                    hashes.append(r)
                else:
                    failed[r] = InvalidRequest(
                        "invalid_transaction_hash", "an EVM transaction hash is 0x + 64 hex digits"
                    )
            elif isinstance(r, LatestBlock) and r.chain == chain:
                heads.append(r)
            elif isinstance(r, LogsSince) and r.chain == chain:
                searches.append(r)
            else:
                raise ValueError(f"not a read of {chain}: {r!r}")
        try:
            facts = await self._batch_read(chain, rpc, hashes, heads, searches, failed)
        except (RpcError, WireError) as exc:
            breaker.failure()
            raise unavailable(exc, chain, "eth_getTransactionReceipt") from None
        except ObservationUnavailable:
            breaker.failure()
            raise
        if any(isinstance(e, ObservationUnavailable) for e in failed.values()):
            breaker.failure()
        else:
            breaker.success()
        return facts, failed

    async def _batch_read(
        self,
        chain: str,
        rpc: JsonRpcClient,
        hashes: list[TxByHash],
        heads: list[LatestBlock],
        searches: list[LogsSince],
        failed: dict[Read, BaseException],
    ) -> Facts:
        calls: list[tuple[str, Sequence[Any]]] = [("eth_chainId", []), ("eth_blockNumber", [])]
        calls += [("eth_getTransactionReceipt", [r.tx_hash]) for r in hashes]
        calls += [
            ("eth_getLogs", [log_filter(s.address, s.topics, s.from_block, s.to_block)]) for s in searches
        ]
        first = await rpc.batch_within_limit(calls)
        for raw in first[:2]:
            if isinstance(raw, BaseException):
                raise raw
        chain_id = self.check_chain_id(chain, first[0])
        latest = quantity(first[1], "eth_blockNumber")

        def fail(read: Read, exc: Exception, method: str) -> None:
            failed[read] = unavailable(exc, chain, method)

        txs: dict[TxByHash, EvmTransaction | None] = {}
        mined: list[tuple[TxByHash, dict[str, Any]]] = []
        for r, receipt in zip(hashes, first[2 : 2 + len(hashes)], strict=True):
            if isinstance(receipt, Exception):
                fail(r, receipt, "eth_getTransactionReceipt")
            elif receipt is None:
                txs[r] = None
            elif not isinstance(receipt, dict) or not isinstance(receipt.get("blockNumber"), str):
                fail(r, WireError("receipt: not an object with a blockNumber"), "eth_getTransactionReceipt")
            else:
                mined.append((r, receipt))
        logs: dict[LogsSince, tuple[EvmLog, ...]] = {}
        for s, raw in zip(searches, first[2 + len(hashes) :], strict=True):
            try:
                if isinstance(raw, Exception):
                    raise raw
                if not isinstance(raw, list):
                    raise WireError("eth_getLogs: not a list")
                logs[s] = tuple(await off_loop(_parse_logs, raw, heavy=len(raw) >= HEAVY_LOGS))
            except (RpcError, WireError) as exc:
                fail(s, exc, "eth_getLogs")
        if mined:
            await self._mined(chain, rpc, mined, latest, chain_id, txs, fail)
        return Facts(txs=txs, blocks=dict.fromkeys(heads, latest), logs=logs)

    async def _mined(
        self,
        chain: str,
        rpc: JsonRpcClient,
        mined: list[tuple[TxByHash, dict[str, Any]]],
        latest: int,
        chain_id: int,
        txs: dict[TxByHash, EvmTransaction | None],
        fail: Callable[[Read, Exception, str], None],
    ) -> None:
        """The second batch: each mined transaction and its block (once per block), then decoded."""
        blocks = list(dict.fromkeys(str(receipt["blockNumber"]) for _, receipt in mined))
        calls: list[tuple[str, Sequence[Any]]] = [("eth_getTransactionByHash", [r.tx_hash]) for r, _ in mined]
        calls += [("eth_getBlockByNumber", [b, False]) for b in blocks]
        second = await rpc.batch_within_limit(calls)
        block_of = dict(zip(blocks, second[len(mined) :], strict=True))
        for (r, receipt), tx in zip(mined, second[: len(mined)], strict=True):
            block = block_of[str(receipt["blockNumber"])]
            try:
                if isinstance(tx, Exception):
                    raise tx
                if tx is None:
                    txs[r] = None
                    continue
                if isinstance(block, Exception):
                    raise block
                logs = receipt.get("logs")
                txs[r] = await off_loop(
                    parse_transaction,
                    r.tx_hash,
                    tx,
                    receipt,
                    block,
                    latest,
                    chain_id,
                    heavy=isinstance(logs, list) and len(logs) >= HEAVY_LOGS,
                )
            except (RpcError, WireError) as exc:
                fail(r, exc, "eth_getTransactionReceipt")

    # ---- block by block (the watcher's caches: ports.EvmBlockScanner) -----------------------------------

    async def head(self, chain: str) -> BlockHead:
        """The latest block's number, hash and parent hash: one `eth_getBlockByNumber("latest")` (with
        `eth_chainId` in the same request the first time, checked as every other read checks it)."""
        rpc, breaker = self.rpc_for(chain)

        async def read() -> BlockHead:
            latest: tuple[str, Sequence[Any]] = ("eth_getBlockByNumber", ["latest", False])
            if chain in self.chain_checked:
                return parse_head(await rpc.call(*latest))
            chain_raw, block = await rpc.batch([("eth_chainId", []), latest])
            self.check_chain_id(chain, chain_raw)
            self.chain_checked.add(chain)
            return parse_head(block)

        return await breaker.guard(read(), "eth_getBlockByNumber")

    async def scan(
        self,
        chain: str,
        blocks: Sequence[int],
        logs_range: tuple[int, int] | None,
        addresses: Sequence[str],
        topic0s: Sequence[str] | None,
    ) -> BlockScan:
        """`eth_getBlockReceipts` per block and one `eth_getLogs` for every watched contract and topic, in one
        request; all or nothing (any call refused or garbage raises ObservationUnavailable)."""
        rpc, breaker = self.rpc_for(chain)
        calls: list[tuple[str, Sequence[Any]]] = [("eth_getBlockReceipts", [hex(b)]) for b in blocks]
        if logs_range is not None and addresses:
            flt: dict[str, Any] = {
                "address": [str(to_checksum_address(a)) for a in addresses],
                "fromBlock": hex(logs_range[0]),
                "toBlock": hex(logs_range[1]),
            }
            if topic0s is not None:
                flt["topics"] = [[t.lower() for t in topic0s]]
            calls.append(("eth_getLogs", [flt]))

        async def read() -> BlockScan:
            answers = await rpc.batch(calls) if calls else []
            receipts = {b: parse_block_receipts(b, raw) for b, raw in zip(blocks, answers, strict=False)}
            logs: list[EvmLog] = []
            if len(answers) > len(blocks):
                raw = answers[-1]
                if not isinstance(raw, list):
                    raise WireError("eth_getLogs: not a list")
                logs = await off_loop(_parse_logs, raw, heavy=len(raw) >= HEAVY_LOGS)
            return BlockScan(receipts, tuple(logs))

        return await breaker.guard(read(), "eth_getBlockReceipts")

    def health(self) -> dict[str, dict[str, Any]]:
        return {c: {"breaker": b.state, "consecutive_failures": b.failures} for c, b in self.breakers.items()}
