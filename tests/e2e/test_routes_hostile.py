"""Arrivals the bridge did not make, on the whole-route harness (`_routes.py`): each is refused (400, or 409 by
the store's one-transaction-one-step claim) and leaves the session exactly as it was (status and version read
back).

A Solana arrival counts only as the bridge's own delivery of this session's message
(`core/bridge_arrivals.py`, called by the engine in `sessions/gather.py`): for CCTP the `receive_message` of the
Iris-attested message crediting the session's wallet, for the USDG OFT the `lz_receive` of the GUID this
session's `OFTSent` emitted. The bridges' own deliveries here (this session's or another's mint, another GUID's
lz_receive, a mint Circle's signature check fails) execute in the runs' LiteSVM with the programs simulated
(`_solana_programs.py`), in the amounts their messages say; what no bridge made (a stranger's transfer, a mint to
another recipient, one transaction batching two sessions' mints) is hand-made in the `getTransaction` wire format
(`_solana_sim.simulate_delivery`); the EVM ones run on anvil.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from _evm import AnvilChain
from _routes import (
    CIRCLE_FEE_ACCOUNT,
    LZ_EXECUTOR,
    SIMULATED_OFT_PROGRAM,
    Run,
    World,
    build_world,
    fresh_chains,
)
from _sessions import b32
from _solana_sim import CCTP_MTV2, simulate_delivery, to_instruction, ui_amount
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from solders.token.associated import get_associated_token_address

from routequote.core.actions.cctp_solana_receive import receive_message_ix
from routequote.core.actions.evm import LZ_EID
from routequote.core.assets import ASSETS, Chain
from routequote.core.bridge_arrivals import (
    verify_oft_solana_delivery,
)
from routequote.core.sessions.evidence import ObservationRejected
from routequote.observe.solana import parse_get_transaction

pytestmark = pytest.mark.chain
TOKEN_PROGRAM = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"
TOKEN_2022 = "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb"
CCTP = "base:USDC->solana:USDC"
OFT = "robinhood:USDG->solana:USDG"


@pytest.fixture(scope="module")
def world(
    anvil_factory: Callable[[int], AnvilChain], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[World]:
    db = tmp_path_factory.mktemp("routes-hostile") / "sessions.sqlite3"
    with build_world(anvil_factory, f"sqlite+aiosqlite:///{db}") as w:
        yield w


def in_flight(world: World, name: str) -> Run:
    """A session whose bridge step was sent and observed: its money is in flight (one bridge per route here)."""
    run = Run(world, name, 1000)
    run.fund()
    run.create()
    while run.session["status"] != "awaiting_destination":
        k = run.session["current_step"]
        step = run.route.steps[k]
        run.start_step(step)
        if run.session["status"] == "action_ready":
            run.source_action(step)
        else:
            run.destination(step)
        if run.session["current_step"] != k:
            run.finish_step(step)
    return run


def attested(world: World, name: str) -> Run:
    """In flight, then Circle attests: the session's next action is the prepared mint."""
    run = in_flight(world, name)
    k = run.session["current_step"]
    run.cctp_attest(run.route.steps[k], run.session["steps"][k]["bridge"])
    run.observe(None)
    assert run.session["status"] == "action_ready" and run.session["phase"] == "destination", run.session
    return run


def refused(
    world: World, run: Run, named: list[str], reason: str | None, status: int = 400
) -> dict[str, Any]:
    before = world.api.read(run.sid, run.token)
    r = world.api.observe(run.sid, run.token, named)
    after = world.api.read(run.sid, run.token)
    assert r.status_code == status, r.text
    if reason is not None:
        assert r.json()["reason_class"] == reason, r.text
    assert (after["status"], after["session_version"]) == (before["status"], before["session_version"])
    assert after["steps"] == before["steps"] and after["funds"] == before["funds"]
    return dict(r.json())


def stranger_transfer(world: World, run: Run, token: str, program: str, amount: int) -> str:
    transfer = simulate_delivery(
        relayer=Keypair(),  # a stranger, not Circle's or LayerZero's program
        owner=str(run.sol_wallet.pubkey()),
        token=token,
        amount=amount,
        pre_amount=0,
        program=program,
        data=b"\x03" + amount.to_bytes(8, "little"),  # an SPL Token Transfer
        slot=world.next_slot(),
    )
    return world.solana.publish(transfer)


