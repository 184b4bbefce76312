"""What every part of the verifier shares: findings, the checker that collects them, strict comparisons,
the bundle's timing and the per-step context handed to the chain checks."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeGuard

from solders.pubkey import Pubkey

from routequote.core.actions.plan import (
    BUNDLE_TTL_SECONDS,
    MAX_DEADLINE_WINDOW_SECONDS,
    ONCHAIN_DEADLINE_SECONDS,
)
from routequote.core.routes import Route, Step

SECRET_WORDS = ("private", "secret", "seed", "mnemonic", "signature", "signed_transaction", "keypair")
CLOCK_SKEW_SECONDS = 60


@dataclass(frozen=True, slots=True)
class Finding:
    code: str
    message: str
    severity: str = "error"  # "error" refuses the bundle; "warning" is reported only

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message, "severity": self.severity}


class BundleRejected(Exception):
    def __init__(self, findings: list[Finding]) -> None:
        super().__init__("; ".join(f"{f.code}: {f.message}" for f in findings if f.severity == "error"))
        self.findings = findings


def iso_to_unix(text: str) -> int:
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp())


class Checker:
    def __init__(self) -> None:
        self.findings: list[Finding] = []

    def fail(self, code: str, message: str) -> None:
        self.findings.append(Finding(code, message))

    def warn(self, code: str, message: str) -> None:
        self.findings.append(Finding(code, message, "warning"))

    def expect(self, ok: bool, code: str, message: str) -> bool:
        if not ok:
            self.fail(code, message)
        return ok


def scan_flags(value: Any, path: str, c: Checker) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            lk = str(k).lower()
            if lk in ("server_signing", "server_submission", "signed", "submitted") and v is not False:
                c.fail("custody_flag_not_false", f"{path}.{k} must be false")
            if any(w in lk for w in SECRET_WORDS):
                c.fail("secret_looking_field", f"{path}.{k} looks like secret material")
            scan_flags(v, f"{path}.{k}", c)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            scan_flags(v, f"{path}[{i}]", c)


def check_timing(c: Checker, bundle: dict[str, Any], action: dict[str, Any], now_unix: int) -> int | None:
    """Bundle lifetime and action deadline against your clock; the deadline, or None when unreadable."""
    try:
        prepared, expires = iso_to_unix(bundle["prepared_at"]), iso_to_unix(bundle["expires_at"])
        deadline = action["deadline"]
        if not is_int(deadline):
            raise TypeError("deadline must be an integer")
    except (KeyError, TypeError, ValueError):
        c.fail("timing_malformed", "prepared_at / expires_at / deadline are required")
        return None
    c.expect(prepared <= now_unix + CLOCK_SKEW_SECONDS, "prepared_in_future", "prepared_at is in the future")
    c.expect(
        expires - prepared <= BUNDLE_TTL_SECONDS, "bundle_ttl_too_long", "the bundle lives longer than 180 s"
    )
    c.expect(now_unix < expires, "bundle_expired", "the bundle has expired; prepare again")
    c.expect(
        deadline <= prepared + ONCHAIN_DEADLINE_SECONDS
        and deadline <= now_unix + MAX_DEADLINE_WINDOW_SECONDS,
        "deadline_too_late",
        f"deadline {deadline} is later than allowed",
    )
    c.expect(deadline > now_unix, "deadline_passed", "the action deadline has passed")
    return int(deadline)


def service_fee_base(input_base: int, fee_step: bool) -> int:
    """The 1 bp service fee the caller owes on a step: floor(input / 10000) on the route's fee step, else 0."""
    return input_base // 10_000 if fee_step else 0


def is_int(x: object) -> TypeGuard[int]:
    return isinstance(x, int) and not isinstance(x, bool)


def strict_eq(a: Any, b: Any) -> bool:
    """Equality without Python's True == 1 and 1 == 1.0 coercions."""
    return type(a) is type(b) and a == b


def same_address(a: Any, b: Any) -> bool:
    if not isinstance(a, str) or not isinstance(b, str):
        return False
    if a.startswith("0x") and b.startswith("0x"):
        return a.lower() == b.lower()
    return a == b


def same_wallets(a: Any, b: Any) -> bool:
    """The same chains, each with the same address (EVM in any case: the service stores the checksummed form)."""
    if not isinstance(a, dict) or not isinstance(b, dict) or set(a) != set(b):
        return False
    return all(a[k] == b[k] or same_address(a[k], b[k]) for k in a)


@dataclass
class StepContext:
    c: Checker
    route: Route
    step: Step
    caller: str
    recipient: str
    input_base: int
    fee: int
    net: int
    min_out: int
    deadline: int
    now: int
    fee_recipient: str | None
    event_signer: str | None


def is_solana_key(text: str) -> bool:
    try:
        return len(bytes(Pubkey.from_string(text))) == 32
    except ValueError:
        return False
