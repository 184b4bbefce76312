"""The development fee-recipient placeholders, and the one rule about them.

Under the embedded defaults the 1 bp service fee goes to a placeholder nobody controls. Every action says
whether its recipient is the operator's own (`fee_recipient_configured`), and a caller's verifier refuses an
action whose fee would go to a placeholder unless the caller explicitly accepts (a test, a local chain).
"""

from __future__ import annotations

from typing import Any

DEV_FEE_RECIPIENT_EVM = "0x00000000000000000000000000000000dEAdfeE1"
DEV_FEE_RECIPIENT_SOLANA = "DevFeeRecipientP1aceho1der11111111111111111"
REFUSAL_CODE = "fee_recipient_not_configured"


def is_placeholder(address: Any) -> bool:
    """True for a development placeholder (EVM compared case-insensitively, base58 exactly)."""
    if not isinstance(address, str):
        return False
    return address.lower() == DEV_FEE_RECIPIENT_EVM.lower() or address == DEV_FEE_RECIPIENT_SOLANA


def recipients_configured(evm: str, solana: str) -> dict[str, bool]:
    return {"evm": not is_placeholder(evm), "solana": not is_placeholder(solana)}


def fee_recipient_refusal(bundle: Any, *, accept_unconfigured: bool) -> tuple[str, str] | None:
    """(code, message) when `bundle` is not to be signed because of its fee recipient, else None.

    Refused when the bundle itself says `fee_recipient_configured: false`, or when its receipt names a known
    placeholder as the fee recipient (a verifier does not take the server's word for it), unless the caller
    explicitly accepts an unconfigured recipient."""
    if accept_unconfigured or not isinstance(bundle, dict):
        return None
    action = bundle.get("unsigned_action")
    receipt = action.get("safety_receipt") if isinstance(action, dict) else None
    fee = receipt.get("service_fee") if isinstance(receipt, dict) else None
    recipient = fee.get("recipient") if isinstance(fee, dict) else None
    if bundle.get("fee_recipient_configured") is False or is_placeholder(recipient):
        return (
            REFUSAL_CODE,
            "the service fee recipient is a development placeholder, not the operator's own address: the fee "
            "would go nowhere. Refused; accept it explicitly only for tests "
            "(--accept-unconfigured-fee-recipient / accept_unconfigured_fee_recipient=True)",
        )
    return None
