"""Whole sessions over real HTTP on local chains: every action signed by a throwaway key exactly as the session
returned it, sent to anvil, observed by the production observers (`routequote.observe.*` through the app's
composition root), followed to `complete`; the receipt's actual amounts equal the balance changes measured here.

Chains: anvil 8453 (base), 42161 (arbitrum) and 4663 (robinhood), each with WETH9, a 6-decimals token playing
the stable (USDC / USDG), Uniswap v3 with a WETH/USDC pool at the snapshot price and an Across SpokePool
(`_evm.deploy_all`). CCTP v2 runs on the stand-ins of `standins/CctpV2StandIns.sol` (solc-js at test time):
the test plays Circle (a fake Iris on loopback answering in the documented format) and the Across relayer
(`fillRelay` on the 4663 SpokePool from the deposit's `FundsDeposited`). The app runs with
`ROUTEQUOTE_FINALITY_CONFIRMATIONS=base=1,arbitrum=1,robinhood=1` and a temporary SQLite file.

Hostile cases: each refusal is a clear 4xx and the session (status, version, step, phase) reads back unchanged.
Concurrency: two server processes over the same SQLite file observe one step at once; exactly one advances.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from _evm import AnvilChain, ToolchainUnavailable, deploy_all, sign_and_send
from _session_world import (
    ARBITRUM,
    BASE,
    CCTP_ROUTE,
    ETH_USDC,
    ETH_USDG,
    FEE_RECIPIENT,
    ROBINHOOD,
    World,
    advance,
    eth,
    gas_paid,
    hashes,
    local_deployments,
    push_pool_price,
    race_observes,
    receipt_steps,
    refused,
    send_unmined,
    signed_transfer,
    state_of,
    step_minimum,
    submit,
    to_across_in_flight,
    usd,
    wallet,
)
from _sessions import (
    CCTP_DOMAINS,
    FakeIris,
    SessionApi,
    attest,
    compile_standins,
    deploy_cctp_pair,
    deposit_relay_data,
    emitted_message,
    fill_relay,
    fund_relayer,
    iris_item,
    new_key,
    server_process,
)
from eth_account import Account
from tests.support.postgres import require_postgres, temporary_database
from tests.support.server import free_port, running_server

from routequote.app import create_app
from routequote.config import Settings

pytestmark = pytest.mark.chain


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def world(
    request: pytest.FixtureRequest,
    anvil_factory: Callable[[int], AnvilChain],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[World]:
    """The whole module runs once per session store: an SQLite file, then a fresh PostgreSQL database."""
    if request.param == "postgresql":
        require_postgres()
    try:
        standins = compile_standins()
    except ToolchainUnavailable as e:
        pytest.skip(f"solc-js unavailable: {e}")
    chains = {cid: anvil_factory(cid) for cid in (BASE, ARBITRUM, ROBINHOOD)}
    for chain in chains.values():
        deploy_all(chain)
    snaps = {cid: c.snapshot() for cid, c in chains.items()}  # this module leaves nothing behind
    tmp = tmp_path_factory.mktemp("sessions-e2e")
    database = contextlib.ExitStack()
    try:
        database_url = (
            database.enter_context(temporary_database())
            if request.param == "postgresql"
            else f"sqlite+aiosqlite:///{tmp / 'sessions.sqlite3'}"
        )
        deploy_cctp_pair(standins, chains[ARBITRUM], chains[BASE])
        deployments = local_deployments(chains)
        with FakeIris().running() as iris:
            settings = {
                "rate_limit": "off",
                "rpc_url_base": chains[BASE].url,
                "rpc_url_arbitrum": chains[ARBITRUM].url,
                "rpc_url_robinhood": chains[ROBINHOOD].url,
                "iris_url": iris.url,
                "finality_confirmations": "base=1,arbitrum=1,robinhood=1",
                "database_url": database_url,
                "dev_signing_key_path": "",
            }
            port = free_port()
            app = create_app(Settings(**settings, port=port), deployments=deployments)
            with running_server(app, port) as url:
                api = SessionApi(url)
                yield World(chains, api, iris, settings, deployments, tmp)
                api.close()
    finally:
        for cid, chain in chains.items():
            chain.revert(snaps[cid])
        database.close()


@pytest.fixture
def w(world: World) -> Iterator[World]:
    """Each test on fresh chain state (the session database keeps everything: sessions never collide)."""
    snaps = {cid: c.snapshot() for cid, c in world.chains.items()}
    yield world
    for cid, chain in world.chains.items():
        chain.revert(snaps[cid])


# ---- whole sessions -------------------------------------------------------------------------------------------


def test_one_step_eth_to_usdc_session_completes_with_the_measured_amounts(w: World) -> None:
    who, key = wallet(w)
    s, token = w.api.create(ETH_USDC, {"base": who})
    sid = s["session_id"]
    assert (s["status"], s["next_operation"], s["session_version"], s["step_count"]) == (
        "action_ready",
        "submit_current_action",
        1,
        1,
    )
    before = (eth(w.base, who), usd(w.base, who), eth(w.base, FEE_RECIPIENT))
    receipts = submit(w.base, key, s)
    after = (eth(w.base, who), usd(w.base, who), eth(w.base, FEE_RECIPIENT))
    done = advance(w, sid, token, s, hashes(receipts), "complete", "none")
    assert done["funds"]["state"] == "delivered" and done["funds"]["endpoint"] == "base:USDC"

    steps, route = receipt_steps(w, sid, token)
    actual = steps[0]["actual"]
    gas = gas_paid(receipts)
    assert int(actual["output_base"]) == after[1] - before[1] > 0
    assert int(actual["input_base"]) == before[0] - after[0] - gas
    assert int(actual["network_fee"]["wei"]) == gas
    assert int(actual["service_fee_paid_base"]) == after[2] - before[2] == int(actual["input_base"]) // 10_000
    assert actual["source_tx_ids"] == [h.lower() for h in hashes(receipts)]
    assert int(actual["output_base"]) >= int(steps[0]["quoted"]["minimum_output_base"])
    assert route["complete"] is True and int(route["actual_output_base"]) == after[1] - before[1]
    assert route["at_or_above_minimum"] is True


def test_eth_to_robinhood_usdg_swap_then_across_with_the_test_as_relayer(w: World) -> None:
    who, key = wallet(w)
    relayer = w.rh.accounts[1]
    s, token = w.api.create(ETH_USDG, {"base": who, "robinhood": who})
    sid = s["session_id"]
    assert s["step_count"] == 2 and s["current_step"] == 0

    usdc0 = usd(w.base, who)
    swap = submit(w.base, key, s)
    usdc1 = usd(w.base, who)
    s = advance(w, sid, token, s, hashes(swap), "action_ready", "submit_current_action")
    assert s["current_step"] == 1
    action = s["current_action"]["unsigned_action"]
    assert int(action["inputAmount"]) == usdc1 - usdc0  # the next step spends exactly what arrived

    deposit = submit(w.base, key, s)
    usdc2 = usd(w.base, who)
    s = advance(w, sid, token, s, hashes(deposit), "awaiting_destination", "observe")
    s = advance(
        w, sid, token, s, None, "awaiting_destination", "observe"
    )  # no fill yet: pending, one transition

    relay = deposit_relay_data(deposit[-1], w.base.addresses["local_spoke"], BASE)
    assert relay[4] == bytes.fromhex(w.rh.addresses["token6"][2:].lower()).rjust(
        32, b"\0"
    )  # robinhood USDG out
    fund_relayer(w.rh, relayer, 10**12)
    usdg0 = usd(w.rh, who)
    fill_relay(w.rh, relayer, relay, BASE)
    usdg1 = usd(w.rh, who)
    assert usdg1 - usdg0 == relay[6]
    s = advance(w, sid, token, s, None, "complete", "none")

    steps, route = receipt_steps(w, sid, token)
    assert int(steps[0]["actual"]["output_base"]) == usdc1 - usdc0
    assert int(steps[1]["actual"]["input_base"]) == usdc1 - usdc2 == usdc1 - usdc0
    assert int(steps[1]["actual"]["output_base"]) == usdg1 - usdg0
    assert steps[1]["actual"]["destination_tx_ids"] and steps[1]["actual"]["bridge"]["kind"] == "across"
    assert route["complete"] is True and int(route["actual_output_base"]) == usdg1 - usdg0


def burn_and_attest(
    w: World, key: str, s: dict[str, Any], sid: str, token: str
) -> tuple[dict[str, Any], Any]:
    """Step 0 of the CCTP route: burn on arbitrum, observe, Circle attests (fake Iris), observe -> receive ready."""
    burn = submit(w.arb, key, s)
    s = advance(w, sid, token, s, hashes(burn), "awaiting_destination", "observe")
    s = advance(w, sid, token, s, None, "awaiting_destination", "observe")  # Iris: 404, not indexed yet
    message = emitted_message(burn[-1])
    amount = int.from_bytes(message[148 + 68 : 148 + 100], "big")
    max_fee = int.from_bytes(message[148 + 132 : 148 + 164], "big")
    fee = min(max_fee, -(-amount * 13 // 100_000))  # Circle's fast fee, 1.3 bps from Arbitrum, rounded up
    attested = attest(message, nonce=os.urandom(32), fee_executed=fee, expiration_block=10**9)
    w.iris.publish(
        CCTP_DOMAINS[ARBITRUM], burn[-1]["transactionHash"], [iris_item(attested, os.urandom(130))]
    )
    s = advance(w, sid, token, s, None, "action_ready", "submit_current_action")
    assert any(f"/v2/messages/3?transactionHash={burn[-1]['transactionHash']}" in p for p in w.iris.requests)
    return s, (burn, amount, fee)


def test_arbitrum_usdc_to_base_eth_over_cctp_with_the_test_as_circle(w: World) -> None:
    who, key = wallet(w)
    s, token = w.api.create(CCTP_ROUTE, {"arbitrum": who, "base": who})
    sid = s["session_id"]
    arb0 = usd(w.arb, who)
    s, (burn, amount, fee) = burn_and_attest(w, key, s, sid, token)
    arb1 = usd(w.arb, who)

    receive = s["current_action"]["unsigned_action"]
    assert s["current_step"] == 0 and s["phase"] == "destination"
    assert receive["transactions"][0]["to"].lower() == w.base.addresses["cctp_transmitter"].lower()
    base0 = usd(w.base, who)
    mint = submit(w.base, key, s)
    base1 = usd(w.base, who)
    assert base1 - base0 == amount - fee
    s = advance(w, sid, token, s, hashes(mint), "action_ready", "submit_current_action")
    assert s["current_step"] == 1 and s["phase"] == "source"
    assert int(s["current_action"]["unsigned_action"]["inputAmount"]) == amount - fee

    eth0 = eth(w.base, who)
    swap = submit(w.base, key, s)
    eth1, base2 = eth(w.base, who), usd(w.base, who)
    s = advance(w, sid, token, s, hashes(swap), "complete", "none")

    steps, route = receipt_steps(w, sid, token)
    assert int(steps[0]["actual"]["input_base"]) == arb0 - arb1
    assert int(steps[0]["actual"]["output_base"]) == base1 - base0
    assert steps[0]["actual"]["destination_tx_ids"] == [h.lower() for h in hashes(mint)]
    assert int(steps[1]["actual"]["input_base"]) == base1 - base2
    assert int(steps[1]["actual"]["output_base"]) == eth1 - eth0 + gas_paid(swap)
    assert route["complete"] is True and int(route["actual_output_base"]) == eth1 - eth0 + gas_paid(swap)


def test_the_preflight_asks_for_base_gas_and_the_route_completes_once_it_is_topped_up(w: World) -> None:
    """A wallet with USDC and ETH on Arbitrum and nothing on Base: the session's preflight says the mint and the
    swap on Base need ETH there (an estimate, blocking); topped up with exactly that, the route completes."""
    acct = Account.create()
    who, key = str(acct.address), acct.key.hex()
    w.arb.send(who, "0x", value=10**18)
    w.arb.transact(w.arb.addresses["token6"], "mint(address,uint256)", who, 10_000 * 10**6)
    s, token = w.api.create(CCTP_ROUTE, {"arbitrum": who, "base": who})
    sid = s["session_id"]
    pf = s["preflight"]
    assert pf["checked"] is True and pf["ok"] is False and pf["advice_only"] is True
    found = {f"{f['code']}:{f['chain']}": f for f in pf["findings"]}
    base_gas = found["gas:base"]
    assert base_gas["has"] == "0" and base_gas["blocking"] and base_gas["estimate"]
    assert "on base for steps 1-2; you have 0" in base_gas["message"]
    assert not found["gas:arbitrum"]["blocking"] and not found["input_balance:arbitrum"]["blocking"]
    assert found["input_balance:arbitrum"]["has"] == str(10_000 * 10**6)
    topped_up = int(base_gas["needed"])
    w.base.send(who, "0x", value=topped_up)

    s, _ = burn_and_attest(w, key, s, sid, token)
    later = {f"{f['code']}:{f['chain']}": f for f in s["preflight"]["findings"]}
    assert s["preflight"]["checked"] is True and "input_balance:base" not in later  # a mint spends nothing
    assert later["gas:base"]["has"] == str(topped_up)
    mint = submit(w.base, key, s)
    s = advance(w, sid, token, s, hashes(mint), "action_ready", "submit_current_action")
    assert "preflight" in s and s["preflight"]["checked"] is True
    swap = submit(w.base, key, s)
    s = advance(w, sid, token, s, hashes(swap), "complete", "none")
    assert "preflight" not in s  # no action left


# ---- hostile cases ------------------------------------------------------------------------------------------


def test_a_transaction_that_is_not_the_prepared_action_is_refused(w: World) -> None:
    who, key = wallet(w)
    s, token = w.api.create(ETH_USDC, {"base": who})
    sid = s["session_id"]
    txs = s["current_action"]["unsigned_action"]["transactions"]
    first = sign_and_send(w.base, key, txs[:1])  # the prepared fee transfer ...
    other = signed_transfer(w.base, key, who, 12345)  # ... and another transaction of the same wallet
    for named in ([other["transactionHash"]], hashes(first) + [other["transactionHash"]]):
        r = w.api.observe(sid, token, named)
        refused(w, sid, token, s, r, 400, "observation_not_prepared_action")
    r = w.api.observe(sid, token, hashes(first))
    refused(w, sid, token, s, r, 400, "observation_incomplete")


def test_a_prepared_swap_that_reverted_on_chain_is_refused(w: World) -> None:
    who, key = wallet(w)
    s, token = w.api.create(ETH_USDC, {"base": who})
    sid = s["session_id"]
    push_pool_price(w.base, 100 * 10**18)
    receipts = sign_and_send(
        w.base, key, s["current_action"]["unsigned_action"]["transactions"], gas=1_000_000
    )
    assert [int(r["status"], 16) for r in receipts] == [1, 0]  # the fee went through, the swap reverted
    r = w.api.observe(sid, token, hashes(receipts))
    refused(w, sid, token, s, r, 400, "observation_reverted")


def test_a_short_fill_of_other_relay_data_never_advances_the_session(w: World) -> None:
    """A relayer fills other relay data one unit below the step minimum: it is not this deposit's fill (its
    relay hash differs), so the session keeps waiting for the deposit's own fill and records no output."""
    who, sid, token, s, relay = to_across_in_flight(w)
    minimum = step_minimum(w, sid, token, 1)
    assert relay[6] >= minimum
    short = relay[:6] + (minimum - 1,) + relay[7:]
    before = usd(w.rh, who)
    fill_relay(w.rh, w.rh.accounts[1], short, BASE)
    assert usd(w.rh, who) - before == minimum - 1  # it did pay the recipient, just not enough
    r = w.api.observe(sid, token)
    assert r.status_code == 200, r.text
    after = w.api.read(sid, token)
    assert after["status"] == "awaiting_destination" and after["current_step"] == s["current_step"]
    assert after["steps"][1].get("actual_output_base") is None


