"""A named transaction that is not final, then vanishes in a reorg (issue 42, section 4): nothing advances
before finality, over real HTTP against a running server and a real anvil.

The session's swap on base (`base:ETH->base:USDC`, finality 3 blocks) is signed, mined in block N and named by
the caller; then `anvil_reorg` replaces the blocks from N on with empty ones, so the transaction is gone, and
the chain moves on. Followed two ways: by the watcher alone (the caller never observes again), and by
explicit `POST /v2/session/{id}/observe` with the watcher off.

* Vanished: with the chain long past where the transaction would have been final, the session stays
  `awaiting_source_receipt` at the version its naming wrote (no event), with no verified output; observe
  answers that the transaction is not mined. The wallet broadcasts the same signed bytes again: once those
  are final the session completes, from the block that holds them now.
* Re-mined in another block: the wallet's re-broadcast lands in a later block (another height, another time)
  while receipts of the orphaned blocks would already count 3 confirmations. The session waits for 3
  confirmations of the new block, and the evidence it records is that block's, never the orphaned one's.

Each run ends by reading the whole event log over the event stream: the create, the waits (the naming; with
explicit observe, each observe's own `submitted_pending`), the completion; nothing between them advanced.
Black-box on purpose (a running server, a real anvil): it guards any receipt cache behind the reads.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from _evm import AnvilChain, balance_of, sign_and_send
from _sessions import SessionApi, deposit_relay_data, fill_relay, fund_relayer
from httpx_sse import connect_sse
from tests.e2e.test_watch_anvil import (  # noqa: F401 - the module's chain world, as fixtures
    BASE,
    ETH_USDC,
    ETH_USDG,
    ROBINHOOD,
    WAIT,
    chains,
    deployments_for,
    fresh,
    mine,
    name_once,
    receipt_of,
    settings_for,
    submit,
    wait_for,
    wallet,
)
from tests.support.server import running_server

from routequote.app import create_app
from routequote.config import Settings
from routequote.core.quote import SESSION_HEADER

pytestmark = pytest.mark.chain
FINALITY = 3  # settings_for: base=3


class Follow:
    """One session on base, followed by the watcher or by explicit observe (`how`)."""

    def __init__(self, how: str, api: SessionApi, app: Any, created: dict[str, Any], token: str) -> None:
        self.how, self.api, self.app, self.token, self.created = how, api, app, token, created
        self.sid: str = created["session_id"]
        self.action: list[dict[str, Any]] = created["current_action"]["unsigned_action"]["transactions"]

    def look(self) -> dict[str, Any]:
        """What the service makes of the chain now. The watcher: several whole ticks that gathered this session
        (the caller only reads). Observe: one explicit observe, re-checking what was named."""
        if self.how == "observe":
            r = self.api.observe(self.sid, self.token)
            assert r.status_code == 200, r.text
            return dict(r.json())
        watcher = self.app.state.watcher
        start = watcher.ticks
        deadline = time.monotonic() + WAIT
        while watcher.ticks < start + 5:  # a tick that started before the chain moved is not counted
            assert time.monotonic() < deadline, "the watcher stopped ticking"
            time.sleep(0.05)
        return self.api.read(self.sid, self.token)

    def until(self, status: str) -> dict[str, Any]:
        if self.how == "observe":
            s = self.look()
            assert s["status"] == status, s
            return s
        return wait_for(self.api, self.sid, self.token, status)

    def events(self) -> list[dict[str, Any]]:
        """The session's whole event log, replayed by the event stream (it ends after the terminal event)."""
        with (
            httpx.Client(base_url=self.api.url, timeout=WAIT) as http,
            connect_sse(
                http, "GET", f"/v2/session/{self.sid}/events", headers={SESSION_HEADER: self.token}
            ) as source,
        ):
            assert source.response.status_code == 200
            return [json.loads(m.data) for m in source.iter_sse() if m.data]


NOT_MINED = "not every named transaction is mined yet"
NOT_FINAL = "waiting for finality"


def still_waiting(s: dict[str, Any], named: dict[str, Any], note: str, observed: bool) -> None:
    """Nothing advanced: still waiting for the source receipt, the document as the naming left it (no verified
    source, no output, the funds where they were). A read (the watcher following) shows the version `named`
    has: nothing was written. An `observed` answer says why (`note`): its own `submitted_pending` restates
    the wait."""
    assert s["status"] == "awaiting_source_receipt", s
    assert (s["steps"], s["funds"], s["current_step"]) == (
        named["steps"],
        named["funds"],
        named["current_step"],
    )
    step = s["steps"][0]
    assert step.get("source") is None and step.get("actual_output_base") is None, step
    if observed:
        assert s["note"] == note, s
    else:
        assert s["session_version"] == named["session_version"]


def block_of(chain: AnvilChain, tx_hash: str) -> tuple[int, int]:
    """(number, timestamp) of the canonical block holding `tx_hash`."""
    receipt = chain.rpc.call("eth_getTransactionReceipt", tx_hash)
    assert receipt is not None, f"{tx_hash} is not mined"
    block = chain.rpc.call("eth_getBlockByNumber", receipt["blockNumber"], False)
    assert block["hash"] == receipt["blockHash"]
    return int(receipt["blockNumber"], 16), int(block["timestamp"], 16)


