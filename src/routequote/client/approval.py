"""approval_v3 built by the caller from a quote it chose, with its own bounds that may only be stricter."""

from __future__ import annotations

import re
import secrets
from typing import Any

from routequote.client.errors import ApprovalRefused
from routequote.client.models import Quote
from routequote.core.field_rules import idempotency_key_message, is_idempotency_key

MODES = ("one_shot", "session")


def new_idempotency_key(prefix: str = "rq") -> str:
    return f"{prefix}-{secrets.token_hex(12)}"


def _bound(value: int | str | None, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ApprovalRefused("bound_not_integer", f"{name} must be an integer number of base units")
    if isinstance(value, str) and not re.fullmatch(r"[1-9][0-9]*", value):
        raise ApprovalRefused("bound_not_integer", f"{name} must be a positive decimal string of base units")
    n = int(value)
    if n < 1:
        raise ApprovalRefused("bound_not_positive", f"{name} must be at least 1")
    return n


def approval_for(
    quote: Quote | dict[str, Any],
    mode: str,
    *,
    maximum_input_base: int | str | None = None,
    minimum_output_base: int | str | None = None,
    idempotency_key: str | None = None,
) -> dict[str, str]:
    """approval_v3 for `quote` in `mode` ("one_shot" or "session").

    Bounds default to the quote's; a caller's bound may only be stricter: a `maximum_input_base` above the
    quoted maximum or a `minimum_output_base` below the quoted minimum is refused here (ApprovalRefused),
    as is a maximum below the exact input the action must spend. Nothing is sent anywhere."""
    raw = quote.raw if isinstance(quote, Quote) else quote
    cont = raw["continuation_v3"]
    if mode not in MODES:
        raise ApprovalRefused("mode_invalid", f"mode must be one of {', '.join(MODES)}")
    if mode not in cont["allowed_modes"]:
        raise ApprovalRefused(
            "mode_not_allowed", f"{mode} is not allowed for this route (allowed: {cont['allowed_modes']})"
        )
    quoted_max = int(cont["input_base_bounds"]["maximum"])
    exact_input = int(cont["input_base_bounds"]["minimum"])
    quoted_min_out = int(cont["minimum_output_base"])
    max_in = _bound(maximum_input_base, "maximum_input_base")
    min_out = _bound(minimum_output_base, "minimum_output_base")
    if max_in is None:
        max_in = quoted_max
    elif max_in > quoted_max:
        raise ApprovalRefused(
            "maximum_input_weaker_than_quote",
            f"maximum_input_base {max_in} is above the quoted maximum {quoted_max}",
        )
    if max_in < exact_input:
        raise ApprovalRefused(
            "maximum_input_below_exact_input",
            f"the action spends exactly {exact_input}; a maximum of {max_in} can never be met",
        )
    if min_out is None:
        min_out = quoted_min_out
    elif min_out < quoted_min_out:
        raise ApprovalRefused(
            "minimum_output_weaker_than_quote",
            f"minimum_output_base {min_out} is below the quoted minimum {quoted_min_out}",
        )
    key = idempotency_key or new_idempotency_key()
    if not is_idempotency_key(key):
        raise ApprovalRefused("invalid_idempotency_key", idempotency_key_message())
    return {
        "version": cont["approval_v3_version"],
        "quote_id": raw["quote_id"],
        "quote_fingerprint": cont["quote_fingerprint"],
        "selection_status": "selected",
        "selected_mode": mode,
        "maximum_input_base": str(max_in),
        "minimum_output_base": str(min_out),
        "direct_route_summary_sha256": cont["direct_route_summary_sha256"],
        "idempotency_key": key,
    }