def test_a_genuine_across_fill_completes_after_a_short_fill_of_other_relay_data(w: World) -> None:
    who, sid, token, s, relay = to_across_in_flight(w)
    minimum = step_minimum(w, sid, token, 1)
    fill_relay(w.rh, w.rh.accounts[1], relay[:6] + (minimum - 1,) + relay[7:], BASE)
    before = usd(w.rh, who)
    fill_relay(w.rh, w.rh.accounts[1], relay, BASE)  # the deposit's own relay data
    assert usd(w.rh, who) - before == relay[6]
    s = advance(w, sid, token, s, None, "complete")
    steps, _route = receipt_steps(w, sid, token)
    assert int(steps[1]["actual"]["output_base"]) == relay[6]


def test_a_fill_of_other_relay_data_is_not_the_deposits_fill(w: World) -> None:
    who, sid, token, s, relay = to_across_in_flight(w)
    other = (
        relay[:5] + (relay[5] + 1,) + relay[6:]
    )  # another relay hash, same output token, amount and recipient
    before = usd(w.rh, who)
    fill_relay(w.rh, w.rh.accounts[1], other, BASE)
    assert usd(w.rh, who) - before == relay[6]
    r = w.api.observe(sid, token)
    assert r.status_code in (200, 400), r.text
    after = w.api.read(sid, token)
    assert after["status"] == "awaiting_destination", (
        r.text
    )  # not complete: the deposit itself was not filled
    assert after["steps"][1].get("actual_output_base") is None


