"""The Solana swap SIMULATOR of `_solana_sim.py`, held against the service's own observer and evidence rules.

Raydium CLMM and Orca Whirlpool programs are not available offline. A swap prepared by the service over HTTP
(a live market reading the pinned pools from recorded Solana responses: the rig of
`tests/integration/test_prepare_solana_swaps.py`) is signed by a test wallet; LiteSVM executes its SPL parts
(wSOL wrap, ATA creation, the fee `TransferChecked`, the unwrap), the swap's effect is the project's CLMM math
(`core.clmm.swap_exact_input`) over the very pool the quote priced, and the whole transaction's `getTransaction`
answer (wire format) goes through the production parser (`observe.solana.parse_get_transaction`) and the
session evidence rule (`core.sessions.evidence.verify_solana_action`): input, 1 bp fee and output equal what
the simulation moved, and the output is at least the prepared minimum. This is the Solana executor the route
suite needs once a session can carry a Solana swap (issue 18); it proves the simulator, not the venues.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from _solana_sim import simulate_solana_swap
from solders.keypair import Keypair
from tests.integration.test_prepare_solana_swaps import T0
from tests.unit.actions.support import approval_for, intent_for
from tests.unit.actions.test_solana_swaps import pinned_live_market, pinned_raydium_upstreams

from routequote.app import create_app
from routequote.clock import FixedClock, SequentialIds
from routequote.config import Settings
from routequote.core.clmm import swap_exact_input
from routequote.core.routes import ROUTES
from routequote.core.sessions.evidence import verify_solana_action
from routequote.observe.solana import parse_get_transaction

SWAP_ROUTES = [
    "solana:SOL->solana:USDC",  # Raydium, SOL in (wrap, fee in wSOL)
    "solana:USDC->solana:SOL",  # Raydium, SOL out (unwrap)
    "solana:USDC->solana:USDG",  # Orca, Token-2022 out
    "solana:USDG->solana:USDC",  # Orca, Token-2022 in
]


class Live:
    def __init__(self) -> None:
        self.clock = FixedClock(T0)
        fake = pinned_raydium_upstreams(self.clock)
        self.market = pinned_live_market(self.clock, fake, raydium=True)
        app = create_app(
            Settings(rate_limit="off"), market=self.market, clock=self.clock, ids=SequentialIds()
        )
        self.client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


@pytest.fixture
async def live() -> AsyncIterator[Live]:
    rig = Live()
    yield rig
    await rig.client.aclose()
    await rig.market.aclose()


async def prepared(
    live: Live, route: str, wallet: Keypair, usd: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    q = (await live.client.post("/v2/quote", json=intent_for(route, usd))).json()
    body = {
        "caller_approved": True,
        **intent_for(route, usd),
        "wallets": {"solana": str(wallet.pubkey())},
        "approval_v3": approval_for(q),
    }
    r = await live.client.post("/v2/prepare", json=body)
    assert r.status_code == 200, r.text
    return q, r.json()["unsigned_action"]


@pytest.mark.parametrize("usd", [1, 1000])
@pytest.mark.parametrize("route", SWAP_ROUTES)
async def test_a_simulated_swap_is_what_the_observer_and_evidence_rules_accept(
    live: Live, route: str, usd: int
) -> None:
    wallet = Keypair()
    quote, action = await prepared(live, route, wallet, usd)
    step = ROUTES[route].steps[0]
    pool = (await live.market.view()).pools[str(step.pool_id)]
    zero_for_one = step.source.key == pool.token0
    start = {step.source.key: int(action["inputAmount"]) * 2}
    sim = simulate_solana_swap(
        action,
        wallet,
        lambda net: swap_exact_input(pool.clmm, zero_for_one, net).amount_out,
        start,
        slot=400_000_000,
    )
    tx = parse_get_transaction(sim.signature, sim.result)
    assert tx is not None and tx.signers[0] == str(wallet.pubkey())
    evidence = verify_solana_action(action, tx)
    assert evidence.status == "final"
    assert evidence.actual_output_base == sim.amount_out >= int(action["minimumOutput"])
    assert evidence.service_fee_paid_base == int(action["routeFee"]) == int(action["inputAmount"]) // 10_000
    assert evidence.actual_input_base == int(action["inputAmount"]) == sim.amount_in + int(action["routeFee"])
    expected = int(quote["direct_route_summary"]["steps"][0]["expected_output_base"])
    assert sim.amount_out == expected  # the simulator pays exactly what the quote's own math expected
