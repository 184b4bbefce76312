"""The safety receipt checked against the payloads it describes: what an agent reads must be what it signs.
Part of the bundle checks (bundle.py), run after the amounts, timing and fee recipient are known."""

from __future__ import annotations

from typing import Any

from routequote.core.actions.bundle import (
    BUNDLE_VERSION,
    EVM_ACTION_VERSION,
    FEE_FORMULA,
    RECEIPT_SCHEMA,
    SOLANA_ACTION_VERSION,
)
from routequote.core.actions.evm import EvmDeployment
from routequote.core.assets import Chain, ChainFamily
from routequote.core.routes import Step
from routequote.core.verify.common import Checker, same_address, strict_eq


def check_receipt(
    c: Checker,
    bundle: dict[str, Any],
    action: dict[str, Any],
    receipt: dict[str, Any],
    step: Step,
    input_base: int,
    fee: int,
    net: int,
    min_out: int,
    deadline: int,
    family: ChainFamily,
    deps: dict[Chain, EvmDeployment],
) -> None:
    """The receipt is what an agent reads: every safety statement in it must match the payloads."""
    _check_receipt_identity(c, bundle, action, receipt, step, family, deps)
    _check_receipt_statements(
        c, bundle, action, receipt, step, input_base, fee, net, min_out, deadline, family, deps
    )


def _check_receipt_identity(
    c: Checker,
    bundle: dict[str, Any],
    action: dict[str, Any],
    receipt: dict[str, Any],
    step: Step,
    family: ChainFamily,
    deps: dict[Chain, EvmDeployment],
) -> None:
    """The bundle, action and receipt versions, and the chains the action and the receipt name."""
    is_evm = family is ChainFamily.EVM
    c.expect(bundle.get("version") == BUNDLE_VERSION, "bundle_version_unsupported", "unknown bundle version")
    want_action_version = EVM_ACTION_VERSION if is_evm else SOLANA_ACTION_VERSION
    c.expect(
        action.get("version") == want_action_version and action.get("family") == family.value,
        "action_version_unsupported",
        "unknown unsigned action version or family",
    )
    want_chain_id: Any = deps[step.source.chain].chain_id if is_evm else "mainnet-beta"
    c.expect(
        strict_eq(action.get("chainId"), want_chain_id),
        "chain_id_mismatch",
        "unsigned_action.chainId differs",
    )
    c.expect(
        receipt.get("schema") == RECEIPT_SCHEMA and strict_eq(receipt.get("schema_version"), 1),
        "receipt_schema_unsupported",
        "unknown safety receipt schema",
    )
    net_block = receipt.get("network", {})
    c.expect(
        net_block.get("source_chain") == step.source.chain.value
        and net_block.get("destination_chain") == step.target.chain.value
        and strict_eq(net_block.get("source_chain_id"), want_chain_id),
        "receipt_network_mismatch",
        "the receipt names other chains",
    )


def _check_receipt_statements(
    c: Checker,
    bundle: dict[str, Any],
    action: dict[str, Any],
    receipt: dict[str, Any],
    step: Step,
    input_base: int,
    fee: int,
    net: int,
    min_out: int,
    deadline: int,
    family: ChainFamily,
    deps: dict[Chain, EvmDeployment],
) -> None:
    """Spend, native value cap, approval, service fee, receive bound and timing: each as the payloads say."""
    _check_receipt_spend(c, action, receipt, step, input_base, net, family, deps)
    _check_receipt_terms(c, bundle, action, receipt, step, input_base, fee, net, min_out, deadline)


def _check_receipt_spend(
    c: Checker,
    action: dict[str, Any],
    receipt: dict[str, Any],
    step: Step,
    input_base: int,
    net: int,
    family: ChainFamily,
    deps: dict[Chain, EvmDeployment],
) -> None:
    """What leaves your wallet: the spend, the native value of each transaction and the approval (exactly the
    net amount to the pinned contract, on an EVM token input; none otherwise)."""
    is_evm = family is ChainFamily.EVM
    spend = receipt.get("spend", {})
    c.expect(
        spend.get("exact_amount_base") == str(input_base) == spend.get("maximum_amount_base"),
        "receipt_spend_mismatch",
        "the receipt's spend differs from inputAmount",
    )
    txs = action.get("transactions") or []
    values = [str(tx.get("value")) for tx in txs]
    cap = receipt.get("native_value_cap", {})
    c.expect(
        cap.get("per_transaction_base") == values
        and cap.get("maximum_base") == str(max((int(v) for v in values), default=0)),
        "receipt_native_value_mismatch",
        "the receipt's native value cap differs from the transactions",
    )
    approval = receipt.get("approval", {})
    if is_evm and not step.source.is_native:
        dep = deps[step.source.chain]
        idx = next((i for i, tx in enumerate(txs) if str(tx.get("data", ""))[:10] == "0x095ea7b3"), None)
        c.expect(
            approval.get("required") is True
            and same_address(approval.get("token"), dep.token(step.source))
            and same_address(approval.get("target"), dep.contract(step.provider))
            and approval.get("exact_allowance_base") == str(net)
            and strict_eq(approval.get("transaction_index"), idx),
            "receipt_approval_mismatch",
            "the receipt's approval statement differs from the approve call",
        )
    else:
        c.expect(approval.get("required") is False, "receipt_approval_mismatch", "no approval is due")


def _check_receipt_terms(
    c: Checker,
    bundle: dict[str, Any],
    action: dict[str, Any],
    receipt: dict[str, Any],
    step: Step,
    input_base: int,
    fee: int,
    net: int,
    min_out: int,
    deadline: int,
) -> None:
    """The service fee statement, the receive bound, the timing, and the amounts adding up."""
    fee_block = receipt.get("service_fee", {})
    c.expect(
        fee_block.get("formula") == FEE_FORMULA
        and fee_block.get("bps") == (1 if step.fee_step else 0)
        and fee_block.get("basis", {}).get("amount_base") == str(input_base)
        and fee_block.get("recipient") == action.get("feeRecipient"),
        "receipt_fee_mismatch",
        "the receipt's fee statement differs from the action",
    )
    receive = receipt.get("receive", {})
    c.expect(
        receive.get("minimum_amount_base") == str(min_out) and receive.get("token") == step.target.key,
        "receipt_receive_mismatch",
        "the receipt's receive bound differs from minimumOutput",
    )
    timing = receipt.get("timing", {})
    c.expect(
        strict_eq(timing.get("action_deadline_unix"), deadline)
        and timing.get("bundle_expires_at") == bundle.get("expires_at")
        and timing.get("recent_blockhash") is None,
        "receipt_timing_mismatch",
        "the receipt's timing differs from the action",
    )
    c.expect(
        fee + net == input_base and strict_eq(bundle.get("step_index"), step.index),
        "receipt_internal",
        "inconsistent",
    )
