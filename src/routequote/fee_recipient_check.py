"""The fee-recipient refusal as verifier findings, for every place that hands an action to a wallet: the
`verify-action` CLI, the Python client and A2A's handoff. (`routequote.verify.verify_bundle` should call it
too once the verifier's module settles; until then each caller adds these findings to its own.)"""

from __future__ import annotations

from typing import Any

from routequote.core.fee_recipient import fee_recipient_refusal


def fee_recipient_findings(bundle: Any, *, accept_unconfigured: bool = False) -> list[dict[str, str]]:
    """[] or one error finding `{code, message, severity}` (the shape of `Finding.as_dict()`)."""
    refusal = fee_recipient_refusal(bundle, accept_unconfigured=accept_unconfigured)
    if refusal is None:
        return []
    return [{"code": refusal[0], "message": refusal[1], "severity": "error"}]


A2A_ACCEPT_FIELD = "acceptUnconfiguredFeeRecipient"


def a2a_accepts_unconfigured(data: dict[str, Any]) -> bool:
    """The A2A caller's explicit acceptance (a boolean field of its DataPart; absent means no)."""
    from routequote.errors import InvalidRequest

    value = data.get(A2A_ACCEPT_FIELD, False)
    if not isinstance(value, bool):
        raise InvalidRequest("wrong_type", f"{A2A_ACCEPT_FIELD} must be a boolean")
    return value
