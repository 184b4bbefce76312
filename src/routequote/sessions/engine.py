"""SessionService: carry an approved quote through every step of its route, one verified step at a time.

The one entry for REST `/v2/session…`, the A2A `session-lifecycle` skill, the MCP session tools and v1
(`v1.V1CorridorMode`). It never signs and never submits. An observation runs in three phases:

1. gather the chain facts a step kind names through the ports (`gather.ChainFacts.observe`: EVM / Solana
   readers, Circle Iris, LayerZero Scan);
2. decide purely in the core (`core.sessions.kinds`, one module per step kind, chosen by `kinds.select`):
   (state, facts) -> (event, new state, next action request); only verified actual output advances a session;
3. fulfil the next action request (`advance.ActionBuilder`: re-quote fresh from the verified output, hold it
   to the approved step minimums and `approval_v3.minimum_output_base`, else 409 `reapproval_required`
   before anything is built) and commit once (`base.SessionBase._finish`).

Capability token: caller-generated, >= 256 bits, base64url, header only; only its SHA-256 is stored and
compared in constant time; a wrong or missing token is 404 `session_not_found` (no existence oracle).
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from routequote.core.actions.approval import check_approval
from routequote.core.hashing import canonical_sha256
from routequote.core.providers import PROVIDERS
from routequote.core.routes import ROUTES, Route, Step
from routequote.core.sessions import kinds
from routequote.core.sessions.kinds.cctp_mint_evm import install_receive
from routequote.core.sessions.machine import Event, Status, next_status
from routequote.core.sessions.reads import Observing
from routequote.core.sessions.state import (
    MODE_V1,
    MODE_V2,
    SESSION_BINDING_VERSION,
    Decision,
    NextAction,
    cancelled,
    new_state,
    parse_ts,
    session_id_for,
    transactions_proven,
)
from routequote.core.sessions.views import VIEWS
from routequote.core.webhook_rules import WebhookUrl
from routequote.errors import Conflict, DependencyUnavailable, InvalidRequest, RouteQuoteError
from routequote.ports import ObservationUnavailable, SessionRecord, TransactionAlreadyUsed
from routequote.sessions.base import SessionAnswer, log
from routequote.sessions.inputs import (
    body_object,
    creation_token,
    idempotency_key,
    key_only_body,
    observe_body,
    operation_sha256,
)
from routequote.sessions.v1 import V1CorridorMode
from routequote.sessions.watch import Watching
from routequote.store_errors import stored


class SessionService(V1CorridorMode):
    # what this instance follows without a call (sessions/watch.py): each session view says so in `watch`
    watching: Watching | None = None

    def _with_watch(self, body: dict[str, Any]) -> dict[str, Any]:
        """The `watch` block of a session view, computed per answer (never stored): whether the service follows
        this session on its chain by itself, and why not when it does not."""
        if body.get("view") != "session" or self.watching is None:  # None: a service built without the app
            return body
        return {**body, "watch": self.watching.block(body)}

    # ---- create -----------------------------------------------------------------------------------------

    async def create(self, body: Any, token: str | None) -> SessionAnswer:
        sha = creation_token(token)
        body = body_object(body)
        key = idempotency_key(body)
        parsed = self.prepare.parse_request(
            {k: v for k, v in body.items() if k not in ("idempotency_key", "webhook")}
        )
        intent, route, wallets, approval = parsed.intent, parsed.route, parsed.wallets, parsed.approval
        signer = parsed.event_signer_public
        hook = await self._webhook_request(body)
        if approval is None:
            raise InvalidRequest(
                "approval_v3_required",
                "a session binds an approval_v3 with selected_mode session; none was sent",
            )
        if approval["selected_mode"] != "session":
            raise InvalidRequest(
                "approval_v3_mode_not_session", "POST /v2/session takes approval_v3.selected_mode session"
            )
        if approval["idempotency_key"] != key:
            raise InvalidRequest(
                "idempotency_key_mismatch", "idempotency_key must equal approval_v3.idempotency_key"
            )
        request_sha = canonical_sha256(body)
        scope = f"create:{sha}"
        try:
            answer = await self._create(
                route, intent, wallets, signer, approval, sha, scope, key, request_sha
            )
        except RouteQuoteError:
            # a replay is answered from its record even when the quote has expired since; the record is only
            # looked for here, because the store's insert already returns it on the normal path (one round trip)
            prior = await stored(self.store.idempotent(scope, key))
            if prior is not None:
                replay = await self._create_replay(prior, request_sha, route)
                return await self._with_preflight(await self._with_webhook(replay, hook), wallets)
            raise
        return await self._with_preflight(await self._with_webhook(answer, hook), wallets)

    async def _webhook_request(self, body: dict[str, Any]) -> WebhookUrl | None:
        """The create body's `webhook`, checked before anything is created (400 webhook_*)."""
        if "webhook" not in body:
            return None
        if self.webhooks is None:
            raise InvalidRequest(
                "webhooks_unavailable", "this instance's session store cannot deliver webhooks; omit webhook"
            )
        return await self.webhooks.check(body["webhook"])

    async def _with_webhook(self, answer: SessionAnswer, hook: WebhookUrl | None) -> SessionAnswer:
        """Subscribe the session (idempotent: a replayed create subscribes once) and hand over its signing
        secret. The secret is added to the answer, never to the stored idempotent answer."""
        session_id = answer.body.get("session_id")
        if (
            hook is None
            or self.webhooks is None
            or answer.status_code >= 300
            or not isinstance(session_id, str)
        ):
            return answer
        block = await self.webhooks.subscribe(session_id, hook)
        return SessionAnswer(answer.status_code, {**answer.body, "webhook": block})

    async def _with_preflight(self, answer: SessionAnswer, wallets: dict[str, str]) -> SessionAnswer:
        """The answer with the `preflight` of its current action (advice computed per answer from chain reads,
        never stored with the session nor part of the action); an answer without an action has none."""
        action = answer.body.get("current_action") or answer.body.get("next_action")
        route = ROUTES.get(str(answer.body.get("route")))
        answer = SessionAnswer(answer.status_code, self._with_watch(answer.body))
        if not isinstance(action, dict) or route is None:
            return answer
        preflight = await self.prepare.preflight.check(route, wallets, action, self.service.clock.now())
        return SessionAnswer(answer.status_code, {**answer.body, "preflight": preflight})

    async def _create(
        self,
        route: Route,
        intent: Any,
        wallets: dict[str, str],
        signer: str | None,
        approval: dict[str, Any],
        sha: str,
        scope: str,
        key: str,
        request_sha: str,
    ) -> SessionAnswer:
        reasons = self._reasons
        if route.key in reasons:  # nothing is created: no action is handed out for a route that cannot finish
            raise InvalidRequest(
                "route_not_session_ready",
                f"a session cannot carry {route.key} to complete on this instance: {reasons[route.key]}",
                details={
                    "route": route.key,
                    "unavailable_reason": reasons[route.key],
                    "missing": list(self._gaps[route.key]),
                },
            )
        clock = self.service.clock
        issued = await self.service.issued_quote(approval["quote_id"])
        check_approval(
            approval, issued.payload if issued else None, route, intent.as_request(), now=clock.now()
        )
        assert issued is not None
        quote = issued.payload
        pool_tick, raydium_live = await self.prepare.solana_pool_tick(route)
        session_id = session_id_for(approval["quote_id"])  # one approved quote, one session
        binding = self._binding(quote, approval, session_id)
        ps0 = issued.body.pricing.steps[0]
        min0 = ps0.minimum_output_base
        if len(route.steps) == 1:
            min0 = max(min0, int(approval["minimum_output_base"]))
        bundle = self.prepare.build_step(
            route,
            ps0,
            minimum_output_base=min0,
            wallets=wallets,
            signer=signer,
            pool_fee_pips=self._pool_fee(ps0.step, quote),
            pool_tick=pool_tick,
            raydium_live=raydium_live,
            binding=binding,
            summary_steps=quote["direct_route_summary"]["steps"],
            workflow_id=session_id,
            quote_expiry_unix=int(parse_ts(quote["expires_at"]).timestamp()),
            market=quote["market"],
        )
        now = clock.now()
        state = new_state(
            MODE_V2,
            route,
            intent.as_request(),
            wallets,
            signer,
            dict(approval),
            binding,
            quote,
            bundle,
            now,
            "spent only when the current action is signed and submitted",
        )
        try:
            return await self._insert_new(state, sha, Event.CREATE, now, scope, key, request_sha, route)
        except ValueError:  # the store already holds this quote's session (another token or another key)
            raise Conflict(
                "session_exists_for_approval",
                "a session already exists for this approval; no second session is opened: continue the "
                "existing one with the token that created it, or quote again",
            ) from None

    def _binding(self, quote: dict[str, Any], approval: dict[str, Any], session_id: str) -> dict[str, Any]:
        return {
            **self.prepare.quote_binding(quote, approval),
            "session_version": SESSION_BINDING_VERSION,
            "session_id": session_id,
            "future_actions_requote_and_enforce_original_step_minimums": True,
            "only_verified_actual_output_advances": True,
        }

    @staticmethod
    def _pool_fee(step: Step, quote: dict[str, Any]) -> int | None:
        """The pool fee tier the quote priced the step on (None for a venue whose action names none)."""
        if not PROVIDERS[step.provider].pool_fee_tier:
            return None
        for f in quote["cost_summary"]["provider_fee_components"]:
            if f["step_index"] == step.index and "fee_pips" in f:
                return int(f["fee_pips"])
        return None

    # ---- read -------------------------------------------------------------------------------------------

    async def read(self, session_id: Any, token: str | None, view: Any = "session") -> dict[str, Any]:
        view = "session" if view is None else view  # an empty view= is not a view
        if view not in VIEWS:
            raise InvalidRequest("invalid_view", f"view must be one of {', '.join(VIEWS)}")
        record = await self._load(session_id, token)
        record = await self._expire_if_due(record)
        body = self._view(record, view)
        if view in ("session", "next_action"):
            # the views that show the action to sign carry its preflight, as every answer with an action does
            wallets = dict(self._document(record).wallets)
            body = (await self._with_preflight(SessionAnswer(200, body), wallets)).body
        else:
            body = self._with_watch(body)
        if view == "session" and self.webhooks is not None:
            delivery = await self.webhooks.status(record.session_id)
            if delivery is not None:  # how far the session's webhook has got (never its URL)
                body = {**body, "webhook": delivery}
        return body

    # ---- observe: gather, decide, commit ----------------------------------------------------------------

    async def observe(self, session_id: Any, token: str | None, body: Any) -> SessionAnswer:
        record = await self._load(session_id, token)
        key, hashes = observe_body(body)
        request_sha = operation_sha256("observe", body)
        route = ROUTES[record.route]
        wallets = dict(self._document(record).wallets)
        if (replayed := await self._replayed(record, key, request_sha)) is not None:
            return await self._with_preflight(replayed, wallets)
        record = await self._expire_if_due(record)
        self._check_operation(record, "observe")
        try:
            outcome = await self._observed(record, route, hashes)
        except ObservationUnavailable as exc:
            raise DependencyUnavailable(exc.reason, exc.message, retry_after_seconds=5) from None
        return await self._with_preflight(await self._finish(record, outcome, key, request_sha), wallets)

    async def _observed(self, record: SessionRecord, route: Route, hashes: list[str]) -> Decision:
        """Phases 1 and 2 of observe (gather the chain facts, decide in the core) and the fulfilment of what the
        decision asks for (the next action, re-quoted from the verified output); nothing is written."""
        state = self._document(record)
        decision = await self.facts.observe(kinds.select(state, route), state, route, hashes)
        return await self._advance(record, route, decision)

    # ---- the watcher's entry: observe without a caller (sessions/watch.py) ------------------------------

    async def watched_outcome(self, record: SessionRecord) -> Decision:
        """What observe with no new transaction names would decide for `record` now (nothing written). Raises
        what observe raises before its commit: ObservationUnavailable, or a 4xx error (nothing advances)."""
        self._check_operation(record, "observe")
        if record.state.get("mode") == MODE_V1:  # the corridor's observe tools, naming what was named before
            return await self._v1_observed(record, None)
        return await self._observed(record, ROUTES[record.route], [])

    async def commit_watched(self, record: SessionRecord, outcome: Decision) -> SessionRecord | None:
        """Observe's one commit of `outcome` (same event, document, claims and transition table), without a caller
        idempotency record: none was sent. A decision that only restates the stored pending status and document
        writes nothing (observe would append a `submitted_pending` / `destination_pending` that changes nothing
        else). None when nothing was written (no change, or another request moved the session first)."""
        status = next_status(Status(record.status), outcome.event)
        document = outcome.state.to_json()
        if status.value == record.status and (
            document == record.state or json.loads(json.dumps(document)) == record.state
        ):
            return None
        claims = transactions_proven(self._document(record), outcome.state)
        try:
            return await self._commit(record, outcome.event, outcome.state, None, claims)
        except TransactionAlreadyUsed:
            log.info("session_watch_transaction_already_used", session_id=record.session_id)
            return None

    def watched_observing(self, record: SessionRecord) -> tuple[kinds.KindKey, Observing]:
        """For a gatherer that reads for many sessions at once (sessions/batch_gather.py): the step kind of
        `record`'s current step and what it is asked with, as `watched_outcome` would ask it (raises what that
        raises before any read: a session observe refuses)."""
        self._check_operation(record, "observe")
        state = self._document(record)
        route = ROUTES[record.route]
        if state.mode == MODE_V1:
            key, named = self._v1_kind(record, None)
            return key, self.facts.observing(state, route, named)
        return kinds.select(state, route), self.facts.observing(state, route)

    async def watched_advance(self, record: SessionRecord, decision: Decision) -> Decision:
        """`watched_outcome` after its kind decided: the fulfilment of what the decision asks for (nothing
        written)."""
        if record.state.get("mode") == MODE_V1:
            return await self._v1_fulfil(record, decision)
        return await self._advance(record, ROUTES[record.route], decision)

    # ---- refresh and cancel -----------------------------------------------------------------------------

    async def refresh(self, session_id: Any, token: str | None, body: Any) -> SessionAnswer:
        record = await self._load(session_id, token)
        key = key_only_body(body)
        request_sha = operation_sha256("refresh", body)
        route = ROUTES[record.route]
        wallets = dict(self._document(record).wallets)
        if (replayed := await self._replayed(record, key, request_sha)) is not None:
            return await self._with_preflight(replayed, wallets)
        record = await self._expire_if_due(record)
        self._check_operation(record, "refresh")
        state = self._document(record)
        k = state.current_step
        entry = state.steps[k]
        if entry.claimed_tx_ids or entry.destination_claimed_tx_ids or entry.source:
            raise Conflict(
                "refresh_not_allowed_after_observation",
                f"step {k} already has observed transactions; observe them instead of refreshing",
            )
        if state.phase == "destination":
            bundle = await self.builder.receive_any(state, route, self.facts.solana)
            outcome = Decision(Event.REFRESH, install_receive(state, route, bundle, refreshed=True))
        else:
            input_base = int(state.action()["unsigned_action"]["inputAmount"])
            outcome = await self.builder.next_step(
                record.session_id, state, route, NextAction(k, input_base, Event.REFRESH)
            )
            if outcome.event is Event.REFRESH:
                outcome = replace(outcome, state=outcome.state.last_action_refreshed())
        return await self._with_preflight(await self._finish(record, outcome, key, request_sha), wallets)

    async def cancel(self, session_id: Any, token: str | None, body: Any) -> SessionAnswer:
        record = await self._load(session_id, token)
        key = key_only_body(body)
        request_sha = operation_sha256("cancel", body)
        if (replayed := await self._replayed(record, key, request_sha)) is not None:
            return SessionAnswer(replayed.status_code, self._with_watch(replayed.body))
        self._check_operation(record, "cancel")
        decision = cancelled(self._document(record), record.status, self.service.clock.now())
        answer = await self._finish(record, decision, key, request_sha)
        return SessionAnswer(answer.status_code, self._with_watch(answer.body))


__all__ = ["SessionAnswer", "SessionService"]
