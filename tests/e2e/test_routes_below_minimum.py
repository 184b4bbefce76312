"""Going below a minimum, per step kind, on the whole-route harness (`_routes.py`).

On EVM no protocol lets the chain pay less than a step's own minimum: the router reverts a swap below its
`amountOutMinimum`, Circle's `feeExecuted <= maxFee` makes the mint at least `amount - maxFee`, and an Across fill
of less is other relay data, never this deposit's fill
(`test_sessions_anvil.py::test_a_short_fill_of_other_relay_data_never_advances_the_session`). What the chain
can do is pay less than expected, down to that minimum; and a caller may approve a stronger route minimum than
the quote's (`approval_v3.minimum_output_base`). So each EVM kind is driven to deliver less than the caller's
approved bound needs:

* `uniswap_v3`: another trader moves the pool first; the swap pays less than expected (still >= its minimum).
* `circle_cctp` (EVM to EVM): Circle executes the fast fee at the burn's full `maxFee`: the mint is exactly the
  step's minimum.

The next step, re-quoted from that verified output, projects the route below the approved minimum: 409
`reapproval_required` with `funds` and `quote_from_here`; a new session from that fresh quote completes. The
same strengthened approval with an ordinary delivery completes (the control: the chain's delivery decides).

Solana arrivals carry what the source chain's message says (`_solana_programs.py`): Circle's least mint is
amount - maxFee, the step minimum (completes); the USDG OFT delivers the packet's amountSD, which the real
OFTAdapter already held to the send's minimum. A caller approving more than a burn's maxFee allows is refused by
its own verifier before signing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from _evm import AnvilChain, calldata
from _routes import Run, World, build_world, check_receipt, fresh_chains

from routequote.core.assets import Chain
from routequote.core.pricing import price_steps_from
from routequote.core.routes import ROUTES
from routequote.market.snapshot import EmbeddedSnapshot

pytestmark = pytest.mark.chain


@pytest.fixture(scope="module")
def world(
    anvil_factory: Callable[[int], AnvilChain], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[World]:
    db = tmp_path_factory.mktemp("routes-below") / "sessions.sqlite3"
    with build_world(anvil_factory, f"sqlite+aiosqlite:///{db}") as w:
        yield w


def sell_weth(chain: AnvilChain, weth_in: int) -> None:
    """Another trader sells WETH for the stable: the pool pays less stable per ETH afterwards."""
    a, me = chain.addresses, chain.deployer
    chain.send(a["weth"], calldata("deposit()"), value=weth_in)
    chain.transact(a["weth"], "approve(address,uint256)", a["router02"], weth_in)
    chain.transact(
        a["router02"],
        "exactInputSingle((address,address,uint24,address,uint256,uint256,uint160))",
        (a["weth"], a["token6"], 500, me, weth_in, 0, 0),
    )


def reapproved(run: Run, k: int) -> dict[str, Any]:
    """The 409 answer at step `k`: nothing built, `funds` and `quote_from_here` name the caller's money."""
    body = run.reapproval
    assert body is not None, run.session
    assert body["error"] == "reapproval_required", body
    assert body["reason_class"] == "session_requote_below_approved_bounds", body
    step = run.route.steps[k]
    funds, here = body["funds"], body["quote_from_here"]
    assert body["step_index"] == k and body["session_id"] == run.sid
    assert (funds["endpoint"], funds["state"]) == (step.source.key, "in_wallet"), funds
    assert funds["wallet"] == run.wallet_of(step.source.chain)
    assert int(funds["amount_base"]) == run.outcomes[-1].measured_output  # what the chain delivered
    assert (here["from_chain"], here["from_token"]) == (step.source.chain.value, step.source.token.value)
    assert (here["to_chain"], here["to_token"]) == (
        run.route.target.chain.value,
        run.route.target.token.value,
    )
    assert here["amount_base"] == funds["amount_base"]
    back = run.world.api.read(run.sid, run.token)
    assert back["status"] == "reapproval_required" and back["current_action"] is None
    assert back["funds"] == funds
    return dict(here)


def continue_from(run: Run, here: dict[str, Any]) -> None:
    """A new session from the fresh quote, spending what is in the wallet, carried to `complete`."""
    name = f"{here['from_chain']}:{here['from_token']}->{here['to_chain']}:{here['to_token']}"
    assert name in ROUTES
    probe = run.world.api.quote(name, 1000)
    per_1000 = int(probe["continuation_v3"]["intent"]["estimated_input_base"])
    amount_usd = int(here["amount_base"]) * 1000 // per_1000  # what the parked funds are worth, rounded down
    nxt = Run(run.world, name, amount_usd, evm_key=run.evm_key, evm_wallet=run.evm_wallet)
    nxt.sol_wallet, nxt.vm, nxt.programs = run.sol_wallet, run.vm, run.programs
    nxt.create()
    assert int(nxt.session["funds"]["amount_base"]) <= int(here["amount_base"])
    nxt.drive()
    check_receipt(nxt)


