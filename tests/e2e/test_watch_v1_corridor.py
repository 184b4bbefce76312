"""The legacy v1 corridor `solana:SOL -> base:ETH` carried to `complete` by the watcher (issue 42, section 4): the
two step kinds only the corridor uses, `cctp_mint_relayed` and `erc4337`, followed by the service itself.

The corridor's world is test_v1_corridor.py's (`_v1_world.corridor_world`: anvil base with EntryPoint v0.7, the
CCTP v2 stand-ins and Uniswap v3; a fake Solana RPC and a fake Iris on loopback; the app on SQLite), here with
the watcher on. The caller, over the official MCP client, asks for each action (the corridor builds an action
only when asked) and names each transaction it signs once, through the corridor's own tool for it, before that
transaction is final (or mined): the Raydium swap, the CCTP burn, the bundler's `handleOps` of its user
operation. It never calls an observe tool again; it only reads. Finality, Circle's attestation and the mint a
third account relays are followed by the watcher. At the end the stored event log (`session_events`, read from
the database) runs in order along the corridor's path, and the store holds exactly the caller's operations.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import anyio
import pytest
from _evm import AnvilChain
from _solana_session import ATTESTATION, SOLANA_DOMAIN, attested_message, iris_solana_item, solana_burn
from _v1_world import Env, bundle, corridor_world, login, ok
from _watch_routes import WAIT, caller_operations, stored_log
from eth_account import Account
from mcp import Client
from solders.keypair import Keypair
from tests.support.solana_swap_receipt import swap_result

from routequote.core.sessions.kinds import KindKey

pytestmark = pytest.mark.chain
# the step kinds only the corridor selects, carried here (test_watch_every_kind.py's static test counts on it; the
# completed session's own evidence must name them, `carried_kinds`)
CARRIED_KINDS = frozenset({KindKey.CCTP_MINT_RELAYED, KindKey.ERC4337_SETTLEMENT})
EVIDENCE_KINDS = {  # the `kind` a step's evidence records, by the step kind that verified it
    ("destination", "cctp_mint_relayed"): KindKey.CCTP_MINT_RELAYED,
    ("settlement", "erc4337_user_operation"): KindKey.ERC4337_SETTLEMENT,
}
# the statuses the corridor passes through, each change once (a waiting status may be restated by a look that
# recorded something new: the attestation, the mint search's cursor)
PATH = [
    "action_required",  # created: nothing built
    "action_ready",  # the Raydium swap, built when asked
    "awaiting_source_receipt",  # named before it is final
    "action_required",  # the watcher: the swap verified
    "action_ready",  # the CCTP burn, built when asked
    "awaiting_source_receipt",  # named before it is final
    "awaiting_destination",  # the watcher: the burn verified, then Circle's attestation, then the relayed mint
    "action_required",  # the watcher: the mint found and verified
    "action_ready",  # the ERC-4337 settlement plan, built when asked
    "awaiting_source_receipt",  # handleOps named before it is mined
    "complete",  # the watcher: the user operation settled
]


@pytest.fixture(scope="module")
def env(
    anvil_factory: Callable[[int], AnvilChain], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Env]:
    watch = {"watch": True, "watch_interval_seconds": 0.2, "watch_max_backoff_seconds": 1.0}
    with corridor_world(anvil_factory, tmp_path_factory, **watch) as world:
        yield world


def carried_kinds(session: dict[str, Any]) -> set[KindKey]:
    """The corridor-only kinds whose evidence the session's steps record."""
    return {
        kind
        for step in session["steps"]
        for (where, recorded), kind in EVIDENCE_KINDS.items()
        if (step.get(where) or {}).get("kind") == recorded
    }


async def until(
    read: Callable[[], Awaitable[dict[str, Any]]], done: Callable[[dict[str, Any]], bool]
) -> dict[str, Any]:
    """Read the session until `done` holds (bounded by WAIT against a hang; no timing is asserted)."""
    deadline = time.monotonic() + WAIT
    while True:
        s = await read()
        if done(s):
            return s
        assert time.monotonic() < deadline, f"the watcher did not get there: {s['status']} {s.get('steps')}"
        await anyio.sleep(0.2)


