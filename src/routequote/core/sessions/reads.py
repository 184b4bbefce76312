"""What a step kind asks of the chains, as plain frozen data, and what the chains answered (`Facts`).

A step kind (`core.sessions.kinds`) is asked `observe(obs, facts)` and answers either its `Decision` or
`Need(reads)`: the reads it still lacks, given the document and the facts so far. The shell's one gatherer
(`sessions.gather.ChainFacts.read`) runs any list of reads through the ports and the kind is asked again with
the new facts (`ChainFacts.observe`), until it decides. A kind never reads: it is pure, and the same document
with the same facts always decides the same thing, so a watcher can gather the reads of many sessions at once
(grouped by `source_of(read)`: one chain, or one off-chain service) and hand each kind its facts.

The reads:

    TxByHash(chain, tx_hash)                     an EVM transaction with its receipt and logs, or None (pending)
    LatestBlock(chain)                           the EVM chain's latest block number
    LogsSince(chain, address, topics, from_block, to_block)   eth_getLogs
    SolanaTx(signature)                          a finalized Solana transaction, or None
    Attestation(source_domain, source_tx)        Circle Iris's CCTP messages for a burn
    ScanLookup(source_tx, guid)                  LayerZero Scan's lead to a message's delivery, or None
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from routequote.core.actions.evm import EvmDeployment
from routequote.core.assets import Chain
from routequote.core.chain import CctpMessage, EvmLog, EvmTransaction, SolanaTransaction
from routequote.core.routes import Route
from routequote.core.sessions.document import SessionDocument

SOLANA = "solana"
CIRCLE_IRIS = "circle_iris"
LAYERZERO_SCAN = "layerzero_scan"
DEFAULT_CONFIRMATIONS = {"base": 10, "arbitrum": 10, "robinhood": 10}


@dataclass(frozen=True, slots=True)
class TxByHash:
    chain: str
    tx_hash: str


@dataclass(frozen=True, slots=True)
class LatestBlock:
    chain: str


@dataclass(frozen=True, slots=True)
class LogsSince:
    chain: str
    address: str
    topics: tuple[str | None, ...]
    from_block: int
    to_block: int | None = None


@dataclass(frozen=True, slots=True)
class SolanaTx:
    signature: str


@dataclass(frozen=True, slots=True)
class Attestation:
    source_domain: int
    source_tx: str


@dataclass(frozen=True, slots=True)
class ScanLookup:
    source_tx: str
    guid: str


@dataclass(frozen=True, slots=True)
class ScanLead:
    """What LayerZero Scan says of one message: a lead to its delivery, never evidence of it."""

    status: str
    destination_tx: str | None


Read = TxByHash | LatestBlock | LogsSince | SolanaTx | Attestation | ScanLookup


def source_of(read: Read) -> str:
    """Where a read is answered: an EVM chain's name, `solana`, `circle_iris` or `layerzero_scan`."""
    if isinstance(read, TxByHash | LatestBlock | LogsSince):
        return read.chain
    if isinstance(read, SolanaTx):
        return SOLANA
    if isinstance(read, Attestation):
        return CIRCLE_IRIS
    return LAYERZERO_SCAN


@dataclass(frozen=True)
class Need:
    """The reads a kind still lacks before it can decide."""

    reads: tuple[Read, ...]


@dataclass(frozen=True)
class Facts:
    """What the reads returned, keyed by read (one table per read type, so each answer keeps its type)."""

    txs: Mapping[TxByHash, EvmTransaction | None] = field(default_factory=dict)
    blocks: Mapping[LatestBlock, int] = field(default_factory=dict)
    logs: Mapping[LogsSince, tuple[EvmLog, ...]] = field(default_factory=dict)
    solana_txs: Mapping[SolanaTx, SolanaTransaction | None] = field(default_factory=dict)
    attestations: Mapping[Attestation, tuple[CctpMessage, ...]] = field(default_factory=dict)
    leads: Mapping[ScanLookup, ScanLead | None] = field(default_factory=dict)

    def has(self, read: Read) -> bool:
        if isinstance(read, TxByHash):
            return read in self.txs
        if isinstance(read, LatestBlock):
            return read in self.blocks
        if isinstance(read, LogsSince):
            return read in self.logs
        if isinstance(read, SolanaTx):
            return read in self.solana_txs
        if isinstance(read, Attestation):
            return read in self.attestations
        return read in self.leads

    def missing(self, *reads: Read) -> Need | None:
        """`Need` of those of `reads` not answered yet, None when all are."""
        lacking = tuple(r for r in reads if not self.has(r))
        return Need(lacking) if lacking else None

    def merged(self, more: Facts) -> Facts:
        return Facts(
            txs={**self.txs, **more.txs},
            blocks={**self.blocks, **more.blocks},
            logs={**self.logs, **more.logs},
            solana_txs={**self.solana_txs, **more.solana_txs},
            attestations={**self.attestations, **more.attestations},
            leads={**self.leads, **more.leads},
        )


@dataclass(frozen=True)
class ObserveSettings:
    """What a kind decides with besides the document and the facts: the configuration and the pinned contracts."""

    deployments: Mapping[Chain, EvmDeployment]
    confirmations: Mapping[str, int] = field(default_factory=dict)
    across_fill_search_blocks: int = 20_000
    cctp_mint_search_blocks: int = 20_000
    # the USDG OFT program on Solana (`lz_receive`), and a disagreement of the setting with the chain
    usdg_oft_solana_program: str | None = None
    usdg_oft_pin_problem: str | None = None

    def required_confirmations(self, chain: Chain) -> int:
        return int(self.confirmations.get(chain.value, DEFAULT_CONFIRMATIONS.get(chain.value, 10)))


@dataclass(frozen=True)
class Observing:
    """One observation of a session's current step: the document, the route, the transactions the caller named
    (possibly none), the time, and the settings."""

    state: SessionDocument
    route: Route
    named: tuple[str, ...]
    now_unix: int
    settings: ObserveSettings


__all__ = [
    "Attestation",
    "DEFAULT_CONFIRMATIONS",
    "Facts",
    "LatestBlock",
    "LogsSince",
    "Need",
    "ObserveSettings",
    "Observing",
    "Read",
    "ScanLead",
    "ScanLookup",
    "SolanaTx",
    "TxByHash",
    "source_of",
]
