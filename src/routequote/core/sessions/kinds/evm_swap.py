"""Uniswap v3 swap (EVM): the output is what the chain recorded reaching the recipient: ERC-20 `Transfer`
to it, or for native ETH out the WETH9 `Withdrawal` by the router that then unwraps to it. Next step: done
(`state.step_done`: the output re-quotes the next step). The action is built by `core.actions.evm`."""

from __future__ import annotations

from typing import Any

from routequote.core.actions.evm import ROUTER_ADDRESS_THIS, decode_call
from routequote.core.chain import EvmTransaction
from routequote.core.sessions.evidence_common import (
    EvmSend,
    ObservationRejected,
    SendEvidence,
    erc20_transfers,
    logs_named,
    lower_address,
    topic_address,
)


def send_evidence(send: EvmSend) -> SendEvidence:
    return SendEvidence(output=swap_output(send.call, send.tx, send.recipient))


def swap_output(call: Any, tx: EvmTransaction, recipient: str) -> int:
    if call is None or call.name != "multicall":
        raise ValueError("a prepared Uniswap step is a SwapRouter02 multicall")
    inner = [decode_call(bytes(c)) for c in call.args[1]]
    swap = inner[0]
    if swap is None or swap.name != "exactInputSingle":
        raise ValueError("a prepared Uniswap step starts with exactInputSingle")
    token_out, swap_recipient = str(swap.args[0][1]), str(swap.args[0][3])
    if lower_address(swap_recipient) == lower_address(ROUTER_ADDRESS_THIS):
        unwrap = inner[1] if len(inner) > 1 else None
        if unwrap is None or unwrap.name != "unwrapWETH9":
            raise ValueError("a swap to the router must be followed by unwrapWETH9")
        if lower_address(str(unwrap.args[1])) != lower_address(recipient):
            raise ObservationRejected(
                "observation_wrong_recipient", "the unwrapped ETH goes to another address"
            )
        # WETH9 Withdrawal(src = router, wad): the router unwrapped exactly what it then sends to the recipient
        return sum(
            int.from_bytes(lg.data, "big")
            for lg in logs_named(tx, "Withdrawal", token_out)
            if len(lg.topics) == 2
            and len(lg.data) == 32
            and lower_address(topic_address(lg.topics[1])) == lower_address(tx.to)
        )
    if lower_address(swap_recipient) != lower_address(recipient):
        raise ObservationRejected("observation_wrong_recipient", "the swap output goes to another address")
    moved = erc20_transfers(tx, token_out)
    got = sum(v for _f, t, v in moved if lower_address(t) == lower_address(recipient))
    if got == 0 and moved:
        raise ObservationRejected("observation_wrong_recipient", "the swap output went to another address")
    return got
