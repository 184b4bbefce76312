"""The watcher's block-by-block reads against a real anvil node (issue 42, section 1's cost rule).

`JsonRpcEvmReader.head` and `.scan` are what the watcher's caches read per new block (sessions/watch_cache.py):
the latest block's number, hash and parent hash; `eth_getBlockReceipts` of each new block (the hashes it holds,
its hash); one `eth_getLogs` over the new blocks for every watched contract and first topic. Here anvil mines a
WETH deposit and the reads find it; a block replaced through a snapshot revert shows a new hash at the same
height, which is what the cache's reorg check compares.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import httpx
from _evm import AnvilChain, calldata
from eth_utils.crypto import keccak

from routequote.observe.evm import JsonRpcEvmReader

DEPOSIT = "0x" + keccak(text="Deposit(address,uint256)").hex()


def test_head_and_scan_find_a_mined_transaction_and_its_log(
    anvil_factory: Callable[[int], AnvilChain],
) -> None:
    chain = anvil_factory(8453)
    weth = chain.addresses["weth"]

    async def run() -> None:
        async with httpx.AsyncClient() as client:
            reader = JsonRpcEvmReader({"base": chain.url}, client, timeout=10.0, chain_ids={"base": 8453})
            before = await reader.head("base")
            receipt = chain.send(weth, calldata("deposit()"), value=12345)
            block = int(receipt["blockNumber"], 16)
            after = await reader.head("base")
            assert after.number == block > before.number
            assert after.hash == receipt["blockHash"].lower()
            scan = await reader.scan("base", [block], (before.number + 1, block), [weth], [DEPOSIT])
            block_hash, hashes = scan.receipts[block]
            assert block_hash == after.hash
            assert receipt["transactionHash"].lower() in hashes
            assert [lg.tx_hash for lg in scan.logs] == [receipt["transactionHash"].lower()]
            assert scan.logs[0].topics[0] == DEPOSIT and int.from_bytes(scan.logs[0].data, "big") == 12345
            # another contract's logs are not asked for: none come back
            other = await reader.scan("base", [], (before.number + 1, block), ["0x" + "11" * 20], [DEPOSIT])
            assert other.logs == () and other.receipts == {}
            # the block replaced (a reorg): same height, another hash; its parent is still the one before
            snap = chain.rpc.call("evm_snapshot")
            chain.send(weth, calldata("deposit()"), value=1)
            replaced = await reader.head("base")
            chain.revert(snap)
            chain.rpc.call("evm_mine")
            now = await reader.head("base")
            assert now.number == replaced.number and now.hash != replaced.hash
            assert now.parent_hash == replaced.parent_hash
            empty = await reader.scan("base", [now.number], None, [], None)
            assert empty.receipts[now.number][1] == frozenset()

    asyncio.run(run())
