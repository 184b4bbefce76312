"""What the chain shows the destination settlement (an ERC-4337 user operation) did. Pure: no I/O.

The caller names the bundler's transaction. It proves the step only when it is a direct
`EntryPoint.handleOps` call (v0.7, the plan's EntryPoint, the plan's chain) carrying the plan's operation:
same sender, nonce, initCode, gas fields and paymasterAndData, and a callData that is byte for byte the plan's
callData re-derived from its bounds with the permit signature found in it (the only part the plan cannot
know). The userOpHash is recomputed from that operation; the EntryPoint's
`UserOperationEvent(bytes32 indexed userOpHash, address indexed sender, address indexed paymaster, uint256
nonce, bool success, uint256 actualGasCost, uint256 actualGasUsed)` for that hash and sender must say
success. Amounts come only from logs emitted while this operation executed (after the previous
`UserOperationEvent` or `BeforeExecution()` of the same EntryPoint and before this one's event): the ETH
received is the WETH9 `Withdrawal(address indexed src, uint256 wad)` by the router (`unwrapWETH9` sends
exactly that to the wallet), the USDC spent is the `Transfer(wallet -> account)`. The gas the account paid is
`actualGasCost`. Bundles through another contract or `handleAggregatedOps` are not accepted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from eth_abi.abi import decode
from eth_utils.crypto import keccak

from routequote.core.actions.erc4337 import SELECTORS, PlanView, decode_args
from routequote.core.chain import EvmLog, EvmTransaction
from routequote.core.sessions.evidence_common import TOPIC0, ObservationRejected, StepEvidence

EVENTS_4337: dict[str, str] = {
    "UserOperationEvent": "UserOperationEvent(bytes32,address,address,uint256,bool,uint256,uint256)",
    "UserOperationRevertReason": "UserOperationRevertReason(bytes32,address,uint256,bytes)",
    "BeforeExecution": "BeforeExecution()",
}
TOPIC0_4337: dict[str, str] = {name: "0x" + keccak(text=sig).hex() for name, sig in EVENTS_4337.items()}


def _lower(address: str | None) -> str:
    return (address or "").lower()


def _topic_address(topic: str) -> str:
    return "0x" + topic[-40:].lower()


def _reject_not_prepared(tx: EvmTransaction, message: str) -> ObservationRejected:
    return ObservationRejected("observation_not_prepared_action", message, tx=tx.tx_hash)


def _find_operation(tx: EvmTransaction, view: PlanView) -> tuple[Any, ...]:
    if _lower(tx.to) != _lower(view.entry_point) or tx.input[:4] != SELECTORS["handleOps"]:
        raise _reject_not_prepared(tx, "the transaction is not a handleOps call to the plan's EntryPoint")
    try:
        ops, _beneficiary = decode_args("handleOps", tx.input)
    except Exception as exc:  # noqa: BLE001 - undecodable calldata is simply not the plan's operation
        raise _reject_not_prepared(tx, "the handleOps calldata does not decode") from exc
    mine = [op for op in ops if _lower(str(op[0])) == _lower(view.sender) and int(op[1]) == view.nonce]
    if len(mine) != 1:
        raise _reject_not_prepared(tx, "the bundle does not carry the plan's operation (sender and nonce)")
    return tuple(mine[0])


def _check_operation(tx: EvmTransaction, view: PlanView, op: tuple[Any, ...]) -> bytes:
    """The userOpHash of `op` once every field but the permit signature is shown to be the plan's."""
    _sender, _nonce, init, call_data, gas_limits, pvg, gas_fees, paymaster, _sig = op
    fields = {
        "initCode": (bytes(init), view.init_code),
        "accountGasLimits": (bytes(gas_limits), view.account_gas_limits),
        "preVerificationGas": (int(pvg), view.pre_verification_gas),
        "gasFees": (bytes(gas_fees), view.gas_fees),
        "paymasterAndData": (bytes(paymaster), view.paymaster_and_data),
    }
    differ = [name for name, (got, want) in fields.items() if got != want]
    if differ:
        raise _reject_not_prepared(tx, f"the operation's {', '.join(differ)} differ from the plan")
    try:
        targets, _values, funcs = decode_args("executeBatch", bytes(call_data))
        _o, _s, _v, _d, v, r, s = decode_args("permit", bytes(funcs[0]))
        vrs = (int(v), bytes(r), bytes(s))
    except Exception as exc:  # noqa: BLE001 - any other shape is not the plan's callData
        raise _reject_not_prepared(tx, "the operation's callData is not the plan's executeBatch") from exc
    if bytes(call_data) != view.expected_call_data(vrs):
        raise _reject_not_prepared(
            tx,
            "the operation's callData differs from the plan (amount, minimum, recipient, deadline or targets)",
        )
    return view.user_op_hash(bytes(call_data))


def _event(tx: EvmTransaction, view: PlanView, op_hash: bytes) -> tuple[EvmLog, tuple[Any, ...]]:
    want = "0x" + op_hash.hex()
    found = [
        lg
        for lg in tx.logs
        if _lower(lg.address) == _lower(view.entry_point)
        and len(lg.topics) == 4
        and lg.topics[0] == TOPIC0_4337["UserOperationEvent"]
        and lg.topics[1].lower() == want
        and _topic_address(lg.topics[2]) == _lower(view.sender)
    ]
    if len(found) != 1:
        raise ObservationRejected(
            "observation_incomplete",
            "the EntryPoint emitted no UserOperationEvent for the plan's operation",
            tx=tx.tx_hash,
            user_op_hash=want,
        )
    lg = found[0]
    return lg, tuple(decode(["uint256", "bool", "uint256", "uint256"], lg.data))