def mint_of(world: World, run: Run, *, failed: bool = False) -> str:
    """The run's own prepared receive_message, signed and executed in its VM (the program's effect simulated),
    published, not yet observed. `failed`: Circle's signature check refuses it (the transaction fails on chain)."""
    ixs = [to_instruction(d) for d in run.session["current_action"]["unsigned_action"]["instructions"]]
    attested = dict(run.sim.attested)
    if failed:
        run.sim.attested.clear()
    done = run.solana.execute(ixs, [run.sol_wallet], run.sim.effects())
    run.sim.attested.update(attested)
    assert done.failed is failed, done.result["meta"]["logMessages"]
    return world.solana.publish(done.result)


@pytest.mark.parametrize(
    ("name", "token", "program"), [(CCTP, "USDC", TOKEN_PROGRAM), (OFT, "USDG", TOKEN_2022)]
)
def test_a_strangers_transfer_does_not_complete_a_bridge_arrival(
    world: World, name: str, token: str, program: str
) -> None:
    with fresh_chains(world):
        run = attested(world, name) if token == "USDC" else in_flight(world, name)
        k = run.session["current_step"]
        quoted = int(run.quote["direct_route_summary"]["steps"][k]["minimum_output_base"])
        sig = stranger_transfer(world, run, token, program, quoted + 1)
        refused(world, run, [sig], "observation_bridge_mismatch")


def test_a_transfer_before_the_attestation_is_not_an_arrival(world: World) -> None:
    """Before Circle attests, nothing named can count: the session waits for the attestation."""
    with fresh_chains(world):
        run = in_flight(world, CCTP)
        sig = stranger_transfer(world, run, "USDC", TOKEN_PROGRAM, 10**9)
        before = world.api.read(run.sid, run.token)
        r = world.api.observe(run.sid, run.token, [sig])
        back = world.api.read(run.sid, run.token)
        assert r.status_code == 200 and back["status"] == "awaiting_destination", r.text
        assert back["session_version"] == before["session_version"] + 1  # one observation, nothing advanced
        assert back["steps"][0]["destination_status"] == "awaiting_attestation"
        assert (
            back["steps"][0].get("destination") is None and back["steps"][0].get("actual_output_base") is None
        )


def test_another_sessions_mint_is_refused(world: World) -> None:
    with fresh_chains(world):
        mine, theirs = attested(world, CCTP), attested(world, CCTP)
        sig = mint_of(world, theirs)
        refused(world, mine, [sig], "observation_bridge_mismatch")
        theirs.observe([sig])  # it is theirs: it completes their session
        assert theirs.session["status"] == "complete"


def test_the_right_mint_named_twice_advances_once(world: World) -> None:
    with fresh_chains(world):
        run = attested(world, "base:USDC->solana:SOL")  # the mint, then a Raydium swap
        sig = mint_of(world, run)
        run.observe([sig])
        assert run.session["status"] == "action_ready" and run.session["current_step"] == 1
        # the same session: its next step (the swap) is not this transaction
        refused(world, run, [sig], "observation_not_prepared_action")
        other = attested(world, CCTP)
        refused(world, other, [sig], "observation_bridge_mismatch")  # another session: not its message


def test_a_mint_to_another_recipient_is_refused(world: World) -> None:
    with fresh_chains(world):
        run = attested(world, CCTP)
        bridge = run.session["steps"][0]["bridge"]
        thief = Keypair()
        ix = receive_message_ix(
            thief.pubkey(),
            str(thief.pubkey()),
            bytes.fromhex(bridge["message"][2:]),
            bytes.fromhex(bridge["attestation"][2:]),
            CIRCLE_FEE_ACCOUNT,
        )
        result = simulate_delivery(
            relayer=thief,
            owner=str(thief.pubkey()),
            token="USDC",
            amount=int(bridge["burn_amount"]),
            pre_amount=0,
            program=CCTP_MTV2,
            data=b"",
            slot=world.next_slot(),
            instruction=ix,
        )
        refused(world, run, [world.solana.publish(result)], "observation_wrong_recipient")


def test_a_failed_mint_is_refused(world: World) -> None:
    with fresh_chains(world):
        run = attested(world, CCTP)
        refused(world, run, [mint_of(world, run, failed=True)], "observation_reverted")


def test_an_oft_delivery_of_another_guid_is_refused(world: World) -> None:
    """Another session's real delivery (the lz_receive of the packet its send emitted on anvil), named to this
    one, and then reported by LayerZero Scan for it: not this GUID's."""
    with fresh_chains(world):
        run, theirs = in_flight(world, OFT), in_flight(world, OFT)
        sig = theirs.submit_solana([LZ_EXECUTOR], ixs=[theirs.oft_delivery_instruction()])
        refused(world, run, [sig], "observation_bridge_mismatch")
        run.publish_scan(
            run.route.steps[0], sig
        )  # LayerZero Scan leads to it: still not this GUID's delivery
        refused(world, run, [], "observation_bridge_mismatch")


