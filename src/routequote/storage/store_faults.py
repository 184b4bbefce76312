"""Why a shared store cannot serve, in one word each: the `store_fault` of a 503 and of /readyz.

One classification for every Redis user (the hand-built wire of the quote and idempotency stores, redis-py under
the rate limits and the readiness probe) and for a record that does not parse in any store. A fault names no URL,
host, password or driver text: those stay in the log, and the log has each unreadable record once.
"""

from __future__ import annotations

import collections
import hashlib

import structlog

from routequote.errors import DependencyUnavailable

log = structlog.get_logger("routequote.storage")

FAULTS = {
    "unreachable": "unreachable",
    "timed_out": "not answering in time",
    "credentials_refused": "refusing the configured credentials",
    "database_refused": "refusing the configured database number",
    "protocol_error": "not answering as Redis does",
    "malformed_record": "holding a record that does not parse",
}


def fault_of(exc: BaseException) -> str:
    """The fault of a Redis failure: from the wire's own class, else read from redis-py's exception."""
    fault = getattr(exc, "fault", None)
    if isinstance(fault, str) and fault in FAULTS:
        return fault
    wrapped = getattr(exc, "storage_error", None)  # limits' StorageError wraps the driver's
    if isinstance(wrapped, BaseException) and wrapped is not exc:
        return fault_of(wrapped)
    from redis import exceptions

    text = str(exc)
    if isinstance(exc, exceptions.AuthenticationError) or text.startswith(("WRONGPASS", "NOAUTH")):
        return "credentials_refused"
    # redis-server: "ERR DB index is out of range"; redis-py's own check: "Invalid Database"
    if "DB index" in text or "Invalid Database" in text:
        return "database_refused"
    if isinstance(exc, TimeoutError | exceptions.TimeoutError):
        return "timed_out"
    if isinstance(exc, exceptions.ResponseError | exceptions.InvalidResponse):
        return "protocol_error"
    return "unreachable"


def store_unavailable(
    reason_class: str, store: str, fault: str, retry_after_seconds: int = 5
) -> DependencyUnavailable:
    """The 503 of a store fault: the store, what is wrong with it, and when to retry."""
    return DependencyUnavailable(
        reason_class,
        f"the {store} is {FAULTS.get(fault, 'unavailable')}; nothing was changed",
        retry_after_seconds=retry_after_seconds,
        details={"store_fault": fault},
    )


class MalformedRecord(ValueError):
    """A stored record that does not parse: a fault of the store (503), never of the caller and never a 500."""


_LOGGED_MAX = 1024
_logged: collections.OrderedDict[str, None] = collections.OrderedDict()


def log_malformed(store: str, key: str, error: BaseException) -> None:
    """One warning per unreadable record (by its store and a hash of its key), however often it is read."""
    digest = hashlib.sha256(f"{store}\0{key}".encode()).hexdigest()[:16]
    if digest in _logged:
        _logged.move_to_end(digest)
        return
    _logged[digest] = None
    if len(_logged) > _LOGGED_MAX:
        _logged.popitem(last=False)
    log.warning("store_record_malformed", store=store, record=digest, error_type=type(error).__name__)
