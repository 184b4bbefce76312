"""The watcher's Solana cache: pending signatures matched against FINALIZED blocks, a bounded number of calls per
new slot whatever the number of pending signatures (used by `watch_cache.TickReads`).

While at most `STATUS_BATCH` (256) signatures are pending, one `getSignatureStatuses` call a tick answers them all
(cheapest for small loads). Above that, statuses would cost one call per 256 signatures, so the chain is followed
block by block instead (ports.SolanaBlockScanner), per tick:

1. one `getBlocks(scanned_to + 1, ...)` at finalized: the produced slots since the last scanned one (skipped
   slots are simply absent);
2. when signatures are pending, one request holding `getBlock` (transactionDetails `signatures`, finalized) of
   each of those slots; a pending signature a block holds is final, and becomes `due`: read once directly
   (`getTransaction`, what the kinds read) until that read answers;
3. a signature first seen is checked once with `getSignatureStatuses` (it may have landed before the watcher
   saw it), after the scan: a signature not finalized by then lands in a slot the next scans cover.

Resync (`getSlot` at finalized, then every pending signature checked again by its status, as at first sight):
when scanning starts, when more than `MAX_SLOT_GAP` produced slots wait at once, and when a block's answer passes
the reader's response size limit (ports.SolanaScanTooLarge: the statuses answer for that tick, and scanning goes
on after the slot the resync read). Any other failure or garbage raises before anything is kept: the next tick
scans the same slots again. Only finalized blocks are scanned, so a signature found is final; an answer that
says "not found yet" is still marked stale by the caller, so a decision that would change on it is decided again
from direct reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from routequote.ports import SolanaBlockScanner, SolanaScanTooLarge, SolanaStatusReader

STATUS_BATCH = 256  # getSignatureStatuses takes at most 256 signatures a call: above this, scan blocks
MAX_SLOT_GAP = 64  # more produced slots than this waiting in one tick: resync through statuses instead


@dataclass
class SolanaScanCache:
    scanned_to: int | None = None  # every finalized block up to this slot was matched (None: not scanning)
    pending: set[str] = field(default_factory=set)  # checked, and no scanned block holds them
    due: set[str] = field(default_factory=set)  # final (a scanned block or its status says so): read directly
    resyncs: int = 0  # times the scan fell back to statuses (tests, bench)

    def stop(self) -> None:
        """Back to statuses (few pending): the next scan starts with a resync."""
        self.scanned_to = None
        self.pending.clear()
        self.due.clear()


async def advance(scanner: SolanaBlockScanner, c: SolanaScanCache) -> None:
    """Steps 1-2 of the module docstring, once per tick. Raises ObservationUnavailable with nothing kept."""
    if c.scanned_to is None:
        await _resync(scanner, c)
        return
    try:
        slots = await scanner.finalized_blocks(c.scanned_to + 1)
        if not slots:
            return
        if len(slots) > MAX_SLOT_GAP:
            await _resync(scanner, c)
            return
        found = await scanner.block_signatures(slots) if c.pending else {}
    except SolanaScanTooLarge:
        await _resync(scanner, c)
        return
    landed: set[str] = set()
    for sigs in found.values():
        landed |= c.pending & sigs
    c.due |= landed
    c.pending -= landed
    c.scanned_to = slots[-1]


async def _resync(scanner: SolanaBlockScanner, c: SolanaScanCache) -> None:
    slot = await scanner.finalized_slot()
    c.resyncs += 1
    c.scanned_to = slot
    c.pending.clear()  # checked again by their status this tick, as at first sight


async def first_sight(reader: SolanaStatusReader, c: SolanaScanCache, signatures: set[str]) -> None:
    """Step 3: signatures neither pending nor due, checked once by their status (after `advance`)."""
    new = sorted(signatures - c.pending - c.due)
    if not new:
        return
    statuses = await reader.signature_statuses(new)
    for s in new:
        (c.due if statuses.get(s) == "finalized" else c.pending).add(s)


__all__ = ["MAX_SLOT_GAP", "STATUS_BATCH", "SolanaScanCache", "advance", "first_sight"]
