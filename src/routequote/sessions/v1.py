"""The v1 corridor: a thin mode over the same engine, each action built only when the caller asks for it.

solana SOL -> native ETH on base or arbitrum: step 0 raydium_clmm SOL->USDC (the 1 bp fee), step 1
circle_cctp solana->EVM (the caller relays the mint: observed, not prepared), step 2 uniswap_v3 USDC->ETH
settled as one ERC-4337 user operation from the wallet's smart account (core.actions.erc4337). The
session is wallet-bound: its token hash is `v1_wallet_binding(wallet)`, reachable only with an access
token of that wallet (auth.WalletAuth); create builds no transaction.
"""

from __future__ import annotations

import hmac
from dataclasses import replace
from typing import Any

from eth_utils.address import to_checksum_address

from routequote.core.assets import Chain
from routequote.core.hashing import canonical_sha256
from routequote.core.routes import ROUTES
from routequote.core.sessions import kinds
from routequote.core.sessions.evidence import EVM_TX_RE, SOLANA_SIG_RE, ObservationRejected
from routequote.core.sessions.kinds import KindKey
from routequote.core.sessions.machine import NEXT_OPERATION, Event, Status
from routequote.core.sessions.state import (
    MODE_V1,
    SESSION_BINDING_VERSION,
    Decision,
    NextAction,
    new_state,
    session_id_for,
)
from routequote.core.sessions.views import VIEWS
from routequote.errors import Conflict, DependencyUnavailable, InvalidRequest, NotFound
from routequote.ports import ObservationUnavailable, SessionRecord
from routequote.readiness import observation_gaps
from routequote.sessions.base import SessionAnswer, SessionBase
from routequote.sessions.inputs import UUID_RE, idempotency_key, v1_fields, v1_wallet_binding
from routequote.store_errors import stored

V1_CORRIDORS = ("solana:SOL->base:ETH", "solana:SOL->arbitrum:ETH")
V1_BINDING_VERSION = "routequote-v1-corridor-binding"


