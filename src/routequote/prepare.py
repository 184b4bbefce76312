"""PrepareService: POST /v2/prepare turns an approved quote into the first unsigned action.

It never signs and never submits. Order of checks, all before anything is built or stored:
secret-looking material (400) -> request shape, intent, wallets, event signer (400) -> route
prepare-readiness (400) -> approval_v3 shape (400) -> idempotency replay (same body: same bundle;
different body: 409) -> approval_v3 binding to the issued quote (409) -> build the bundle.
Without approval_v3 the request is served as `legacy_advisory` from a fresh internal quote.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from routequote.config import Settings
from routequote.core.actions.approval import U64_MAX, UINT256_MAX, check_approval, parse_approval, reapproval
from routequote.core.actions.bundle import assemble_bundle, unix
from routequote.core.actions.common import ActionUnavailable, checksum
from routequote.core.actions.evm import (
    DEFAULT_DEPLOYMENTS,
    EvmDeployment,
    build_evm,
    evm_step_supported,
)
from routequote.core.actions.plan import (
    ACROSS_FILL_DEADLINE_SECONDS,
    BUNDLE_TTL_SECONDS,
    ONCHAIN_DEADLINE_SECONDS,
    StepPlan,
)
from routequote.core.actions.solana import build_solana, solana_step_supported
from routequote.core.actions.solana_swaps import (
    ORCA_POOLS,
    POOL_STATE_LIVE,
    POOL_STATE_SNAPSHOT,
    RAYDIUM_MAX_TICK_ARRAYS,
    RAYDIUM_POOLS,
    SOLANA_POOL_STATE_UNAVAILABLE,
    RaydiumLiveAccounts,
    SolanaPoolRead,
    raydium_sdk_tick_arrays,
)
from routequote.core.assets import CHAINS, Asset, Chain, ChainFamily
from routequote.core.bounds import bounds_block
from routequote.core.field_rules import EVM_ADDRESS_RE, SOLANA_ADDRESS_RE, require_object
from routequote.core.hashing import canonical_sha256
from routequote.core.intent import QUOTE_FIELDS, QuoteIntent, parse_quote_request
from routequote.core.pricing import PricedStep
from routequote.core.providers import PROVIDERS
from routequote.core.quote import APPROVAL_VERSION
from routequote.core.routes import ROUTES, Provider, Route, Step
from routequote.core.wallet_rules import check_signing_wallet, known_addresses
from routequote.errors import InvalidRequest
from routequote.input_rules import looks_secret_name, looks_secret_value, name_list, safe_name
from routequote.ports import IdempotencyStore, IssuedQuote
from routequote.preflight import NO_CHAIN_ACCESS, PreflightChecker
from routequote.service import RouteQuoteService

PREPARE_FIELDS = ("caller_approved", *QUOTE_FIELDS, "wallets", "event_signer_public", "approval_v3")
HASH_FIELDS = ("quote_fingerprint", "direct_route_summary_sha256")
IDEMPOTENCY_RECORDS = 2048
IDEMPOTENCY_TTL_SECONDS = BUNDLE_TTL_SECONDS  # a replay never returns an expired bundle
BINDING_VERSION = "routequote-quote-bound-action-constraints-v1"


def _secret_path(value: Any, path: str, allow_hex64: bool) -> str | None:
    """The path of the first secret-looking key or value, or None. The path names keys through `safe_name`:
    a secret-shaped name is never repeated."""
    if isinstance(value, dict):
        for k, v in value.items():
            here = f"{path}.{safe_name(k)}"
            if looks_secret_name(str(k)):
                return here
            # approval hashes are 64 hex by contract; anything else 64-hex looks like a private key
            found = _secret_path(v, here, allow_hex64=k in HASH_FIELDS)
            if found:
                return found
    elif isinstance(value, list):
        if len(value) in (32, 64) and all(
            isinstance(b, int) and not isinstance(b, bool) and 0 <= b <= 255 for b in value
        ):
            return path  # a raw key byte array
        for i, v in enumerate(value):
            found = _secret_path(v, f"{path}[{i}]", False)
            if found:
                return found
    elif isinstance(value, str) and looks_secret_value(value, hash_field=allow_hex64):
        return path
    return None


def idempotency_scope(approval: dict[str, Any]) -> str:
    """The record key of an idempotency_key: scoped to the quote and the selected mode, as
    `continuation_v3.idempotency.scope` (`quote_and_selected_mode`) advertises."""
    return canonical_sha256([approval["quote_id"], approval["selected_mode"], approval["idempotency_key"]])


def valid_address(chain: Chain, address: Any) -> bool:
    if not isinstance(address, str):
        return False
    if CHAINS[chain].family is ChainFamily.EVM:
        return bool(EVM_ADDRESS_RE.fullmatch(address))
    if not SOLANA_ADDRESS_RE.fullmatch(address):
        return False
    from solders.pubkey import Pubkey

    try:
        return len(bytes(Pubkey.from_string(address))) == 32
    except ValueError:
        return False


@dataclass(frozen=True, slots=True)
class PrepareRequest:
    """A parsed prepare (or session-create) request: what `PrepareService.parse_request` checked, typed."""

    intent: QuoteIntent
    route: Route
    wallets: dict[str, str]  # chain name -> the checked (EVM: checksummed) signing wallet
    event_signer_public: str | None  # the fresh Solana co-signer of a CCTP burn, on the routes that need one
    approval: dict[str, Any] | None  # the parsed approval_v3, or None (legacy advisory)


PINNED_SOLANA_POOLS = {
    **{pid: p.whirlpool for pid, p in ORCA_POOLS.items()},
    **{pid: p.pool for pid, p in RAYDIUM_POOLS.items()},
}


class PrepareService:
    def __init__(
        self,
        service: RouteQuoteService,
        settings: Settings | None = None,
        *,
        deployments: dict[Chain, EvmDeployment] | None = None,
        idempotency: IdempotencyStore,
    ) -> None:
        settings = settings or Settings()
        self.service = service
        self.deployments = {**DEFAULT_DEPLOYMENTS, **(deployments or {})}
        if not valid_address(Chain.BASE, settings.fee_recipient_evm):
            raise ValueError("ROUTEQUOTE_FEE_RECIPIENT_EVM must be a 0x-prefixed 20-byte address")
        if not valid_address(Chain.SOLANA, settings.fee_recipient_solana):
            raise ValueError("ROUTEQUOTE_FEE_RECIPIENT_SOLANA must be a base58 32-byte public key")
        self.fee_recipients = {
            ChainFamily.EVM: checksum(settings.fee_recipient_evm),
            ChainFamily.SOLANA: settings.fee_recipient_solana,
        }
        self.known_addresses = known_addresses(self.deployments, self.fee_recipients)
        self.idempotency = idempotency  # the composition root chooses the store (app.build_service)
        self._reasons = {key: self._unsupported_reason(r) for key, r in ROUTES.items()}
        # what the caller will need on each chain (advice, response-only); the composition root gives it readers
        self.preflight = PreflightChecker(
            enabled=False, reason=NO_CHAIN_ACCESS, token_address=self.token_address
        )

    # ---- readiness ----------------------------------------------------------------------------------

    def _unsupported_reason(self, route: Route) -> str | None:
        return self.step_unsupported_reason(route.steps[0])

    def step_unsupported_reason(self, step: Step) -> str | None:
        """None when this build can prepare `step`; otherwise why not (snake_case reason first)."""
        chain = step.source.chain
        if CHAINS[chain].family is ChainFamily.EVM:
            return evm_step_supported(step.provider, chain, self.deployments)
        return solana_step_supported(step.provider)

    async def solana_pool_tick(
        self, route: Route, step: Step | None = None
    ) -> tuple[int | None, SolanaPoolRead | None]:
        """One read of a Solana swap step's pinned pool from a fresh market view (live chain state, or the
        embedded snapshot's modelled state): its current tick and what the swap's accounts follow; else
        (None, None) for a step that is not a Solana swap.

        The pool must be at its pinned account and, for Raydium, name the pinned amm_config / vaults / tick
        spacing and an observation account; else 400 `route_not_prepare_ready` and nothing is created."""
        step = step or route.steps[0]
        if step.provider not in (Provider.ORCA_WHIRLPOOL, Provider.RAYDIUM_CLMM):
            return None, None
        view = await self.service.market.view()
        pool_id = step.pool_id or ""
        pool = view.pools.get(pool_id)
        if (
            pool is None
            or pool.address != PINNED_SOLANA_POOLS.get(pool_id)
            or pool.state_source not in (POOL_STATE_LIVE, POOL_STATE_SNAPSHOT)
        ):
            raise InvalidRequest(
                "route_not_prepare_ready",
                f"step {step.index} of {route.key} cannot be prepared now: {SOLANA_POOL_STATE_UNAVAILABLE}",
                details={"route": route.key, "unavailable_reason": "solana_pool_state_unavailable"},
            )
        source = pool.state_source
        tick = pool.clmm.tick_current
        if step.provider is not Provider.RAYDIUM_CLMM:
            return tick, SolanaPoolRead(source, tick, pool.clmm)
        rp = RAYDIUM_POOLS[pool_id]
        acc = pool.accounts
        pinned = {"amm_config": rp.amm_config, "vault_0": rp.vault_0, "vault_1": rp.vault_1}
        ext = acc.get("tick_array_bitmap_extension")
        if (
            any(acc.get(k) != v for k, v in pinned.items())
            or not acc.get("observation")
            or pool.clmm.tick_spacing != rp.tick_spacing
            or ext not in (None, rp.bitmap_extension)
        ):
            raise InvalidRequest(
                "route_not_prepare_ready",
                f"step {step.index} of {route.key} cannot be prepared now: the Raydium pool state does not carry "
                "the pinned amm_config / vaults / tick spacing and an observation account",
                details={"route": route.key, "unavailable_reason": "solana_live_pool_accounts_mismatch"},
            )
        span = rp.tick_spacing * 60
        current = (tick // span) * span
        zero_for_one = step.source.key == rp.token_0
        if not any((s <= current) if zero_for_one else (s >= current) for s in pool.initialized_tick_arrays):
            raise InvalidRequest(  # refused before a quote is issued; the amount-specific check is at build
                "route_not_prepare_ready",
                f"step {step.index} of {route.key} cannot be prepared now: no initialized Raydium tick array was "
                f"read at or past the current tick ({tick}) in the swap direction, so the program would refuse it",
                details={
                    "route": route.key,
                    "unavailable_reason": "solana_no_initialized_tick_array_in_swap_direction",
                },
            )
        read = SolanaPoolRead(source, tick, pool.clmm, pool.initialized_tick_arrays, acc["observation"], ext)
        return tick, read

    def _raydium_accounts(self, step: Step, read: SolanaPoolRead, net_input: int) -> RaydiumLiveAccounts:
        """The Raydium swap's accounts for this exact input, chosen as the Raydium SDK chooses them."""
        rp = RAYDIUM_POOLS[step.pool_id or ""]
        zero_for_one = step.source.key == rp.token_0
        starts = raydium_sdk_tick_arrays(read.clmm, read.initialized_tick_arrays, zero_for_one, net_input)
        if not starts or read.observation is None:
            raise InvalidRequest(
                "route_not_prepare_ready",
                f"step {step.index} cannot be prepared now: the pool state read ({read.source}) has no initialized "
                f"Raydium tick array at or past the current tick ({read.tick_current}) in the swap direction that "
                "fills this input, so the program would refuse the swap",
                details={"unavailable_reason": "solana_no_initialized_tick_array_in_swap_direction"},
            )
        if len(starts) > RAYDIUM_MAX_TICK_ARRAYS:
            raise InvalidRequest(
                "route_not_prepare_ready",
                f"step {step.index} cannot be prepared now: this input walks {len(starts)} Raydium tick arrays, "
                f"more than the {RAYDIUM_MAX_TICK_ARRAYS} a verifier accepts; try a smaller amount",
                details={"unavailable_reason": "solana_swap_crosses_too_many_tick_arrays"},
            )
        return RaydiumLiveAccounts(read.observation, starts, read.bitmap_extension)

    def token_address(self, asset: Asset) -> str | None:
        """The ERC-20 the builders use for an EVM asset (the deployment's; None for a native or Solana one)."""
        if asset.chain is Chain.SOLANA or asset.is_native:
            return asset.address
        return self.deployments[asset.chain].tokens.get(asset.token.value, asset.address)

    def supported_routes(self) -> frozenset[str]:
        return frozenset(k for k, reason in self._reasons.items() if reason is None)

    def unsupported_reasons(self) -> dict[str, str]:
        """Route key -> why its first step cannot be prepared in this build."""
        return {k: reason for k, reason in self._reasons.items() if reason is not None}

    def signing_wallet(self, chain: Chain, address: object, reason: str, field: str) -> str:
        """The canonical form of a wallet that must sign on `chain` (core/wallet_rules.py), or 400 `reason`."""
        family = CHAINS[chain].family
        return check_signing_wallet(family, address, self.known_addresses, reason=reason, field=field)

    def fee_recipient_for(self, chain: Chain) -> str:
        return self.fee_recipients[CHAINS[chain].family]

    # ---- request parsing ----------------------------------------------------------------------------

    def parse_request(self, body: Any, mode: str | None = None) -> PrepareRequest:
        """The checked request of POST /v2/prepare (and of a session's create, without its idempotency_key), or
        the 400 of its first problem. `mode` is the approval_v3 `selected_mode` the caller's operation takes."""
        body = require_object(body)
        secret = _secret_path(body, "body", False)
        if secret:
            raise InvalidRequest(
                "secret_material_rejected",
                f"{secret[:120]} looks like secret material (a private key, seed, mnemonic, signature or signed "
                "transaction). Never send secrets: the service never signs.",
            )
        extra = sorted(set(body) - set(PREPARE_FIELDS))
        if extra:
            raise InvalidRequest("unknown_field", f"properties not allowed: {name_list(extra)}")
        if body.get("caller_approved") is not True:
            raise InvalidRequest("caller_approval_required", "caller_approved must be the literal true")
        intent = parse_quote_request({k: body[k] for k in QUOTE_FIELDS if k in body})
        route = ROUTES[intent.route_key]
        wallets = body.get("wallets")
        if not isinstance(wallets, dict):
            raise InvalidRequest("wallets_required", "wallets must be an object of chain -> public address")
        if set(wallets) != set(route.required_wallet_chains):
            raise InvalidRequest(
                "route_specific_chain_wallets_required",
                f"wallets must name exactly the route's chains: {list(route.required_wallet_chains)}",
                details={"required_wallet_chains": list(route.required_wallet_chains)},
            )
        wallets = {
            name: self.signing_wallet(Chain(name), address, "invalid_wallet_address", f"wallets.{name}")
            for name, address in wallets.items()
        }
        signer = body.get("event_signer_public")
        if route.event_signer_required:
            if signer is None:
                raise InvalidRequest(
                    "event_signer_public_required",
                    "this route burns CCTP on Solana: send event_signer_public, the public key of a fresh keypair "
                    "you generate to co-sign the burn",
                )
            signer = self.signing_wallet(
                Chain.SOLANA, signer, "invalid_event_signer_public", "event_signer_public"
            )
            if signer in wallets.values():
                raise InvalidRequest(
                    "event_signer_public_not_fresh", "event_signer_public must be a fresh key"
                )
        elif signer is not None:
            raise InvalidRequest(
                "event_signer_public_not_accepted_for_this_route", "this route has no Solana CCTP burn"
            )
        if route.key not in self._reasons or self._reasons[route.key] is not None:
            raise InvalidRequest(
                "route_not_prepare_ready",
                f"the first step of {route.key} cannot be prepared in this build: {self._reasons.get(route.key)}",
                details={"route": route.key, "unavailable_reason": self._reasons.get(route.key)},
            )
        # the bounds must fit the amount fields of the first step's chain (u64 on Solana, uint256 on EVM)
        max_base = (
            U64_MAX if CHAINS[route.steps[0].source.chain].family is ChainFamily.SOLANA else UINT256_MAX
        )
        approval = (
            parse_approval(body["approval_v3"], max_base=max_base, mode=mode)
            if body.get("approval_v3") is not None
            else None
        )
        return PrepareRequest(intent, route, dict(wallets), signer, approval)

    # ---- the operation ------------------------------------------------------------------------------

    async def prepare(self, body: Any, *, mode: str = "one_shot") -> dict[str, Any]:
        """POST /v2/prepare: a one_shot approval or none (legacy advisory); a session approval belongs to
        /v2/session. (`mode="session"` is the session engine's view of step 0, for tests of the builders.)"""
        parsed = self.parse_request(body, mode)
        intent, route, wallets, approval = parsed.intent, parsed.route, parsed.wallets, parsed.approval
        signer = parsed.event_signer_public
        clock = self.service.clock
        now_mono = clock.monotonic()
        body_sha = canonical_sha256(body)
        if approval is not None:
            key = idempotency_scope(approval)
            record = await self.idempotency.get(key, now_mono)
            if record is not None:
                recorded_sha, recorded_response = record
                if recorded_sha != body_sha:
                    raise reapproval(
                        "idempotency_key_reused_with_different_request",
                        "this idempotency_key was used with a different request; nothing was created",
                        route,
                    )
                preflight = await self.preflight.check(route, wallets, recorded_response, clock.now())
                return {**recorded_response, "idempotent_replay": True, "preflight": preflight}
            issued = await self.service.issued_quote(approval["quote_id"])
            check_approval(
                approval, issued.payload if issued else None, route, intent.as_request(), now=clock.now()
            )
            assert issued is not None
            pool_tick, raydium_live = await self.solana_pool_tick(route)
        else:
            pool_tick, raydium_live = await self.solana_pool_tick(
                route
            )  # refused before a fresh quote is issued
            issued = await self.service.quote(intent)
        bundle = self._build(issued, route, wallets, signer, approval, pool_tick, raydium_live)
        preflight = await self.preflight.check(route, wallets, bundle, clock.now())
        response = {**bundle, "idempotent_replay": False, "preflight": preflight}
        if approval is not None:
            await self.idempotency.put(
                idempotency_scope(approval), body_sha, bundle, IDEMPOTENCY_TTL_SECONDS, now_mono
            )
        return response

    def _build(
        self,
        issued: IssuedQuote,
        route: Route,
        wallets: dict[str, str],
        signer: str | None,
        approval: dict[str, Any] | None,
        pool_tick: int | None = None,
        raydium_live: SolanaPoolRead | None = None,
    ) -> dict[str, Any]:
        quote = issued.payload
        ps = issued.body.pricing.steps[0]
        min_out = ps.minimum_output_base
        if approval is not None and len(route.steps) == 1:
            min_out = max(min_out, int(approval["minimum_output_base"]))
        pool_fee = None
        if PROVIDERS[ps.step.provider].pool_fee_tier:
            pool_fee = next(
                (
                    f["fee_pips"]
                    for f in quote["cost_summary"]["provider_fee_components"]
                    if f["step_index"] == ps.step.index and "fee_pips" in f
                ),
                None,
            )
        now = self.service.clock.now()
        quote_expiry = unix(
            now + timedelta(seconds=max(0.0, issued.expires_at_monotonic - self.service.clock.monotonic()))
        )
        return self.build_step(
            route,
            ps,
            minimum_output_base=min_out,
            wallets=wallets,
            signer=signer,
            pool_fee_pips=pool_fee,
            pool_tick=pool_tick,
            raydium_live=raydium_live,
            binding=self.quote_binding(quote, approval),
            summary_steps=quote["direct_route_summary"]["steps"],
            workflow_id=self.service.ids.new_id(),
            quote_expiry_unix=quote_expiry,
            market=quote["market"],
        )

    def quote_binding(self, quote: dict[str, Any], approval: dict[str, Any] | None) -> dict[str, Any]:
        """The bundle's `quote_binding`: what the action is bound to (an approval, or legacy advisory)."""
        cont = quote["continuation_v3"]
        if approval is not None:
            return {
                "version": BINDING_VERSION,
                "enforcement": "server_enforced_quote_binding",
                "approval_v3_version": APPROVAL_VERSION,
                "quote_id": quote["quote_id"],
                "quote_fingerprint": cont["quote_fingerprint"],
                "direct_route_summary_sha256": cont["direct_route_summary_sha256"],
                "selected_mode": approval["selected_mode"],
                "idempotency_key": approval["idempotency_key"],
                "maximum_input_base": approval["maximum_input_base"],
                "minimum_output_base": approval["minimum_output_base"],
                "whole_route_path_and_bounds_enforced": True,
                "server_signing": False,
                "server_submission": False,
            }
        return {
            "version": "legacy_advisory",
            "enforcement": "legacy_advisory",
            "quote_id": quote["quote_id"],
            "quote_fingerprint": cont["quote_fingerprint"],
            "direct_route_summary_sha256": cont["direct_route_summary_sha256"],
            "caller_approved_boolean_is_not_human_proof": True,
            "whole_route_path_and_bounds_enforced": False,
            "note": "no approval_v3: served from a fresh internal quote; bind an approval_v3 to enforce bounds",
            "server_signing": False,
            "server_submission": False,
        }

    def build_step(
        self,
        route: Route,
        ps: PricedStep,
        *,
        minimum_output_base: int,
        wallets: dict[str, str],
        signer: str | None,
        pool_fee_pips: int | None,
        pool_tick: int | None,
        raydium_live: SolanaPoolRead | RaydiumLiveAccounts | None,
        binding: dict[str, Any],
        summary_steps: list[dict[str, Any]],
        workflow_id: str,
        quote_expiry_unix: int | None,
        market: Mapping[str, Any],
        approved_quote_market: Mapping[str, Any] | None = None,
        approved_quote_components: Sequence[str] = (),
    ) -> dict[str, Any]:
        """The bundle for one priced step of `route` (the first step on prepare; any step in a session).
        `raydium_live` is the `SolanaPoolRead` of a Solana swap step (`solana_pool_tick`), whatever the venue.
        `market` labels the market `ps` was priced on (a quote's `market` block or `market_label`); a session
        step also names the approved quote whose minimums it is held to (`core/bounds.py`)."""
        step = ps.step
        source: str | None = None
        if isinstance(raydium_live, SolanaPoolRead):
            source = raydium_live.source
            raydium_live = (
                self._raydium_accounts(step, raydium_live, ps.expected_input_base - ps.service_fee_base)
                if step.provider is Provider.RAYDIUM_CLMM
                else None
            )
        now = self.service.clock.now()
        prepared = unix(now)
        spec = PROVIDERS[step.provider]
        plan = StepPlan(
            route=route,
            step=step,
            input_base=ps.expected_input_base,
            fee_base=ps.service_fee_base,
            minimum_output_base=minimum_output_base,
            expected_output_base=ps.expected_output_base,
            max_provider_fee_base=ps.provider_fee_max_base if spec.bounded_provider_fee else 0,
            native_fee_wei=ps.native_fee_max_wei if spec.native_messaging_fee else 0,
            wallets=wallets,
            fee_recipient=self.fee_recipient_for(step.source.chain),
            event_signer_public=signer if step.source.chain is Chain.SOLANA else None,
            prepared_at_unix=prepared,
            deadline_unix=prepared + ONCHAIN_DEADLINE_SECONDS,
            fill_deadline_unix=prepared + ACROSS_FILL_DEADLINE_SECONDS,
            pool_fee_pips=pool_fee_pips,
            pool_tick_current=pool_tick,
            raydium_live=raydium_live,
            pool_state_source=source,
        )
        try:
            build = (
                build_evm(plan, self.deployments)
                if CHAINS[step.source.chain].family is ChainFamily.EVM
                else build_solana(plan)
            )
        except ActionUnavailable as exc:
            raise InvalidRequest(
                "route_not_prepare_ready", exc.detail, details={"unavailable_reason": exc.reason}
            ) from None
        return assemble_bundle(
            plan,
            build,
            workflow_id=workflow_id,
            action_id=self.service.ids.new_id(),
            prepared_at=now,
            quote_binding=binding,
            summary_steps=summary_steps,
            quote_expiry_unix=quote_expiry_unix,
            bounds=bounds_block(
                market,
                step,
                pool_state_from_snapshot=source == POOL_STATE_SNAPSHOT,
                approved_quote_market=approved_quote_market,
                approved_quote_components=approved_quote_components,
            ),
        )
