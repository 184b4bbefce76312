"""The whole legacy v1 corridor `solana:SOL -> base:ETH`, driven by the official MCP client through the ten
session tools over Streamable HTTP (the real composition root under uvicorn, SQLite store).

What is real and what is recorded:
* the market is the live market over recorded upstreams (the pinned Raydium SOL/USDC pool, as
  tests/integration/test_prepare_solana_swaps.py), so the Raydium swap can be prepared;
* the wallet login is signed by a solders Keypair made here (the test signs, never the service);
* Solana observations come from a fake JSON-RPC on loopback serving `getTransaction` answers in the RPC's
  wire format: the CCTP burn as tests/e2e/test_sessions_solana.py produces it (LiteSVM executes the fee part),
  the Raydium swap built from the signed prepared transaction with the swap's token-balance effect (the
  Raydium program is not available to LiteSVM);
* Circle's Iris is a fake on loopback; the attested message mints through the CCTP v2 stand-ins on anvil
  (chain id 8453), relayed by the test (any account), and the service finds and verifies the mint itself;
* the destination settlement executes on anvil: EntryPoint v0.7 (at its canonical address) and
  SimpleAccountFactory from `@account-abstraction/contracts`, a USDC stand-in with EIP-2612 permit, Uniswap
  v3 with a WETH/USDC pool at the recorded market's price; the test signs the permit and the userOpHash and
  submits `handleOps` as the bundler.
Hostile cases are refused with nothing advanced: a step skipped, a receipt below the step minimum, a token
of another wallet, a user operation whose calldata differs from the plan.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from _evm import AnvilChain
from _solana_session import ATTESTATION, SOLANA_DOMAIN, attested_message, iris_solana_item, solana_burn
from _v1_world import Env, bundle, corridor_world, login, ok, refused
from eth_account import Account
from mcp import Client
from solders.keypair import Keypair
from tests.support.solana_swap_receipt import swap_result

from routequote.core.actions import erc4337 as aa
from routequote.verify import verify_settlement_plan

pytestmark = pytest.mark.chain


@pytest.fixture(scope="module")
def env(
    anvil_factory: Callable[[int], AnvilChain], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Env]:
    with corridor_world(anvil_factory, tmp_path_factory) as world:
        yield world


async def test_whole_v1_corridor_through_the_mcp_tools(env: Env) -> None:
    wallet, event, other = Keypair(), Keypair(), Keypair()
    dest = Account.create()
    async with Client(env.url + "/mcp") as c:
        names = {t.name for t in (await c.list_tools()).tools}
        assert len(names) == 15
        quote = ok(await c.call_tool("service_quote", {"amount_usd": 100, "destination_chain": "base"}))[
            "quote"
        ]
        q = quote["quote"]
        assert quote["corridor"] == "solana:SOL->base:ETH"
        token = await login(c, wallet)
        stranger = await login(c, other)
        sess = {"access_token": token}

        def k(label: str) -> str:
            return f"{label}-{hashlib.sha256(label.encode()).hexdigest()[:10]}"

        created = ok(
            await c.call_tool(
                "service_create_session",
                {
                    **sess,
                    "quote_id": q["quote_id"],
                    "idempotency_key": k("create"),
                    "source_wallet": str(wallet.pubkey()),
                    "destination_wallet": dest.address,
                },
            )
        )["session"]
        sid = created["session_id"]
        assert created["status"] == "action_required" and created["next_operation"] == "prepare_action"
        assert created["current_action"] is None and created["mode"] == "v1_corridor"
        sess["session_id"] = sid
        # the same key and body: the same answer; the same key, another body: refused
        again = ok(
            await c.call_tool(
                "service_create_session",
                {
                    **{k_: v for k_, v in sess.items() if k_ != "session_id"},
                    "quote_id": q["quote_id"],
                    "idempotency_key": k("create"),
                    "source_wallet": str(wallet.pubkey()),
                    "destination_wallet": dest.address,
                },
            )
        )["session"]
        assert again["session_id"] == sid and again["idempotent_replay"] is True
        refused(
            await c.call_tool(
                "service_create_session",
                {
                    "access_token": token,
                    "quote_id": q["quote_id"],
                    "idempotency_key": k("create"),
                    "source_wallet": str(wallet.pubkey()),
                    "destination_wallet": Account.create().address,
                },
            ),
            "idempotency_key_reused_with_different_request",
        )

        async def read(view: str = "session") -> dict[str, Any]:
            return ok(await c.call_tool("service_read_session", {**sess, "view": view}))["session"]

        # hostile: a token of another wallet; a step skipped
        refused(
            await c.call_tool("service_read_session", {"access_token": stranger, "session_id": sid}),
            "session_not_found",
        )
        refused(
            await c.call_tool(
                "service_prepare_cctp_action",
                {**sess, "event_signer_public": str(event.pubkey()), "idempotency_key": k("cctp-early")},
            ),
            "step_out_of_order",
        )
        refused(
            await c.call_tool(
                "service_verify_source_receipt",
                {**sess, "signature": "1" * 88, "idempotency_key": k("early")},
            ),
            "operation_not_allowed_in_status",
        )
        assert (await read())["session_version"] == 1

        # step 1: the Raydium SOL -> USDC swap with the 1 bp fee
        s = ok(await c.call_tool("service_prepare_source_action", sess))["session"]
        assert s["status"] == "action_ready" and s["current_step"] == 0
        action = s["current_action"]["unsigned_action"]
        assert action["feePayer"] == str(wallet.pubkey())
        again = ok(await c.call_tool("service_prepare_source_action", sess))["session"]
        assert again["current_action"] == s["current_action"] and again["idempotent_replay"] is True
        minimum = int(action["minimumOutput"])
        low_sig, low = swap_result(
            action, wallet, minimum - 1, 381_600_001
        )  # hostile: below the step minimum
        env.rpc.publish(low)
        before = await read()
        refused(
            await c.call_tool(
                "service_verify_source_receipt", {**sess, "signature": low_sig, "idempotency_key": k("low")}
            ),
            "observation_below_step_minimum",
        )
        after = await read()
        assert (after["status"], after["session_version"]) == (before["status"], before["session_version"])
        usdc_out = int(action["expectedOutput"]) if "expectedOutput" in action else minimum + 1000
        sig, res = swap_result(action, wallet, usdc_out, 381_600_002)
        env.rpc.publish(res)
        s = ok(
            await c.call_tool(
                "service_verify_source_receipt", {**sess, "signature": sig, "idempotency_key": k("swap")}
            )
        )["session"]
        assert s["status"] == "action_required" and s["current_step"] == 1
        assert s["steps"][0]["actual_output_base"] == str(usdc_out)

        # step 2: the CCTP v2 burn of the ACTUAL USDC
        s = ok(
            await c.call_tool(
                "service_prepare_cctp_action",
                {**sess, "event_signer_public": str(event.pubkey()), "idempotency_key": k("cctp")},
            )
        )["session"]
        burn_action = s["current_action"]["unsigned_action"]
        # the route's 1 bp service fee is charged on this step (its fee step), on the actual USDC
        fee = int(burn_action["routeFee"])
        assert int(burn_action["inputAmount"]) == usdc_out and s["status"] == "action_ready" and fee > 0
        burn = solana_burn(burn_action, wallet, event)
        assert burn.burned == usdc_out - fee and burn.fee_paid == fee
        env.rpc.publish(burn.result)
        s = ok(
            await c.call_tool(
                "service_observe_cctp",
                {**sess, "burn_signature": burn.signature, "idempotency_key": k("burn")},
            )
        )["session"]
        assert s["status"] == "awaiting_destination"
        s = ok(
            await c.call_tool(
                "service_observe_cctp",
                {**sess, "burn_signature": burn.signature, "idempotency_key": k("iris-404")},
            )
        )["session"]
        assert (
            s["status"] == "awaiting_destination"
            and s["steps"][1]["destination_status"] == "awaiting_attestation"
        )
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
        s = ok(
            await c.call_tool(
                "service_observe_cctp",
                {**sess, "burn_signature": burn.signature, "idempotency_key": k("attested")},
            )
        )["session"]
        assert (
            s["status"] == "awaiting_destination"
            and s["steps"][1]["destination_status"] == "attested_awaiting_mint"
        )
        # anyone relays the mint: here a third account
        env.chain.transact(
            env.a["transmitter"],
            "receiveMessage(bytes,bytes)",
            message,
            ATTESTATION,
            sender=env.chain.accounts[2],
        )
        s = ok(
            await c.call_tool(
                "service_observe_cctp",
                {**sess, "burn_signature": burn.signature, "idempotency_key": k("minted")},
            )
        )["session"]
        assert s["status"] == "action_required" and s["current_step"] == 2, s
        minted = int(s["steps"][1]["actual_output_base"])
        assert minted == usdc_out - fee

        # step 3: the ERC-4337 settlement plan, checked by the caller with its own values
        s = ok(
            await c.call_tool("service_prepare_destination_action", {**sess, "idempotency_key": k("dst")})
        )["session"]
        plan = s["current_action"]["plan"]
        # its minimum ETH out is priced from the live market (recorded upstreams), as was the approved quote
        provenance = s["current_action"]["bounds_provenance"]
        assert provenance["basis"] == "live" and provenance["modelled_parts"] == []
        assert provenance["statement"].startswith("bounds are from live market data as of")
        findings = verify_settlement_plan(
            plan,
            wallet=dest.address,
            smart_account=plan["smartAccount"],
            chain_id=8453,
            entry_point=aa.ENTRY_POINT_V07,
            usdc=env.a["usdc"],
            router=env.a["router02"],
            weth=env.a["weth"],
            minimum_eth_out=int(s["steps"][2]["minimum_output_base"]),
            amount_in=minted,
            now_unix=int(plan["preparedAt"]),
            factory=env.a["aa_factory"],
            salt=0,
        )
        assert not [f for f in findings if f.severity == "error"], findings
        key = dest.key.hex()
        # hostile: a user operation whose calldata differs from the plan (a lower minimum), not prefunded so it
        # reverts on chain: refused as not the prepared operation, nothing advances
        tampered = copy.deepcopy(plan)
        tampered["bounds"]["minimumEthOut"] = str(int(plan["bounds"]["minimumEthOut"]) - 1)
        bad_tx = bundle(env, tampered, key, prefund=False)
        before = await read()
        refused(
            await c.call_tool(
                "service_observe_destination",
                {**sess, "transaction_hash": bad_tx, "idempotency_key": k("bad-op")},
            ),
            "observation_not_prepared_action",
        )
        assert (await read())["session_version"] == before["session_version"]

        eth_before = int(env.chain.rpc.call("eth_getBalance", dest.address, "latest"), 16)
        good_tx = bundle(env, plan, key, prefund=True)
        eth_got = int(env.chain.rpc.call("eth_getBalance", dest.address, "latest"), 16) - eth_before
        assert eth_got >= int(plan["bounds"]["minimumEthOut"])
        s = ok(
            await c.call_tool(
                "service_observe_destination",
                {**sess, "transaction_hash": good_tx, "idempotency_key": k("good-op")},
            )
        )["session"]
        assert s["status"] == "complete" and s["next_operation"] == "none"
        assert s["funds"]["state"] == "delivered" and int(s["funds"]["amount_base"]) == eth_got
        receipt = (await read("receipt"))["receipt"]
        assert receipt["route"]["complete"] is True and int(receipt["route"]["actual_output_base"]) == eth_got
        assert [st["status"] for st in receipt["steps"]] == ["complete", "complete", "complete"]
        assert int(receipt["steps"][1]["actual"]["service_fee_paid_base"]) == fee
        # the access token never appears in what the service stored or answered besides the grant
        assert token not in json.dumps(s)
