"""A step kind names its reads as data and decides purely from their answers; the one gatherer runs any reads
through the ports, grouped by where they are answered, and returns the answers keyed by read."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest
from tests.unit.actions.support import START
from tests.unit.sessions.corpus import TOKEN, Recorder

from routequote.clock import FixedClock
from routequote.core.actions.evm import DEFAULT_DEPLOYMENTS
from routequote.core.assets import Chain
from routequote.core.routes import ROUTES, Route
from routequote.core.sessions import kinds
from routequote.core.sessions.document import SessionDocument
from routequote.core.sessions.entries import AcrossDeposit, StepStatus, parse_bridge
from routequote.core.sessions.evidence import across_fill_topics
from routequote.core.sessions.kinds import REGISTRY, KindKey, across, oft, select
from routequote.core.sessions.machine import Event
from routequote.core.sessions.reads import (
    Attestation,
    Facts,
    LatestBlock,
    LogsSince,
    Need,
    ObserveSettings,
    Observing,
    ScanLead,
    ScanLookup,
    SolanaTx,
    TxByHash,
    source_of,
)
from routequote.core.sessions.state import Decision, State
from routequote.errors import InvalidRequest
from routequote.ports import CctpMessage, EvmLog, EvmTransaction, ObservationUnavailable, SolanaTransaction
from routequote.sessions.gather import ChainFacts, SessionConfig

SPOKE = "0x" + "ab" * 20  # a SpokePool pinned on Robinhood for these tests (none is by default)
DEPLOYMENTS = {
    **DEFAULT_DEPLOYMENTS,
    Chain.ROBINHOOD: replace(DEFAULT_DEPLOYMENTS[Chain.ROBINHOOD], across_spoke_pool=SPOKE),
}
ACROSS_BRIDGE = {
    "kind": "across",
    "origin_chain_id": 8453,
    "deposit_id": 7,
    "input_amount": 1_000_000,
    "output_amount": 990_000,
    "fill_deadline": 2_000_000_000,
    "recipient": "0x" + "22" * 20,
    "output_token": "0x" + "33" * 20,
    "source_tx": "0x" + "44" * 32,
}
OFT_BRIDGE = {"kind": "oft", "guid": "0x" + "11" * 32, "source_tx": "0x" + "55" * 32}


def _in_flight(route: str, bridge: dict[str, Any]) -> tuple[State, Route]:
    """A session of `route` created through the service, its step 0 moved in flight with `bridge`."""

    async def made() -> State:
        r = Recorder()
        sid = (await r.sessions.create(await r.create_body(route), TOKEN)).body["session_id"]
        record = await r.sessions.store.get(sid)
        assert record is not None
        return SessionDocument.parse(record.state)

    state = asyncio.run(made())
    entry = state.step(0).set(status=StepStatus.IN_FLIGHT, bridge=parse_bridge(dict(bridge)))
    return state.with_step(0, entry, phase="destination", current_action=None), ROUTES[route]


def _obs(state: State, route: Route, named: tuple[str, ...] = (), **settings: Any) -> Observing:
    return Observing(state, route, named, int(START.timestamp()), ObserveSettings(DEPLOYMENTS, **settings))


def test_every_key_has_its_kind_and_select_picks_by_phase_bridge_and_family() -> None:
    assert set(REGISTRY) == set(KindKey)
    state, route = _in_flight("base:USDC->robinhood:USDG", ACROSS_BRIDGE)
    assert select(state.evolve(phase="source"), route) is KindKey.SOURCE_EVM
    assert select(state, route) is KindKey.ACROSS
    sol, sol_route = _in_flight("robinhood:ETH->solana:USDG", OFT_BRIDGE)
    assert select(sol.evolve(current_step=0, phase="source"), sol_route) is KindKey.SOURCE_EVM
    with pytest.raises(InvalidRequest) as e:  # no bridge recorded
        select(state.with_step(0, state.step(0).set(bridge=None)), route)
    assert e.value.reason_class == "bridge_kind_unknown"
    oft_bridge = parse_bridge(OFT_BRIDGE)  # a bridge recorded for a destination family it does not serve
    with pytest.raises(InvalidRequest):
        select(state.with_step(0, state.step(0).set(bridge=oft_bridge)), route)
    assert kinds.DESTINATION[(kinds.BridgeKind.CCTP, kinds.ChainFamily.SOLANA)] is KindKey.CCTP_MINT_SOLANA


def test_across_names_its_reads_in_turn_and_its_search_window() -> None:
    state, route = _in_flight("base:USDC->robinhood:USDG", ACROSS_BRIDGE)
    obs = _obs(state, route, across_fill_search_blocks=500)
    head = LatestBlock("robinhood")
    assert across.observe(obs, Facts()) == Need((head,))
    facts = Facts(blocks={head: 10_000})
    search = LogsSince("robinhood", SPOKE, tuple(across_fill_topics(ACROSS_BRIDGE)), 9_500, 10_000)
    assert across.observe(obs, facts) == Need((search,))
    decided = across.observe(obs, facts.merged(Facts(logs={search: ()})))
    assert isinstance(decided, Decision) and decided.event is Event.DESTINATION_PENDING
    assert decided.state.steps[0].bridge_as(AcrossDeposit).search_from_block == 9_500
    assert decided.state.steps[0].destination_status == "awaiting_fill"
    # the next look searches from where the first began, whatever the head is then
    later = _obs(decided.state, route, across_fill_search_blocks=500)
    again = across.observe(later, Facts(blocks={head: 12_000}))
    unpinned = Observing(state, route, (), 0, ObserveSettings(DEFAULT_DEPLOYMENTS))
    with pytest.raises(ObservationUnavailable) as e:
        across.observe(unpinned, Facts())
    assert e.value.reason == "across_spoke_pool_not_pinned"
    assert isinstance(again, Need) and again.reads[0] == LogsSince(
        "robinhood", SPOKE, search.topics, 9_500, 12_000
    )


def test_across_refuses_a_named_transaction_that_is_not_the_fill() -> None:
    state, route = _in_flight("base:USDC->robinhood:USDG", ACROSS_BRIDGE)
    named = "0x" + "66" * 32
    obs = _obs(state, route, (named,))
    read = TxByHash("robinhood", named)
    assert across.observe(obs, Facts()) == Need((read,))
    tx = EvmTransaction(0, named, "0x" + "77" * 20, SPOKE, 0, b"", 1, 5, 0, 99, 21_000, 1, ())
    with pytest.raises(InvalidRequest) as e:
        across.observe(obs, Facts(txs={read: tx}))
    assert e.value.reason_class == "observation_bridge_mismatch"


def test_oft_asks_layerzero_scan_unless_the_delivery_is_named() -> None:
    state, route = _in_flight("robinhood:ETH->solana:USDG", OFT_BRIDGE)
    pinned = {"usdg_oft_solana_program": "1" * 43}
    lookup = ScanLookup(OFT_BRIDGE["source_tx"], OFT_BRIDGE["guid"])
    assert oft.observe(_obs(state, route, **pinned), Facts()) == Need((lookup,))
    unseen = oft.observe(_obs(state, route, **pinned), Facts(leads={lookup: None}))
    assert isinstance(unseen, Decision) and unseen.event is Event.DESTINATION_PENDING
    lead = ScanLead("DELIVERED", "2" * 88)
    assert oft.observe(_obs(state, route, **pinned), Facts(leads={lookup: lead})) == Need(
        (SolanaTx("2" * 88),)
    )
    assert oft.observe(_obs(state, route, ("3" * 88,), **pinned), Facts()) == Need((SolanaTx("3" * 88),))
    with pytest.raises(ObservationUnavailable) as e:
        oft.observe(_obs(state, route), Facts())
    assert e.value.reason == "usdg_oft_solana_program_not_pinned"


class _Ports:
    """Readers that answer from nothing and write down what was asked, in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []

    async def transaction(self, *args: str) -> EvmTransaction | SolanaTransaction | None:
        self.calls.append(("transaction", *args))
        return None

    async def block_number(self, chain: str) -> int:
        self.calls.append(("block_number", chain))
        return 42

    async def logs(
        self, chain: str, address: str, topics: list[str | None], lo: int, hi: int | None
    ) -> list[EvmLog]:
        self.calls.append(("logs", chain, address, str(lo), str(hi)))
        return []

    async def messages(self, source_domain: int, tx_hash: str) -> list[CctpMessage]:
        self.calls.append(("messages", str(source_domain), tx_hash))
        return []

    async def delivery_for(self, tx_hash: str, guid: str) -> Any:
        self.calls.append(("delivery_for", tx_hash, guid))
        return SimpleNamespace(status="INFLIGHT", destination_tx=None)


