"""What every session operation shares: loading by token, idempotent replays, and the one commit.

Phase 3 of every operation is `_finish`: the decided event is applied through the one table
(`core.sessions.machine.TRANSITIONS`), the new state and the answer are written in one store transaction
with optimistic concurrency (`SessionStore.transition`): of two concurrent requests exactly one advances.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import structlog

from routequote.core.routes import ROUTES, Route, Step
from routequote.core.sessions.document import SessionDocument
from routequote.core.sessions.event_log import describe
from routequote.core.sessions.kinds.cctp_mint_evm import install_receive
from routequote.core.sessions.machine import (
    Event,
    IllegalTransition,
    OperationNotAllowed,
    Status,
    check_operation,
    next_status,
    operations_allowed,
)
from routequote.core.sessions.state import Decision, expired, parse_ts, transactions_proven
from routequote.core.sessions.views import render
from routequote.errors import Conflict, NotFound, ReapprovalRequired
from routequote.ports import (
    AttestationReader,
    EvmChainReader,
    EvmStateReader,
    IdempotencyConflict,
    IdempotentAnswer,
    LayerZeroReader,
    SessionEvent,
    SessionRecord,
    SessionStore,
    SolanaChainReader,
    TransactionAlreadyUsed,
)
from routequote.prepare import PrepareService
from routequote.readiness import session_gaps
from routequote.sessions.advance import ActionBuilder
from routequote.sessions.gather import ChainFacts, SessionConfig
from routequote.sessions.inputs import UUID_RE, is_session_token, token_sha256
from routequote.store_errors import log_malformed, store_unavailable, stored

if TYPE_CHECKING:  # the webhooks render events with sessions/event_stream: imported for the type only
    from routequote.webhooks.service import Webhooks

log = structlog.get_logger("routequote.sessions")  # ids, statuses and events only: never a token or a key


def stored_document(record: SessionRecord) -> SessionDocument:
    """A stored session's document; one that does not parse is a fault of the store (503
    session_store_unavailable, store_fault malformed_record), logged once, never a 500."""
    try:
        return SessionDocument.parse(record.state)
    except (ValueError, TypeError, KeyError) as exc:
        log_malformed("session_database:state", record.session_id, exc)
        raise store_unavailable("session_store_unavailable", "session database", "malformed_record") from None


@dataclass(frozen=True)
class SessionAnswer:
    """What a session operation answers: an HTTP-style status and the JSON body."""

    status_code: int
    body: dict[str, Any]


class SessionBase:
    def __init__(
        self,
        prepare: PrepareService,
        store: SessionStore,
        *,
        evm: EvmChainReader | None = None,
        solana: SolanaChainReader | None = None,
        attestations: AttestationReader | None = None,
        layerzero: LayerZeroReader | None = None,
        evm_state: EvmStateReader | None = None,
        config: SessionConfig | None = None,
        on_transition: Callable[[str, str | None, str], None] | None = None,
    ) -> None:
        self.on_transition = on_transition  # (event, from_status, to_status) after each commit (metrics)
        # each committed event, after its commit (the in-process wake-up of open event streams; the streams also
        # poll the store, which other workers and replicas write)
        self.on_event: list[Callable[[SessionEvent], None]] = []
        self.prepare = prepare
        self.service = prepare.service
        self.store = store
        self.config = config or SessionConfig()
        self.facts = ChainFacts(prepare, self.config, evm, solana, attestations, layerzero)
        self.builder = ActionBuilder(prepare, evm_state, self.config.erc4337)
        self.http_client: Any = None  # the readers' shared HTTP client, when the composition root made one
        self.webhooks: Webhooks | None = None  # signed event delivery, where the store can keep subscriptions
        # fixed per process: deployments, pinned pools and the configured RPC URLs and lookups do not change
        self._gaps = self._session_gaps()
        self._reasons = {key: "; ".join(gaps) for key, gaps in self._gaps.items()}

    # the chain ports, settable after construction (tests inject fakes here)

    @property
    def evm(self) -> EvmChainReader | None:
        return self.facts.evm

    @evm.setter
    def evm(self, reader: EvmChainReader | None) -> None:
        self.facts.evm = reader

    @property
    def solana(self) -> SolanaChainReader | None:
        return self.facts.solana

    @solana.setter
    def solana(self, reader: SolanaChainReader | None) -> None:
        self.facts.solana = reader

    @property
    def attestations(self) -> AttestationReader | None:
        return self.facts.attestations

    @attestations.setter
    def attestations(self, reader: AttestationReader | None) -> None:
        self.facts.attestations = reader

    # ---- readiness --------------------------------------------------------------------------------------

    def step_reason(self, step: Step) -> str | None:
        """Why this build cannot carry a session through `step` (None when it can)."""
        return self.prepare.step_unsupported_reason(step)

    def session_reasons(self) -> dict[str, str]:
        """Route key -> why a session cannot be carried to complete here (every missing piece, `; `-joined)."""
        return dict(self._reasons)

    def session_gaps(self) -> dict[str, list[str]]:
        """Route key -> each missing piece: a step this build cannot build, then what observation lacks."""
        return {key: list(gaps) for key, gaps in self._gaps.items()}

    def _session_gaps(self) -> dict[str, list[str]]:
        return session_gaps(self.step_reason, self.config.observation)

    def refresh_readiness(self) -> None:
        """Recompute the gaps after what observation has changed (the OFT pin found on chain: `oft_pin`)."""
        self._gaps = self._session_gaps()
        self._reasons = {key: "; ".join(gaps) for key, gaps in self._gaps.items()}

    # ---- loading and replays ----------------------------------------------------------------------------

    async def authorized(self, session_id: Any, token: str | None) -> SessionRecord:
        """The session this token holds (404 session_not_found otherwise), for the other session surfaces."""
        return await self._load(session_id, token)

    async def _load(self, session_id: Any, token: str | None) -> SessionRecord:
        missing = NotFound("session_not_found", "no session with this id for this token")
        if not isinstance(session_id, str) or not UUID_RE.fullmatch(session_id) or not token:
            raise missing
        if not is_session_token(token):
            raise missing
        record: SessionRecord | None = await stored(self.store.get(session_id))
        if record is None or not hmac.compare_digest(record.token_sha256, token_sha256(token)):
            raise missing
        return record

    async def _replayed(self, record: SessionRecord, key: str, request_sha: str) -> SessionAnswer | None:
        """The stored answer when this session already took `key` (or 409 for another body), else None."""
        prior = await stored(self.store.idempotent(f"session:{record.session_id}", key))
        return None if prior is None else self._replay(prior, request_sha, ROUTES[record.route])

    @staticmethod
    def _replay(prior: IdempotentAnswer, request_sha: str, route: Route | None) -> SessionAnswer:
        if prior.request_sha256 != request_sha:
            raise Conflict(
                "idempotency_key_reused_with_different_request",
                "this idempotency_key was used with a different request; nothing was changed",
            )
        code = int(prior.response.get("http_status", 200))
        body = prior.response.get("body") or {}
        if code == 409:
            details = {k: v for k, v in body.items() if k not in ("error", "reason_class", "message")}
            raise ReapprovalRequired(
                body.get("reason_class", "reapproval_required"),
                body.get("message", ""),
                details={**details, "idempotent_replay": True},
            )
        return SessionAnswer(code, {**body, "idempotent_replay": True})

    async def _create_replay(
        self, prior: IdempotentAnswer, request_sha: str, route: Route | None
    ) -> SessionAnswer:
        """A create replayed: 201 with the session it made, as it is now (another body under the key: 409)."""
        session_id = prior.response.get("session_id")
        if prior.request_sha256 != request_sha or not isinstance(session_id, str):
            return self._replay(prior, request_sha, route)
        record: SessionRecord | None = await stored(self.store.get(session_id))
        if record is None:  # pragma: no cover - a session is never deleted while its create record exists
            raise NotFound("session_not_found", "no session with this id for this token")
        record = await self._expire_if_due(record)
        return SessionAnswer(201, {**self._view(record, "session"), "idempotent_replay": True})

    async def _insert_new(
        self,
        state: SessionDocument,
        owner_sha: str,
        event: Event,
        now: datetime,
        scope: str,
        key: str,
        request_sha: str,
        route: Route | None,
    ) -> SessionAnswer:
        """Store a new session with its first event and its create answer; a raced key answers the winner's."""
        session_id = state.session_id
        status = next_status(None, event)
        document = state.to_json()
        record = SessionRecord(session_id, owner_sha, 1, status.value, state.route, now, now, document)
        response = self._view(record, "session")
        first = SessionEvent(
            session_id, 1, None, event.value, status.value, now, *describe(None, document, status.value)
        )
        # the create's idempotency record names the session it made: a replay answers that session as it is
        # then (not a second copy of the whole first document)
        raced = await stored(
            self.store.create(
                record,
                first,
                scope,
                key,
                request_sha,
                {"http_status": 201, "session_id": session_id},
            )
        )
        if raced is not None:
            return await self._create_replay(raced, request_sha, route)
        log.info(
            "session_created",
            session_id=session_id,
            route=state.route,
            status=status.value,
            mode=state.mode,
        )
        if self.on_transition is not None:
            self.on_transition(event.value, None, status.value)
        self._announce(first)
        return SessionAnswer(201, response)

    def _announce(self, event: SessionEvent) -> None:
        for listener in self.on_event:
            listener(event)

    # ---- status rules -----------------------------------------------------------------------------------

    async def _expire_if_due(self, record: SessionRecord) -> SessionRecord:
        """An unsubmitted action whose bundle expired becomes `action_expired` (refresh it)."""
        action = record.state.get("current_action")  # read before parsing: most reads change nothing
        if record.status != Status.ACTION_READY or not action:
            return record
        if self.service.clock.now() < parse_ts(action["expires_at"]):
            return record
        committed = await self._commit(record, Event.EXPIRE, expired(self._document(record)))
        if committed is None:  # another request moved it first: read what it wrote
            fresh = await stored(self.store.get(record.session_id))
            return fresh if fresh is not None else record
        return committed

    def _check_operation(self, record: SessionRecord, operation: str) -> None:
        try:
            check_operation(Status(record.status), operation)
        except OperationNotAllowed as exc:
            raise Conflict(
                "operation_not_allowed_in_status",
                str(exc),
                details={
                    "session_status": record.status,
                    "operations_allowed": operations_allowed(Status(record.status)),
                },
            ) from None

    # ---- phase 3: the next action, then one commit ------------------------------------------------------

    async def _advance(self, record: SessionRecord, route: Route, decision: Decision) -> Decision:
        """Fulfil what the decision still asks for: the next step's action (re-quoted from the verified
        output) or the CCTP receiveMessage; the result is what gets committed."""
        if decision.next_action is not None:
            return await self.builder.next_step(
                record.session_id, decision.state, route, decision.next_action
            )
        if decision.receive_action:
            bundle = await self.builder.receive_any(decision.state, route, self.facts.solana)
            return Decision(
                decision.event, install_receive(decision.state, route, bundle), note=decision.note
            )
        return decision

    async def _commit(
        self,
        record: SessionRecord,
        event: Event,
        state: SessionDocument,
        idempotency: tuple[str, str, str, dict[str, Any]] | None = None,
        claims: tuple[tuple[str, int], ...] = (),
    ) -> SessionRecord | None:
        """One transition, or None when another request moved the session first (nothing written)."""
        try:
            status = next_status(Status(record.status), event)
        except IllegalTransition as exc:
            raise Conflict(
                "illegal_transition", str(exc), details={"session_status": record.status}
            ) from None
        now = self.service.clock.now()
        version = record.version + 1
        document = state.to_json()  # the store boundary: the typed document is stored in its JSON shape
        # the event log's entry, written in the same transaction: where the session is after this change
        entry = SessionEvent(
            record.session_id,
            version,
            record.status,
            event.value,
            status.value,
            now,
            *describe(record.state, document, status.value),
        )
        ok = await stored(
            self.store.transition(
                record.session_id, record.version, status.value, document, entry, idempotency, claims
            )
        )
        if not ok:
            log.info(
                "session_transition_lost_race",
                session_id=record.session_id,
                session_event=event.value,
                expected_version=record.version,
            )
            return None
        log.info(
            "session_transition",
            session_id=record.session_id,
            route=record.route,
            from_status=record.status,
            session_event=event.value,
            to_status=status.value,
            version=version,
        )
        if self.on_transition is not None:
            self.on_transition(event.value, record.status, status.value)
        self._announce(entry)
        return SessionRecord(
            record.session_id,
            record.token_sha256,
            version,
            status.value,
            record.route,
            record.created_at,
            now,
            document,
        )

    async def _finish(
        self, record: SessionRecord, outcome: Decision, key: str, request_sha: str
    ) -> SessionAnswer:
        scope = f"session:{record.session_id}"
        status = next_status(Status(record.status), outcome.event)
        provisional = SessionRecord(
            record.session_id,
            record.token_sha256,
            record.version + 1,
            status.value,
            record.route,
            record.created_at,
            self.service.clock.now(),
            outcome.state.to_json(),
        )
        answer: dict[str, Any]
        if outcome.error is not None:
            answer = {"http_status": 409, "body": outcome.error.body()}
        else:
            answer = {"http_status": 200, "body": self._view(provisional, "session", note=outcome.note)}
        claims = transactions_proven(self._document(record), outcome.state)
        try:
            committed = await self._commit(
                record, outcome.event, outcome.state, (scope, key, request_sha, answer), claims
            )
        except TransactionAlreadyUsed:
            raise Conflict(
                "transaction_already_advanced_a_step",
                "a named transaction already advanced a step of a session: one transaction advances one step; "
                "nothing was changed",
                details={"session_status": record.status},
            ) from None
        except IdempotencyConflict:
            raise Conflict(
                "idempotency_key_reused_with_different_request",
                "this idempotency_key was already used on this session",
            ) from None
        if committed is None:
            raise Conflict(
                "session_changed_concurrently",
                "another request changed this session first; nothing was applied: read it and retry",
                retry_after_seconds=0,
            )
        if outcome.error is not None:
            raise outcome.error
        return SessionAnswer(200, answer["body"])

    @staticmethod
    def _document(record: SessionRecord) -> SessionDocument:
        """The store boundary: the stored JSON parsed into the typed document (its version checked)."""
        return stored_document(record)

    @staticmethod
    def _view(record: SessionRecord, view: str, note: str | None = None) -> dict[str, Any]:
        return render(
            view,
            session_id=record.session_id,
            status=record.status,
            version=record.version,
            route=record.route,
            updated_at=record.updated_at,
            document=stored_document(record),
            note=note,
        )