def test_a_replay_with_another_body_is_409_and_the_same_body_replays(w: World) -> None:
    who, key = wallet(w)
    s, token = w.api.create(ETH_USDC, {"base": who})
    sid = s["session_id"]
    receipts = submit(w.base, key, s)
    k = new_key("observe")
    done = w.api.observe(sid, token, hashes(receipts), key=k)
    assert done.status_code == 200 and done.json()["status"] == "complete", done.text
    done_state = done.json()
    other = signed_transfer(w.base, key, who, 1)
    r = w.api.observe(sid, token, [other["transactionHash"]], key=k)
    refused(w, sid, token, done_state, r, 409, "idempotency_key_reused_with_different_request")
    again = w.api.observe(sid, token, hashes(receipts), key=k)
    assert again.status_code == 200 and again.json()["idempotent_replay"] is True
    assert state_of(again.json()) == state_of(done_state) == state_of(w.api.read(sid, token))


def test_another_sessions_token_is_404_and_changes_nothing(w: World) -> None:
    who, key = wallet(w)
    a, token_a = w.api.create(ETH_USDC, {"base": who})
    b, token_b = w.api.create(ETH_USDC, {"base": who})
    receipts = submit(w.base, key, a)
    for r in (
        w.api.op(
            a["session_id"],
            "observe",
            token_b,
            {"idempotency_key": new_key(), "transaction_hashes": hashes(receipts)},
        ),
        w.api.http.get(f"/v2/session/{a['session_id']}", headers={"X-RouteQuote-Session-Token": token_b}),
        w.api.op(a["session_id"], "cancel", token_b, {"idempotency_key": new_key()}),
    ):
        refused(w, a["session_id"], token_a, a, r, 404, "session_not_found")
    assert state_of(w.api.read(b["session_id"], token_b)) == state_of(b)


