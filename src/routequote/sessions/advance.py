"""The next action of a session, built from what actually arrived: re-quote the rest of the route fresh from
the verified output, hold it to what the caller approved, then build the step's action (`PrepareService`),
the CCTP receiveMessage, or the v1 corridor's ERC-4337 settlement plan (from chain reads through the
`EvmStateReader` port). Below the approval nothing is built: the session parks with 409."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from routequote.core.actions import erc4337 as aa
from routequote.core.actions.cctp_receive import assemble_receive_bundle
from routequote.core.actions.cctp_solana_receive import assemble_solana_receive_bundle
from routequote.core.actions.cctp_solana_state import fee_recipient_token_account, token_messenger_address
from routequote.core.actions.common import ActionUnavailable
from routequote.core.assets import CHAINS, Chain, ChainFamily
from routequote.core.bounds import bounds_block, market_label, step_components
from routequote.core.hashing import canonical_sha256
from routequote.core.pricing import price_steps_from
from routequote.core.providers import PROVIDERS
from routequote.core.routes import Route
from routequote.core.sessions.entries import CctpBurn, Requote
from routequote.core.sessions.evidence import ObservationRejected
from routequote.core.sessions.kinds.cctp_mint_evm import attested_bytes
from routequote.core.sessions.state import (
    Decision,
    NextAction,
    State,
    install_action,
    iso,
    reapproval,
)
from routequote.errors import InvalidRequest
from routequote.ports import EvmStateReader, ObservationUnavailable, SolanaChainReader
from routequote.prepare import PrepareService


class ActionBuilder:
    def __init__(
        self, prepare: PrepareService, evm_state: EvmStateReader | None, erc4337: dict[str, dict[str, Any]]
    ) -> None:
        self.prepare = prepare
        self.service = prepare.service
        self.evm_state = evm_state
        self.erc4337 = erc4337

    async def next_step(self, session_id: str, state: State, route: Route, request: NextAction) -> Decision:
        """Price steps k.. fresh from `input_base`, hold them to the approval, build step k's action."""
        k, input_base, event = request.step, request.input_base, request.event
        view = await self.service.market.view()
        fresh = price_steps_from(route, k, input_base, view)
        ps = fresh[0]
        step = ps.step
        quoted_min = int(state.summary_steps[k]["minimum_output_base"])
        approved_min = int(state.approval["minimum_output_base"])
        projected_min = fresh[-1].minimum_output_base
        requote = Requote.of(
            market_as_of=view.as_of,
            market_source=view.source,
            market_live=view.live,
            input_base=str(input_base),
            expected_output_base=str(ps.expected_output_base),
            minimum_output_base=str(ps.minimum_output_base),
            projected_route_expected_output_base=str(fresh[-1].expected_output_base),
            projected_route_minimum_output_base=str(projected_min),
        )
        state = state.with_step(k, state.step(k).set(requote=requote))
        wallet = state.wallets[step.source.chain.value]
        if ps.minimum_output_base < quoted_min or projected_min < approved_min:
            why = (
                f"step {k}'s fresh minimum {ps.minimum_output_base} is below its approved {quoted_min}"
                if ps.minimum_output_base < quoted_min
                else f"the route's projected minimum {projected_min} is below the approved {approved_min}"
            )
            return reapproval(
                state, route, step, input_base, wallet, "session_requote_below_approved_bounds", why
            )
        minimum = max(ps.minimum_output_base, quoted_min)
        if k == len(route.steps) - 1:
            minimum = max(minimum, approved_min)
        pool = view.pools.get(step.pool_id or "")
        market = market_label(view.source, view.live, view.as_of, view.fallback_components)
        # held to the approved quote's step minimums: priced along steps 0..k of that quote
        held = [c for s in route.steps[: k + 1] for c in step_components(s)]
        if state.is_v1 and CHAINS[step.source.chain].family is ChainFamily.EVM:
            fee_pips = pool.clmm.fee_pips if pool is not None else 0
            bundle = await self.settlement(state, route, k, input_base, minimum, fee_pips)
            # the plan has no safety receipt: where its minimum came from sits beside it (not hashed)
            bundle["bounds_provenance"] = bounds_block(
                market, step, approved_quote_market=state.quote.get("market"), approved_quote_components=held
            )
            return install_action(state, k, bundle, minimum, event)
        pool_tick, raydium_live = await self.prepare.solana_pool_tick(route, step)
        bundle = self.prepare.build_step(
            route,
            ps,
            minimum_output_base=minimum,
            wallets=state.wallets,
            signer=state.event_signer_public,
            pool_fee_pips=pool.clmm.fee_pips
            if pool is not None and PROVIDERS[step.provider].pool_fee_tier
            else None,
            pool_tick=pool_tick,
            raydium_live=raydium_live,
            binding=state.binding,
            summary_steps=list(state.summary_steps),
            workflow_id=session_id,
            quote_expiry_unix=None,
            market=market,
            approved_quote_market=state.quote.get("market"),
            approved_quote_components=held,
        )
        return install_action(state, k, bundle, minimum, event)

    def receive(self, state: State, route: Route) -> dict[str, Any]:
        """The caller's CCTP receiveMessage for the current step, from the attested message."""
        k = state.current_step
        step = route.steps[k]
        bridge = state.steps[k].bridge_as(CctpBurn)
        try:
            bundle: dict[str, Any] = assemble_receive_bundle(
                route,
                step,
                state.wallets,
                attested_bytes(bridge.message),
                attested_bytes(bridge.attestation),
                self.prepare.deployments,
                workflow_id=state.session_id,
                action_id=self.service.ids.new_id(),
                prepared_at=self.service.clock.now(),
                quote_binding=state.binding,
                summary_steps=list(state.summary_steps),
            )
        except ActionUnavailable as exc:
            # the attested message does not match this session's burn: never hand it to the caller
            raise ObservationRejected("observation_bridge_mismatch", exc.detail) from None
        return bundle

    async def receive_any(
        self, state: State, route: Route, solana: SolanaChainReader | None
    ) -> dict[str, Any]:
        """The current step's CCTP mint action on its destination: receiveMessage on EVM, receive_message on
        Solana (whose fee recipient account is program state, read through `solana`)."""
        if route.steps[state.current_step].target.chain is not Chain.SOLANA:
            return self.receive(state, route)
        if solana is None:
            raise ObservationUnavailable(
                "chain_rpc_not_configured:solana",
                "solana cannot be read: ROUTEQUOTE_RPC_URL_SOLANA is not set",
            )
        data = await solana.account_data(token_messenger_address())
        k = state.current_step
        bridge = state.steps[k].bridge_as(CctpBurn)
        try:
            fee_account = fee_recipient_token_account(data or b"")
            bundle: dict[str, Any] = assemble_solana_receive_bundle(
                route,
                route.steps[k],
                state.wallets,
                attested_bytes(bridge.message),
                attested_bytes(bridge.attestation),
                fee_account,
                workflow_id=state.session_id,
                action_id=self.service.ids.new_id(),
                prepared_at=self.service.clock.now(),
                quote_binding=state.binding,
                summary_steps=list(state.summary_steps),
                deployments=self.prepare.deployments,
            )
        except ActionUnavailable as exc:
            if exc.reason == "cctp_token_messenger_state_unreadable":
                raise ObservationUnavailable(exc.reason, exc.detail) from None
            # the attested message does not match this session's burn: never hand it to the caller
            raise ObservationRejected("observation_bridge_mismatch", exc.detail) from None
        return bundle

    async def settlement(
        self, state: State, route: Route, k: int, amount_in: int, minimum: int, fee_pips: int
    ) -> dict[str, Any]:
        """The ERC-4337 settlement plan of step k (USDC -> native ETH on the destination), from chain reads."""
        step = route.steps[k]
        chain = step.source.chain
        dep = self.prepare.deployments[chain]
        over = self.erc4337.get(chain.value, {})
        entry_point = str(over.get("entry_point") or aa.ENTRY_POINT_V07)
        factory = str(over.get("factory") or aa.SIMPLE_ACCOUNT_FACTORY_V07)
        if dep.swap_router02 is None or "WETH" not in dep.tokens or "USDC" not in dep.tokens:
            raise InvalidRequest(
                "route_not_prepare_ready", f"no Uniswap router / WETH / USDC pinned on {chain.value}"
            )
        reader = self.evm_state
        if reader is None or not reader.configured(chain.value):
            raise ObservationUnavailable(
                f"chain_rpc_not_configured:{chain.value}",
                f"{chain.value} cannot be read: its RPC URL is not set",
            )
        wallet = state.wallets[chain.value]
        usdc = dep.tokens["USDC"]

        async def read(call: dict[str, str]) -> bytes:
            return await reader.call(chain.value, call["to"], call["data"])

        account = aa.decode_address(await read(aa.account_address_call(factory, wallet, 0)))
        deployed = len(await reader.code(chain.value, account)) > 0
        ep_nonce = (
            aa.decode_uint(await read(aa.entry_point_nonce_call(entry_point, account))) if deployed else 0
        )
        permit_nonce = aa.decode_uint(await read(aa.permit_nonce_call(usdc, wallet)))
        now = self.service.clock.now()
        # deadlines are judged by the chain's clock: never build one already behind the destination's time
        now_unix = max(int(now.timestamp()), await reader.timestamp(chain.value))
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
            "workflow_id": state.session_id,
            "step_index": k,
            "route": route.key,
            "provider": step.provider.value,
            "prepared_at": iso(now),
            "expires_at": iso(datetime.fromtimestamp(deadline, UTC)),
            "payload_sha256": canonical_sha256(plan),
            "quote_binding": state.binding,
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
