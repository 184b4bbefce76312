"""One error tree for the whole service. No HTTP here: each surface maps these to its own channel.

RouteQuoteError
├── InvalidRequest          the caller sent something the contract forbids (REST 400)
├── ReapprovalRequired      an approval no longer binds the quote (REST 409)
├── NotFound                an addressed record does not exist for this caller (REST 404)
├── Conflict                the request cannot apply to the record's current state (REST 409)
├── RateLimited             too many requests from one client (REST 429)
└── UpstreamError
    ├── UpstreamUnavailable a market source needed by this request is failing (REST 502)
    ├── CapacityBusy        too much work in flight; try again shortly (REST 503)
    └── DependencyUnavailable  a database, chain RPC or attestation service cannot be read now (REST 503)
"""

from __future__ import annotations

from typing import Any


class RouteQuoteError(Exception):
    """Base class. `error` is a stable snake_case code, `reason_class` names the rule that fired."""

    error = "request_rejected"

    def __init__(
        self,
        reason_class: str,
        message: str = "",
        *,
        retry_after_seconds: int | None = None,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message or reason_class)
        self.reason_class = reason_class
        self.message = message or reason_class.replace("_", " ")
        self.retry_after_seconds = retry_after_seconds
        self.details = details or {}
        self.headers = headers or {}  # transport hints (e.g. RateLimit-*), never part of the body

    def body(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "error": self.error,
            "reason_class": self.reason_class,
            "message": self.message,
        }
        if self.retry_after_seconds is not None:
            out["retry_after_seconds"] = max(0, min(3600, int(self.retry_after_seconds)))
        out.update(self.details)
        return out


class InvalidRequest(RouteQuoteError):
    error = "invalid_request"


class ReapprovalRequired(RouteQuoteError):
    error = "reapproval_required"


class NotFound(RouteQuoteError):
    error = "not_found"


class Conflict(RouteQuoteError):
    error = "conflict"


class RateLimited(RouteQuoteError):
    error = "rate_limited"


class UpstreamError(RouteQuoteError):
    error = "upstream_unavailable"


class UpstreamUnavailable(UpstreamError):
    error = "route_provider_temporarily_unavailable"


class CapacityBusy(UpstreamError):
    error = "provider_capacity_busy"


class DependencyUnavailable(UpstreamError):
    error = "dependency_unavailable"