def test_observing_a_later_steps_transaction_while_at_step_0_is_refused(w: World) -> None:
    """Session A is at step 0 (the swap); the same wallet's session B on the same route reached step 1 and sent
    its Across deposit. A step-1 transaction named to A's step 0 does not advance A."""
    who, key = wallet(w)
    a, token_a = w.api.create(ETH_USDG, {"base": who, "robinhood": who})
    b, token_b = w.api.create(ETH_USDG, {"base": who, "robinhood": who})
    b = advance(w, b["session_id"], token_b, b, hashes(submit(w.base, key, b)), "action_ready")
    assert b["current_step"] == 1
    step1 = submit(w.base, key, b)
    r = w.api.observe(a["session_id"], token_a, hashes(step1))
    refused(w, a["session_id"], token_a, a, r, 400, "observation_not_prepared_action")
    r = w.api.observe(a["session_id"], token_a, hashes(step1)[-1:])
    refused(w, a["session_id"], token_a, a, r, 400, "observation_not_prepared_action")


def test_refresh_after_observation_is_409(w: World) -> None:
    who, key = wallet(w)
    s, token = w.api.create(ETH_USDC, {"base": who})
    sid = s["session_id"]
    w.base.rpc.call("evm_setAutomine", False)
    try:
        sent = send_unmined(w.base, key, s["current_action"]["unsigned_action"]["transactions"])
        s = advance(w, sid, token, s, sent, "awaiting_source_receipt", "observe")  # named, not mined yet
        refused(
            w,
            sid,
            token,
            s,
            w.api.op(sid, "refresh", token, {"idempotency_key": new_key()}),
            409,
            "operation_not_allowed_in_status",
        )
        w.base.rpc.call("evm_mine")
    finally:
        w.base.rpc.call("evm_setAutomine", True)
    s = advance(w, sid, token, s, None, "complete")  # re-checks what was named
    refused(
        w,
        sid,
        token,
        s,
        w.api.op(sid, "refresh", token, {"idempotency_key": new_key()}),
        409,
        "operation_not_allowed_in_status",
    )
    _who, sid2, token2, s2, _relay = to_across_in_flight(w)
    refused(
        w,
        sid2,
        token2,
        s2,
        w.api.op(sid2, "refresh", token2, {"idempotency_key": new_key()}),
        409,
        "operation_not_allowed_in_status",
    )


# ---- concurrency ----------------------------------------------------------------------------------------------


def test_two_processes_observe_one_step_at_once_and_exactly_one_advances(w: World) -> None:
    who, key = wallet(w)
    with (
        server_process(w.tmp, w.settings, w.deployments) as url_b,
        server_process(w.tmp, w.settings, w.deployments) as url_c,
    ):
        apis = [SessionApi(url_b), SessionApi(url_c)]
        try:
            for _round in range(3):
                s, token = w.api.create(ETH_USDC, {"base": who})
                sid = s["session_id"]
                named = hashes(submit(w.base, key, s))
                answers = race_observes(apis, sid, token, named)
                codes = sorted(r.status_code for r in answers)
                assert codes == [200, 409], [r.text for r in answers]
                won = next(r for r in answers if r.status_code == 200).json()
                lost = next(r for r in answers if r.status_code == 409).json()
                assert lost["reason_class"] in (
                    "session_changed_concurrently",
                    "operation_not_allowed_in_status",
                )
                assert won["status"] == "complete" and won["session_version"] == s["session_version"] + 1
                back = w.api.read(sid, token)
                assert (back["status"], back["session_version"]) == ("complete", s["session_version"] + 1)
        finally:
            for api in apis:
                api.close()