def _gatherer(ports: _Ports | None, **only: Any) -> ChainFacts:
    prepare: Any = SimpleNamespace(
        service=SimpleNamespace(clock=FixedClock(START)), deployments=DEFAULT_DEPLOYMENTS
    )
    return ChainFacts(
        prepare,
        SessionConfig(),
        only.get("evm", ports),
        only.get("solana", ports),
        only.get("attestations", ports),
        only.get("layerzero", ports),
    )


def test_the_gatherer_groups_reads_by_source_and_keys_answers_by_read() -> None:
    ports = _Ports()
    h1, h2, sig = "0x" + "01" * 32, "0x" + "02" * 32, "5" * 88
    reads = [
        TxByHash("base", h1),
        SolanaTx(sig),
        TxByHash("arbitrum", h2),
        LatestBlock("base"),
        Attestation(6, h1),
        TxByHash("base", h1),  # asked twice, read once
        ScanLookup(h2, "0x" + "11" * 32),
        LogsSince("base", "0x" + "aa" * 20, ("0x" + "bb" * 32, None), 7, 42),
    ]
    facts = asyncio.run(_gatherer(ports).read(reads))
    assert [c[0] + ":" + c[1] for c in ports.calls] == [
        "transaction:base",
        "block_number:base",
        "logs:base",
        "transaction:" + sig,
        "transaction:arbitrum",
        "messages:6",
        "delivery_for:" + h2,
    ]
    assert [source_of(r) for r in reads[:3]] == ["base", "solana", "arbitrum"]
    assert facts.txs == {TxByHash("base", h1): None, TxByHash("arbitrum", h2): None}
    assert facts.blocks == {LatestBlock("base"): 42}
    assert facts.attestations == {Attestation(6, h1): ()}
    assert facts.leads == {ScanLookup(h2, "0x" + "11" * 32): ScanLead("INFLIGHT", None)}
    assert all(facts.has(r) for r in reads) and facts.missing(*reads) is None


@pytest.mark.parametrize(
    ("port", "read", "reason"),
    [
        ("evm", TxByHash("base", "0x" + "01" * 32), "chain_observation_not_configured"),
        ("solana", SolanaTx("5" * 88), "chain_rpc_not_configured:solana"),
        ("attestations", Attestation(6, "0x" + "01" * 32), "attestation_source_not_configured"),
        ("layerzero", ScanLookup("0x" + "01" * 32, "0x" + "11" * 32), "layerzero_scan_not_configured"),
    ],
)
def test_a_port_not_configured_is_unavailable_only_when_a_read_needs_it(
    port: str, read: Any, reason: str
) -> None:
    ports = _Ports()
    gatherer = _gatherer(ports, **{port: None})
    others = [TxByHash("base", "0x" + "09" * 32), SolanaTx("6" * 88), Attestation(0, "0x" + "09" * 32)]
    asyncio.run(gatherer.read([r for r in others if source_of(r) != source_of(read)]))
    with pytest.raises(ObservationUnavailable) as e:
        asyncio.run(gatherer.read([read]))
    assert e.value.reason == reason
