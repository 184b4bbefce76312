"""Phase 1 of an observation: the one gatherer. A step kind (`core.sessions.kinds`) names the chain reads it
needs as plain data (`core.sessions.reads`); `ChainFacts.read` runs any list of them through the ports (EVM
and Solana readers, Circle Iris, LayerZero Scan), grouped by where each is answered, and returns the facts
keyed by read; `ChainFacts.observe` asks the kind again with them until it decides (phase 2, pure). What the
kind decides is committed by the engine (phase 3); nothing here writes, and nothing here knows a kind."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from routequote.core.chain import CctpMessage, EvmLog, EvmTransaction, SolanaTransaction
from routequote.core.routes import Route
from routequote.core.sessions.evidence import ObservationRejected
from routequote.core.sessions.kinds import REGISTRY, KindKey
from routequote.core.sessions.reads import (
    DEFAULT_CONFIRMATIONS,
    Attestation,
    Facts,
    LatestBlock,
    LogsSince,
    ObserveSettings,
    Observing,
    Read,
    ScanLead,
    ScanLookup,
    SolanaTx,
    TxByHash,
    source_of,
)
from routequote.core.sessions.state import Decision, State
from routequote.ports import (
    AttestationReader,
    EvmChainReader,
    LayerZeroReader,
    ObservationUnavailable,
    SolanaChainReader,
)
from routequote.prepare import PrepareService
from routequote.readiness import Observation


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
    """The ports a session reads the chains through, and the one gatherer that runs a kind's reads on them."""

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

    def settings(self) -> ObserveSettings:
        c = self.config
        return ObserveSettings(
            deployments=self.prepare.deployments,
            confirmations=c.confirmations,
            across_fill_search_blocks=c.across_fill_search_blocks,
            cctp_mint_search_blocks=c.cctp_mint_search_blocks,
            usdg_oft_solana_program=c.usdg_oft_solana_program,
            usdg_oft_pin_problem=c.usdg_oft_pin_problem,
        )

    async def observe(self, key: KindKey, state: State, route: Route, named: Sequence[str] = ()) -> Decision:
        """Observe the current step with kind `key`: run the reads it names, ask it again, until it decides."""
        kind = REGISTRY[key]
        obs = self.observing(state, route, named)
        facts = Facts()
        while True:
            out = kind.observe(obs, facts)
            if isinstance(out, Decision):
                return out
            if not out.reads or all(facts.has(r) for r in out.reads):  # pragma: no cover - a kind's defect
                raise RuntimeError(f"step kind {key} asked again for reads it has")
            facts = facts.merged(await self.read(out.reads))

    def observing(self, state: State, route: Route, named: Sequence[str] = ()) -> Observing:
        """What a kind is asked with: the document, the route, the names, the time now and the settings."""
        return Observing(state, route, tuple(named), int(self.clock.now().timestamp()), self.settings())

    # ---- the gatherer -----------------------------------------------------------------------------------

    async def read(self, reads: Sequence[Read]) -> Facts:
        """Run `reads` through the ports and return what each answered, keyed by read. Reads are grouped by
        where they are answered (`reads.source_of`: one EVM chain, solana, circle_iris, layerzero_scan), each
        group in order; a port that is not configured is `ObservationUnavailable` when a read needs it."""
        groups: dict[str, list[Read]] = {}
        for r in dict.fromkeys(reads):
            groups.setdefault(source_of(r), []).append(r)
        txs: dict[TxByHash, EvmTransaction | None] = {}
        blocks: dict[LatestBlock, int] = {}
        logs: dict[LogsSince, tuple[EvmLog, ...]] = {}
        solana_txs: dict[SolanaTx, SolanaTransaction | None] = {}
        attestations: dict[Attestation, tuple[CctpMessage, ...]] = {}
        leads: dict[ScanLookup, ScanLead | None] = {}
        for group in groups.values():
            for r in group:
                if isinstance(r, TxByHash):
                    txs[r] = await self.evm_reader().transaction(r.chain, r.tx_hash)
                elif isinstance(r, LatestBlock):
                    blocks[r] = await self.evm_reader().block_number(r.chain)
                elif isinstance(r, LogsSince):
                    found = await self.evm_reader().logs(
                        r.chain, r.address, list(r.topics), r.from_block, r.to_block
                    )
                    logs[r] = tuple(found)
                elif isinstance(r, SolanaTx):
                    solana_txs[r] = await self.solana_reader().transaction(r.signature)
                elif isinstance(r, Attestation):
                    got = await self.iris_reader().messages(r.source_domain, r.source_tx)
                    attestations[r] = tuple(got)
                else:
                    leads[r] = await self.scan_lead(r)
        return Facts(txs, blocks, logs, solana_txs, attestations, leads)

    async def scan_lead(self, lookup: ScanLookup) -> ScanLead | None:
        if self.layerzero is None:
            raise ObservationUnavailable(
                "layerzero_scan_not_configured",
                "no LayerZero Scan reader is configured: name the delivery signature",
            )
        found = await self.layerzero.delivery_for(lookup.source_tx, lookup.guid)
        return None if found is None else ScanLead(found.status, found.destination_tx)

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

    def iris_reader(self) -> AttestationReader:
        if self.attestations is None:
            raise ObservationUnavailable(
                "attestation_source_not_configured", "no Circle Iris reader is configured"
            )
        return self.attestations


__all__ = ["DEFAULT_CONFIRMATIONS", "ChainFacts", "ObservationRejected", "SessionConfig"]
