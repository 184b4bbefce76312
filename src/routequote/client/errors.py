"""The client's exceptions. None of them ever carries a session token: messages, reprs and attributes hold
only what the server answered (which never echoes a token) and what the client found."""

from __future__ import annotations

from typing import Any


class ClientError(Exception):
    """Base class of everything routequote.client raises on purpose."""


class ResponseInvalid(ClientError):
    """The server's answer broke the contract (shape, custody flags, amount chaining, hashes). Never use it."""

    def __init__(self, what: str, problems: list[str]) -> None:
        self.what = what
        self.problems = list(problems)
        shown = "; ".join(self.problems[:8]) + (
            f"; (+{len(self.problems) - 8} more)" if len(self.problems) > 8 else ""
        )
        super().__init__(f"{what} refused: {shown}")


class ActionVerificationFailed(ClientError):
    """A prepared action failed the caller-side verifier (routequote.verify); it is never handed out."""

    def __init__(self, findings: list[Any]) -> None:
        self.findings = list(findings)
        errors = [f for f in self.findings if getattr(f, "severity", "error") == "error"]
        super().__init__(
            "prepared action refused by the verifier: " + "; ".join(f"{f.code}: {f.message}" for f in errors)
        )


class ApprovalRefused(ClientError, ValueError):
    """approval_for was asked for bounds weaker than the quote's (or unusable ones); nothing was sent."""

    def __init__(self, reason_class: str, message: str) -> None:
        self.reason_class = reason_class
        super().__init__(f"{reason_class}: {message}")


class ServerError(ClientError):
    """An error answer of the service (ErrorResponse body)."""

    def __init__(self, status_code: int, body: dict[str, Any]) -> None:
        self.status_code = status_code
        self.body = body
        self.error: str = str(body.get("error", "unknown"))
        self.reason_class: str | None = body.get("reason_class")
        self.message: str = str(body.get("message", ""))
        super().__init__(f"{status_code} {self.error} ({self.reason_class}): {self.message}")


class Rejected(ServerError):
    """The service refused the request (400, 404, 409): `reason_class` names the rule that fired."""


class ReapprovalRequired(Rejected):
    """409 reapproval_required: the approval no longer binds (or a session's re-quote fell below it).

    `reason` is the rule; `funds` (sessions) says where the funds are parked; `quote_from_here` is the intent
    to quote from there. Nothing was built."""

    def __init__(self, status_code: int, body: dict[str, Any]) -> None:
        super().__init__(status_code, body)
        self.reason: str = str(body.get("reason") or body.get("reason_class") or "")
        self.funds: dict[str, Any] | None = body.get("funds")
        self.quote_from_here: dict[str, Any] | None = body.get("quote_from_here")


class RateLimited(ServerError):
    """429: wait `retry_after` seconds (from Retry-After, else the body) before trying again."""

    def __init__(self, status_code: int, body: dict[str, Any], retry_after: int | None) -> None:
        super().__init__(status_code, body)
        self.retry_after = retry_after


class UpstreamUnavailable(ServerError):
    """502/503: a market source, chain RPC, database or capacity is unavailable now; `retry_after` if given."""

    def __init__(self, status_code: int, body: dict[str, Any], retry_after: int | None) -> None:
        super().__init__(status_code, body)
        self.retry_after = retry_after


class ServiceUnreachable(ClientError):
    """The service could not be reached (connection, timeout): nothing is known about the request's effect."""