async def test_the_watcher_carries_the_v1_corridor_while_the_caller_only_names_what_it_signs(
    env: Env,
) -> None:
    wallet, event = Keypair(), Keypair()
    dest = Account.create()
    db = env.app.state.settings.database_url
    keys: list[str] = []

    def k(label: str) -> str:
        keys.append(f"{label}-{hashlib.sha256(label.encode()).hexdigest()[:10]}")
        return keys[-1]

    async with Client(env.url + "/mcp") as c:
        q = ok(await c.call_tool("service_quote", {"amount_usd": 100, "destination_chain": "base"}))["quote"]
        token = await login(c, wallet)
        created = ok(
            await c.call_tool(
                "service_create_session",
                {
                    "access_token": token,
                    "quote_id": q["quote"]["quote_id"],
                    "idempotency_key": "create-v1-watched",
                    "source_wallet": str(wallet.pubkey()),
                    "destination_wallet": dest.address,
                },
            )
        )["session"]
        sess = {"access_token": token, "session_id": created["session_id"]}
        sid = created["session_id"]

        async def read() -> dict[str, Any]:
            s: dict[str, Any] = ok(await c.call_tool("service_read_session", sess))["session"]
            return s

        async def call(tool: str, **args: Any) -> dict[str, Any]:
            s: dict[str, Any] = ok(await c.call_tool(tool, {**sess, **args}))["session"]
            return s

        # step 0: the Raydium swap, named before its signature is finalized (the RPC does not know it yet)
        action = (await call("service_prepare_source_action"))["current_action"]["unsigned_action"]
        usdc_out = (
            int(action["expectedOutput"])
            if "expectedOutput" in action
            else int(action["minimumOutput"]) + 1000
        )
        sig, swap = swap_result(action, wallet, usdc_out, 381_700_001)
        s = await call("service_verify_source_receipt", signature=sig, idempotency_key=k("name-swap"))
        assert (s["status"], s["next_operation"]) == ("awaiting_source_receipt", "observe")
        env.rpc.publish(swap)
        s = await until(read, lambda s: s["status"] == "action_required")
        assert s["current_step"] == 1 and s["steps"][0]["actual_output_base"] == str(usdc_out)

        # step 1: the CCTP burn, named before it is finalized; then Iris attests, a third account relays the mint
        s = await call(
            "service_prepare_cctp_action", event_signer_public=str(event.pubkey()), idempotency_key=k("cctp")
        )
        burn_action = s["current_action"]["unsigned_action"]
        fee = int(burn_action["routeFee"])
        burn = solana_burn(burn_action, wallet, event)
        s = await call("service_observe_cctp", burn_signature=burn.signature, idempotency_key=k("name-burn"))
        assert s["status"] == "awaiting_source_receipt"
        env.rpc.publish(burn.result)
        await until(read, lambda s: s["steps"][1].get("destination_status") == "awaiting_attestation")
        message = attested_message(
            burn_action["instructions"][-1],
            str(wallet.pubkey()),
            env.a["messenger"],
            nonce=hashlib.sha256(sid.encode()).digest(),
            fee_executed=0,
        )
        env.iris.publish(
            SOLANA_DOMAIN, burn.signature, [iris_solana_item(message, ATTESTATION, env.a["messenger"])]
        )
        await until(read, lambda s: s["steps"][1].get("destination_status") == "attested_awaiting_mint")
        env.chain.transact(
            env.a["transmitter"],
            "receiveMessage(bytes,bytes)",
            message,
            ATTESTATION,
            sender=env.chain.accounts[2],
        )
        s = await until(read, lambda s: s["status"] == "action_required")
        assert s["current_step"] == 2 and int(s["steps"][1]["actual_output_base"]) == usdc_out - fee
        assert s["steps"][1]["destination"]["kind"] == KindKey.CCTP_MINT_RELAYED.value

        # step 2: the ERC-4337 settlement, its handleOps named while it is still in the mempool
        plan = (await call("service_prepare_destination_action", idempotency_key=k("dst")))["current_action"][
            "plan"
        ]
        try:
            op_tx = bundle(env, plan, dest.key.hex(), prefund=True, mined=False)
            s = await call(
                "service_observe_destination", transaction_hash=op_tx, idempotency_key=k("name-op")
            )
            assert s["status"] == "awaiting_source_receipt", s
        finally:
            env.chain.rpc.call("evm_setAutomine", True)
        env.chain.rpc.call("evm_mine")
        s = await until(read, lambda s: s["status"] == "complete")
        assert s["funds"]["state"] == "delivered" and s["next_operation"] == "none"
        assert [st["status"] for st in s["steps"]] == ["complete", "complete", "complete"]
        assert carried_kinds(s) == CARRIED_KINDS

    # the stored log: one sequence, each change from where the one before left the session, along the path
    log = stored_log(db, sid)
    assert [e.seq for e in log] == list(range(1, len(log) + 1)) == list(range(1, s["session_version"] + 1))
    assert all(e.from_status == before.to_status for before, e in zip(log, log[1:], strict=False))
    assert all(before.at <= e.at for before, e in zip(log, log[1:], strict=False))
    path = [e.to_status for i, e in enumerate(log) if i == 0 or e.to_status != log[i - 1].to_status]
    assert path == PATH
    assert (log[0].event, log[-1].event) == ("create_without_action", "step_verified_final")
    # the store holds the caller's operations and nothing else: each naming tool once, no other observe
    recorded = caller_operations(db, sid)
    assert (
        set(keys) <= set(recorded) and len(recorded) == len(keys) + 1
    )  # + prepare-source, which takes no key
