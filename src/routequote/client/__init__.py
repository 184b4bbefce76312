"""routequote.client: a typed, verifying client for a routequote service (sync and async, httpx).

    from routequote.client import RouteQuoteClient, approval_for

    with RouteQuoteClient("http://127.0.0.1:8080") as rq:
        quote = rq.quote("base:ETH", "base:USDC", 100)          # validated: flags, chaining, hashes
        approval = approval_for(quote, "one_shot", minimum_output_base=quote.minimum_output_base + 10)
        action = rq.prepare(quote, {"base": "0x..."}, approval=approval)   # verified before it is returned

It never signs and never submits. Session tokens are generated with `secrets` and never shown.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from routequote.client.approval import approval_for, new_idempotency_key
    from routequote.client.client import AsyncRouteQuoteClient, RouteQuoteClient
    from routequote.client.describe import describe_action, describe_preflight, describe_quote
    from routequote.client.errors import (
        ActionVerificationFailed,
        ApprovalRefused,
        ClientError,
        RateLimited,
        ReapprovalRequired,
        Rejected,
        ResponseInvalid,
        ServerError,
        ServiceUnreachable,
        UpstreamUnavailable,
    )
    from routequote.client.events import SessionEvent
    from routequote.client.models import (
        Capabilities,
        Funds,
        PreparedAction,
        Quote,
        Session,
        SessionView,
        Status,
    )
    from routequote.client.token import SessionHandle, SessionToken
    from routequote.client.units import format_units, token_amount
    from routequote.client.webhooks import WebhookInvalid, verify_webhook

_WHERE = {
    "approval_for": "approval",
    "new_idempotency_key": "approval",
    "AsyncRouteQuoteClient": "client",
    "RouteQuoteClient": "client",
    "describe_action": "describe",
    "describe_preflight": "describe",
    "describe_quote": "describe",
    "SessionEvent": "events",
    "ActionVerificationFailed": "errors",
    "ApprovalRefused": "errors",
    "ClientError": "errors",
    "RateLimited": "errors",
    "ReapprovalRequired": "errors",
    "Rejected": "errors",
    "ResponseInvalid": "errors",
    "ServerError": "errors",
    "ServiceUnreachable": "errors",
    "UpstreamUnavailable": "errors",
    "Capabilities": "models",
    "Funds": "models",
    "PreparedAction": "models",
    "Quote": "models",
    "Session": "models",
    "SessionView": "models",
    "Status": "models",
    "SessionHandle": "token",
    "SessionToken": "token",
    "format_units": "units",
    "token_amount": "units",
    "WebhookInvalid": "webhooks",
    "verify_webhook": "webhooks",
}
__all__ = [
    "ActionVerificationFailed",
    "ApprovalRefused",
    "AsyncRouteQuoteClient",
    "Capabilities",
    "ClientError",
    "Funds",
    "PreparedAction",
    "Quote",
    "RateLimited",
    "ReapprovalRequired",
    "Rejected",
    "ResponseInvalid",
    "RouteQuoteClient",
    "ServerError",
    "ServiceUnreachable",
    "Session",
    "SessionEvent",
    "SessionHandle",
    "SessionToken",
    "SessionView",
    "Status",
    "UpstreamUnavailable",
    "WebhookInvalid",
    "approval_for",
    "describe_action",
    "describe_preflight",
    "describe_quote",
    "format_units",
    "new_idempotency_key",
    "token_amount",
    "verify_webhook",
]
assert sorted(__all__) == sorted(_WHERE)


def __getattr__(name: str) -> Any:
    """Loaded on first use, so `routequote --help` does not pay for httpx and pydantic."""
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'routequote.client' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"routequote.client.{module}"), name)
    globals()[name] = value
    return value
