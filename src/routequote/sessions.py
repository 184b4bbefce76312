"""SessionService: carry an approved quote through every step of its route, one verified step at a time.

The one entry for REST `/v2/session…`, the A2A `session-lifecycle` skill, the MCP session tools and v1.
It never signs and never submits. What moves a session:

* the caller names what it submitted (transaction hashes / signatures); the service reads them from the
  chain itself (`ports.EvmChainReader` / `SolanaChainReader`) and checks them against the prepared action
  (`core.sessions.evidence`): never an amount taken from the caller;
* bridges are followed to the destination (CCTP: Iris attestation, then the mint, prepared as the caller's
  `receiveMessage` when the destination is EVM; Across: the relayer's fill; OFT: the delivery);
* each next step is re-quoted fresh from the verified actual output and held to what the caller approved
  (the quoted step minimums and `approval_v3.minimum_output_base`); below them the session stops with
  409 `reapproval_required` before anything is built, saying where the funds are;
* every transition is `core.sessions.machine.TRANSITIONS[(status, event)]`, committed with optimistic
  concurrency (`SessionStore.transition`): of two concurrent observes exactly one advances.

Capability token: caller-generated, >= 256 bits, base64url, header only; only its SHA-256 is stored and
compared in constant time; a wrong or missing token is 404 `session_not_found` (no existence oracle).
"""

from __future__ import annotations

import copy
import hashlib
import hmac
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from fractions import Fraction
from typing import Any

import structlog

from routequote.core.actions.approval import check_approval, reapproval_body
from routequote.core.assets import CHAINS, Chain, ChainFamily
from routequote.core.field_rules import (
    EVM_TX_HASH_RE,
    MAX_TRANSACTION_IDS,
    SESSION_ID_RE,
    SOLANA_SIGNATURE_RE,
    check_idempotency_key,
    check_session_token,
    is_session_token,
    object_fields,
    require_object,
)
from routequote.core.hashing import canonical_sha256
from routequote.core.pricing import PricedStep, price_steps_from
from routequote.core.routes import ROUTES, Provider, Route, Step
from routequote.core.sessions.machine import (
    NEXT_OPERATION,
    Event,
    IllegalTransition,
    OperationNotAllowed,
    Status,
    check_operation,
    next_status,
    operations_allowed,
)
from routequote.errors import (
    Conflict,
    DependencyUnavailable,
    InvalidRequest,
    NotFound,
    ReapprovalRequired,
    RouteQuoteError,
)
from routequote.ports import (
    AttestationReader,
    EvmChainReader,
    IdempotentAnswer,
    ObservationUnavailable,
    SessionEvent,
    SessionRecord,
    SessionStore,
    SolanaChainReader,
)
from routequote.prepare import PrepareService
from routequote.storage.sessions_common import stored

SESSION_VERSION = "routequote-session-v1"
MODE_V2, MODE_V1 = "v2_session", "v1_corridor"  # one engine; a v1 corridor builds each action on request
SESSION_BINDING_VERSION = "routequote-quote-bound-session-constraints-v1"
UUID_RE = SESSION_ID_RE  # the field rules live in core/field_rules.py
EVM_TX_RE = EVM_TX_HASH_RE
SOLANA_SIG_RE = SOLANA_SIGNATURE_RE
V1_CORRIDORS = ("solana:SOL->base:ETH", "solana:SOL->arbitrum:ETH")
V1_BINDING_VERSION = "routequote-v1-corridor-binding"
V1_SESSION_NAMESPACE = uuid.UUID("6f0b7c1e-2a55-5b7e-9d0c-3e1f4a2b8c61")  # session id = uuid5(ns, quote_id)
MAX_TX_IDS = MAX_TRANSACTION_IDS
VIEWS = ("session", "workflow", "receipt", "next_action")
SERVER_FLAGS = {"server_signing": False, "server_submission": False}
DEFAULT_CONFIRMATIONS = {"base": 10, "arbitrum": 10, "robinhood": 10}
log = structlog.get_logger("routequote.sessions")  # ids, statuses and events only: never a token or a key


def token_sha256(token: str) -> str:
    return hashlib.sha256(token.encode("ascii")).hexdigest()


def v1_wallet_binding(wallet: str) -> str:
    """The `token_sha256` of a v1 corridor session: bound to the wallet (any live access token of that wallet
    reaches it). A v2 capability token is base64url without ':' so its hash can never be this value."""
    return hashlib.sha256(f"routequote-v1-wallet:{wallet}".encode()).hexdigest()


def _iso(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def _ts(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


@dataclass(frozen=True)
class SessionAnswer:
    """What a session operation answers: an HTTP-style status and the JSON body."""

    status_code: int
    body: dict[str, Any]


@dataclass
class _Outcome:
    event: Event
    state: dict[str, Any]
    error: RouteQuoteError | None = None  # committed, then raised (409 reapproval_required)
    note: str | None = None


@dataclass
class SessionConfig:
    confirmations: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_CONFIRMATIONS))
    across_fill_search_blocks: int = 20_000
    # v1 corridor settlement per EVM chain: optional `entry_point`, `factory`, `permit_name`, `permit_version`
    # overriding the pinned EntryPoint v0.7 / SimpleAccountFactory / USDC EIP-712 domain (tests on local chains)
    erc4337: dict[str, dict[str, Any]] = field(default_factory=dict)
    cctp_mint_search_blocks: int = 20_000


