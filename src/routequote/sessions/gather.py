"""Phase 1 of an observation: gather the chain facts a step kind's rule needs through the ports (EVM and
Solana readers, Circle Iris), then hand them to the pure rule in `core.sessions.kinds` (phase 2). What the
rule decides is committed by the engine (phase 3); nothing here writes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from routequote.core.assets import CHAINS, Chain
from routequote.core.routes import Route
from routequote.core.sessions import kinds
from routequote.core.sessions.evidence import (
    ObservationRejected,
    across_fill_topics,
    cctp_received_topics,
    verify_across_fill,
)
from routequote.core.sessions.kinds import across, cctp_mint_evm, cctp_mint_solana, erc4337, oft
from routequote.core.sessions.machine import Event
from routequote.core.sessions.state import Decision, State
from routequote.errors import Conflict, InvalidRequest
from routequote.ports import (
    AttestationReader,
    EvmChainReader,
    LayerZeroReader,
    ObservationUnavailable,
    SolanaChainReader,
)
from routequote.prepare import PrepareService
from routequote.readiness import Observation

DEFAULT_CONFIRMATIONS = {"base": 10, "arbitrum": 10, "robinhood": 10}


@dataclass
class SessionConfig:
    confirmations: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_CONFIRMATIONS))
    across_fill_search_blocks: int = 20_000
    # v1 corridor settlement per EVM chain: optional `entry_point`, `factory`, `permit_name`, `permit_version`
    # overriding the pinned EntryPoint v0.7 / SimpleAccountFactory / USDC EIP-712 domain (tests on local chains)
    erc4337: dict[str, dict[str, Any]] = field(default_factory=dict)
    cctp_mint_search_blocks: int = 20_000
    # the USDG OFT program on Solana (`lz_receive`); unpinned, no OFT delivery to Solana can be verified
    usdg_oft_solana_program: str | None = None
    # the setting and the chain disagree on that program (oft_pin): no OFT arrival is accepted until resolved
    usdg_oft_pin_problem: str | None = None
    # what the composition root configured to observe with (RPC URLs, lookups, the OFT pin): a route missing a
    # piece is not session-ready and its create is refused; None (readers wired by hand): not judged
    observation: Observation | None = None


class ChainFacts:
    """The ports a session reads the chains through, and the gathering each step kind needs."""

    def __init__(
        self,
        prepare: PrepareService,
        config: SessionConfig,
        evm: EvmChainReader | None,
        solana: SolanaChainReader | None,
        attestations: AttestationReader | None,
        layerzero: LayerZeroReader | None = None,
    ) -> None:
        self.prepare = prepare
        self.clock = prepare.service.clock
        self.config = config
        self.evm = evm
        self.solana = solana
        self.attestations = attestations
        self.layerzero = layerzero

    def confirmations(self, chain: Chain) -> int:
        return int(self.config.confirmations.get(chain.value, DEFAULT_CONFIRMATIONS.get(chain.value, 10)))

    def evm_reader(self) -> EvmChainReader:
        if self.evm is None:
            raise ObservationUnavailable(
                "chain_observation_not_configured", "no EVM chain reader is configured"
            )
        return self.evm

    def solana_reader(self) -> SolanaChainReader:
        if self.solana is None:
            raise ObservationUnavailable(
                "chain_rpc_not_configured:solana",
                "solana cannot be observed: ROUTEQUOTE_RPC_URL_SOLANA is not set",
            )
        return self.solana

    # ---- source -----------------------------------------------------------------------------------------

    async def source(self, state: State, route: Route, hashes: list[str]) -> Decision:
        k = state.current_step
        step = route.steps[k]
        named = hashes or list(state.steps[k].get("claimed_tx_ids") or [])
        if not named:
            raise InvalidRequest(
                "transaction_hashes_required", "name the transactions you submitted for the current action"
            )
        family = CHAINS[step.source.chain].family
        rule = kinds.SOURCE[family]
        rule.check_names(state, route, named)
        if rule is kinds.source_evm:
            reader = self.evm_reader()
            txs = [await reader.transaction(step.source.chain.value, h) for h in named]
            return kinds.source_evm.decide(state, route, named, txs, self.confirmations(step.source.chain))
        stx = await self.solana_reader().transaction(named[0])
        return kinds.source_solana.decide(state, route, named, stx)

    # ---- destination ------------------------------------------------------------------------------------

    async def destination(self, state: State, route: Route, hashes: list[str]) -> Decision:
        kind = state.steps[state.current_step]["bridge"].get("kind")
        rule = kinds.DESTINATION.get(kind)
        if rule is cctp_mint_evm:
            return await self.cctp(state, route, hashes)
        if rule is across:
            return await self.across(state, route, hashes)
        if rule is oft:
            return await self.oft_delivery(state, route, hashes)
        raise InvalidRequest("bridge_kind_unknown", f"no observer for {kind}")  # pragma: no cover

    async def attest(self, state: State, dst: Chain) -> tuple[bool, State]:
        """Ask Circle Iris for this burn's message; the rule keeps it when attested."""
        if self.attestations is None:
            raise ObservationUnavailable(
                "attestation_source_not_configured", "no Circle Iris reader is configured"
            )
        bridge = state.steps[state.current_step]["bridge"]
        messages = await self.attestations.messages(int(bridge["source_domain"]), bridge["source_tx"])
        return cctp_mint_evm.attested(state, messages, dst)

    async def cctp(self, state: State, route: Route, hashes: list[str]) -> Decision:
        k = state.current_step
        entry = state.steps[k]
        dst = route.steps[k].target.chain
        if dst is Chain.SOLANA:
            return await self.cctp_solana(state, route, hashes)
        if state.current_action is not None:  # the caller's receiveMessage was prepared: verify the mint
            named = hashes or list(entry.get("destination_claimed_tx_ids") or [])
            cctp_mint_evm.check_mint_name(state, route, named)
            tx = await self.evm_reader().transaction(dst.value, named[0])
            dep = self.prepare.deployments[dst]
            return cctp_mint_evm.decide_mint(
                state,
                route,
                named,
                tx,
                usdc=dep.tokens["USDC"],
                transmitter=dep.message_transmitter_v2 or "",
                confirmations=self.confirmations(dst),
            )
        ok, state = await self.attest(state, dst)
        if not ok:
            return cctp_mint_evm.not_attested(state)
        return Decision(Event.DESTINATION_ACTION_READY, state, receive_action=True)

    async def cctp_solana(self, state: State, route: Route, hashes: list[str]) -> Decision:
        """An arrival on Solana counts only after Circle attested the burn, and only as receive_message of
        that attested message to the session's wallet (`cctp_mint_solana.decide_mint`)."""
        k = state.current_step
        if not state.steps[k]["bridge"].get("attestation"):
            ok, state = await self.attest(state, Chain.SOLANA)
            if not ok:
                return cctp_mint_evm.not_attested(state)
            if not hashes:
                return Decision(Event.DESTINATION_ACTION_READY, state, receive_action=True)
        named = hashes or list(state.steps[k].get("destination_claimed_tx_ids") or [])
        if not named and state.current_action is None:
            return cctp_mint_solana.awaiting_mint(state)
        cctp_mint_solana.check_mint_name(named)
        tx = await self.solana_reader().transaction(named[0])
        return cctp_mint_solana.decide_mint(state, route, named[0], tx)

    async def cctp_relayed(self, state: State, route: Route, check_burn: Any) -> Decision:
        """v1: Iris attests the burn, anyone relays the mint; it is found on the destination and verified,
        never prepared. `check_burn(state)` holds the attested message to this session's burn."""
        k = state.current_step
        dst = route.steps[k].target.chain
        if not state.steps[k]["bridge"].get("attestation"):
            ok, state = await self.attest(state, dst)
            if not ok:
                return cctp_mint_evm.not_attested(state)
            check_burn(state)
        bridge = state.steps[k]["bridge"]
        reader = self.evm_reader()
        dep = self.prepare.deployments[dst]
        transmitter = dep.message_transmitter_v2 or ""
        message = bytes.fromhex(bridge["message"][2:])
        latest = await reader.block_number(dst.value)
        start = bridge.get("mint_search_from_block")
        if start is None:
            start = max(0, latest - self.config.cctp_mint_search_blocks)
        logs = await reader.logs(dst.value, transmitter, cctp_received_topics(message), int(start), latest)
        tx = await reader.transaction(dst.value, logs[0].tx_hash) if logs else None
        return cctp_mint_evm.decide_relayed(
            state,
            route,
            tx,
            bool(logs),
            usdc=dep.tokens["USDC"],
            transmitter=transmitter,
            confirmations=self.confirmations(dst),
            search_from=start,
        )

    async def across(self, state: State, route: Route, hashes: list[str]) -> Decision:
        """The relayer's fill is found by its log; a transaction the caller names must be that fill."""
        k = state.current_step
        bridge = state.steps[k]["bridge"]
        dst = route.steps[k].target.chain
        reader = self.evm_reader()
        spoke = self.prepare.deployments[dst].across_spoke_pool
        if spoke is None:
            raise ObservationUnavailable(
                "across_spoke_pool_not_pinned", f"no Across SpokePool pinned on {dst.value}"
            )
        for named in hashes:
            tx = await reader.transaction(dst.value, named)
            if tx is not None and verify_across_fill(tx.logs, bridge, spoke_pool=spoke) is None:
                raise ObservationRejected(
                    "observation_bridge_mismatch",
                    f"{named} is not the relayer's fill of this deposit (no FilledRelay of its relay data)",
                )
        latest = await reader.block_number(dst.value)
        start = bridge.get("search_from_block")
        if start is None:
            start = max(0, latest - self.config.across_fill_search_blocks)
        logs = await reader.logs(dst.value, spoke, across_fill_topics(bridge), int(start), latest)
        found = verify_across_fill(logs, bridge, spoke_pool=spoke)
        return across.decide(state, route, found, int(self.clock.now().timestamp()), start)

    async def oft_delivery(self, state: State, route: Route, hashes: list[str]) -> Decision:
        """The LayerZero delivery of the GUID this session's OFTSent emitted: found through LayerZero Scan
        unless the caller names it, then read from Solana and verified either way."""
        k = state.current_step
        bridge = state.steps[k]["bridge"]
        program = self.config.usdg_oft_solana_program
        if self.config.usdg_oft_pin_problem:
            raise ObservationUnavailable(
                "usdg_oft_solana_program_disagreement", self.config.usdg_oft_pin_problem
            )
        if not program:
            raise ObservationUnavailable(
                "usdg_oft_solana_program_not_pinned",
                "the USDG OFT program on Solana is not pinned (ROUTEQUOTE_USDG_OFT_SOLANA_PROGRAM): no "
                "LayerZero delivery can be verified, so none is accepted",
            )
        named = hashes
        if not named:
            if self.layerzero is None:
                raise ObservationUnavailable(
                    "layerzero_scan_not_configured",
                    "no LayerZero Scan reader is configured: name the delivery signature",
                )
            found = await self.layerzero.delivery_for(str(bridge["source_tx"]), str(bridge["guid"]))
            if found is None or not found.destination_tx:
                return oft.not_delivered_yet(state, None if found is None else found.status)
            named = [found.destination_tx]
        oft.check_delivery_name(named)
        tx = await self.solana_reader().transaction(named[0])
        source_oapp = self.prepare.deployments[Chain.ROBINHOOD].usdg_oft or ""
        return oft.decide_delivery(
            state,
            route,
            named[0],
            tx,
            oft_program=program,
            source_oapp=bytes(12) + bytes.fromhex(source_oapp.removeprefix("0x")),
        )

    async def settlement(self, state: State, route: Route, tx_hash: str) -> Decision:
        """v1 step 2: the bundler's `handleOps` transaction carrying the prepared user operation."""
        action = state.current_action
        if (
            not action or action.get("kind") != "erc4337_settlement"
        ):  # pragma: no cover - guarded by the status
            raise Conflict("step_out_of_order", "no settlement plan was prepared for this step")
        chain = route.steps[state.current_step].source.chain
        tx = await self.evm_reader().transaction(chain.value, tx_hash)
        return erc4337.decide(state, route, tx_hash, tx, self.confirmations(chain))


__all__ = ["ChainFacts", "ObservationRejected", "SessionConfig"]
