"""The watcher's caches: what every waiting session of a chain reads, bought once per new block.

`BatchedGatherer` (sessions/batch_gather.py) asks every kind what it reads and answers through a `TickReads`,
which serves those reads from per-chain caches kept across ticks (`WatchCache`):

- EVM (a reader with `ports.EvmBlockScanner`): per tick one `eth_getBlockByNumber("latest")`; only when that
  is a new block, one request holding `eth_getBlockReceipts` of each new block (when any watched transaction is
  still pending) and ONE `eth_getLogs` over the new blocks for every watched contract and first topic. A
  pending `TxByHash` stays pending until a scanned block holds it; then (and the first time a hash is seen: it
  may have been mined before the watcher saw it) it is read once directly. `LatestBlock` is the head read this
  tick. `LogsSince` is answered by filtering the cached logs (address, topics, block range); a contract and
  topic not yet covered from its `from_block` is back-filled once. A head whose parent is not the block seen
  before (a reorg) rewinds the caches `REORG_REWIND` blocks; more than `MAX_SCAN_GAP` new blocks at once and
  the pending hashes are read directly instead of block by block.
- Solana (a reader with `ports.SolanaStatusReader`): while at most 256 signatures are pending, one
  `getSignatureStatuses` call for them all; above that (a reader with `ports.SolanaBlockScanner`), FINALIZED
  blocks are scanned instead (sessions/solana_scan.py): per tick one `getBlocks` and one request holding a
  `getBlock` (signatures only) per new produced slot. Either way `getTransaction` is read once, only for a
  signature known final (what the kinds read: a finalized transaction is final, so it is kept).
- Circle Iris and LayerZero Scan: each message's answer is kept for `lookup_seconds`: at most one lookup per
  pending message per interval.

Safety: an answer served from a cache is marked stale. A session whose decision would change anything
(`changes`) after reading a stale answer is decided again from direct reads (the one-off reads of a transition:
exactly what observe would read now), so nothing advances on a cached fact that a fresh read contradicts (a
replaced block, a moved receipt, a removed log); what the fresh reads say replaces the cache's answers.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from solders.signature import Signature

from routequote.core.chain import CctpMessage, EvmLog, EvmTransaction, SolanaTransaction
from routequote.core.sessions.reads import (
    SOLANA,
    Attestation,
    Facts,
    LatestBlock,
    LogsSince,
    Read,
    ScanLead,
    ScanLookup,
    SolanaTx,
    TxByHash,
    source_of,
)
from routequote.ports import (
    BlockHead,
    EvmBlockScanner,
    ObservationUnavailable,
    SolanaBlockScanner,
    SolanaStatusReader,
)
from routequote.sessions import solana_scan
from routequote.sessions.gather import ChainFacts
from routequote.sessions.solana_scan import SolanaScanCache

MAX_SCAN_GAP = 32  # more new blocks than this in one tick: pending receipts are read directly
REORG_REWIND = 32  # blocks re-scanned after a head whose parent is not the block seen before
KEEP_HASHES = 256  # block hashes remembered per chain (reorg detection)
Pair = tuple[str, str | None]  # (contract address lower-cased, first topic or None: any)
Filter = tuple[str, tuple[str | None, ...]]  # (contract address lower-cased, every topic)


@dataclass
class EvmChainCache:
    head: BlockHead | None = None
    scanned_to: int = -1  # every block up to here was scanned (pending receipts, watched logs)
    hashes: dict[int, str] = field(default_factory=dict)
    pending: set[str] = field(default_factory=set)  # hashes no scanned block holds
    mined: dict[str, EvmTransaction] = field(default_factory=dict)  # as read directly
    due: set[str] = field(default_factory=set)  # to read directly (found in a block, or rewound)
    pairs: dict[Pair, int] = field(default_factory=dict)  # in the per-block log filter from this block on
    filters: dict[Filter, int] = field(default_factory=dict)  # back-filled from this block up to its pair's
    logs: dict[tuple[str, int], EvmLog] = field(default_factory=dict)  # (tx hash, log index)

    def rewind(self, to: int) -> None:
        """Forget what blocks after `to` said: their logs, their transactions (read again directly)."""
        self.scanned_to = min(self.scanned_to, to)
        self.hashes = {n: h for n, h in self.hashes.items() if n <= to}
        self.logs = {k: lg for k, lg in self.logs.items() if lg.block_number <= to}
        self.pairs = {p: min(n, to + 1) for p, n in self.pairs.items()}
        for h, tx in list(self.mined.items()):
            if tx.block_number > to:
                del self.mined[h]
                self.pending.add(h)
                self.due.add(h)


@dataclass
class WatchCache:
    """Kept across ticks by one gatherer (module docstring)."""

    lookup_seconds: float = 10.0
    clock: Callable[[], float] = time.monotonic
    evm: dict[str, EvmChainCache] = field(default_factory=dict)
    finalized: dict[str, SolanaTransaction] = field(default_factory=dict)
    solana: SolanaScanCache = field(default_factory=SolanaScanCache)
    attestations: dict[Attestation, tuple[float, tuple[CctpMessage, ...]]] = field(default_factory=dict)
    leads: dict[ScanLookup, tuple[float, ScanLead | None]] = field(default_factory=dict)


class DirectReads(Protocol):
    """What TickReads reads through when a read is not cached (sessions/batch_gather.BatchReads)."""

    @property
    def facts(self) -> ChainFacts: ...

    async def run(self, reads: Sequence[Read]) -> tuple[Facts, dict[Read, BaseException]]: ...


def pair_of(read: LogsSince) -> Pair:
    return read.address.lower(), (read.topics[0].lower() if read.topics and read.topics[0] else None)


def filter_of(read: LogsSince) -> Filter:
    return read.address.lower(), tuple(None if t is None else t.lower() for t in read.topics)


def log_matches(log: EvmLog, read: LogsSince, to_block: int) -> bool:
    if log.address.lower() != read.address.lower() or not read.from_block <= log.block_number <= to_block:
        return False
    for i, topic in enumerate(read.topics):
        if topic is not None and (i >= len(log.topics) or log.topics[i] != topic.lower()):
            return False
    return True


def valid_signature(text: str) -> bool:
    try:
        Signature.from_string(text)
    except (ValueError, TypeError):
        return False
    return True


class TickReads:
    """One tick of one chain's gathering: `run(reads)` answers from the caches (refreshing them once per tick)
    or, where a reader cannot be followed block by block, through `direct` (BatchReads). Records which
    answers came from a cache (`stale`), which were read now (`fresh`), and the one-off reads made."""

    def __init__(self, cache: WatchCache, direct: DirectReads) -> None:
        self.cache = cache
        self.direct = direct
        self.stale: set[Read] = set()
        self.fresh = Facts()
        self.asked: set[Read] = set()
        self.one_off = (
            0  # reads made directly (first sight, a mined hash, a back-fill, a finalized signature)
        )
        self.advanced: set[str] = set()  # chains whose head was read this tick
        self.broken: dict[str, ObservationUnavailable] = {}  # chains whose head or scan failed this tick
        self.statuses: dict[str, str | None] = {}
        self.scan_solana: bool | None = None  # this tick: Solana by finalized blocks (True) or by statuses

    async def run(self, reads: Sequence[Read]) -> tuple[Facts, dict[Read, BaseException]]:
        groups: dict[str, list[Read]] = {}
        for r in dict.fromkeys(reads):
            self.asked.add(r)
            groups.setdefault(source_of(r), []).append(r)
        facts, failed = Facts(), dict[Read, BaseException]()
        for source, group in groups.items():
            try:
                got, bad = await self._group(source, group)
            except ObservationUnavailable as exc:  # the head or the scan failed: the whole chain, this tick
                got, bad = Facts(), dict.fromkeys(group, exc)
            facts = facts.merged(got)
            failed.update(bad)
        return facts, failed

    async def _group(self, source: str, group: list[Read]) -> tuple[Facts, dict[Read, BaseException]]:
        evm, solana = self.direct.facts.evm, self.direct.facts.solana
        if source == SOLANA and isinstance(solana, SolanaStatusReader):
            return await self._solana(solana, group)
        if isinstance(group[0], Attestation | ScanLookup):
            return await self._lookups(group)
        if isinstance(group[0], TxByHash | LatestBlock | LogsSince) and isinstance(evm, EvmBlockScanner):
            return await self._evm(evm, source, group)
        return await self._read_now(group)

    async def _read_now(self, reads: Sequence[Read]) -> tuple[Facts, dict[Read, BaseException]]:
        if not reads:
            return Facts(), {}
        facts, failed = await self.direct.run(reads)
        self.fresh = self.fresh.merged(facts)
        self.stale.difference_update(reads)
        return facts, failed

    # ---- EVM ------------------------------------------------------------------------------------------

    async def _advance(self, scanner: EvmBlockScanner, chain: str, c: EvmChainCache) -> None:
        """Once per tick: the head; when new blocks exist, their pending receipts and watched logs."""
        if chain in self.broken:  # failed earlier this tick: every read of the chain fails alike
            raise self.broken[chain]
        if chain in self.advanced:
            return
        try:
            await self._scan(scanner, chain, c)
        except ObservationUnavailable as exc:
            self.broken[chain] = exc
            raise
        self.advanced.add(chain)

    async def _scan(self, scanner: EvmBlockScanner, chain: str, c: EvmChainCache) -> None:
        head = await scanner.head(chain)
        if c.head is None:  # first sight: everything asked is read directly, scanning starts here
            c.head, c.scanned_to, c.hashes[head.number] = head, head.number, head.hash
            return
        known_parent = c.hashes.get(head.number - 1)
        known_self = c.hashes.get(head.number)
        if (known_parent is not None and known_parent != head.parent_hash) or (
            known_self is not None and known_self != head.hash
        ):
            c.rewind(head.number - REORG_REWIND)
        new = list(range(c.scanned_to + 1, head.number + 1))
        if new:
            blocks = new if c.pending and len(new) <= MAX_SCAN_GAP else []
            if c.pending and len(new) > MAX_SCAN_GAP:
                c.due |= c.pending
            topics = {t for _, t in c.pairs}
            scan = await scanner.scan(
                chain,
                blocks,
                (new[0], new[-1]) if c.pairs else None,
                sorted({a for a, _ in c.pairs}),
                None if None in topics else sorted(t for t in topics if t is not None),
            )
            for number, (block_hash, hashes) in scan.receipts.items():
                c.hashes[number] = block_hash
                c.due |= hashes & c.pending
            for lg in scan.logs:
                if (lg.address.lower(), lg.topics[0] if lg.topics else None) in c.pairs or (
                    lg.address.lower(),
                    None,
                ) in c.pairs:
                    c.logs[(lg.tx_hash, lg.log_index)] = lg
            c.scanned_to = head.number
        c.head = head
        c.hashes[head.number] = head.hash
        for n in [n for n in c.hashes if n < head.number - KEEP_HASHES]:
            del c.hashes[n]

    async def _evm(
        self, scanner: EvmBlockScanner, chain: str, group: list[Read]
    ) -> tuple[Facts, dict[Read, BaseException]]:
        c = self.cache.evm.setdefault(chain, EvmChainCache())
        await self._advance(scanner, chain, c)
        assert c.head is not None
        head = c.head.number
        txs: dict[TxByHash, EvmTransaction | None] = {}
        logs: dict[LogsSince, tuple[EvmLog, ...]] = {}
        direct: list[Read] = []
        for r in group:
            if isinstance(r, TxByHash):
                h = r.tx_hash.lower()
                if h in c.due or (h not in c.pending and h not in c.mined):
                    direct.append(r)
                elif h in c.mined:
                    tx = c.mined[h]
                    txs[r] = replace(tx, confirmations=max(0, head - tx.block_number + 1))
                    self.stale.add(r)
                else:
                    txs[r] = None
                    self.stale.add(r)
            elif isinstance(r, LogsSince):
                to = head if r.to_block is None else r.to_block
                if to > c.scanned_to:  # past what was scanned (a kind asked ahead of the head): read it now
                    direct.append(r)
                    continue
                await self._backfill(chain, c, r)
                found = sorted(
                    (lg for lg in c.logs.values() if log_matches(lg, r, to)),
                    key=lambda lg: (lg.block_number, lg.log_index),
                )
                logs[r] = tuple(found)
                self.stale.add(r)
        self.one_off += len(direct)
        got, failed = await self._read_now(direct)
        self.remember(got)
        facts = Facts(txs=txs, blocks={r: head for r in group if isinstance(r, LatestBlock)}, logs=logs)
        self.fresh = self.fresh.merged(Facts(blocks=facts.blocks))
        return facts.merged(got), failed

    async def _backfill(self, chain: str, c: EvmChainCache, read: LogsSince) -> None:
        """Make `read` answerable from the cache. Its contract and first topic join the per-block log filter
        from the next block on; the blocks before (from its `from_block`) are read once with the read's own
        filter (as narrow as observe's search), and remembered as covered for that filter."""
        pair, key = pair_of(read), filter_of(read)
        if pair not in c.pairs:
            c.pairs[pair] = c.scanned_to + 1
        pair_from, filter_from = c.pairs[pair], c.filters.get(key)
        if pair_from <= read.from_block or (filter_from is not None and filter_from <= read.from_block):
            return
        hi = pair_from - 1 if filter_from is None else filter_from - 1
        found = await self.direct.facts.evm_reader().logs(
            chain, read.address, list(read.topics), read.from_block, hi
        )
        self.one_off += 1
        for lg in found:
            c.logs[(lg.tx_hash, lg.log_index)] = lg
        c.filters[key] = read.from_block

    def remember(self, facts: Facts) -> None:
        """Direct answers replace what the caches said (a fresh read wins over a cached one)."""
        for r, tx in facts.txs.items():
            c = self.cache.evm.setdefault(r.chain, EvmChainCache())
            h = r.tx_hash.lower()
            c.due.discard(h)
            if tx is None:
                c.mined.pop(h, None)
                c.pending.add(h)
            else:
                c.pending.discard(h)
                c.mined[h] = tx
        for q, found in facts.logs.items():
            c = self.cache.evm.setdefault(q.chain, EvmChainCache())
            if q.to_block is None or pair_of(q) not in c.pairs:
                continue
            stale = [k for k, lg in c.logs.items() if log_matches(lg, q, q.to_block)]
            for k in stale:
                del c.logs[k]
            for lg in found:
                c.logs[(lg.tx_hash, lg.log_index)] = lg
        for st, stx in facts.solana_txs.items():
            if stx is not None:
                self.cache.finalized[st.signature] = stx
        now = self.cache.clock()
        for a, msgs in facts.attestations.items():
            self.cache.attestations[a] = (now, msgs)
        for s, lead in facts.leads.items():
            self.cache.leads[s] = (now, lead)

    # ---- Solana ---------------------------------------------------------------------------------------

    async def _solana(
        self, reader: SolanaStatusReader, group: list[Read]
    ) -> tuple[Facts, dict[Read, BaseException]]:
        answers: dict[SolanaTx, SolanaTransaction | None] = {}
        invalid: list[Read] = []
        ask: list[SolanaTx] = []
        for r in group:
            assert isinstance(r, SolanaTx)
            if r.signature in self.cache.finalized:
                answers[r] = self.cache.finalized[r.signature]  # finalized: it cannot change
            elif not valid_signature(r.signature):
                invalid.append(r)  # refused by the direct read, as observe refuses it
            else:
                ask.append(r)
        c = self.cache.solana
        if self.scan_solana is None:  # decided once a tick, on the first (fullest) round's count
            many = len({r.signature for r in ask}) > solana_scan.STATUS_BATCH
            self.scan_solana = many and isinstance(reader, SolanaBlockScanner)
        if self.scan_solana and isinstance(reader, SolanaBlockScanner):
            final = await self._solana_scanned(reader, reader, ask)
        else:
            c.stop()
            unknown = [r.signature for r in ask if r.signature not in self.statuses]
            if unknown:
                self.statuses.update(await reader.signature_statuses(unknown))
            final = [r for r in ask if self.statuses.get(r.signature) == "finalized"]
        answers.update({r: None for r in ask if r not in final})  # not finalized: getTransaction says null
        self.one_off += len(final)
        got, failed = await self._read_now([*final, *invalid])
        self.remember(got)
        for r, tx in got.solana_txs.items():
            if tx is not None:
                c.due.discard(r.signature)
        facts = Facts(solana_txs=answers)
        self.fresh = self.fresh.merged(facts)
        return facts.merged(got), failed

    async def _solana_scanned(
        self, reader: SolanaStatusReader, scanner: SolanaBlockScanner, ask: list[SolanaTx]
    ) -> list[SolanaTx]:
        """Finalized blocks scanned once this tick (sessions/solana_scan.py); the signatures now known final.
        A "not yet" from the scan is a cached answer (stale); a failure fails every Solana read this tick."""
        c = self.cache.solana
        if SOLANA in self.broken:
            raise self.broken[SOLANA]
        try:
            if SOLANA not in self.advanced:
                await solana_scan.advance(scanner, c)
                self.advanced.add(SOLANA)
            await solana_scan.first_sight(reader, c, {r.signature for r in ask})
        except ObservationUnavailable as exc:
            self.broken[SOLANA] = exc
            raise
        final = [r for r in ask if r.signature in c.due]
        self.stale.update(r for r in ask if r.signature in c.pending)
        return final

    # ---- Circle Iris, LayerZero Scan -------------------------------------------------------------------

    async def _lookups(self, group: list[Read]) -> tuple[Facts, dict[Read, BaseException]]:
        now, ttl = self.cache.clock(), self.cache.lookup_seconds
        attested = self.cache.attestations
        leads = self.cache.leads
        for a in [a for a, (at, _) in attested.items() if now - at >= ttl]:
            del attested[a]
        for s in [s for s, (at, _) in leads.items() if now - at >= ttl]:
            del leads[s]
        kept = Facts(
            attestations={r: attested[r][1] for r in group if isinstance(r, Attestation) and r in attested},
            leads={r: leads[r][1] for r in group if isinstance(r, ScanLookup) and r in leads},
        )
        self.stale.update(r for r in group if kept.has(r))
        got, failed = await self._read_now([r for r in group if not kept.has(r)])
        self.remember(got)
        return kept.merged(got), failed

    # ---- end of tick ----------------------------------------------------------------------------------

    def finish(self, chain: str) -> None:
        """Forget what no session of `chain` asked this tick (sessions that left, or moved on)."""
        c = self.cache.evm.get(chain)
        if c is not None and chain in self.advanced and chain not in self.broken:
            hashes = {r.tx_hash.lower() for r in self.asked if isinstance(r, TxByHash) and r.chain == chain}
            pairs = {pair_of(r) for r in self.asked if isinstance(r, LogsSince) and r.chain == chain}
            c.pending &= hashes
            c.due &= hashes
            c.mined = {h: tx for h, tx in c.mined.items() if h in hashes}
            c.pairs = {p: n for p, n in c.pairs.items() if p in pairs}
            filters = {filter_of(r) for r in self.asked if isinstance(r, LogsSince) and r.chain == chain}
            c.filters = {f: n for f, n in c.filters.items() if f in filters}
            c.logs = {
                k: lg
                for k, lg in c.logs.items()
                if (lg.address.lower(), lg.topics[0] if lg.topics else None) in c.pairs
                or (lg.address.lower(), None) in c.pairs
            }
        if chain == SOLANA:
            asked = {r.signature for r in self.asked if isinstance(r, SolanaTx)}
            self.cache.finalized = {s: t for s, t in self.cache.finalized.items() if s in asked}
            if SOLANA not in self.broken:
                self.cache.solana.pending &= asked
                self.cache.solana.due &= asked


__all__ = ["MAX_SCAN_GAP", "REORG_REWIND", "EvmChainCache", "TickReads", "WatchCache"]