def latest(chain: AnvilChain) -> int:
    return int(chain.rpc.call("eth_blockNumber"), 16)


@pytest.fixture(params=["watcher", "observe"])
def follow(
    request: pytest.FixtureRequest,
    fresh: dict[int, AnvilChain],  # noqa: F811 - the imported fixture
    tmp_path: Path,
) -> Iterator[Callable[..., tuple[Follow, AnvilChain, str, str]]]:
    """A running server (watcher on, or off for explicit observe; base and robinhood final at FINALITY blocks)
    and a maker of one session of `route` (base by default): (follow, base chain, the wallet's address, its key)."""
    how: str = request.param
    settings = settings_for(
        fresh,
        f"sqlite+aiosqlite:///{tmp_path / 'reorg.sqlite3'}",
        watch=how == "watcher",
        finality_confirmations=f"base={FINALITY},arbitrum=1,robinhood={FINALITY}",
    )
    app = create_app(Settings(**settings), deployments=deployments_for(fresh))
    with running_server(app) as server:
        api = SessionApi(server)

        def make(route: str = ETH_USDC) -> tuple[Follow, AnvilChain, str, str]:
            who, key = wallet(fresh)
            s, token = api.create(
                route, {"base": who, "robinhood": who} if route == ETH_USDG else {"base": who}
            )
            return Follow(how, api, app, s, token), fresh[BASE], who, key

        yield make
        api.close()


def sign_mine_and_name(f: Follow, base: AnvilChain, key: str) -> tuple[list[str], list[str], dict[str, Any]]:
    """The wallet signs and sends the action (each transaction mined), the caller names it once:
    (hashes, the signed bytes, the naming's answer)."""
    raws: list[str] = []
    receipts = sign_and_send(base, key, f.action, raws=raws)
    hashes = [str(r["transactionHash"]) for r in receipts]
    named = name_once(f.api, f.sid, f.token, hashes)
    assert named["status"] == "awaiting_source_receipt", named
    return hashes, raws, named


def reorg_away(base: AnvilChain, hashes: list[str]) -> None:
    """Replace every block from the first transaction's on with empty ones (same height, other hashes)."""
    first = block_of(base, hashes[0])[0]
    base.rpc.call("anvil_reorg", latest(base) - first + 1, [])
    for h in hashes:
        assert base.rpc.call("eth_getTransactionReceipt", h) is None
        assert base.rpc.call("eth_getTransactionByHash", h) is None


def rebroadcast(base: AnvilChain, raws: list[str], at: int) -> list[str]:
    """The wallet sends the same signed bytes again; the first lands in a block of time `at`."""
    base.rpc.call("evm_setNextBlockTimestamp", at)
    sent = []
    for raw in raws:  # one at a time, each mined before the next is sent (as sign_and_send does)
        sent.append(str(base.rpc.call("eth_sendRawTransaction", raw)))
        deadline = time.monotonic() + WAIT
        while base.rpc.call("eth_getTransactionReceipt", sent[-1]) is None:
            assert time.monotonic() < deadline, "the re-broadcast transaction was not mined"
            time.sleep(0.01)
    return sent


def completes_from(
    f: Follow, base: AnvilChain, hashes: list[str], who: str, usdc_before: int, waited: dict[str, Any]
) -> None:
    """The session completes, and what it recorded is the canonical blocks' evidence; its event log holds the
    create, the waits (the naming; with explicit observe, each observe's own restating wait), the completion."""
    done = f.until("complete")
    source = done["steps"][0]["source"]
    assert source["tx_ids"] == [h.lower() for h in hashes]
    assert source["block_times"] == [block_of(base, h)[1] for h in hashes]
    got = balance_of(base, base.addresses["token6"], who) - usdc_before
    assert int(done["steps"][0]["actual_output_base"]) == got > 0
    events = f.events()
    statuses = [e["status"] for e in events]
    assert [e["sequence"] for e in events] == list(range(1, done["session_version"] + 1))
    assert statuses[0] == "action_ready" and statuses[-1] == "complete"
    assert set(statuses[1:-1]) == {"awaiting_source_receipt"}
    assert {e["type"] for e in events[1:-1]} == {"submitted_pending"}
    if f.how == "watcher":  # the watcher wrote one event: the completion
        assert done["session_version"] == waited["session_version"] + 1


