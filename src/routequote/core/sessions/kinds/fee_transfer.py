"""The 1 bp service fee transfer (native or ERC-20) inside a fee step's action: exactly the prepared amount
to the pinned fee recipient, else the observation is refused. It never advances a step on its own."""

from __future__ import annotations

from typing import Any

from routequote.core.chain import EvmTransaction
from routequote.core.sessions.evidence_common import (
    ObservationRejected,
    base_amount,
    erc20_transfers,
    lower_address,
)


def fee_paid(
    action: dict[str, Any],
    prepared: list[dict[str, Any]],
    kinds: list[str],
    done: list[EvmTransaction],
    sender: str,
) -> int:
    if "service_fee_transfer" not in kinds:
        return 0
    i = kinds.index("service_fee_transfer")
    p, tx = prepared[i], done[i]
    fee_to = str(action.get("feeRecipient"))
    want = base_amount(action.get("routeFee"), "routeFee")
    if (p.get("data") or "0x") == "0x":
        if lower_address(tx.to) != lower_address(fee_to):
            raise ObservationRejected(
                "observation_wrong_recipient", "the service fee went to another address"
            )
        paid = tx.value
    else:
        paid = sum(
            v
            for f, t, v in erc20_transfers(tx, str(p["to"]))
            if lower_address(f) == lower_address(sender) and lower_address(t) == lower_address(fee_to)
        )
    if paid != want:
        raise ObservationRejected(
            "observation_not_prepared_action",
            f"the service fee paid was {paid}, the action prepared {want}",
            tx=tx.tx_hash,
        )
    return paid
