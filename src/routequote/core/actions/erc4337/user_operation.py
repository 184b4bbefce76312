"""The user operation's parts: the four calls of the settlement batch and the EntryPoint v0.7 userOpHash."""

from __future__ import annotations

from dataclasses import dataclass

from eth_abi.abi import encode
from eth_utils.crypto import keccak

from routequote.core.actions.common import checksum
from routequote.core.actions.erc4337.abi import call
from routequote.core.actions.erc4337.permit import NO_PERMIT_SIGNATURE
from routequote.core.actions.evm import ROUTER_ADDRESS_THIS, encode_call


@dataclass(frozen=True, slots=True)
class SettlementCalls:
    """The four calls of the batch, as (target, value, data)."""

    calls: tuple[tuple[str, int, bytes], ...]

    @property
    def call_data(self) -> bytes:
        return call(
            "executeBatch",
            [t for t, _v, _d in self.calls],
            [v for _t, v, _d in self.calls],
            [d for _t, _v, d in self.calls],
        )


def settlement_calls(
    *,
    usdc: str,
    router: str,
    weth: str,
    wallet: str,
    account: str,
    amount_in: int,
    minimum_eth_out: int,
    pool_fee: int,
    deadline: int,
    permit_vrs: tuple[int, bytes, bytes] = NO_PERMIT_SIGNATURE,
) -> SettlementCalls:
    """permit, transferFrom, approve, multicall(exactInputSingle, unwrapWETH9) - see the module doc."""
    usdc, router, weth = checksum(usdc), checksum(router), checksum(weth)
    wallet, account = checksum(wallet), checksum(account)
    v, r, s = permit_vrs
    swap = encode_call(
        "exactInputSingle", (usdc, weth, pool_fee, ROUTER_ADDRESS_THIS, amount_in, minimum_eth_out, 0)
    )
    unwrap = encode_call("unwrapWETH9", minimum_eth_out, wallet)
    return SettlementCalls(
        (
            (usdc, 0, call("permit", wallet, account, amount_in, deadline, v, r, s)),
            (usdc, 0, call("transferFrom", wallet, account, amount_in)),
            (usdc, 0, encode_call("approve", router, amount_in)),
            (router, 0, encode_call("multicall", deadline, [swap, unwrap])),
        )
    )


def user_op_hash(
    *,
    sender: str,
    nonce: int,
    init_code: bytes,
    call_data: bytes,
    account_gas_limits: bytes,
    pre_verification_gas: int,
    gas_fees: bytes,
    paymaster_and_data: bytes,
    entry_point: str,
    chain_id: int,
) -> bytes:
    """EntryPoint v0.7 `getUserOpHash`."""
    inner = keccak(
        encode(
            ["address", "uint256", "bytes32", "bytes32", "bytes32", "uint256", "bytes32", "bytes32"],
            [
                checksum(sender),
                nonce,
                keccak(init_code),
                keccak(call_data),
                account_gas_limits,
                pre_verification_gas,
                gas_fees,
                keccak(paymaster_and_data),
            ],
        )
    )
    return keccak(encode(["bytes32", "address", "uint256"], [inner, checksum(entry_point), chain_id]))