def _execution_logs(tx: EvmTransaction, view: PlanView, event: EvmLog) -> list[EvmLog]:
    """The logs emitted while this operation executed (see the module doc)."""
    boundaries = [
        lg.log_index
        for lg in tx.logs
        if _lower(lg.address) == _lower(view.entry_point)
        and lg.topics
        and lg.topics[0] in (TOPIC0_4337["UserOperationEvent"], TOPIC0_4337["BeforeExecution"])
        and lg.log_index < event.log_index
    ]
    start = max(boundaries, default=-1)
    return [lg for lg in tx.logs if start < lg.log_index < event.log_index]


def verify_userop_settlement(
    tx: EvmTransaction,
    *,
    plan: Mapping[str, Any],
    entry_point: str,
    account: str,
    wallet: str,
    weth: str,
    minimum_eth_out: int,
    required_confirmations: int,
    user_op_hash: str | None = None,
) -> StepEvidence:
    """Evidence for the destination settlement step from the bundler's mined transaction (module doc).

    `plan` is the prepared plan as stored (before or after the permit signature was attached);
    `entry_point`, `account`, `wallet`, `weth` and `minimum_eth_out` are the session's values and must be the
    plan's (ValueError otherwise: a programming error, not an observation). `user_op_hash`, when the caller
    knows it, must be the hash of the operation found. Output: `actual_input_base` = USDC moved from the wallet,
    `actual_output_base` = wei the wallet received, `network_fee = {"wei": actualGasCost}` (paid by the
    account), `bridge` = the user operation's identifiers (kind "erc4337_user_operation")."""
    view = PlanView.parse(plan)
    if view.sender != view.smart_account:
        raise ValueError("the plan's sender is not its smart account")
    given = {
        "entry_point": (entry_point, view.entry_point),
        "account": (account, view.smart_account),
        "wallet": (wallet, view.wallet),
        "weth": (weth, view.weth),
    }
    for name, (got, want) in given.items():
        if _lower(got) != _lower(want):
            raise ValueError(f"{name} {got} is not the plan's {want}")
    if minimum_eth_out != view.minimum_eth_out:
        raise ValueError("minimum_eth_out is not the plan's")
    if tx.chain_id != view.chain_id:
        raise ObservationRejected(
            "observation_wrong_chain",
            f"{tx.tx_hash} is on chain {tx.chain_id}, the plan is on {view.chain_id}",
            tx=tx.tx_hash,
        )
    op = _find_operation(tx, view)
    op_hash = _check_operation(tx, view, op)
    if user_op_hash is not None and user_op_hash.lower() != "0x" + op_hash.hex():
        raise _reject_not_prepared(tx, "the operation found is not the one whose userOpHash was named")
    if tx.status != 1:
        raise ObservationRejected("observation_reverted", f"{tx.tx_hash} reverted on chain", tx=tx.tx_hash)
    event, (_nonce, success, gas_cost, gas_used) = _event(tx, view, op_hash)
    if not success:
        raise ObservationRejected(
            "observation_reverted",
            "the user operation was included but its execution reverted",
            tx=tx.tx_hash,
            user_op_hash="0x" + op_hash.hex(),
        )
    if tx.confirmations < required_confirmations:
        return StepEvidence.pending((tx.tx_hash,))
    logs = _execution_logs(tx, view, event)
    eth_out = sum(
        int.from_bytes(lg.data, "big")
        for lg in logs
        if _lower(lg.address) == _lower(view.weth)
        and len(lg.topics) == 2
        and len(lg.data) == 32
        and lg.topics[0] == TOPIC0["Withdrawal"]
        and _topic_address(lg.topics[1]) == _lower(view.router)
    )
    usdc_in = sum(
        int.from_bytes(lg.data, "big")
        for lg in logs
        if _lower(lg.address) == _lower(view.usdc)
        and len(lg.topics) == 3
        and len(lg.data) == 32
        and lg.topics[0] == TOPIC0["Transfer"]
        and _topic_address(lg.topics[1]) == _lower(view.wallet)
        and _topic_address(lg.topics[2]) == _lower(view.smart_account)
    )
    if usdc_in != view.amount_in:
        raise ObservationRejected(
            "observation_not_prepared_action",
            f"the operation moved {usdc_in} USDC, the plan {view.amount_in}",
            tx=tx.tx_hash,
        )
    if eth_out < view.minimum_eth_out:
        raise ObservationRejected(
            "observation_below_step_minimum",
            f"the wallet received {eth_out} wei, below {view.minimum_eth_out}",
            actual_output_base=str(eth_out),
            minimum_output_base=str(view.minimum_eth_out),
        )
    return StepEvidence(
        status="final",
        tx_ids=(tx.tx_hash,),
        actual_input_base=usdc_in,
        actual_output_base=eth_out,
        service_fee_paid_base=0,
        network_fee={"wei": int(gas_cost)},
        block_times=(tx.block_timestamp,),
        bridge={
            "kind": "erc4337_user_operation",
            "user_op_hash": "0x" + op_hash.hex(),
            "entry_point": view.entry_point,
            "sender": view.sender,
            "nonce": view.nonce,
            "actual_gas_cost": int(gas_cost),
            "actual_gas_used": int(gas_used),
            "eth_recipient": view.wallet,
        },
    )


__all__ = ["EVENTS_4337", "TOPIC0_4337", "verify_userop_settlement"]