def test_the_core_arrival_rule_refuses_a_strangers_transfer_for_an_oft_send(world: World) -> None:
    with fresh_chains(world):
        run = in_flight(world, OFT)
        bridge = run.session["steps"][0]["bridge"]
        transfer = simulate_delivery(
            relayer=Keypair(),
            owner=str(run.sol_wallet.pubkey()),
            token="USDG",
            amount=int(bridge["amount_received"]),
            pre_amount=0,
            program=TOKEN_2022,
            data=b"\x03" + int(bridge["amount_received"]).to_bytes(8, "little"),
            slot=world.next_slot(),
        )
        tx = parse_get_transaction(str(transfer["transaction"]["signatures"][0]), transfer)
        assert tx is not None
        with pytest.raises(ObservationRejected) as rejected:
            verify_oft_solana_delivery(
                tx,
                oft_program=SIMULATED_OFT_PROGRAM,
                guid=bridge["guid"],
                src_eid=LZ_EID[Chain.ROBINHOOD],
                source_oapp=b32(world.lz["usdg_oft"]),
                recipient_owner=str(run.sol_wallet.pubkey()),
            )
        assert rejected.value.reason_class == "observation_bridge_mismatch"


def erc20_transfer(world: World, chain: Chain, to: str) -> str:
    c = world.chain(chain)
    c.transact(c.addresses["token6"], "mint(address,uint256)", c.deployer, 10**9)
    receipt = c.transact(c.addresses["token6"], "transfer(address,uint256)", to, 10**9)
    return str(receipt["transactionHash"])


def test_an_erc20_transfer_in_place_of_a_cctp_mint_is_refused(world: World) -> None:
    with fresh_chains(world):
        run = attested(world, "base:USDC->arbitrum:USDC")
        tx = erc20_transfer(world, Chain.ARBITRUM, run.evm_wallet)
        refused(world, run, [tx], "observation_not_prepared_action")


def test_an_erc20_transfer_in_place_of_an_across_fill_is_refused(world: World) -> None:
    with fresh_chains(world):
        run = in_flight(world, "base:USDC->robinhood:USDG")
        tx = erc20_transfer(world, Chain.ROBINHOOD, run.evm_wallet)
        refused(world, run, [tx], "observation_bridge_mismatch")


def test_one_batched_mint_of_two_sessions_advances_only_one(world: World) -> None:
    """One transaction relaying both sessions' attested messages (each receive_message crediting its own
    wallet): the first session it is named to advances; for the second, though its own mint is in it, the
    store's one-transaction-one-step claim refuses it (409) and nothing changes."""
    with fresh_chains(world):
        first, second = attested(world, CCTP), attested(world, CCTP)
        ixs = []
        for run in (first, second):
            bridge = run.session["steps"][0]["bridge"]
            ixs.append(
                receive_message_ix(
                    run.sol_wallet.pubkey(),
                    str(run.sol_wallet.pubkey()),
                    bytes.fromhex(bridge["message"][2:]),
                    bytes.fromhex(bridge["attestation"][2:]),
                    CIRCLE_FEE_ACCOUNT,
                )
            )
        amounts = [
            int(r.session["steps"][0]["bridge"]["burn_amount"])
            - int(r.session["steps"][0]["bridge"]["fee_executed"] or 0)
            for r in (first, second)
        ]
        result = simulate_delivery(
            relayer=first.sol_wallet,
            owner=str(first.sol_wallet.pubkey()),
            token="USDC",
            amount=amounts[0],
            pre_amount=0,
            program=CCTP_MTV2,
            data=b"",
            slot=world.next_slot(),
            instructions=ixs,
            cosigners=[second.sol_wallet],
        )
        usdc = ASSETS["solana:USDC"]
        ata = str(
            get_associated_token_address(
                second.sol_wallet.pubkey(),
                Pubkey.from_string(str(usdc.address)),
                Pubkey.from_string(str(usdc.token_program)),
            )
        )
        keys = result["transaction"]["message"]["accountKeys"]
        template = result["meta"]["postTokenBalances"][0]
        for side, amount in (("preTokenBalances", 0), ("postTokenBalances", amounts[1])):
            entry = {
                **template,
                "accountIndex": keys.index(ata),
                "owner": str(second.sol_wallet.pubkey()),
                "uiTokenAmount": ui_amount(amount, usdc.decimals),
            }
            result["meta"][side].append(entry)
        sig = world.solana.publish(result)
        first.observe([sig])
        assert first.session["status"] == "complete"
        refused(world, second, [sig], "transaction_already_advanced_a_step", status=409)
