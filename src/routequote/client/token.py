"""The session capability token: caller generated, never logged, never shown in a repr or an exception."""

from __future__ import annotations

import base64
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from routequote.core.field_rules import session_token_problem


class SessionToken:
    """32 random bytes, base64url without padding (43 characters). `reveal()` is the only way to the value."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        problem = session_token_problem(value)
        if problem is not None:
            raise ValueError(problem)  # the rule's message never repeats the value
        self._value = value

    @classmethod
    def generate(cls) -> SessionToken:
        return cls(base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode())

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "SessionToken(<hidden>)"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SessionToken) and secrets.compare_digest(self._value, other._value)

    def __hash__(self) -> int:
        return hash(("SessionToken", self._value))

    def __reduce__(self) -> None:  # type: ignore[override]
        raise TypeError("a SessionToken is not picklable; store it yourself with reveal()")

    # -- files ----------------------------------------------------------------------------------------
    @classmethod
    def load_or_create(cls, path: Path) -> tuple[SessionToken, bool]:
        """Read the token in `path`, or create the file (mode 0600, exclusive) with a fresh one.

        Returns (token, created)."""
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            return cls(path.read_text().strip()), False
        token = cls.generate()
        with os.fdopen(fd, "w") as f:
            f.write(token.reveal() + "\n")
        return token, True


@dataclass(frozen=True)
class SessionHandle:
    """What the caller keeps to drive a session: its id, its token and the caller-held verification context
    (intent, wallets, approval_v3, direct_route_summary, event signer) every later action is checked against."""

    session_id: str
    token: SessionToken = field(repr=False)
    context: dict[str, object] = field(repr=False, compare=False)
