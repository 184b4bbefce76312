"""What a careful A2A caller does with DataParts (shared by the A2A tests)."""

from __future__ import annotations

from typing import Any

CAMEL = {
    "from_chain": "fromChain",
    "from_token": "fromToken",
    "to_chain": "toChain",
    "to_token": "toToken",
    "amount_usd": "amountUsd",
}


def narrow(v: Any) -> Any:
    """DataPart numbers are doubles: whole numbers back to int before comparing or hashing."""
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, dict):
        return {k: narrow(x) for k, x in v.items()}
    if isinstance(v, list):
        return [narrow(x) for x in v]
    return v


def new_session_token() -> str:
    """What a careful caller generates locally: 32 CSPRNG bytes, base64url without padding (43 characters)."""
    import base64
    import secrets

    return base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()
