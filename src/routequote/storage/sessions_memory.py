"""In-process SessionStore: the same semantics as the SQL store, for unit tests of the session service.

One asyncio.Lock makes every operation atomic; documents are kept as JSON text, so what is read back
is a copy (a caller mutating it changes nothing stored) with the same types the databases return.
Nothing survives the process: not for production.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from routequote.core.auth import AccessGrant, LoginChallenge
from routequote.ports import (
    IdempotencyConflict,
    IdempotentAnswer,
    SessionEvent,
    SessionRecord,
    TransactionAlreadyUsed,
)
from routequote.storage.sessions_common import (
    check_create,
    check_transition,
    event_detail,
    json_dumps,
    json_loads,
    utc,
    with_detail,
)


def _kept(event: SessionEvent) -> SessionEvent:
    """The event as stored: its instant in UTC, its detail a copy (JSON's types, as the databases return)."""
    detail = event_detail(event)
    kept = replace(event, at=utc(event.at))
    return kept if detail is None else with_detail(kept, json_loads(json_dumps(detail)))


@dataclass(slots=True)
class _Row:
    record: SessionRecord  # state held separately as JSON text
    state_json: str


class MemorySessionStore:
    scope = "memory"

    def __init__(self) -> None:
        self._lock = asyncio.Lock()
        self._sessions: dict[str, _Row] = {}
        self._events: dict[str, list[SessionEvent]] = {}
        self._idempotency: dict[tuple[str, str], tuple[str, str, datetime]] = {}
        self._challenges: dict[str, LoginChallenge] = {}
        self._grants: dict[str, AccessGrant] = {}
        self._claims: dict[str, tuple[str, int]] = {}  # transaction id -> (session id, step index)

    async def start(self) -> None:
        return None

    async def aclose(self) -> None:
        return None

    async def ping(self) -> None:
        return None

    async def create(
        self,
        record: SessionRecord,
        event: SessionEvent,
        idempotency_scope: str,
        idempotency_key: str,
        request_sha256: str,
        response: dict[str, Any],
    ) -> IdempotentAnswer | None:
        check_create(record, event)
        state_json, response_json = json_dumps(record.state), json_dumps(response)
        first = _kept(event)
        async with self._lock:
            stored = self._idempotency.get((idempotency_scope, idempotency_key))
            if stored is not None:
                return IdempotentAnswer(stored[0], json_loads(stored[1]))
            if record.session_id in self._sessions:
                raise ValueError("session_id already exists")
            kept = replace(
                record, created_at=utc(record.created_at), updated_at=utc(record.updated_at), state={}
            )
            self._sessions[record.session_id] = _Row(kept, state_json)
            self._events[record.session_id] = [first]
            self._idempotency[(idempotency_scope, idempotency_key)] = (
                request_sha256,
                response_json,
                utc(event.at),
            )
            return None

    async def get(self, session_id: str) -> SessionRecord | None:
        async with self._lock:
            row = self._sessions.get(session_id)
            if row is None:
                return None
            return replace(row.record, state=json_loads(row.state_json))

    async def transition(
        self,
        session_id: str,
        expected_version: int,
        status: str,
        state: dict[str, Any],
        event: SessionEvent,
        idempotency: tuple[str, str, str, dict[str, Any]] | None = None,
        claims: tuple[tuple[str, int], ...] = (),
    ) -> bool:
        check_transition(session_id, expected_version, status, event)
        state_json = json_dumps(state)
        response_json = json_dumps(idempotency[3]) if idempotency is not None else None
        entry = _kept(event)
        async with self._lock:
            row = self._sessions.get(session_id)
            if row is None or row.record.version != expected_version:
                return False
            if idempotency is not None and (idempotency[0], idempotency[1]) in self._idempotency:
                raise IdempotencyConflict("idempotency key already used in this scope")
            if any(tx_id in self._claims for tx_id, _step in claims) or len({t for t, _ in claims}) < len(
                claims
            ):
                raise TransactionAlreadyUsed("a named transaction already advanced a step")
            at = utc(event.at)
            for tx_id, step in claims:
                self._claims[tx_id] = (session_id, step)
            row.record = replace(row.record, version=expected_version + 1, status=status, updated_at=at)
            row.state_json = state_json
            self._events[session_id].append(entry)
            if idempotency is not None and response_json is not None:
                self._idempotency[(idempotency[0], idempotency[1])] = (idempotency[2], response_json, at)
            return True

    async def idempotent(self, scope: str, key: str) -> IdempotentAnswer | None:
        async with self._lock:
            stored = self._idempotency.get((scope, key))
            return None if stored is None else IdempotentAnswer(stored[0], json_loads(stored[1]))

    async def events(self, session_id: str) -> list[SessionEvent]:
        async with self._lock:
            return list(self._events.get(session_id, ()))

    async def events_after(self, session_id: str, after: int, limit: int) -> list[SessionEvent]:
        async with self._lock:
            return [e for e in self._events.get(session_id, ()) if e.seq > after][: max(limit, 0)]

    async def versions(self, session_ids: list[str]) -> dict[str, int]:
        async with self._lock:
            return {i: self._sessions[i].record.version for i in session_ids if i in self._sessions}

    async def count_by_status(self) -> dict[str, int]:
        async with self._lock:
            counts: dict[str, int] = {}
            for row in self._sessions.values():
                counts[row.record.status] = counts.get(row.record.status, 0) + 1
            return counts

    async def ids_with_status(self, statuses: Collection[str]) -> list[str]:
        """The ids of the sessions in one of `statuses` (the watcher's list of what waits on a chain)."""
        async with self._lock:
            return [sid for sid, row in self._sessions.items() if row.record.status in statuses]

    # ---- v1 wallet login (same semantics as the SQL store) ---------------------------------------------

    async def put_challenge(self, challenge: LoginChallenge) -> None:
        async with self._lock:
            if challenge.challenge_id in self._challenges:
                raise ValueError("challenge_id already exists")
            self._challenges[challenge.challenge_id] = replace(
                challenge,
                issued_at=utc(challenge.issued_at),
                expires_at=utc(challenge.expires_at),
                used_at=None,
            )

    async def get_challenge(self, challenge_id: str) -> LoginChallenge | None:
        async with self._lock:
            return self._challenges.get(challenge_id)

    async def redeem_challenge(self, challenge_id: str, now: datetime, grant: AccessGrant) -> bool:
        now = utc(now)
        async with self._lock:
            c = self._challenges.get(challenge_id)
            if c is None or c.used_at is not None or c.expires_at <= now:
                return False
            self._challenges[challenge_id] = replace(c, used_at=now)
            self._grants[grant.token_sha256] = replace(
                grant, issued_at=utc(grant.issued_at), expires_at=utc(grant.expires_at)
            )
            return True

    async def get_grant(self, token_sha256: str) -> AccessGrant | None:
        async with self._lock:
            return self._grants.get(token_sha256)
