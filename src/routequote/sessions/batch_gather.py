"""The watcher's batched gatherer: per chain per tick, the reads of every waiting session at once.

`PerSessionGatherer` (sessions/watch.py) runs observe's gather for each session on its own, so every session
costs its own receipt reads, block height and chain id check. `BatchedGatherer` implements the same seam
(`Gatherer.outcomes(chain, records)`) from what the step kinds declare (`core.sessions.reads`):

1. each session's step kind is asked what it needs (`SessionService.watched_observing`: the same kind and the
   same `Observing` that observe would use);
2. the reads every still-undecided session lacks are deduplicated across sessions and answered by a
   `watch_cache.TickReads`: from per-chain caches kept across ticks and refreshed once per new block (an EVM
   chain's head, its new blocks' receipts and one log filter for every watched contract; Solana's signature
   statuses, or past 256 pending signatures its new finalized blocks; Circle Iris and LayerZero Scan answers
   kept a lookup interval), reading directly only what the caches cannot answer (a hash first seen or found in a
   new block, a log search first asked, a finalized signature) through `BatchReads` (ports.EvmBatchReader /
   SolanaBatchReader batches, else one at a time);
3. every kind is asked again with the shared facts, until each has decided (a kind is pure: the same document
   with the same facts decides the same thing, whatever other reads the facts also hold);
   a session whose decision would change anything after a cached answer is decided again from direct reads
   (`FreshReads`), so nothing advances on a cached fact;
4. each decision is fulfilled as observe fulfils it (`SessionService.watched_advance`), in record order.

The outcomes are those `PerSessionGatherer` gives on the same chain: a session whose kind or read fails gets the
exception (a read that failed alone fails only the sessions that need it); the first `ObservationUnavailable`,
in record order, ends the chain for this tick, so the sessions after it are `None` (not looked at), as there.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from routequote.core.assets import Chain
from routequote.core.sessions.kinds import REGISTRY, KindKey, StepKind
from routequote.core.sessions.machine import Status, next_status
from routequote.core.sessions.reads import (
    SOLANA,
    Attestation,
    Facts,
    LatestBlock,
    LogsSince,
    Observing,
    Read,
    ScanLookup,
    SolanaTx,
    TxByHash,
    source_of,
)
from routequote.core.sessions.state import Decision
from routequote.ports import EvmBatchReader, ObservationUnavailable, SessionRecord, SolanaBatchReader
from routequote.sessions.gather import ChainFacts
from routequote.sessions.watch_cache import TickReads, WatchCache

MAX_ROUNDS = 16  # ask / read rounds per tick; every kind decides within a few


@runtime_checkable
class BatchedSessions(Protocol):
    """What the batched gatherer needs of the session service (engine.SessionService)."""

    @property
    def facts(self) -> ChainFacts: ...

    def watched_observing(self, record: SessionRecord) -> tuple[KindKey, Observing]: ...

    async def watched_advance(self, record: SessionRecord, decision: Decision) -> Decision: ...


class BatchReads:
    """Runs a deduplicated list of reads through `facts`' ports, grouped by where each is answered, batched
    where the reader can batch. Returns the answers and the reads that failed, each with its exception. In a
    group read one at a time, the first `ObservationUnavailable` fails the rest of the group unasked (as the
    per-session path stops at it)."""

    def __init__(self, facts: ChainFacts) -> None:
        self.facts = facts

    async def run(self, reads: Sequence[Read]) -> tuple[Facts, dict[Read, BaseException]]:
        groups: dict[str, list[Read]] = {}
        for r in dict.fromkeys(reads):
            groups.setdefault(source_of(r), []).append(r)
        facts, failed = Facts(), dict[Read, BaseException]()
        for source, group in groups.items():
            try:
                got, bad = await self._group(source, group)
            except ObservationUnavailable as exc:  # the whole group (a batch that failed, no reader)
                got, bad = Facts(), dict.fromkeys(group, exc)
            facts = facts.merged(got)
            failed.update(bad)
        return facts, failed

    async def _group(self, source: str, group: list[Read]) -> tuple[Facts, dict[Read, BaseException]]:
        if source == SOLANA:
            solana = self.facts.solana
            if isinstance(solana, SolanaBatchReader):
                return await solana.batch_transactions(group)
        elif source in {c.value for c in Chain}:
            evm = self.facts.evm
            if isinstance(evm, EvmBatchReader):
                return await evm.batch_read(source, group)
        return await self._one_by_one(group)

    async def _one_by_one(self, group: list[Read]) -> tuple[Facts, dict[Read, BaseException]]:
        facts, failed = Facts(), dict[Read, BaseException]()
        for i, r in enumerate(group):
            try:
                facts = facts.merged(await self.facts.read([r]))
            except ObservationUnavailable as exc:
                failed.update(dict.fromkeys(group[i:], exc))
                break
            except Exception as exc:  # this read only (an invalid hash: a 4xx)
                failed[r] = exc
        return facts, failed


class FreshReads:
    """The second look at a session whose decision would change it after a cached answer: what this tick read
    directly is reused, everything else is read directly now (and replaces what the caches said)."""

    def __init__(self, tick: TickReads) -> None:
        self.tick = tick

    async def run(self, reads: Sequence[Read]) -> tuple[Facts, dict[Read, BaseException]]:
        fresh = self.tick.fresh
        now = [r for r in dict.fromkeys(reads) if not fresh.has(r)]
        facts = Facts(
            txs={r: fresh.txs[r] for r in reads if isinstance(r, TxByHash) and fresh.has(r)},
            blocks={r: fresh.blocks[r] for r in reads if isinstance(r, LatestBlock) and fresh.has(r)},
            logs={r: fresh.logs[r] for r in reads if isinstance(r, LogsSince) and fresh.has(r)},
            solana_txs={r: fresh.solana_txs[r] for r in reads if isinstance(r, SolanaTx) and fresh.has(r)},
            attestations={
                r: fresh.attestations[r] for r in reads if isinstance(r, Attestation) and fresh.has(r)
            },
            leads={r: fresh.leads[r] for r in reads if isinstance(r, ScanLookup) and fresh.has(r)},
        )
        if not now:
            return facts, {}
        self.tick.one_off += len(now)
        got, failed = await self.tick.direct.run(now)
        self.tick.remember(got)
        return facts.merged(got), failed


class Runner(Protocol):
    async def run(self, reads: Sequence[Read]) -> tuple[Facts, dict[Read, BaseException]]: ...


def changes(record: SessionRecord, decision: Decision) -> bool:
    """Whether committing `decision` would write anything (as `SessionService.commit_watched` judges it)."""
    try:
        status = next_status(Status(record.status), decision.event)
    except Exception:  # an illegal transition: the commit refuses it, but look again before it tries
        return True
    if status.value != record.status:
        return True
    document = decision.state.to_json()
    # the plain comparison first (most waiting sessions restate their document); the JSON round trip decides
    # only when it differs (a tuple where the stored JSON has a list)
    return document != record.state and json.loads(json.dumps(document)) != record.state


class BatchedGatherer:
    """`Gatherer` for the watcher: every waiting session of one chain gathered together (module docstring),
    its reads answered from the per-chain caches (`sessions.watch_cache`) kept across ticks."""

    def __init__(self, sessions: BatchedSessions, cache: WatchCache | None = None) -> None:
        self.sessions = sessions
        self.cache = cache if cache is not None else WatchCache()
        self.last: TickReads | None = None  # the last chain's tick: its one-off reads (the bench counts them)

    async def outcomes(
        self, chain: Chain, records: Sequence[SessionRecord]
    ) -> list[Decision | BaseException | None]:
        out: list[Decision | BaseException | None] = [None] * len(records)
        asking: dict[int, tuple[StepKind, Observing]] = {}
        for i, record in enumerate(records):
            try:
                key, obs = self.sessions.watched_observing(record)
            except Exception as exc:  # observe would refuse this session: it alone
                out[i] = exc
                continue
            asking[i] = (REGISTRY[key], obs)
        tick = TickReads(self.cache, BatchReads(self.sessions.facts))
        self.last = tick
        used: dict[int, set[Read]] = {}
        decided = await self._decide(dict(asking), out, tick, used)
        # a change decided on a cached answer is decided again on direct reads: only those may advance it
        again = {
            i: asking[i]
            for i, d in decided.items()
            if used.get(i, set()) & tick.stale and changes(records[i], d)
        }
        if again:
            fresh = await self._decide(again, out, FreshReads(tick), {})
            for i in again:
                if i in fresh:
                    decided[i] = fresh[i]
                else:
                    decided.pop(i, None)
        tick.finish(chain.value)
        for i, record in enumerate(records):
            if i in decided:
                try:
                    out[i] = await self.sessions.watched_advance(record, decided[i])
                except Exception as exc:
                    out[i] = exc
            if isinstance(out[i], ObservationUnavailable):  # the chain is down for this tick
                out[i + 1 :] = [None] * (len(records) - i - 1)
                break
        return out

    async def _decide(
        self,
        asking: dict[int, tuple[StepKind, Observing]],
        out: list[Decision | BaseException | None],
        reads: Runner,
        used: dict[int, set[Read]],
    ) -> dict[int, Decision]:
        """Ask every kind, read what they lack together, ask again: each session's decision, or its
        exception in `out`; `used` collects the reads each session asked for."""
        facts = Facts()
        decided: dict[int, Decision] = {}
        for _ in range(MAX_ROUNDS):
            needs: dict[int, tuple[Read, ...]] = {}
            for i, (kind, obs) in asking.items():
                try:
                    got = kind.observe(obs, facts)
                except Exception as exc:  # rejected (a 4xx) or unavailable (not pinned): this session
                    out[i] = exc
                    continue
                if isinstance(got, Decision):
                    decided[i] = got
                    continue
                lacking = tuple(r for r in got.reads if not facts.has(r))
                if not lacking:  # pragma: no cover - a kind's defect, as ChainFacts.observe says
                    out[i] = RuntimeError("a step kind asked again for reads it has")
                    continue
                needs[i] = lacking
                used.setdefault(i, set()).update(lacking)
            asking = {i: asking[i] for i in needs}
            if not needs:
                return decided
            more, failed = await reads.run([r for lacking in needs.values() for r in lacking])
            facts = facts.merged(more)
            for i, lacking in needs.items():
                bad = next((failed[r] for r in lacking if r in failed), None)
                if bad is not None:
                    out[i] = bad
                    del asking[i]
        for i in asking:  # pragma: no cover - no kind asks this many rounds
            out[i] = RuntimeError(f"a step kind was still reading after {MAX_ROUNDS} rounds")
        return decided


__all__ = ["BatchReads", "BatchedGatherer", "BatchedSessions", "FreshReads", "changes"]
