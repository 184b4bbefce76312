"""The watcher on a v1 corridor session (sessions/watch.py over v1.V1CorridorMode's observe), on the session corpus's
fakes (fixed clock, sequential ids, in-memory store) and the embedded market.

Two identical worlds: a corridor session whose Raydium swap the caller named (`v1_verify_source`) before its
signature was finalized. Once it is, one world's caller names it again through its observe tool; the other is
left to the watcher. They read back the same, with the same event log (only the caller's idempotency record
differs). A look before the signature is finalized writes nothing."""

from __future__ import annotations

import asyncio
from typing import Any

from solders.keypair import Keypair
from tests.support.solana_swap_receipt import swap_result
from tests.unit.actions.support import intent_for
from tests.unit.sessions.corpus import Recorder

from routequote.observe.solana import parse_get_transaction
from routequote.ports import SolanaTransaction
from routequote.sessions.watch import WatchConfig, Watcher, Watching
from routequote.storage.watch_store import watch_store

CORRIDOR = "solana:SOL->base:ETH"
OWNER = Keypair.from_seed(bytes(range(32)))  # the same wallet, hence the same signed swap, in both worlds
WALLET = str(OWNER.pubkey())


class PublishedSolana:
    """A SolanaChainReader answering the `getTransaction` results published to it (None before: not finalized)."""

    def __init__(self) -> None:
        self.results: dict[str, dict[str, Any]] = {}

    async def transaction(self, signature: str) -> SolanaTransaction | None:
        result = self.results.get(signature)
        return None if result is None else parse_get_transaction(signature, result)


async def _named() -> tuple[Recorder, PublishedSolana, str, str, dict[str, Any]]:
    """A corridor session whose swap was named before it was finalized (awaiting_source_receipt)."""
    r = Recorder()
    solana = r.sessions.solana = PublishedSolana()  # type: ignore[assignment]
    s = r.sessions
    quote = await r.service.quote_request(intent_for(CORRIDOR, 100))
    fields = {
        "quote_id": quote["quote_id"],
        "idempotency_key": "create-v1-watch",
        "source_wallet": WALLET,
        "destination_wallet": "0x" + "44" * 20,
    }
    sid = (await s.v1_create(WALLET, fields)).body["session_id"]
    action = (await s.v1_prepare_source(WALLET, sid, {})).body["current_action"]["unsigned_action"]
    sig, result = swap_result(action, OWNER, int(action["expectedOutput"]), 381_800_001)
    named = await s.v1_verify_source(WALLET, sid, {"signature": sig, "idempotency_key": "name-swap"})
    assert (named.body["status"], named.body["session_version"]) == ("awaiting_source_receipt", 3)
    return r, solana, sid, sig, result


def test_a_watched_corridor_session_reads_back_exactly_as_its_observe_tool_would_have_left_it() -> None:
    async def run() -> None:
        observed, solana_a, sid_a, sig_a, result_a = await _named()
        watched, solana_b, sid_b, sig_b, result_b = await _named()
        assert (sid_a, sig_a, result_a) == (sid_b, sig_b, result_b)  # the two worlds are the same so far
        watching = Watching(WatchConfig(interval_seconds=0.05), None)
        watcher = Watcher(watched.sessions, watch_store(watched.sessions.store), watching)

        idle = await watcher.tick()  # not finalized yet: looked at, nothing written
        assert (idle.held, idle.looked_at, idle.advanced) == (True, 1, 0)
        assert (await watched.sessions.store.get(sid_b)).version == 3  # type: ignore[union-attr]

        solana_a.results[sig_a] = result_a
        solana_b.results[sig_b] = result_b
        answer = await observed.sessions.v1_verify_source(
            WALLET, sid_a, {"signature": sig_a, "idempotency_key": "caller-observe"}
        )
        report = await watcher.tick()
        assert (report.looked_at, report.advanced, report.failed) == (1, 1, 0)

        a = await observed.sessions.v1_read(WALLET, sid_a)
        b = await watched.sessions.v1_read(WALLET, sid_b)
        assert a == b and (a["status"], a["current_step"], a["session_version"]) == ("action_required", 1, 4)
        assert a["steps"][0]["actual_output_base"] == answer.body["steps"][0]["actual_output_base"]
        # what the caller's observe answered is what both read back (the answer also carries its note)
        assert {k: v for k, v in answer.body.items() if k != "note"} == {
            k: v for k, v in a.items() if k != "note"
        }
        events_a = await observed.sessions.store.events(sid_a)
        events_b = await watched.sessions.store.events(sid_b)
        assert events_a == events_b
        assert [(e.seq, e.event, e.to_status) for e in events_b][-1] == (
            4,
            "step_verified_next_required",
            "action_required",
        )
        # the caller's key is recorded where the caller sent it, and nowhere else
        assert await observed.sessions.store.idempotent(f"session:{sid_a}", "caller-observe") is not None
        assert await watched.sessions.store.idempotent(f"session:{sid_b}", "caller-observe") is None

        after = await watcher.tick()  # action_required waits on the caller (prepare the burn): not looked at
        assert (after.looked_at, after.advanced) == (0, 0)

    asyncio.run(run())