def test_a_named_transaction_reorged_away_never_advances_the_session_until_it_is_mined_again_and_final(
    follow: Callable[..., tuple[Follow, AnvilChain, str, str]],
) -> None:
    f, base, who, key = follow()
    usdc0 = balance_of(base, base.addresses["token6"], who)
    hashes, raws, named = sign_mine_and_name(f, base, key)
    orphaned_block, orphaned_time = block_of(base, hashes[0])
    mine(base, 1)  # mined, not final
    still_waiting(f.look(), named, NOT_FINAL, f.how == "observe")

    reorg_away(base, hashes)
    assert balance_of(base, base.addresses["token6"], who) == usdc0  # the swap is undone on chain
    mine(base, 2 * FINALITY)  # the chain moves well past where the transactions would have been final
    still_waiting(f.look(), named, NOT_MINED, f.how == "observe")
    again = f.api.observe(f.sid, f.token, hashes)  # naming the vanished transactions again changes nothing
    assert again.status_code == 200, again.text
    still_waiting(again.json(), named, NOT_MINED, True)
    named = again.json()

    # the wallet re-broadcasts the same bytes: mined again, later; only their own finality advances the session
    assert rebroadcast(base, raws, orphaned_time + 30) == hashes
    remined_block, remined_time = block_of(base, hashes[0])
    assert remined_block > orphaned_block + 2 * FINALITY and remined_time != orphaned_time
    while latest(base) - block_of(base, hashes[-1])[0] + 1 < FINALITY:
        still_waiting(f.look(), named, NOT_FINAL, f.how == "observe")
        mine(base, 1)
    completes_from(f, base, hashes, who, usdc0, named)


def test_a_transaction_re_mined_in_another_block_is_final_by_that_block_and_recorded_from_it(
    follow: Callable[..., tuple[Follow, AnvilChain, str, str]],
) -> None:
    f, base, who, key = follow()
    usdc0 = balance_of(base, base.addresses["token6"], who)
    hashes, raws, named = sign_mine_and_name(f, base, key)
    orphaned = [block_of(base, h) for h in hashes]
    mine(base, 1)
    reorg_away(base, hashes)
    rebroadcast(base, raws, orphaned[0][1] + 30)
    remined = [block_of(base, h) for h in hashes]
    assert all(new[0] > old[0] and new[1] != old[1] for new, old in zip(remined, orphaned, strict=True))
    # the orphaned receipts would count FINALITY confirmations at once, the real ones only FINALITY - 1 blocks on
    while latest(base) - remined[-1][0] + 1 < FINALITY:
        assert latest(base) - orphaned[-1][0] + 1 >= FINALITY
        still_waiting(f.look(), named, NOT_FINAL, f.how == "observe")
        mine(base, 1)
    completes_from(f, base, hashes, who, usdc0, named)


# ---- the relayer's Across fill on the destination ------------------------------------------------------------


def in_flight(s: dict[str, Any]) -> None:
    """The bridge has not delivered: no output recorded for the Across step, the funds still in flight."""
    assert s["status"] == "awaiting_destination", s
    step = s["steps"][1]
    assert step.get("destination") is None and step.get("actual_output_base") is None, step
    assert s["funds"]["state"] == "in_flight", s["funds"]


def past_source(
    f: Follow, base: AnvilChain, key: str, session: dict[str, Any], status: str
) -> dict[str, Any]:
    """The wallet signs the current action, the caller names it once, base makes it final: the next status."""
    name_once(f.api, f.sid, f.token, submit(base, key, session))
    mine(base, FINALITY)
    return f.until(status)


def test_an_across_fill_counts_only_once_final_and_a_fill_reorged_away_delivers_nothing(
    follow: Callable[..., tuple[Follow, AnvilChain, str, str]],
    fresh: dict[int, AnvilChain],  # noqa: F811 - the imported fixture
) -> None:
    f, base, who, key = follow(ETH_USDG)
    rh = fresh[ROBINHOOD]
    s = past_source(f, base, key, f.created, "action_ready")
    s = past_source(f, base, key, s, "awaiting_destination")
    deposit = s["steps"][1]["claimed_tx_ids"][-1]
    relay = deposit_relay_data(receipt_of(base, deposit), base.addresses["local_spoke"], BASE)
    relayer = rh.accounts[1]
    fund_relayer(rh, relayer, 10**12)
    usdg0 = balance_of(rh, rh.addresses["token6"], who)

    first = fill_relay(rh, relayer, relay, BASE)
    assert balance_of(rh, rh.addresses["token6"], who) > usdg0
    in_flight(f.look())  # filled, not final
    reorg_away(rh, [str(first["transactionHash"])])
    assert balance_of(rh, rh.addresses["token6"], who) == usdg0  # the fill is undone on chain
    mine(rh, 2 * FINALITY)
    in_flight(f.look())

    fill = str(fill_relay(rh, relayer, relay, BASE)["transactionHash"])  # the relayer fills again
    usdg1 = balance_of(rh, rh.addresses["token6"], who)
    while latest(rh) - block_of(rh, fill)[0] + 1 < FINALITY:
        in_flight(f.look())
        mine(rh, 1)
    done = f.until("complete")
    assert done["steps"][1]["destination"]["tx_ids"] == [fill.lower()]
    assert int(done["steps"][1]["actual_output_base"]) == usdg1 - usdg0 > 0
    statuses = [e["status"] for e in f.events()]
    assert statuses[-1] == "complete" and "complete" not in statuses[:-1]
