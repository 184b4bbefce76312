"""Why a shared store cannot serve, in one word each: the `store_fault` of a 503 and of /readyz.

One classification for every Redis user (the hand-built wire of the quote and idempotency stores, redis-py under
the rate limits and the readiness probe) and for a record that does not parse in any store. A fault names no URL,
host, password or driver text: those stay in the log, and the log has each unreadable record once.

The fault words, their 503 and the once-per-record log are `routequote/store_errors.py` (the service's side,
which the session wing and auth read without importing storage); this module reads a driver's exception.
"""

from __future__ import annotations

from routequote.store_errors import FAULTS


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


class MalformedRecord(ValueError):
    """A stored record that does not parse: a fault of the store (503), never of the caller and never a 500."""
