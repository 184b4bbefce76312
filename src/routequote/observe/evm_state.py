"""Contract state reads (`eth_call`, `eth_getCode`) over the session engine's EVM reader.

The v1 corridor's destination settlement needs four reads before it can build the user operation: the
wallet's smart-account address (`factory.getAddress`), whether that account is deployed, its EntryPoint
nonce and the wallet's USDC permit nonce. They go through the same per-chain JSON-RPC clients and breakers
as the observers (`JsonRpcEvmReader`), at the `latest` block; failures raise `ObservationUnavailable`.
"""

from __future__ import annotations

from typing import Any

from eth_utils.address import to_checksum_address

from routequote.market.jsonrpc import RpcCallError
from routequote.observe._common import WireError, data_bytes, quantity
from routequote.observe.evm import JsonRpcEvmReader
from routequote.ports import EvmStateReader, ObservationUnavailable


class JsonRpcEvmState:
    """The `ports.EvmStateReader` over a `JsonRpcEvmReader` (its clients, chain-id pin and breakers), built
    by the composition root (`app.build_sessions`)."""

    def __init__(self, reader: JsonRpcEvmReader) -> None:
        self.reader = reader

    def configured(self, chain: str) -> bool:
        return self.reader.configured(chain)

    async def _read(self, chain: str, method: str, params: list[Any]) -> bytes:
        rpc, breaker = self.reader.rpc_for(chain)

        async def read() -> bytes:
            result, chain_raw = await rpc.batch([(method, params), ("eth_chainId", [])])
            self.reader.check_chain_id(chain, chain_raw)
            return data_bytes(result, method)

        out: bytes = await breaker.guard(read(), method)
        return out

    async def call(self, chain: str, to: str, data: str) -> bytes:
        return await self._read(
            chain, "eth_call", [{"to": str(to_checksum_address(to)), "data": data}, "latest"]
        )

    async def code(self, chain: str, address: str) -> bytes:
        return await self._read(chain, "eth_getCode", [str(to_checksum_address(address)), "latest"])

    async def _quantity(self, chain: str, method: str, params: list[Any]) -> int:
        rpc, breaker = self.reader.rpc_for(chain)

        async def read() -> int:
            result, chain_raw = await rpc.batch([(method, params), ("eth_chainId", [])])
            self.reader.check_chain_id(chain, chain_raw)
            return quantity(result, method)

        out: int = await breaker.guard(read(), method)
        return out

    async def balance(self, chain: str, address: str) -> int:
        """The native balance at `latest` (preflight)."""
        return await self._quantity(chain, "eth_getBalance", [str(to_checksum_address(address)), "latest"])

    async def gas_price(self, chain: str) -> int:
        """The current fee per gas (`eth_gasPrice`: base fee plus a suggested tip)."""
        return await self._quantity(chain, "eth_gasPrice", [])

    async def estimate_gas(self, chain: str, tx: dict[str, Any]) -> int | None:
        """`eth_estimateGas`; None when the node answers that the call would revert (an answer about the
        transaction, not a node failure: it does not count against the breaker)."""
        rpc, breaker = self.reader.rpc_for(chain)

        async def read() -> int | None:
            result, chain_raw = await rpc.batch(
                [("eth_estimateGas", [tx]), ("eth_chainId", [])], return_exceptions=True
            )
            if isinstance(chain_raw, RpcCallError):
                raise chain_raw
            self.reader.check_chain_id(chain, chain_raw)
            return None if isinstance(result, RpcCallError) else quantity(result, "eth_estimateGas")

        out: int | None = await breaker.guard(read(), "eth_estimateGas")
        return out

    async def timestamp(self, chain: str) -> int:
        """The latest block's timestamp (what a permit or swap deadline is judged against)."""
        rpc, breaker = self.reader.rpc_for(chain)

        async def read() -> int:
            block = await rpc.call("eth_getBlockByNumber", ["latest", False])
            if not isinstance(block, dict):
                raise WireError("eth_getBlockByNumber: not an object")
            return quantity(block.get("timestamp"), "block.timestamp")

        out: int = await breaker.guard(read(), "eth_getBlockByNumber")
        return out


__all__ = ["EvmStateReader", "JsonRpcEvmState", "ObservationUnavailable", "WireError"]
