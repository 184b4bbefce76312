"""The session event log's entries: what one committed change says, and its JSON shape (pure, no I/O).

Every commit of a session (create, observe, refresh, prepare, cancel, expiry, and the watcher's advances, which
take the same commit) appends one event in the same store transaction. `describe` derives what the event
carries from the document before and after the change; `event_json` is the one JSON shape the event stream,
webhooks and MCP tasks send:

    {
      "id": "<session_id>:<sequence>",          stable: the same event always has the same id
      "session_id": "<uuid>",
      "sequence": 3,                             per session, from 1, no gaps (the session version)
      "type": "step_verified_bridge_in_flight",  the machine's event (core.sessions.machine.Event)
      "status": "awaiting_destination",          the status after the change
      "previous_status": "awaiting_source_receipt" | null,
      "step_index": 0,                           the current step after the change
      "next_operation": "observe",               what the caller does next
      "transactions": [{"step_index": 0, "side": "source", "chain": "base", "tx_id": "0x..",
                        "verified": true}],      chain evidence this change recorded (named, or verified)
      "funds": {"chain": "arbitrum", "token": "USDC", "amount_base": "123" | null, "owner": "0x.."
                | "bridge:circle_cctp", "wallet": "0x..", "state": "in_flight"} | null,
      "outcome": "complete" | null,              core.sessions.lifecycle: where the session rests, if it does
      "terminal": false,
      "final_on_chain": null | true | false,     of the outcome (Across's `finalized`)
      "at": "2026-11-22T05:00:00.000Z"
    }

`funds.amount_base` is a decimal string of base units, or null while a bridge message is in flight (the amount
that lands is known from chain only at delivery). `owner` is where the caller's value sits now: the wallet
address when it is in the caller's wallet, `bridge:<provider>` while a bridge holds it (in flight, or an Across
deposit awaiting its refund on origin).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from routequote.core.sessions.lifecycle import outcome
from routequote.core.sessions.machine import NEXT_OPERATION, Status

JsonObject = dict[str, Any]
# (side, key of the step entry, nested key or None, verified)
_EVIDENCE = (
    ("source", "claimed_tx_ids", None, False),
    ("source", "source", "tx_ids", True),
    ("destination", "destination_claimed_tx_ids", None, False),
    ("destination", "destination", "tx_ids", True),
)
_IN_WALLET = ("in_wallet", "delivered")


def event_id(session_id: str, sequence: int) -> str:
    return f"{session_id}:{sequence}"


def parse_event_id(session_id: str, value: str) -> int | None:
    """The sequence a `Last-Event-ID` names for this session (an id of this session, or a bare sequence);
    None when it names none (another session's id, or not an id)."""
    text = value.strip()
    prefix = f"{session_id}:"
    if text.startswith(prefix):
        text = text[len(prefix) :]
    if not text.isdigit() or len(text) > 9 or not text.isascii():
        return None
    return int(text)


def _tx_records(steps: list[JsonObject]) -> list[JsonObject]:
    out: list[JsonObject] = []
    for k, entry in enumerate(steps):
        if not isinstance(entry, dict):
            continue
        chains = {
            "source": str(entry.get("from", ":")).split(":")[0],
            "destination": str(entry.get("to", ":")).split(":")[0],
        }
        for side, key, nested, verified in _EVIDENCE:
            value = entry.get(key)
            if nested is not None:
                value = value.get(nested) if isinstance(value, dict) else None
            for tx_id in value or ():
                out.append(
                    {
                        "step_index": k,
                        "side": side,
                        "chain": chains[side],
                        "tx_id": str(tx_id),
                        "verified": verified,
                    }
                )
    return out


def _funds(document: JsonObject) -> JsonObject | None:
    held = document.get("funds")
    if not isinstance(held, dict) or not isinstance(held.get("endpoint"), str):
        return None
    chain, _, token = held["endpoint"].partition(":")
    state = held.get("state")
    wallet = held.get("wallet")
    owner = wallet
    if state not in _IN_WALLET:
        steps = document.get("steps") or []
        k = document.get("current_step", 0)
        step = steps[k] if isinstance(k, int) and 0 <= k < len(steps) else {}
        owner = f"bridge:{step.get('provider', 'unknown')}"
    amount = held.get("amount_base")
    return {
        "chain": chain,
        "token": token,
        "amount_base": None if amount is None else str(amount),
        "owner": owner,
        "wallet": wallet,
        "state": state,
    }


def describe(
    before: JsonObject | None, after: JsonObject, status: str
) -> tuple[int | None, str, tuple[JsonObject, ...], JsonObject | None]:
    """(step_index, next_operation, transactions, funds) of the change from `before` (None at create) to
    `after`, the stored JSON documents: the transactions are the evidence records `after` holds and `before`
    did not (a named transaction that became verified is recorded again, verified)."""
    known = {_key(r) for r in _tx_records(list((before or {}).get("steps") or []))}
    new = tuple(r for r in _tx_records(list(after.get("steps") or [])) if _key(r) not in known)
    step = after.get("current_step")
    return (
        step if isinstance(step, int) else None,
        NEXT_OPERATION[Status(status)].value,
        new,
        _funds(after),
    )


def _key(record: JsonObject) -> tuple[Any, ...]:
    return (record["step_index"], record["side"], record["tx_id"], record["verified"])


def iso_instant(at: datetime) -> str:
    return (
        at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.astimezone(UTC).microsecond // 1000:03d}Z"
    )


def event_json(
    *,
    session_id: str,
    sequence: int,
    type_: str,
    status: str,
    previous_status: str | None,
    step_index: int | None,
    next_operation: str | None,
    transactions: tuple[JsonObject, ...] | list[JsonObject],
    funds: JsonObject | None,
    at: datetime,
) -> JsonObject:
    """The one JSON shape of an event (see the module docstring)."""
    rest = outcome(status, None if funds is None else funds.get("state"))
    return {
        "id": event_id(session_id, sequence),
        "session_id": session_id,
        "sequence": sequence,
        "type": type_,
        "status": status,
        "previous_status": previous_status,
        "step_index": step_index,
        "next_operation": next_operation
        if next_operation is not None
        else NEXT_OPERATION[Status(status)].value,
        "transactions": [dict(t) for t in transactions],
        "funds": None if funds is None else dict(funds),
        "outcome": None if rest is None else rest.name,
        "terminal": rest is not None and rest.terminal,
        "final_on_chain": None if rest is None else rest.final_on_chain,
        "at": iso_instant(at),
    }


def ends_stream(status: str) -> bool:
    """An event stream ends after an event into a resting status: nothing follows without the caller."""
    return outcome(status, None) is not None


__all__ = ["describe", "ends_stream", "event_id", "event_json", "parse_event_id"]
