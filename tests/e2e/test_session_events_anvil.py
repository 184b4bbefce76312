"""The event log of a route carried on local chains (anvil, the test as Circle), read over the event stream: one
event per transition, in order, each saying where the caller's value is, with the amounts the chains show.

Arbitrum USDC -> Base ETH: CCTP burn on Arbitrum (in flight), Iris not indexed yet (pending), attested (the mint is
an action), the mint on Base (USDC in the wallet), the swap on Base (complete). Runs once per session store."""

from __future__ import annotations

import json
from typing import Any

import httpx
from _session_world import CCTP_ROUTE, World, advance, eth, gas_paid, hashes, submit, usd, wallet
from httpx_sse import connect_sse
from tests.e2e.test_sessions_anvil import (  # noqa: F401 - the module's chain world, as fixtures
    burn_and_attest,
    world,
)

from routequote.core.quote import SESSION_HEADER


def streamed(w: World, sid: str, token: str) -> list[dict[str, Any]]:
    with (
        httpx.Client(base_url=w.api.url, timeout=60) as http,
        connect_sse(http, "GET", f"/v2/session/{sid}/events", headers={SESSION_HEADER: token}) as source,
    ):
        assert source.response.status_code == 200
        return [json.loads(m.data) for m in source.iter_sse() if m.data]


def test_a_cctp_route_streams_each_transition_with_where_the_funds_are(world: World) -> None:  # noqa: F811
    w = world  # the only test of this module: the world fixture reverts the chains after it
    who, key = wallet(w)
    s, token = w.api.create(CCTP_ROUTE, {"arbitrum": who, "base": who})
    sid = s["session_id"]
    s, (burn, amount, fee) = burn_and_attest(w, key, s, sid, token)
    base0 = usd(w.base, who)
    mint = submit(w.base, key, s)
    base1 = usd(w.base, who)
    s = advance(w, sid, token, s, hashes(mint), "action_ready", "submit_current_action")
    eth0 = eth(w.base, who)
    swap = submit(w.base, key, s)
    eth1 = eth(w.base, who)
    advance(w, sid, token, s, hashes(swap), "complete", "none")

    events = streamed(w, sid, token)  # the session rests: the stream replays the log and ends
    assert [e["type"] for e in events] == [
        "create",
        "step_verified_bridge_in_flight",
        "destination_pending",
        "destination_action_ready",
        "step_verified_next_ready",
        "step_verified_final",
    ]
    assert [e["sequence"] for e in events] == [1, 2, 3, 4, 5, 6]
    assert [e["step_index"] for e in events] == [0, 0, 0, 0, 1, 1]
    create, flying, pending, attested, minted, done = events

    assert create["funds"]["chain"] == "arbitrum" and create["funds"]["owner"] == who
    burned = [h.lower() for h in hashes(burn)]
    assert [(t["chain"], t["side"], t["tx_id"], t["verified"]) for t in flying["transactions"]] == [
        *(("arbitrum", "source", h, False) for h in burned),
        *(("arbitrum", "source", h, True) for h in burned),
    ]
    assert flying["funds"] == {
        "chain": "base",
        "token": "USDC",
        "amount_base": None,
        "owner": "bridge:circle_cctp",
        "wallet": who,
        "state": "in_flight",
    }
    assert pending["transactions"] == [] and pending["funds"] == flying["funds"]
    assert attested["next_operation"] == "submit_current_action" and attested["funds"]["state"] == "in_flight"
    assert ("base", "destination", hashes(mint)[0].lower(), True) in [
        (t["chain"], t["side"], t["tx_id"], t["verified"]) for t in minted["transactions"]
    ]
    assert minted["funds"]["owner"] == who and minted["funds"]["state"] == "in_wallet"
    assert (
        int(minted["funds"]["amount_base"]) == base1 - base0 == amount - fee
    )  # what the chain shows arrived
    assert done["funds"]["chain"] == "base" and done["funds"]["token"] == "ETH"
    assert int(done["funds"]["amount_base"]) == eth1 - eth0 + gas_paid(swap)
    assert (done["outcome"], done["terminal"], done["final_on_chain"]) == ("complete", True, True)
    assert all(not e["terminal"] for e in events[:-1])