class SessionService:
    def __init__(
        self,
        prepare: PrepareService,
        store: SessionStore,
        *,
        evm: EvmChainReader | None = None,
        solana: SolanaChainReader | None = None,
        attestations: AttestationReader | None = None,
        config: SessionConfig | None = None,
        on_transition: Callable[[str, str | None, str], None] | None = None,
    ) -> None:
        self.on_transition = on_transition  # (event, from_status, to_status) after each commit (metrics)
        self.prepare = prepare
        self.service = prepare.service
        self.store = store
        self.evm = evm
        self.solana = solana
        self.attestations = attestations
        self.config = config or SessionConfig()
        self.http_client: Any = None  # the readers' shared HTTP client, when the composition root made one
        self._reasons = (
            self._session_reasons()
        )  # fixed per process: deployments and pinned pools do not change

    # ---- readiness ----------------------------------------------------------------------------------

    def step_reason(self, step: Step) -> str | None:
        """Why this build cannot carry a session through `step` (None when it can)."""
        return self.prepare.step_unsupported_reason(step)

    def session_reasons(self) -> dict[str, str]:
        """Route key -> why a session cannot be created for it (every step must be buildable)."""
        return dict(self._reasons)

    def _session_reasons(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for key, route in ROUTES.items():
            for step in route.steps:
                reason = self.step_reason(step)
                if reason:
                    out[key] = (
                        f"step {step.index} ({step.provider.value} on {step.source.chain.value}): {reason}"
                    )
                    break
        return out

    # ---- token and loading --------------------------------------------------------------------------

    @staticmethod
    def _creation_token(token: str | None) -> str:
        if not token:
            raise InvalidRequest(
                "session_token_required",
                "send a caller-generated session token (32 random bytes, base64url, 43 characters) in the "
                "X-RouteQuote-Session-Token header",
            )
        return token_sha256(check_session_token(token))

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

    # ---- create -------------------------------------------------------------------------------------

    async def create(self, body: Any, token: str | None) -> SessionAnswer:
        sha = self._creation_token(token)
        body = require_object(body)
        key = check_idempotency_key(body.get("idempotency_key"))
        intent, route, wallets, signer, approval = self.prepare._parse(
            {k: v for k, v in body.items() if k != "idempotency_key"}
        )
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
                return await self._create_replay(prior, request_sha, route)
            raise
        return answer

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
        if route.key in reasons:
            raise InvalidRequest(
                "route_not_session_ready",
                f"a session cannot carry {route.key} through every step in this build: {reasons[route.key]}",
                details={"route": route.key, "unavailable_reason": reasons[route.key]},
            )
        clock = self.service.clock
        issued = await self.service.issued_quote(approval["quote_id"])
        check_approval(
            approval, issued.payload if issued else None, route, intent.as_request(), now=clock.now()
        )
        assert issued is not None
        quote = issued.payload
        pool_tick, raydium_live = await self.prepare._solana_pool_tick(route)
        session_id = self.service.ids.new_id()
        binding = self._binding(quote, approval, session_id)
        ps0 = issued.body.pricing.steps[0]
        min0 = ps0.minimum_output_base
        if len(route.steps) == 1:
            min0 = max(min0, int(approval["minimum_output_base"]))
        summary_steps = quote["direct_route_summary"]["steps"]
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
            summary_steps=summary_steps,
            workflow_id=session_id,
            quote_expiry_unix=int(_ts(quote["expires_at"]).timestamp()),
        )
        now = clock.now()
        state = self._new_state(
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
        return await self._insert_new(state, sha, Event.CREATE, now, scope, key, request_sha, route)

    def _new_state(
        self,
        mode: str,
        route: Route,
        intent: dict[str, Any],
        wallets: dict[str, str],
        signer: str | None,
        approval: dict[str, Any],
        binding: dict[str, Any],
        quote: dict[str, Any],
        bundle: dict[str, Any] | None,
        now: datetime,
        funds_note: str,
    ) -> dict[str, Any]:
        """A session's first document: what was quoted and approved, its steps, and the first action (if built)."""
        summary_steps = quote["direct_route_summary"]["steps"]
        cost = quote["cost_summary"]
        state: dict[str, Any] = {
            "version": SESSION_VERSION,
            "mode": mode,
            "route": route.key,
            "intent": intent,
            "wallets": dict(sorted(wallets.items())),
            "event_signer_public": signer,
            "approval": approval,
            "binding": binding,
            "quote": {
                "quote_id": quote["quote_id"],
                "quote_fingerprint": quote["continuation_v3"]["quote_fingerprint"],
                "direct_route_summary_sha256": quote["continuation_v3"]["direct_route_summary_sha256"],
                "as_of": quote["as_of"],
                "expires_at": quote["expires_at"],
                "market": quote.get("market"),
                "input_base": summary_steps[0]["expected_input_base"],
                "expected_output_base": summary_steps[-1]["expected_output_base"],
                "minimum_output_base": summary_steps[-1]["minimum_output_base"],
                "expected_total_cost_percent": cost["expected_total_cost_percent"],
                "maximum_total_cost_percent": cost["maximum_total_cost_percent"],
                "input_value_usd": cost["input_value_usd"],
            },
            "summary_steps": summary_steps,
            "current_step": 0,
            "phase": "source",
            "current_action": bundle,
            "actions": [self._action_entry(bundle, "source")] if bundle is not None else [],
            "steps": [self._step_entry(s) for s in route.steps],
            "funds": self._funds(
                route.source.key,
                summary_steps[0]["expected_input_base"],
                wallets[route.source.chain.value],
                "in_wallet",
                funds_note,
            ),
            "reapproval": None,
            "cancelled": None,
            "created_at": _iso(now),
        }
        first = state["steps"][0]
        first["status"] = "action_ready" if bundle is not None else "action_required"
        if bundle is not None:
            first["action_id"] = bundle["action_id"]
        return state

    async def _insert_new(
        self,
        state: dict[str, Any],
        owner_sha: str,
        event: Event,
        now: datetime,
        scope: str,
        key: str,
        request_sha: str,
        route: Route | None,
    ) -> SessionAnswer:
        """Store a new session with its first event and its create answer; a raced key answers the winner's."""
        session_id = state["binding"]["session_id"]
        status = next_status(None, event)
        record = SessionRecord(session_id, owner_sha, 1, status.value, state["route"], now, now, state)
        response = self._view(record, "session")
        # the create's idempotency record names the session it made: a replay answers that session as it is
        # then (not a second copy of the whole first document)
        raced = await stored(
            self.store.create(
                record,
                SessionEvent(session_id, 1, None, event.value, status.value, now),
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
            route=state["route"],
            status=status.value,
            mode=state["mode"],
        )
        if self.on_transition is not None:
            self.on_transition(event.value, None, status.value)
        return SessionAnswer(201, response)

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
        """The Uniswap pool fee tier the quote priced the step on (None for other venues)."""
        if step.provider is not Provider.UNISWAP_V3:
            return None
        for f in quote["cost_summary"]["provider_fee_components"]:
            if f["step_index"] == step.index and "fee_pips" in f:
                return int(f["fee_pips"])
        return None

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

    # ---- read ---------------------------------------------------------------------------------------

    async def read(self, session_id: Any, token: str | None, view: Any = "session") -> dict[str, Any]:
        view = "session" if view is None else view  # an empty view= is not a view
        if view not in VIEWS:
            raise InvalidRequest("invalid_view", f"view must be one of {', '.join(VIEWS)}")
        record = await self._load(session_id, token)
        record = await self._expire_if_due(record)
        return self._view(record, view)

    async def _expire_if_due(self, record: SessionRecord) -> SessionRecord:
        """An unsubmitted action whose bundle expired becomes `action_expired` (refresh it)."""
        action = record.state.get("current_action")
        if record.status != Status.ACTION_READY or not action:
            return record
        if self.service.clock.now() < _ts(action["expires_at"]):
            return record
        state = copy.deepcopy(record.state)
        state["steps"][state["current_step"]]["status"] = "action_expired"
        committed = await self._commit(record, Event.EXPIRE, state)
        if committed is None:  # another request moved it first: read what it wrote
            fresh = await stored(self.store.get(record.session_id))
            return fresh if fresh is not None else record
        return committed

    # ---- observe ------------------------------------------------------------------------------------

    async def observe(self, session_id: Any, token: str | None, body: Any) -> SessionAnswer:
        record = await self._load(session_id, token)
        key, hashes = self._parse_observe(body)
        request_sha = canonical_sha256(body)
        route = ROUTES[record.route]
        if (replayed := await self._replayed(record, key, request_sha)) is not None:
            return replayed
        record = await self._expire_if_due(record)
        self._check_operation(record, "observe")
        state = copy.deepcopy(record.state)
        try:
            if state["phase"] == "source":
                outcome = await self._observe_source(record, state, route, hashes)
            else:
                outcome = await self._observe_destination(record, state, route, hashes)
        except ObservationUnavailable as exc:
            raise DependencyUnavailable(exc.reason, exc.message, retry_after_seconds=5) from None
        return await self._finish(record, outcome, key, request_sha)

    async def _replayed(self, record: SessionRecord, key: str, request_sha: str) -> SessionAnswer | None:
        """The stored answer when this session already took `key` (or 409 for another body), else None."""
        prior = await stored(self.store.idempotent(f"session:{record.session_id}", key))
        return None if prior is None else self._replay(prior, request_sha, ROUTES[record.route])

    @staticmethod
    def _parse_observe(body: Any) -> tuple[str, list[str]]:
        body = require_object(body)
        extra = sorted(set(body) - {"idempotency_key", "transaction_hashes"})
        if extra:
            raise InvalidRequest(
                "unknown_field",
                f"{len(extra)} properties not allowed (allowed: idempotency_key, transaction_hashes)",
            )
        key = check_idempotency_key(body.get("idempotency_key"))
        hashes = body.get("transaction_hashes", [])
        if not isinstance(hashes, list) or len(hashes) > MAX_TX_IDS:
            raise InvalidRequest(
                "transaction_hashes_invalid", f"transaction_hashes must be a list of at most {MAX_TX_IDS}"
            )
        for h in hashes:
            if not isinstance(h, str) or not (EVM_TX_RE.fullmatch(h) or SOLANA_SIG_RE.fullmatch(h)):
                raise InvalidRequest(
                    "transaction_hash_invalid",
                    "each transaction hash must be 0x + 64 hex (EVM) or a base58 Solana signature",
                )
        if len(set(h.lower() if h.startswith("0x") else h for h in hashes)) != len(hashes):
            raise InvalidRequest("transaction_hashes_duplicate", "transaction_hashes must not repeat")
        return key, hashes

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

    def _confirmations(self, chain: Chain) -> int:
        return int(self.config.confirmations.get(chain.value, DEFAULT_CONFIRMATIONS.get(chain.value, 10)))

    def _evm_reader(self) -> EvmChainReader:
        if self.evm is None:
            raise ObservationUnavailable(
                "chain_observation_not_configured", "no EVM chain reader is configured"
            )
        return self.evm

    def _solana_reader(self) -> SolanaChainReader:
        if self.solana is None:
            raise ObservationUnavailable(
                "chain_rpc_not_configured:solana",
                "solana cannot be observed: ROUTEQUOTE_RPC_URL_SOLANA is not set",
            )
        return self.solana

    async def _observe_source(
        self, record: SessionRecord, state: dict[str, Any], route: Route, hashes: list[str]
    ) -> _Outcome:
        from routequote.core.sessions import evidence as ev

        k = state["current_step"]
        step = route.steps[k]
        entry = state["steps"][k]
        action = state["current_action"]["unsigned_action"]
        named = hashes or list(entry.get("claimed_tx_ids") or [])
        if not named:
            raise InvalidRequest(
                "transaction_hashes_required", "name the transactions you submitted for the current action"
            )
        if CHAINS[step.source.chain].family is ChainFamily.EVM:
            if not all(EVM_TX_RE.fullmatch(h) for h in named):
                raise ev.ObservationRejected(
                    "observation_wrong_chain",
                    f"step {k} runs on {step.source.chain.value}: name its EVM transaction hashes",
                )
            reader = self._evm_reader()
            txs = [await reader.transaction(step.source.chain.value, h) for h in named]
            if any(t is None for t in txs):
                return self._pending_source(state, named, "not every named transaction is mined yet")
            evidence = ev.verify_evm_action(
                action,
                [t for t in txs if t is not None],
                required_confirmations=self._confirmations(step.source.chain),
            )
        else:
            if len(named) != 1 or not SOLANA_SIG_RE.fullmatch(named[0]):
                raise ev.ObservationRejected(
                    "observation_wrong_chain", "a Solana action is one transaction: name its signature"
                )
            stx = await self._solana_reader().transaction(named[0])
            if stx is None:
                return self._pending_source(state, named, "the signature is not finalized yet")
            evidence = ev.verify_solana_action(action, stx)
        if evidence.status == "pending":
            return self._pending_source(state, named, "waiting for finality")
        entry["claimed_tx_ids"] = named
        entry["source"] = self._evidence_entry(evidence)
        if evidence.bridge is not None:
            entry["status"] = "in_flight"
            entry["bridge"] = evidence.bridge
            state["phase"] = "destination"
            state["current_action"] = None
            state["funds"] = self._funds(
                step.target.key,
                None,
                state["wallets"][step.target.chain.value],
                "in_flight",
                f"{step.provider.value} message in flight to {step.target.chain.value}",
            )
            return _Outcome(Event.STEP_VERIFIED_BRIDGE_IN_FLIGHT, state)
        assert evidence.actual_output_base is not None
        return await self._step_done(record, state, route, k, evidence.actual_output_base)

    @staticmethod
    def _pending_source(state: dict[str, Any], named: list[str], why: str) -> _Outcome:
        entry = state["steps"][state["current_step"]]
        entry["claimed_tx_ids"] = named
        entry["status"] = "awaiting_receipt"
        return _Outcome(Event.SUBMITTED_PENDING, state, note=why)

    @staticmethod
    def _evidence_entry(evidence: Any) -> dict[str, Any]:
        return {
            "tx_ids": list(evidence.tx_ids),
            "actual_input_base": None
            if evidence.actual_input_base is None
            else str(evidence.actual_input_base),
            "actual_output_base": None
            if evidence.actual_output_base is None
            else str(evidence.actual_output_base),
            "service_fee_paid_base": str(evidence.service_fee_paid_base),
            "network_fee": {k: str(v) for k, v in evidence.network_fee.items()},
            "block_times": list(evidence.block_times),
        }

    async def _observe_destination(
        self, record: SessionRecord, state: dict[str, Any], route: Route, hashes: list[str]
    ) -> _Outcome:
        k = state["current_step"]
        bridge = state["steps"][k]["bridge"]
        kind = bridge.get("kind")
        if kind == "cctp":
            return await self._observe_cctp(record, state, route, hashes)
        if kind == "across":
            return await self._observe_across(record, state, route)
        if kind == "oft":
            return await self._observe_solana_delivery(record, state, route, hashes, "USDG")
        raise InvalidRequest("bridge_kind_unknown", f"no observer for {kind}")  # pragma: no cover

    async def _observe_cctp(
        self, record: SessionRecord, state: dict[str, Any], route: Route, hashes: list[str]
    ) -> _Outcome:
        from routequote.core.sessions import evidence as ev

        k = state["current_step"]
        step = route.steps[k]
        entry = state["steps"][k]
        bridge = entry["bridge"]
        dst = step.target.chain
        wallet = state["wallets"][dst.value]
        if (
            state.get("current_action") is not None
        ):  # the caller's receiveMessage was prepared: verify the mint
            named = hashes or list(entry.get("destination_claimed_tx_ids") or [])
            if len(named) != 1 or not EVM_TX_RE.fullmatch(named[0]):
                raise ev.ObservationRejected(
                    "observation_wrong_chain",
                    f"name the one {dst.value} transaction that submitted the prepared receiveMessage",
                )
            tx = await self._evm_reader().transaction(dst.value, named[0])
            if tx is None:
                entry["destination_claimed_tx_ids"] = named
                return _Outcome(
                    Event.DESTINATION_PENDING, state, note="the mint transaction is not mined yet"
                )
            dep = self.prepare.deployments[dst]
            transmitter = dep.message_transmitter_v2
            evidence = ev.verify_cctp_mint(
                tx,
                message=bytes.fromhex(bridge["message"][2:]),
                attestation=bytes.fromhex(bridge["attestation"][2:]),
                usdc=dep.tokens["USDC"],
                recipient=wallet,
                transmitter=transmitter or "",
                required_confirmations=self._confirmations(dst),
            )
            if evidence.status == "pending":
                entry["destination_claimed_tx_ids"] = named
                return _Outcome(Event.DESTINATION_PENDING, state, note="waiting for finality of the mint")
            entry["destination"] = self._evidence_entry(evidence)
            assert evidence.actual_output_base is not None
            self._check_step_minimum(state, k, evidence.actual_output_base)
            state["current_action"] = None
            return await self._step_done(record, state, route, k, evidence.actual_output_base)
        if dst is Chain.SOLANA and hashes:  # no Solana receive is built here: the caller relays the mint
            return await self._observe_solana_delivery(record, state, route, hashes, "USDC")
        if not await self._attested(entry, bridge, dst):
            return _Outcome(Event.DESTINATION_PENDING, state, note="Circle has not attested the burn yet")
        if dst is Chain.SOLANA:
            entry["destination_status"] = "attested_caller_relays_mint"
            return _Outcome(
                Event.DESTINATION_PENDING,
                state,
                note="attested: submit receive_message on Solana yourself, then observe its signature",
            )
        bundle = self._receive_bundle(state, route, k)
        state["current_action"] = bundle
        state["actions"].append(self._action_entry(bundle, "destination"))
        entry["destination_status"] = "mint_action_ready"
        state["funds"] = self._funds(
            step.target.key,
            None,
            wallet,
            "in_flight",
            "attested; minted when your receiveMessage transaction lands",
        )
        return _Outcome(Event.DESTINATION_ACTION_READY, state)

    async def _attested(self, entry: dict[str, Any], bridge: dict[str, Any], dst: Chain) -> bool:
        """Ask Circle Iris for this burn's message; when attested, keep the message and attestation in the
        bridge record and answer True (the caller then checks the message is this session's burn)."""
        if self.attestations is None:
            raise ObservationUnavailable(
                "attestation_source_not_configured", "no Circle Iris reader is configured"
            )
        messages = await self.attestations.messages(int(bridge["source_domain"]), bridge["source_tx"])
        match = next(
            (
                m
                for m in messages
                if m.amount is not None
                and int(m.amount) == int(bridge["burn_amount"])
                and m.destination_domain == CHAINS[dst].cctp_domain
            ),
            None,
        )
        if match is None or match.status != "complete" or not match.message or not match.attestation:
            entry["destination_status"] = "awaiting_attestation"
            return False
        bridge["message"] = "0x" + match.message.hex()
        bridge["attestation"] = "0x" + match.attestation.hex()
        bridge["fee_executed"] = None if match.fee_executed is None else str(match.fee_executed)
        return True

    def _receive_bundle(self, state: dict[str, Any], route: Route, k: int) -> dict[str, Any]:
        from routequote.core.actions.cctp_receive import assemble_receive_bundle
        from routequote.core.actions.common import ActionUnavailable

        step = route.steps[k]
        bridge = state["steps"][k]["bridge"]
        now = self.service.clock.now()
        try:
            bundle: dict[str, Any] = assemble_receive_bundle(
                route,
                step,
                state["wallets"],
                bytes.fromhex(bridge["message"][2:]),
                bytes.fromhex(bridge["attestation"][2:]),
                self.prepare.deployments,
                workflow_id=state["binding"]["session_id"],
                action_id=self.service.ids.new_id(),
                prepared_at=now,
                quote_binding=state["binding"],
                summary_steps=state["summary_steps"],
            )
        except ActionUnavailable as exc:
            # the attested message does not match this session's burn: never hand it to the caller
            from routequote.core.sessions.evidence import ObservationRejected

            raise ObservationRejected("observation_bridge_mismatch", exc.detail) from None
        return bundle

    async def _observe_across(self, record: SessionRecord, state: dict[str, Any], route: Route) -> _Outcome:
        from routequote.core.sessions import evidence as ev

        k = state["current_step"]
        step = route.steps[k]
        entry = state["steps"][k]
        bridge = entry["bridge"]
        dst = step.target.chain
        reader = self._evm_reader()
        spoke = self.prepare.deployments[dst].across_spoke_pool
        if spoke is None:
            raise ObservationUnavailable(
                "across_spoke_pool_not_pinned", f"no Across SpokePool pinned on {dst.value}"
            )
        latest = await reader.block_number(dst.value)
        start = bridge.get("search_from_block")
        if start is None:
            start = max(0, latest - self.config.across_fill_search_blocks)
            bridge["search_from_block"] = start
        logs = await reader.logs(dst.value, spoke, ev.across_fill_topics(bridge), int(start), latest)
        found = ev.verify_across_fill(logs, bridge, spoke_pool=spoke)
        if found is None:
            deadline = int(bridge.get("fill_deadline") or 0)
            if deadline and int(self.service.clock.now().timestamp()) > deadline:
                entry["status"] = "refunded_on_origin"
                state["funds"] = self._funds(
                    step.source.key,
                    bridge.get("input_amount"),
                    state["wallets"][step.source.chain.value],
                    "refund_expected",
                    "unfilled after the fill deadline: Across refunds the deposit on origin",
                )
                return _Outcome(Event.BRIDGE_FAILED, state)
            entry["destination_status"] = "awaiting_fill"
            return _Outcome(Event.DESTINATION_PENDING, state, note="no relayer fill seen yet")
        amount, fill_tx = found
        entry["destination"] = {"tx_ids": [fill_tx], "actual_output_base": str(amount), "kind": "across_fill"}
        self._check_step_minimum(state, k, amount)
        return await self._step_done(record, state, route, k, amount)

    async def _observe_solana_delivery(
        self, record: SessionRecord, state: dict[str, Any], route: Route, hashes: list[str], token: str
    ) -> _Outcome:
        from routequote.core.assets import ASSETS
        from routequote.core.sessions import evidence as ev

        k = state["current_step"]
        entry = state["steps"][k]
        if len(hashes) != 1 or not SOLANA_SIG_RE.fullmatch(hashes[0]):
            entry["destination_status"] = "awaiting_delivery_signature"
            return _Outcome(
                Event.DESTINATION_PENDING,
                state,
                note="name the Solana signature that delivered the tokens to your wallet",
            )
        tx = await self._solana_reader().transaction(hashes[0])
        if tx is None:
            return _Outcome(
                Event.DESTINATION_PENDING, state, note="the delivery signature is not finalized yet"
            )
        mint = ASSETS[f"solana:{token}"].address or ""
        amount = ev.verify_solana_delivery(tx, owner=state["wallets"]["solana"], mint=mint)
        entry["destination"] = {
            "tx_ids": [hashes[0]],
            "actual_output_base": str(amount),
            "kind": f"{token}_delivery",
        }
        self._check_step_minimum(state, k, amount)
        return await self._step_done(record, state, route, k, amount)

    @staticmethod
    def _check_step_minimum(state: dict[str, Any], k: int, amount: int) -> None:
        from routequote.core.sessions.evidence import ObservationRejected

        minimum = int(
            state["steps"][k].get("minimum_output_base") or state["summary_steps"][k]["minimum_output_base"]
        )
        if amount < minimum:
            raise ObservationRejected(
                "observation_below_step_minimum",
                f"step {k} delivered {amount} base units, below its minimum {minimum}; the session does not advance",
            )

    # ---- advancing: re-quote the rest of the route from what actually arrived ------------------------

    async def _step_done(
        self, record: SessionRecord, state: dict[str, Any], route: Route, k: int, output: int
    ) -> _Outcome:
        step = route.steps[k]
        entry = state["steps"][k]
        entry["status"] = "complete"
        entry["actual_output_base"] = str(output)
        wallet = state["wallets"][step.target.chain.value]
        state["current_action"] = None
        if k == len(route.steps) - 1:
            state["funds"] = self._funds(
                step.target.key, str(output), wallet, "delivered", "the route is complete"
            )
            state["phase"] = "done"
            return _Outcome(Event.STEP_VERIFIED_FINAL, state)
        state["funds"] = self._funds(
            step.target.key,
            str(output),
            wallet,
            "in_wallet",
            f"verified output of step {k}; input of step {k + 1}",
        )
        if state.get("mode") == MODE_V1:  # v1 corridor: the next action is built when the caller asks for it
            state["current_step"] = k + 1
            state["phase"] = "source"
            state["steps"][k + 1]["status"] = "action_required"
            return _Outcome(Event.STEP_VERIFIED_NEXT_REQUIRED, state)
        return await self._prepare_step(record, state, route, k + 1, output, Event.STEP_VERIFIED_NEXT_READY)

    async def _prepare_step(
        self,
        record: SessionRecord,
        state: dict[str, Any],
        route: Route,
        k: int,
        input_base: int,
        event: Event,
    ) -> _Outcome:
        """Price steps k.. fresh from `input_base`, hold them to the approval, build step k's action."""
        view = await self.service.market.view()
        fresh = price_steps_from(route, k, input_base, view)
        ps = fresh[0]
        step = ps.step
        quoted_min = int(state["summary_steps"][k]["minimum_output_base"])
        approved_min = int(state["approval"]["minimum_output_base"])
        projected_min = fresh[-1].minimum_output_base
        entry = state["steps"][k]
        entry["requote"] = {
            "market_as_of": view.as_of,
            "market_source": view.source,
            "market_live": view.live,
            "input_base": str(input_base),
            "expected_output_base": str(ps.expected_output_base),
            "minimum_output_base": str(ps.minimum_output_base),
            "projected_route_expected_output_base": str(fresh[-1].expected_output_base),
            "projected_route_minimum_output_base": str(projected_min),
        }
        wallet = state["wallets"][step.source.chain.value]
        if ps.minimum_output_base < quoted_min or projected_min < approved_min:
            why = (
                f"step {k}'s fresh minimum {ps.minimum_output_base} is below its approved {quoted_min}"
                if ps.minimum_output_base < quoted_min
                else f"the route's projected minimum {projected_min} is below the approved {approved_min}"
            )
            return self._reapproval(
                state, route, step, input_base, wallet, "session_requote_below_approved_bounds", why
            )
        minimum = max(ps.minimum_output_base, quoted_min)
        if k == len(route.steps) - 1:
            minimum = max(minimum, approved_min)
        pool = view.pools.get(step.pool_id or "")
        if state.get("mode") == MODE_V1 and CHAINS[step.source.chain].family is ChainFamily.EVM:
            fee_pips = pool.clmm.fee_pips if pool is not None else 0
            bundle = await self._settlement_action(state, route, k, input_base, minimum, fee_pips)
            state["current_step"] = k
            state["phase"] = "source"
            state["current_action"] = bundle
            state["actions"].append(self._action_entry(bundle, "source"))
            entry["status"] = "action_ready"
            entry["action_id"] = bundle["action_id"]
            entry["minimum_output_base"] = str(minimum)
            entry.pop("claimed_tx_ids", None)
            return _Outcome(event, state)
        pool_tick, raydium_live = await self.prepare._solana_pool_tick(route, step)
        bundle = self.prepare.build_step(
            route,
            ps,
            minimum_output_base=minimum,
            wallets=state["wallets"],
            signer=state["event_signer_public"],
            pool_fee_pips=pool.clmm.fee_pips
            if pool is not None and step.provider is Provider.UNISWAP_V3
            else None,
            pool_tick=pool_tick,
            raydium_live=raydium_live,
            binding=state["binding"],
            summary_steps=state["summary_steps"],
            workflow_id=record.session_id,
            quote_expiry_unix=None,
        )
        state["current_step"] = k
        state["phase"] = "source"
        state["current_action"] = bundle
        state["actions"].append(self._action_entry(bundle, "source"))
        entry["status"] = "action_ready"
        entry["action_id"] = bundle["action_id"]
        entry["minimum_output_base"] = str(minimum)
        entry.pop("claimed_tx_ids", None)
        return _Outcome(event, state)

    def _reapproval(
        self, state: dict[str, Any], route: Route, step: Step, amount: int, wallet: str, reason: str, why: str
    ) -> _Outcome:
        body = reapproval_body(reason, route)
        funds = self._funds(
            step.source.key, str(amount), wallet, "in_wallet", "parked: nothing was built or moved"
        )
        chain, token = step.source.key.split(":")
        body.update(
            do_not_start_new_session=False,
            recover_current_session=False,
            recovery_operation="obtain_new_quote_and_make_new_selection",
            funds=funds,
            quote_from_here={
                "from_chain": chain,
                "from_token": token,
                "to_chain": route.target.chain.value,
                "to_token": route.target.token.value,
                "amount_base": str(amount),
                "note": "quote this intent (amount_usd = the value of amount_base at current prices) and approve anew",
            },
            session_id=state["binding"]["session_id"],
            step_index=step.index,
        )
        state["reapproval"] = {
            "reason": reason,
            "message": why,
            "funds": funds,
            "quote_from_here": body["quote_from_here"],
        }
        state["funds"] = funds
        state["current_action"] = None
        state["steps"][step.index]["status"] = "reapproval_required"
        error = ReapprovalRequired(
            reason,
            f"{why}; nothing was built. Your funds are {funds['amount_base']} base units "
            f"of {funds['endpoint']} in {wallet}",
            details=body,
        )
        return _Outcome(Event.REQUOTE_BELOW_APPROVAL, state, error=error)

    # ---- v1 corridor: the same engine, each action built only when the caller asks for it ------------
    #
    # solana SOL -> native ETH on base or arbitrum: step 0 raydium_clmm SOL->USDC (the 1 bp fee), step 1
    # circle_cctp solana->EVM (the caller relays the mint: observed, not prepared), step 2 uniswap_v3 USDC->ETH
    # settled as one ERC-4337 user operation from the wallet's smart account (core.actions.erc4337). The
    # session is wallet-bound: its token hash is `v1_wallet_binding(wallet)`, reachable only with an access
    # token of that wallet (auth.WalletAuth); create builds no transaction.

    async def v1_create(self, wallet: str, body: Any) -> SessionAnswer:
        fields = self._v1_fields(body, {"quote_id", "idempotency_key", "source_wallet", "destination_wallet"})
        key = self._v1_key(fields)
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
        from eth_utils.address import to_checksum_address

        dst_chain = route.target.chain.value
        wallets = {"solana": wallet, dst_chain: str(to_checksum_address(destination))}
        quote = issued.payload
        summary_steps = quote["direct_route_summary"]["steps"]
        session_id = str(uuid.uuid5(V1_SESSION_NAMESPACE, quote_id))  # one session per quote: the lock
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
        state = self._new_state(
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
        fields = self._v1_fields(body, set(), optional={"idempotency_key"})
        return await self._v1_prepare(wallet, session_id, 0, fields, "v1_prepare_source_action")

    async def v1_prepare_cctp(self, wallet: str, session_id: Any, body: Any) -> SessionAnswer:
        fields = self._v1_fields(body, {"event_signer_public", "idempotency_key"})
        signer = fields["event_signer_public"]
        signer = self.prepare.signing_wallet(
            Chain.SOLANA, signer, "invalid_event_signer_public", "event_signer_public"
        )
        return await self._v1_prepare(
            wallet, session_id, 1, fields, "v1_prepare_cctp_action", signer=str(signer)
        )

    async def v1_prepare_destination(self, wallet: str, session_id: Any, body: Any) -> SessionAnswer:
        fields = self._v1_fields(body, {"idempotency_key"})
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
        fields = self._v1_fields(body, {field, "idempotency_key"})
        named = fields[field]
        evm = field == "transaction_hash"
        if not isinstance(named, str) or not (EVM_TX_RE if evm else SOLANA_SIG_RE).fullmatch(named):
            shape = "0x followed by 64 hex" if evm else "a base58 Solana signature"
            raise InvalidRequest("transaction_hash_invalid", f"{field} must be {shape}")
        return await self._v1_observe(
            wallet, session_id, step, fields, operation, named.lower() if evm else named
        )

    # the v1 helpers

    @staticmethod
    def _v1_fields(body: Any, required: set[str], optional: set[str] | None = None) -> dict[str, Any]:
        return object_fields(body, required, optional or set())

    @staticmethod
    def _v1_key(fields: dict[str, Any]) -> str:
        key = check_idempotency_key(fields.get("idempotency_key"))
        return key

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
        current = int(record.state["current_step"])
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
        key = f"{operation}:v{record.version}" if "idempotency_key" not in fields else self._v1_key(fields)
        request_sha = canonical_sha256({"operation": operation, **fields})
        if (replayed := await self._replayed(record, key, request_sha)) is not None:
            return replayed
        record = await self._expire_if_due(record)
        self._v1_step_check(record, k, operation)
        route = ROUTES[record.route]
        state = copy.deepcopy(record.state)
        if record.status == Status.ACTION_READY and "idempotency_key" not in fields:
            return SessionAnswer(200, {**self._view(record, "session"), "idempotent_replay": True})
        entry = state["steps"][k]
        input_base = (
            int(state["summary_steps"][0]["expected_input_base"])
            if k == 0
            else int(state["steps"][k - 1]["actual_output_base"])
        )
        if record.status == Status.ACTION_EXPIRED:
            if entry.get("claimed_tx_ids") or entry.get("source"):
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
            if signer in state["wallets"].values():
                raise InvalidRequest(
                    "event_signer_public_not_fresh", "event_signer_public must be a fresh key"
                )
            state["event_signer_public"] = signer
        try:
            outcome = await self._prepare_step(record, state, route, k, input_base, event)
        except ObservationUnavailable as exc:
            raise DependencyUnavailable(exc.reason, exc.message, retry_after_seconds=5) from None
        if outcome.event is event and event is Event.REFRESH:
            state["actions"][-1]["refreshed"] = True
        return await self._finish(record, outcome, key, request_sha)

    async def _v1_observe(
        self, wallet: str, session_id: Any, k: int, fields: dict[str, Any], operation: str, tx_id: str
    ) -> SessionAnswer:
        from routequote.core.sessions.evidence import ObservationRejected

        record = await self._v1_load(session_id, wallet)
        key = self._v1_key(fields)
        request_sha = canonical_sha256({"operation": operation, **fields})
        if (replayed := await self._replayed(record, key, request_sha)) is not None:
            return replayed
        record = await self._expire_if_due(record)
        self._v1_step_check(record, k, operation)
        self._check_operation(record, "observe")
        route = ROUTES[record.route]
        state = copy.deepcopy(record.state)
        try:
            if k == 2:
                outcome = await self._observe_settlement(record, state, route, tx_id)
            elif state["phase"] == "source":
                outcome = await self._observe_source(record, state, route, [tx_id])
            else:
                bridge = state["steps"][k]["bridge"]
                if tx_id != bridge.get("source_tx"):
                    raise ObservationRejected(
                        "observation_not_prepared_action",
                        "burn_signature is not the burn this session verified",
                    )
                outcome = await self._observe_cctp_relayed(record, state, route)
        except ObservationUnavailable as exc:
            raise DependencyUnavailable(exc.reason, exc.message, retry_after_seconds=5) from None
        return await self._finish(record, outcome, key, request_sha)

    async def _observe_cctp_relayed(
        self, record: SessionRecord, state: dict[str, Any], route: Route
    ) -> _Outcome:
        """v1: Iris attests the burn, anyone relays the mint; the service finds it on the destination and
        verifies it (`verify_cctp_mint`), never preparing it."""
        from routequote.core.sessions import evidence as ev

        k = state["current_step"]
        step = route.steps[k]
        entry = state["steps"][k]
        bridge = entry["bridge"]
        dst = step.target.chain
        wallet = state["wallets"][dst.value]
        if not bridge.get("attestation"):
            if not await self._attested(entry, bridge, dst):
                return _Outcome(Event.DESTINATION_PENDING, state, note="Circle has not attested the burn yet")
            # the attested message must be this session's burn (recipient, amount, domains): the receive
            # builder's checks, its bundle unused (v1 does not prepare the mint)
            self._receive_bundle(state, route, k)
        reader = self._evm_reader()
        dep = self.prepare.deployments[dst]
        transmitter = dep.message_transmitter_v2 or ""
        message = bytes.fromhex(bridge["message"][2:])
        latest = await reader.block_number(dst.value)
        start = bridge.get("mint_search_from_block")
        if start is None:
            start = max(0, latest - self.config.cctp_mint_search_blocks)
            bridge["mint_search_from_block"] = start
        logs = await reader.logs(dst.value, transmitter, ev.cctp_received_topics(message), int(start), latest)
        if not logs:
            entry["destination_status"] = "attested_awaiting_mint"
            return _Outcome(
                Event.DESTINATION_PENDING,
                state,
                note="attested: the mint is relayed by anyone (receiveMessage); observe again after it",
            )
        tx = await reader.transaction(dst.value, logs[0].tx_hash)
        if tx is None:
            entry["destination_status"] = "attested_awaiting_mint"
            return _Outcome(Event.DESTINATION_PENDING, state, note="the mint transaction is not final yet")
        evidence = ev.verify_cctp_mint(
            tx,
            message=message,
            attestation=bytes.fromhex(bridge["attestation"][2:]),
            usdc=dep.tokens["USDC"],
            recipient=wallet,
            transmitter=transmitter,
            required_confirmations=self._confirmations(dst),
        )
        if evidence.status == "pending":
            entry["destination_status"] = "mint_awaiting_finality"
            return _Outcome(Event.DESTINATION_PENDING, state, note="waiting for finality of the mint")
        entry["destination"] = {**self._evidence_entry(evidence), "kind": "cctp_mint_relayed"}
        assert evidence.actual_output_base is not None
        self._check_step_minimum(state, k, evidence.actual_output_base)
        state["current_action"] = None
        return await self._step_done(record, state, route, k, evidence.actual_output_base)

    async def _observe_settlement(
        self, record: SessionRecord, state: dict[str, Any], route: Route, tx_hash: str
    ) -> _Outcome:
        """v1 step 2: the bundler's `handleOps` transaction carrying the prepared user operation."""
        from routequote.core.sessions.evidence_4337 import verify_userop_settlement

        k = state["current_step"]
        entry = state["steps"][k]
        action = state.get("current_action")
        if (
            not action or action.get("kind") != "erc4337_settlement"
        ):  # pragma: no cover - guarded by the status
            raise Conflict("step_out_of_order", "no settlement plan was prepared for this step")
        plan = action["plan"]
        chain = route.steps[k].source.chain
        tx = await self._evm_reader().transaction(chain.value, tx_hash)
        if tx is None:
            return self._pending_source(state, [tx_hash], "the transaction is not mined yet")
        evidence = verify_userop_settlement(
            tx,
            plan=plan,
            entry_point=plan["entryPoint"],
            account=plan["smartAccount"],
            wallet=plan["wallet"],
            weth=plan["bounds"]["weth"],
            minimum_eth_out=int(plan["bounds"]["minimumEthOut"]),
            required_confirmations=self._confirmations(chain),
        )
        if evidence.status == "pending":
            return self._pending_source(state, [tx_hash], "waiting for finality")
        entry["claimed_tx_ids"] = [tx_hash]
        entry["source"] = self._evidence_entry(evidence)
        entry["settlement"] = evidence.bridge
        assert evidence.actual_output_base is not None
        self._check_step_minimum(state, k, evidence.actual_output_base)
        return await self._step_done(record, state, route, k, evidence.actual_output_base)

    async def _settlement_action(
        self, state: dict[str, Any], route: Route, k: int, amount_in: int, minimum: int, fee_pips: int
    ) -> dict[str, Any]:
        """The ERC-4337 settlement plan of step k (USDC -> native ETH on the destination), from chain reads."""
        from routequote.core.actions import erc4337 as aa
        from routequote.core.actions.common import ActionUnavailable
        from routequote.observe.evm_state import evm_state_for

        step = route.steps[k]
        chain = step.source.chain
        dep = self.prepare.deployments[chain]
        over = self.config.erc4337.get(chain.value, {})
        entry_point = str(over.get("entry_point") or aa.ENTRY_POINT_V07)
        factory = str(over.get("factory") or aa.SIMPLE_ACCOUNT_FACTORY_V07)
        if dep.swap_router02 is None or "WETH" not in dep.tokens or "USDC" not in dep.tokens:
            raise InvalidRequest(
                "route_not_prepare_ready", f"no Uniswap router / WETH / USDC pinned on {chain.value}"
            )
        state_reader = evm_state_for(self.evm)
        if state_reader is None or not getattr(self.evm, "configured", lambda _c: True)(chain.value):
            raise ObservationUnavailable(
                f"chain_rpc_not_configured:{chain.value}",
                f"{chain.value} cannot be read: its RPC URL is not set",
            )
        wallet = state["wallets"][chain.value]
        usdc = dep.tokens["USDC"]

        async def read(call: dict[str, str]) -> bytes:
            return await state_reader.call(chain.value, call["to"], call["data"])

        account = aa.decode_address(await read(aa.account_address_call(factory, wallet, 0)))
        deployed = len(await state_reader.code(chain.value, account)) > 0
        ep_nonce = (
            aa.decode_uint(await read(aa.entry_point_nonce_call(entry_point, account))) if deployed else 0
        )
        permit_nonce = aa.decode_uint(await read(aa.permit_nonce_call(usdc, wallet)))
        now = self.service.clock.now()
        # deadlines are judged by the chain's clock: never build one already behind the destination's time
        now_unix = max(int(now.timestamp()), await state_reader.timestamp(chain.value))
        request = aa.SettlementRequest(
            chain_id=int(CHAINS[chain].chain_id or 0),
            wallet=wallet,
            smart_account=account,
            account_deployed=deployed,
            entry_point_nonce=ep_nonce,
            permit_nonce=permit_nonce,
            usdc=usdc,
            weth=dep.tokens["WETH"],
            router=dep.swap_router02,
            pool_fee=fee_pips,
            amount_in=amount_in,
            minimum_eth_out=minimum,
            now_unix=now_unix,
            entry_point=entry_point,
            factory=factory,
            permit_name=over.get("permit_name"),
            permit_version=over.get("permit_version"),
        )
        try:
            plan = aa.build_settlement_plan(request)
        except ActionUnavailable as exc:
            raise InvalidRequest(
                "route_not_prepare_ready", exc.detail, details={"unavailable_reason": exc.reason}
            ) from None
        deadline = int(plan["bounds"]["permitDeadline"])
        return {
            "version": "routequote-v1-settlement-action",
            "kind": "erc4337_settlement",
            "action_id": self.service.ids.new_id(),
            "workflow_id": state["binding"]["session_id"],
            "step_index": k,
            "route": route.key,
            "provider": step.provider.value,
            "prepared_at": _iso(now),
            "expires_at": _iso(datetime.fromtimestamp(deadline, UTC)),
            "payload_sha256": canonical_sha256(plan),
            "quote_binding": state["binding"],
            "plan": plan,
            "bounds": plan["bounds"],
            "caller_steps": [
                "verify the plan (routequote.verify.verify_settlement_plan) with your own values",
                "sign permit.typedData with the wallet (EIP-712); attach it (erc4337.attach_permit_signature)",
                "sign the resulting userOpHash with the wallet (EIP-191 personal_sign)",
                "submit the PackedUserOperation with handleOps (any bundler), then observe_destination",
            ],
            "server_signing": False,
            "server_submission": False,
        }

    # ---- refresh and cancel -------------------------------------------------------------------------

    async def refresh(self, session_id: Any, token: str | None, body: Any) -> SessionAnswer:
        record = await self._load(session_id, token)
        key = self._parse_key_only(body)
        request_sha = canonical_sha256(body)
        route = ROUTES[record.route]
        if (replayed := await self._replayed(record, key, request_sha)) is not None:
            return replayed
        record = await self._expire_if_due(record)
        self._check_operation(record, "refresh")
        state = copy.deepcopy(record.state)
        k = state["current_step"]
        entry = state["steps"][k]
        if entry.get("claimed_tx_ids") or entry.get("destination_claimed_tx_ids") or entry.get("source"):
            raise Conflict(
                "refresh_not_allowed_after_observation",
                f"step {k} already has observed transactions; observe them instead of refreshing",
            )
        if state["phase"] == "destination":
            bundle = self._receive_bundle(state, route, k)
            state["current_action"] = bundle
            state["actions"].append(self._action_entry(bundle, "destination", refreshed=True))
            outcome = _Outcome(Event.REFRESH, state)
        else:
            action = state["current_action"]["unsigned_action"]
            outcome = await self._prepare_step(
                record, state, route, k, int(action["inputAmount"]), Event.REFRESH
            )
            if outcome.event is Event.REFRESH:
                state["actions"][-1]["refreshed"] = True
        return await self._finish(record, outcome, key, request_sha)

    async def cancel(self, session_id: Any, token: str | None, body: Any) -> SessionAnswer:
        record = await self._load(session_id, token)
        key = self._parse_key_only(body)
        request_sha = canonical_sha256(body)
        if (replayed := await self._replayed(record, key, request_sha)) is not None:
            return replayed
        self._check_operation(record, "cancel")
        state = copy.deepcopy(record.state)
        funds = dict(state["funds"])
        if record.status in (Status.ACTION_READY, Status.ACTION_EXPIRED):
            funds["note"] = "the current action was not observed: if you did not submit it, nothing moved"
        elif record.status == Status.AWAITING_SOURCE_RECEIPT:
            funds["note"] = (
                "transactions you named may still land: check them on chain; the session will not "
                "follow them further"
            )
        elif record.status == Status.AWAITING_DESTINATION:
            funds["note"] = (
                "a bridge message is in flight; cancelling does not stop it: it arrives at "
                f"{funds['endpoint']} (or refunds on origin)"
            )
        state["cancelled"] = {
            "at": _iso(self.service.clock.now()),
            "from_status": record.status,
            "funds": funds,
        }
        state["funds"] = funds
        state["current_action"] = None
        return await self._finish(record, _Outcome(Event.CANCEL, state), key, request_sha)

    @staticmethod
    def _parse_key_only(body: Any) -> str:
        body = require_object(body)
        extra = sorted(set(body) - {"idempotency_key"})
        if extra:
            raise InvalidRequest(
                "unknown_field", f"{len(extra)} properties not allowed (allowed: idempotency_key)"
            )
        key = check_idempotency_key(body.get("idempotency_key"))
        return key

    # ---- committing ---------------------------------------------------------------------------------

    async def _commit(
        self,
        record: SessionRecord,
        event: Event,
        state: dict[str, Any],
        idempotency: tuple[str, str, str, dict[str, Any]] | None = None,
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
        entry = SessionEvent(record.session_id, version, record.status, event.value, status.value, now)
        ok = await stored(
            self.store.transition(record.session_id, record.version, status.value, state, entry, idempotency)
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
        return SessionRecord(
            record.session_id,
            record.token_sha256,
            version,
            status.value,
            record.route,
            record.created_at,
            now,
            state,
        )

    async def _finish(
        self, record: SessionRecord, outcome: _Outcome, key: str, request_sha: str
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
            outcome.state,
        )
        stored: dict[str, Any]
        if outcome.error is not None:
            stored = {"http_status": 409, "body": outcome.error.body()}
        else:
            stored = {"http_status": 200, "body": self._view(provisional, "session", note=outcome.note)}
        try:
            committed = await self._commit(
                record, outcome.event, outcome.state, (scope, key, request_sha, stored)
            )
        except Exception as exc:
            from routequote.ports import IdempotencyConflict

            if isinstance(exc, IdempotencyConflict):
                raise Conflict(
                    "idempotency_key_reused_with_different_request",
                    "this idempotency_key was already used on this session",
                ) from None
            raise
        if committed is None:
            raise Conflict(
                "session_changed_concurrently",
                "another request changed this session first; nothing was applied: read it and retry",
                retry_after_seconds=0,
            )
        if outcome.error is not None:
            raise outcome.error
        return SessionAnswer(200, stored["body"])

    # ---- views --------------------------------------------------------------------------------------

    @staticmethod
    def _funds(endpoint: str, amount: str | None, wallet: str, where: str, note: str) -> dict[str, Any]:
        return {"endpoint": endpoint, "amount_base": amount, "wallet": wallet, "state": where, "note": note}

    @staticmethod
    def _step_entry(step: Step) -> dict[str, Any]:
        return {
            "index": step.index,
            "provider": step.provider.value,
            "from": step.source.key,
            "to": step.target.key,
            "status": "pending",
        }

    @staticmethod
    def _action_entry(bundle: dict[str, Any], phase: str, refreshed: bool = False) -> dict[str, Any]:
        return {
            "action_id": bundle["action_id"],
            "step_index": bundle["step_index"],
            "phase": phase,
            "payload_sha256": bundle["payload_sha256"],
            "prepared_at": bundle["prepared_at"],
            "expires_at": bundle["expires_at"],
            "refreshed": refreshed,
        }

    def _view(self, record: SessionRecord, view: str, note: str | None = None) -> dict[str, Any]:
        state = record.state
        status = Status(record.status)
        head: dict[str, Any] = {
            "version": SESSION_VERSION,
            "view": view,
            "session_id": record.session_id,
            "status": status.value,
            "next_operation": NEXT_OPERATION[status].value,
            "operations_allowed": operations_allowed(status),
            "route": record.route,
            "step_count": len(state["steps"]),
            "current_step": state["current_step"],
            "phase": state["phase"],
            "mode": state.get("mode", MODE_V2),
            "session_version": record.version,
            "created_at": state["created_at"],
            "updated_at": _iso(record.updated_at),
        }
        action = state.get("current_action")
        if view == "session":
            head.update(
                action_available=status is Status.ACTION_READY and action is not None,
                current_action=action if status is Status.ACTION_READY else None,
                quote_binding=state["binding"],
                funds=state["funds"],
                steps=state["steps"],
                reapproval=state.get("reapproval"),
                cancelled=state.get("cancelled"),
                note=note,
            )
        elif view == "workflow":
            head.update(
                wallets=state["wallets"],
                steps=[
                    {
                        **s,
                        "quoted": {
                            k: state["summary_steps"][s["index"]][k]
                            for k in (
                                "expected_input_base",
                                "minimum_input_base",
                                "expected_output_base",
                                "minimum_output_base",
                            )
                        },
                    }
                    for s in state["steps"]
                ],
                actions=state["actions"],
            )
        elif view == "receipt":
            head.update(receipt=self._receipt(state))
        else:
            head.update(
                action_available=status is Status.ACTION_READY and action is not None,
                next_action=action if status is Status.ACTION_READY else None,
                instructions=_INSTRUCTIONS[status],
            )
        head.update(idempotent_replay=False, signed=False, submitted=False, **SERVER_FLAGS)
        return head

    def _receipt(self, state: dict[str, Any]) -> dict[str, Any]:
        steps = []
        for s in state["steps"]:
            q = state["summary_steps"][s["index"]]
            src = s.get("source") or {}
            dst = s.get("destination") or {}
            steps.append(
                {
                    "index": s["index"],
                    "provider": s["provider"],
                    "from": s["from"],
                    "to": s["to"],
                    "status": s["status"],
                    "quoted": {
                        "expected_input_base": q["expected_input_base"],
                        "minimum_input_base": q["minimum_input_base"],
                        "expected_output_base": q["expected_output_base"],
                        "minimum_output_base": q["minimum_output_base"],
                    },
                    "requoted": s.get("requote"),
                    "action_minimum_output_base": s.get("minimum_output_base"),
                    "actual": {
                        "input_base": src.get("actual_input_base"),
                        "output_base": s.get("actual_output_base"),
                        "service_fee_paid_base": src.get("service_fee_paid_base"),
                        "network_fee": src.get("network_fee"),
                        "source_tx_ids": src.get("tx_ids"),
                        "destination_tx_ids": dst.get("tx_ids"),
                        "block_times": src.get("block_times"),
                        "bridge": s.get("bridge"),
                    },
                }
            )
        quote = state["quote"]
        final = state["steps"][-1].get("actual_output_base")
        realized: dict[str, Any] = {"complete": final is not None}
        if final is not None:
            exp, mn = int(quote["expected_output_base"]), int(quote["minimum_output_base"])
            got = int(final)
            vs_exp = Fraction(got - exp, exp) * 10_000
            exp_cost_bps = Fraction(str(quote["expected_total_cost_percent"])) * 100
            cost = 10_000 - (10_000 - exp_cost_bps) * Fraction(got, exp)
            realized.update(
                actual_output_base=final,
                quoted_expected_output_base=quote["expected_output_base"],
                quoted_minimum_output_base=quote["minimum_output_base"],
                approved_minimum_output_base=state["approval"]["minimum_output_base"],
                at_or_above_minimum=got >= mn,
                realized_vs_quoted_expected_bps=round(float(vs_exp), 2),
                quoted_expected_cost_bps=round(float(exp_cost_bps), 2),
                realized_cost_bps=round(float(cost), 2),
                cost_basis="token path and provider fees in bps of the quoted input value at the quote's prices; "
                "network gas listed per step, unpriced",
            )
        return {
            "quote": quote,
            "steps": steps,
            "route": realized,
            "funds": state["funds"],
            "market_note": "re-quotes are priced from the market named in each step's `requoted` block",
        }


_INSTRUCTIONS = {
    Status.ACTION_REQUIRED: "v1 corridor: ask for the next action (prepare_action: the tool of the current step); "
    "nothing is built before you ask",
    Status.ACTION_READY: "verify the action (routequote verify-action), sign and submit it yourself, then observe "
    "with its transaction hashes",
    Status.AWAITING_SOURCE_RECEIPT: "observe again once the named transactions are final",
    Status.AWAITING_DESTINATION: "the bridge is in flight: observe again to follow it (name the destination "
    "transaction where you relayed it)",
    Status.ACTION_EXPIRED: "the action expired unsubmitted: refresh it (never re-submit an expired action)",
    Status.REAPPROVAL_REQUIRED: "nothing further in this session: quote from where the funds are and approve anew",
    Status.COMPLETE: "done: read the receipt",
    Status.CANCELLED: "cancelled: see where the funds are",
    Status.FAILED: "failed: see where the funds are",
}

__all__ = ["SessionAnswer", "SessionConfig", "SessionService", "token_sha256", "PricedStep"]