def strengthened_minimum(name: str, quote: dict[str, Any]) -> int:
    """A route minimum the caller may approve: what the rest of the route projects (fresh, on the snapshot) when
    step 0 delivers halfway between its minimum and its expected output."""
    step0 = quote["direct_route_summary"]["steps"][0]
    midway = (int(step0["minimum_output_base"]) + int(step0["expected_output_base"])) // 2
    fresh = price_steps_from(ROUTES[name], 1, midway, EmbeddedSnapshot().current())
    return max(fresh[-1].minimum_output_base, int(quote["continuation_v3"]["minimum_output_base"]))


def strengthened_run(world: World, name: str) -> Run:
    q = world.api.quote(name, 1000)
    run = Run(world, name, 1000, allow_reapproval=True, approved_minimum=strengthened_minimum(name, q))
    run.fund()
    run.create()
    return run


@pytest.mark.parametrize("name", ["base:ETH->arbitrum:USDC", "arbitrum:USDC->base:ETH"])
def test_the_control_a_strengthened_approval_completes_on_an_ordinary_delivery(
    world: World, name: str
) -> None:
    with fresh_chains(world):
        run = strengthened_run(world, name)
        run.drive()
        assert run.reapproval is None and run.session["status"] == "complete"
        check_receipt(run)


def test_uniswap_pays_less_than_expected_and_the_approved_minimum_needs_reapproval(world: World) -> None:
    with fresh_chains(world):
        run = strengthened_run(world, "base:ETH->arbitrum:USDC")
        sell_weth(world.chain(Chain.BASE), 15 * 10**17)  # ~0.3 % less USDC per ETH: within the swap's 0.5 %
        run.drive()
        here = reapproved(run, 1)
        step0 = run.quote["direct_route_summary"]["steps"][0]
        assert (
            int(step0["minimum_output_base"]) <= int(here["amount_base"]) < int(step0["expected_output_base"])
        )
        continue_from(run, here)


def test_cctp_mint_at_the_full_max_fee_and_the_approved_minimum_needs_reapproval(world: World) -> None:
    with fresh_chains(world):
        run = strengthened_run(world, "arbitrum:USDC->base:ETH")
        run.fee_at_max = True
        run.drive()
        here = reapproved(run, 1)
        step0 = run.quote["direct_route_summary"]["steps"][0]
        assert int(here["amount_base"]) == int(
            step0["minimum_output_base"]
        )  # amount - maxFee: the step minimum
        continue_from(run, here)


def test_a_cctp_mint_on_solana_at_the_full_max_fee_is_the_step_minimum_and_completes(world: World) -> None:
    """The least Circle's programs can deliver on Solana: the fee executed at the burn's full maxFee mints exactly
    amount - maxFee, the step's minimum (read from the run's VM), and the session completes."""
    with fresh_chains(world):
        run = Run(world, "base:USDC->solana:USDC", 1000)
        run.fund()
        run.create()
        run.fee_at_max = True
        run.drive()
        check_receipt(run)
        step0 = run.quote["direct_route_summary"]["steps"][0]
        assert run.outcomes[0].measured_output == int(step0["minimum_output_base"])
        back = run.world.api.read(run.sid, run.token)
        assert (back["status"], back["session_version"]) == ("complete", run.session["session_version"])


def test_a_wallet_refuses_a_burn_whose_max_fee_could_breach_its_stronger_approval(world: World) -> None:
    """Below a caller's approved minimum no Solana arrival can go: a caller approving more than amount - maxFee
    is refused, before signing, by its own verifier (`max_fee_too_high`); nothing was sent, the session waits."""
    with fresh_chains(world):
        name = "base:USDC->solana:USDC"
        q = world.api.quote(name, 1000)
        expected = int(q["direct_route_summary"]["steps"][0]["expected_output_base"])
        run = Run(world, name, 1000, approved_minimum=expected)
        run.fund()
        run.create()
        with pytest.raises(AssertionError, match="max_fee_too_high"):
            run.wallet_verifies(run.session["current_action"])
        back = world.api.read(run.sid, run.token)
        assert (back["status"], back["session_version"]) == ("action_ready", run.session["session_version"])
