"""What every SessionStore adapter shares: JSON encoding of session documents and the checks on arguments.

Both adapters store the session `state` and idempotent `response` as JSON text, so a document read back
is always a fresh copy with JSON's types (tuples become lists); Python ints of any size round-trip
(stdlib json writes and reads them exactly; the service still puts base amounts as decimal strings).
NaN / Infinity are refused: PostgreSQL's JSONB has no such values, and the stores must behave alike.

A document is encoded by orjson when what it wrote reads back equal to the document (a session's state, about
12 KB, in 22 us instead of 49); anything else (ints beyond 64 bits, tuples, NaN, which orjson writes as null,
types JSON does not have) takes the stdlib encoder, which writes or refuses it exactly as before.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, TypeVar

import structlog

from routequote.jsontext import json_dumps as json_dumps  # re-exported: the stores read it here
from routequote.jsontext import json_loads as json_loads
from routequote.ports import SessionEvent, SessionRecord, StoreUnavailable
from routequote.store_errors import log_malformed

T = TypeVar("T")
FINISHED = ("complete", "cancelled", "failed")  # a session in these holds no place in its client's cap
log = structlog.get_logger("routequote.storage")


class MalformedDocument(StoreUnavailable):
    """A stored session document that does not parse, or is not a JSON object: a fault of the store (503
    session_store_unavailable, store_fault malformed_record), never a 500."""

    fault = "malformed_record"


def stored_json_loads(text: str | bytes) -> Any:
    """The JSON columns' reader: a document that does not parse is the store's fault, logged once."""
    try:
        return json_loads(text)
    except ValueError as exc:  # JSONDecodeError, and UnicodeDecodeError of bytes
        named = text if isinstance(text, bytes) else text.encode("utf-8", "replace")
        raise malformed_document("document", hashlib.sha256(named).hexdigest(), exc) from None


def malformed_document(what: str, key: str, exc: Exception) -> MalformedDocument:
    """`key` names the record (logged once per record, as a hash)."""
    log_malformed(f"session_database:{what}", key, exc)
    return MalformedDocument(f"a stored session {what} that does not parse")


def json_copy(value: dict[str, Any]) -> dict[str, Any]:
    copied = json_loads(json_dumps(value))
    if not isinstance(copied, dict):  # pragma: no cover - guarded by the type
        raise ValueError("a session document must be a JSON object")
    return copied


def utc(at: datetime) -> datetime:
    """The same instant in UTC; a naive datetime is refused (it names no instant)."""
    if at.tzinfo is None or at.utcoffset() is None:
        raise ValueError("session timestamps must be timezone-aware")
    return at.astimezone(UTC)


def check_create(record: SessionRecord, event: SessionEvent) -> None:
    if event.session_id != record.session_id:
        raise ValueError("the first event must belong to the session it creates")
    if event.seq != record.version:
        raise ValueError("the first event's seq must equal the session's version")
    if event.to_status != record.status:
        raise ValueError("the first event must lead to the session's status")
    utc(record.created_at)
    utc(record.updated_at)
    utc(event.at)


def check_transition(session_id: str, expected_version: int, status: str, event: SessionEvent) -> None:
    if event.session_id != session_id:
        raise ValueError("the event must belong to the session it changes")
    if event.seq != expected_version + 1:
        raise ValueError("the event's seq must equal the version the transition produces")
    if event.to_status != status:
        raise ValueError("the event must lead to the status being committed")
    utc(event.at)


def event_detail(event: SessionEvent) -> dict[str, Any] | None:
    """The event's `detail` column: where the session is after it (None for an event that says nothing more)."""
    if (
        event.step_index is None
        and event.next_operation is None
        and not event.transactions
        and not event.funds
    ):
        return None
    return {
        "step_index": event.step_index,
        "next_operation": event.next_operation,
        "transactions": list(event.transactions),
        "funds": event.funds,
    }


def with_detail(event: SessionEvent, detail: Any) -> SessionEvent:
    """The stored event with its `detail` column read back (an event stored before the column: as it is)."""
    if not isinstance(detail, dict):
        return event
    step = detail.get("step_index")
    operation = detail.get("next_operation")
    funds = detail.get("funds")
    return replace(
        event,
        step_index=step if isinstance(step, int) else None,
        next_operation=operation if isinstance(operation, str) else None,
        transactions=tuple(t for t in detail.get("transactions") or () if isinstance(t, dict)),
        funds=funds if isinstance(funds, dict) else None,
    )


def create_scope(token_sha256: str) -> str:
    return f"create:{token_sha256}"


def session_scope(session_id: str) -> str:
    return f"session:{session_id}"


def record_from_row(row: Any) -> SessionRecord:
    """A `sessions` row as a SessionRecord; a state that is not a JSON object is a malformed document."""
    if not isinstance(row.state, dict):
        raise malformed_document("state", row.session_id, TypeError(type(row.state).__name__))
    return SessionRecord(
        session_id=row.session_id,
        token_sha256=row.token_sha256,
        version=row.version,
        status=row.status,
        route=row.route,
        created_at=row.created_at,
        updated_at=row.updated_at,
        state=row.state,
    )
