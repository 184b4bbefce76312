"""How a store's failure reaches a caller: the fault words, their 503, the once-per-record log, and `stored`.

The service's side of the store ports (no driver, no storage module): the session wing, auth and prepare answer a
`StoreUnavailable` through `stored`, and every adapter (storage/) words its 503 with `store_unavailable`. Reading
a driver's exception into one of these faults is `storage/store_faults.py`. A fault names no URL, host, password
or driver text: those stay in the log, and the log has each unreadable record once.
"""

from __future__ import annotations

import collections
import hashlib
from collections.abc import Awaitable
from typing import TypeVar

import structlog

from routequote.errors import DependencyUnavailable
from routequote.ports import StoreUnavailable

T = TypeVar("T")
STORE_RETRY_SECONDS = 2
log = structlog.get_logger("routequote.storage")

FAULTS = {
    "unreachable": "unreachable",
    "timed_out": "not answering in time",
    "credentials_refused": "refusing the configured credentials",
    "database_refused": "refusing the configured database number",
    "protocol_error": "not answering as Redis does",
    "malformed_record": "holding a record that does not parse",
}


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


async def stored(awaitable: Awaitable[T]) -> T:
    """The store's answer; an unavailable database becomes the callers' 503 `session_store_unavailable`.

    The answer says what is unavailable and when to retry, nothing more: the store's account (driver
    class, SQLSTATE) names internals and goes to the log only."""
    try:
        return await awaitable
    except StoreUnavailable as exc:
        fault = getattr(exc, "fault", None)
        if fault is None:  # a malformed document was logged once where it was read
            log.warning("session_store_unavailable", detail=str(exc)[:200])
        raise DependencyUnavailable(
            "session_store_unavailable",
            f"the session database is unavailable; nothing was changed; retry in {STORE_RETRY_SECONDS} s",
            retry_after_seconds=STORE_RETRY_SECONDS,
            details={"store_fault": fault} if fault else None,
        ) from None