class V1CorridorMode(SessionBase):
    """The v1_* operations (REST /v1/session…, the v1 MCP tools) over the engine's load/commit."""

    async def v1_create(self, wallet: str, body: Any) -> SessionAnswer:
        fields = v1_fields(body, {"quote_id", "idempotency_key", "source_wallet", "destination_wallet"})
        key = idempotency_key(fields)
        if fields["source_wallet"] != wallet:
            raise InvalidRequest(
                "source_wallet_not_logged_in",
                "source_wallet must be the wallet the access token was issued to",
            )
        destination = fields["destination_wallet"] = self.prepare.signing_wallet(
            Chain.BASE, fields["destination_wallet"], "invalid_destination_wallet", "destination_wallet"
        )
        quote_id = fields["quote_id"]
        if not isinstance(quote_id, str) or not UUID_RE.fullmatch(quote_id.lower()):
            raise InvalidRequest("invalid_quote_id", "quote_id must be the uuid of a fresh v1 quote")
        quote_id = quote_id.lower()
        binding_sha = v1_wallet_binding(wallet)
        scope = f"v1create:{binding_sha}"
        request_sha = canonical_sha256({"operation": "v1_create", **fields})
        prior = await stored(self.store.idempotent(scope, key))
        if prior is not None:
            return await self._create_replay(prior, request_sha, None)
        issued = await self.service.issued_quote(quote_id)
        if issued is None:
            raise InvalidRequest(
                "quote_not_found_or_expired",
                "no fresh quote with this id: quote the corridor again (POST /v1/quote)",
            )
        route = issued.route
        if route.key not in V1_CORRIDORS:
            raise InvalidRequest(
                "quote_not_v1_corridor", f"v1 sessions carry only {' or '.join(V1_CORRIDORS)}"
            )
        for step in route.steps[:2]:  # the settlement (step 2) is checked when it is prepared
            reason = self.step_reason(step)
            if reason:
                raise InvalidRequest(
                    "route_not_session_ready",
                    f"step {step.index} ({step.provider.value}) cannot be built here: {reason}",
                    details={"route": route.key, "unavailable_reason": reason},
                )
        observation = self.config.observation
        missing = observation_gaps(route, observation) if observation is not None else []
        if missing:  # a corridor this instance cannot observe to the end is not opened
            raise InvalidRequest(
                "route_not_session_ready",
                f"a session cannot carry {route.key} to complete on this instance: {'; '.join(missing)}",
                details={"route": route.key, "unavailable_reason": "; ".join(missing), "missing": missing},
            )
        dst_chain = route.target.chain.value
        wallets = {"solana": wallet, dst_chain: str(to_checksum_address(destination))}
        quote = issued.payload
        summary_steps = quote["direct_route_summary"]["steps"]
        session_id = session_id_for(quote_id)  # one session per quote: the lock
        approval = {
            "version": "routequote-v1-corridor-bounds",
            "quote_id": quote_id,
            "selected_mode": "session",
            "idempotency_key": key,
            "maximum_input_base": summary_steps[0]["expected_input_base"],
            "minimum_output_base": summary_steps[-1]["minimum_output_base"],
        }
        binding = {
            "version": V1_BINDING_VERSION,
            "enforcement": "server_enforced_quote_binding",
            "quote_id": quote_id,
            "quote_fingerprint": quote["continuation_v3"]["quote_fingerprint"],
            "direct_route_summary_sha256": quote["continuation_v3"]["direct_route_summary_sha256"],
            "selected_mode": "session",
            "idempotency_key": key,
            "maximum_input_base": approval["maximum_input_base"],
            "minimum_output_base": approval["minimum_output_base"],
            "source_wallet": wallet,
            "destination_wallet": wallets[dst_chain],
            "session_version": SESSION_BINDING_VERSION,
            "session_id": session_id,
            "whole_route_path_and_bounds_enforced": True,
            "future_actions_requote_and_enforce_original_step_minimums": True,
            "only_verified_actual_output_advances": True,
            "server_signing": False,
            "server_submission": False,
        }
        now = self.service.clock.now()
        state = new_state(
            MODE_V1,
            route,
            issued.intent.as_request(),
            wallets,
            None,
            approval,
            binding,
            quote,
            None,
            now,
            "nothing was built: ask for the source action (prepare_source_action)",
        )
        try:
            return await self._insert_new(
                state, binding_sha, Event.CREATE_WITHOUT_ACTION, now, scope, key, request_sha, None
            )
        except ValueError:
            raise Conflict(
                "quote_already_in_session",
                "this quote is already locked into a session: read that session, or quote again",
            ) from None

    async def v1_read(self, wallet: str, session_id: Any, view: Any = "session") -> dict[str, Any]:
        view = "session" if view is None else view  # an empty view= is not a view
        if view not in VIEWS:
            raise InvalidRequest("invalid_view", f"view must be one of {', '.join(VIEWS)}")
        record = await self._v1_load(session_id, wallet)
        record = await self._expire_if_due(record)
        return self._view(record, view)

    async def v1_prepare_source(self, wallet: str, session_id: Any, body: Any) -> SessionAnswer:
        fields = v1_fields(body, set(), optional={"idempotency_key"})
        return await self._v1_prepare(wallet, session_id, 0, fields, "v1_prepare_source_action")

    async def v1_prepare_cctp(self, wallet: str, session_id: Any, body: Any) -> SessionAnswer:
        fields = v1_fields(body, {"event_signer_public", "idempotency_key"})
        signer = fields["event_signer_public"]
        signer = self.prepare.signing_wallet(
            Chain.SOLANA, signer, "invalid_event_signer_public", "event_signer_public"
        )
        return await self._v1_prepare(
            wallet, session_id, 1, fields, "v1_prepare_cctp_action", signer=str(signer)
        )

    async def v1_prepare_destination(self, wallet: str, session_id: Any, body: Any) -> SessionAnswer:
        fields = v1_fields(body, {"idempotency_key"})
        return await self._v1_prepare(wallet, session_id, 2, fields, "v1_prepare_destination_action")

    async def v1_verify_source(self, wallet: str, session_id: Any, body: Any) -> SessionAnswer:
        return await self._v1_observe_named(
            wallet, session_id, body, "signature", 0, "v1_verify_source_receipt"
        )

    async def v1_observe_cctp(self, wallet: str, session_id: Any, body: Any) -> SessionAnswer:
        return await self._v1_observe_named(wallet, session_id, body, "burn_signature", 1, "v1_observe_cctp")

    async def v1_observe_destination(self, wallet: str, session_id: Any, body: Any) -> SessionAnswer:
        return await self._v1_observe_named(
            wallet, session_id, body, "transaction_hash", 2, "v1_observe_destination"
        )

    async def _v1_observe_named(
        self, wallet: str, session_id: Any, body: Any, field: str, step: int, operation: str
    ) -> SessionAnswer:
        """A v1 observe tool: the one transaction it names (Solana signature, or an EVM hash for the last step)."""
        fields = v1_fields(body, {field, "idempotency_key"})
        named = fields[field]
        evm = field == "transaction_hash"
        if not isinstance(named, str) or not (EVM_TX_RE if evm else SOLANA_SIG_RE).fullmatch(named):
            shape = "0x followed by 64 hex" if evm else "a base58 Solana signature"
            raise InvalidRequest("transaction_hash_invalid", f"{field} must be {shape}")
        return await self._v1_observe(
            wallet, session_id, step, fields, operation, named.lower() if evm else named
        )

    # the v1 helpers

    async def _v1_load(self, session_id: Any, wallet: str) -> SessionRecord:
        missing = NotFound("session_not_found", "no session with this id for this wallet")
        if not isinstance(session_id, str) or not UUID_RE.fullmatch(session_id.lower()):
            raise missing
        record: SessionRecord | None = await stored(self.store.get(session_id.lower()))
        if record is None or not hmac.compare_digest(record.token_sha256, v1_wallet_binding(wallet)):
            raise missing
        if record.state.get("mode") != MODE_V1:  # pragma: no cover - a v2 token hash never equals a binding
            raise missing
        return record

    @staticmethod
    def _v1_step_check(record: SessionRecord, k: int, what: str) -> None:
        """The operation belongs to step `k`: anything else is a skipped or repeated step (409, nothing read)."""
        current = int(record.state["current_step"])  # the stored shape: checked before the document is parsed
        if record.status in (
            Status.COMPLETE,
            Status.CANCELLED,
            Status.FAILED,
            Status.REAPPROVAL_REQUIRED,
        ) or (current != k):
            raise Conflict(
                "step_out_of_order",
                f"{what} is step {k}; the session is at step {current} ({record.status}): steps run in order, "
                "each only after the previous one is verified on chain",
                details={
                    "session_status": record.status,
                    "current_step": current,
                    "next_operation": NEXT_OPERATION[Status(record.status)].value,
                },
            )

    async def _v1_prepare(
        self,
        wallet: str,
        session_id: Any,
        k: int,
        fields: dict[str, Any],
        operation: str,
        signer: str | None = None,
    ) -> SessionAnswer:
        record = await self._v1_load(session_id, wallet)
        # prepare_source_action takes no key: it is idempotent by the session's own state
        key = f"{operation}:v{record.version}" if "idempotency_key" not in fields else idempotency_key(fields)
        request_sha = canonical_sha256({"operation": operation, **fields})
        if (replayed := await self._replayed(record, key, request_sha)) is not None:
            return replayed
        record = await self._expire_if_due(record)
        self._v1_step_check(record, k, operation)
        route = ROUTES[record.route]
        state = self._document(record)
        if record.status == Status.ACTION_READY and "idempotency_key" not in fields:
            return SessionAnswer(200, {**self._view(record, "session"), "idempotent_replay": True})
        entry = state.steps[k]
        if k == 0:
            input_base = int(state.summary_steps[0]["expected_input_base"])
        else:  # the step check: step k - 1 is complete, so its actual output is recorded
            done = state.steps[k - 1].actual_output_base
            assert done is not None
            input_base = int(done)
        if record.status == Status.ACTION_EXPIRED:
            if entry.claimed_tx_ids or entry.source:
                raise Conflict(
                    "refresh_not_allowed_after_observation",
                    f"step {k} already has observed transactions; observe them instead",
                )
            event = Event.REFRESH
            self._check_operation(record, "refresh")
        else:
            self._check_operation(record, "prepare")
            event = Event.PREPARE_ACTION
        if k == 1:
            if signer in state.wallets.values():
                raise InvalidRequest(
                    "event_signer_public_not_fresh", "event_signer_public must be a fresh key"
                )
            state = state.evolve(event_signer_public=signer)
        try:
            outcome = await self.builder.next_step(
                record.session_id, state, route, NextAction(k, input_base, event)
            )
        except ObservationUnavailable as exc:
            raise DependencyUnavailable(exc.reason, exc.message, retry_after_seconds=5) from None
        if outcome.event is event and event is Event.REFRESH:
            outcome = replace(outcome, state=outcome.state.last_action_refreshed())
        return await self._finish(record, outcome, key, request_sha)

    async def _v1_observe(
        self, wallet: str, session_id: Any, k: int, fields: dict[str, Any], operation: str, tx_id: str
    ) -> SessionAnswer:
        record = await self._v1_load(session_id, wallet)
        key = idempotency_key(fields)
        request_sha = canonical_sha256({"operation": operation, **fields})
        if (replayed := await self._replayed(record, key, request_sha)) is not None:
            return replayed
        record = await self._expire_if_due(record)
        self._v1_step_check(record, k, operation)
        self._check_operation(record, "observe")
        try:
            outcome = await self._v1_observed(record, tx_id)
        except ObservationUnavailable as exc:
            raise DependencyUnavailable(exc.reason, exc.message, retry_after_seconds=5) from None
        return await self._finish(record, outcome, key, request_sha)

    # the corridor's observe, shared by its observe tools and the watcher (engine.watched_outcome)

    def _v1_kind(self, record: SessionRecord, tx_id: str | None) -> tuple[KindKey, list[str]]:
        """The kind observing the current step and the names it is asked with: the transaction the caller names
        now (`tx_id`), or for the watcher (None) the one it named before, as if it named it again."""
        state = self._document(record)
        k = state.current_step
        if state.phase == "destination":  # the burn is verified: Iris, then the mint anyone relays
            if tx_id is not None and tx_id != state.steps[k].the_bridge().source_tx:
                raise ObservationRejected(
                    "observation_not_prepared_action",
                    "burn_signature is not the burn this session verified",
                )
            return KindKey.CCTP_MINT_RELAYED, []
        named = [tx_id] if tx_id is not None else list(state.steps[k].claimed_tx_ids or [])
        if k == 2:
            return KindKey.ERC4337_SETTLEMENT, named
        return kinds.select(state, ROUTES[record.route]), named

    async def _v1_fulfil(self, record: SessionRecord, decision: Decision) -> Decision:
        """What the corridor's observe does with its kind's decision: the settlement ends the route; an attestation
        just arrived is held to this session's burn (the receiveMessage it would hand out) and the mint is
        looked for at once; anything else is fulfilled as in v2 (nothing is built for a v1 next step)."""
        route = ROUTES[record.route]
        state = self._document(record)
        if state.current_step == 2:
            return decision
        if state.phase == "destination" and decision.receive_action:
            self.builder.receive(decision.state, route)
            decision = await self.facts.observe(KindKey.CCTP_MINT_RELAYED, decision.state, route)
        return await self._advance(record, route, decision)

    async def _v1_observed(self, record: SessionRecord, tx_id: str | None) -> Decision:
        """Gather and decide for a corridor session (`_v1_kind`), then `_v1_fulfil`; nothing is written."""
        key, named = self._v1_kind(record, tx_id)
        state = self._document(record)
        decision = await self.facts.observe(key, state, ROUTES[record.route], named)
        return await self._v1_fulfil(record, decision)
