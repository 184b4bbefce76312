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
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal, getcontext
from typing import Any

import pytest
from _evm import MAX_UINT256, AnvilChain, ToolchainUnavailable, calldata, deploy_all, deploy_raw
from _sessions import FakeIris, compile_standins
from _solana_session import (
    ATTESTATION,
    CCTP_TMM,
    SOLANA_DOMAIN,
    USDC_MINT,
    FakeSolanaRpc,
    attested_message,
    b58encode,
    iris_solana_item,
    solana_burn,
    to_instruction,
    ui_amount,
)
from eth_abi import encode
from eth_account import Account
from eth_account.messages import encode_defunct, encode_typed_data
from eth_utils import to_checksum_address
from mcp import Client
from solders.hash import Hash
from solders.keypair import Keypair
from solders.message import Message
from solders.pubkey import Pubkey
from solders.token.associated import get_associated_token_address
from solders.transaction import Transaction
from test_erc4337_anvil import aa_artifacts
from tests.support.json_safety import assert_javascript_safe
from tests.support.server import free_port, running_server
from tests.unit.actions.test_solana_swaps import pinned_live_market, pinned_raydium_upstreams

from routequote.app import create_app
from routequote.clock import FixedClock
from routequote.config import Settings
from routequote.core.actions import erc4337 as aa
from routequote.core.actions.evm import DEFAULT_DEPLOYMENTS
from routequote.core.assets import Chain
from routequote.verify import verify_settlement_plan

pytestmark = pytest.mark.chain
T0 = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)  # the recordings' time
BASE_DOMAIN = 6
TOKEN_PROGRAM = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"
WSOL = "So11111111111111111111111111111111111111112"
FEE = 500


@dataclass
class Env:
    url: str
    chain: AnvilChain
    rpc: FakeSolanaRpc
    iris: FakeIris
    a: dict[str, Any]
    app: Any


def _sqrt_price_x96(tick: int, invert: bool) -> int:
    getcontext().prec = 80
    price = Decimal("1.0001") ** tick  # token1 per token0 (base units)
    if invert:
        price = 1 / price
    return int(price.sqrt() * (Decimal(2) ** 96))


@pytest.fixture(scope="module")
def env(
    anvil_factory: Callable[[int], AnvilChain], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Env]:
    chain = anvil_factory(8453)
    deploy_all(chain)
    try:
        standins = compile_standins()
        arts = aa_artifacts()
    except ToolchainUnavailable as e:
        pytest.skip(f"ERC-4337 / solc toolchain unavailable: {e}")
    snap = chain.snapshot()
    a = dict(chain.addresses)
    built = deploy_raw(chain, arts["EntryPoint"], [])
    chain.rpc.call("anvil_setCode", aa.ENTRY_POINT_V07, chain.rpc.call("eth_getCode", built, "latest"))
    a["aa_factory"] = deploy_raw(chain, arts["SimpleAccountFactory"], ["address"], aa.ENTRY_POINT_V07)
    weth, me = a["weth"], chain.deployer

    def deploy(name: str, types: list[str], *args: Any, sender: str | None = None) -> str:
        code = standins[name]["bytecode"] + (encode(types, list(args)).hex() if types else "")
        return str(to_checksum_address(chain.send(None, code, sender=sender)["contractAddress"]))

    # CCTP v2 stand-ins on base; the permit USDC stand-in is deployed BY the messenger (impersonated), so the
    # messenger is its minter, as Circle's TokenMinter is USDC's
    a["transmitter"] = deploy("MessageTransmitterV2StandIn", ["uint32"], BASE_DOMAIN)
    messenger = a["messenger"] = deploy("TokenMessengerV2StandIn", ["address"], a["transmitter"])
    chain.rpc.call("anvil_impersonateAccount", messenger)
    chain.rpc.call("anvil_setBalance", messenger, hex(10**18))
    usdc = a["usdc"] = deploy("UsdcPermitStandIn", [], sender=messenger)
    chain.transact(usdc, "mint(address,uint256)", me, 10**9 * 10**6, sender=messenger)
    chain.rpc.call("anvil_stopImpersonatingAccount", messenger)
    clock = FixedClock(T0)
    fake = pinned_raydium_upstreams(clock)
    market = pinned_live_market(clock, fake, raydium=True)
    # the local WETH/USDC pool at exactly the recorded market's price (mainnet: token0 WETH, token1 USDC)
    import asyncio

    view = asyncio.run(market.view())
    tick = view.pools["base:uniswap_v3:ETH-USDC"].clmm.tick_current
    t0, t1 = sorted((weth, usdc), key=lambda x: int(x, 16))
    chain.send(weth, calldata("deposit()"), value=1000 * 10**18)
    for tok in (usdc, weth):
        chain.transact(tok, "approve(address,uint256)", a["npm"], MAX_UINT256)
    chain.transact(
        a["npm"],
        "createAndInitializePoolIfNecessary(address,address,uint24,uint160)",
        t0,
        t1,
        FEE,
        _sqrt_price_x96(tick, invert=t0 != weth),
    )
    amounts = (500 * 10**18, 10**9 * 10**6 // 2) if t0 == weth else (10**9 * 10**6 // 2, 500 * 10**18)
    chain.transact(
        a["npm"],
        "mint((address,address,uint24,int24,int24,uint256,uint256,uint256,uint256,address,uint256))",
        (t0, t1, FEE, -887270, 887270, amounts[0], amounts[1], 0, 0, me, 2**40),
    )
    # the messenger mints the permit USDC for Solana's TokenMessengerMinterV2 (domain 5)
    chain.transact(
        a["messenger"],
        "addRemoteTokenMessenger(uint32,bytes32)",
        SOLANA_DOMAIN,
        bytes(Pubkey.from_string(CCTP_TMM)),
    )
    chain.transact(
        a["messenger"],
        "linkTokenPair(address,uint32,bytes32)",
        usdc,
        SOLANA_DOMAIN,
        bytes(Pubkey.from_string(USDC_MINT)),
    )
    base = DEFAULT_DEPLOYMENTS[Chain.BASE]
    deployments = {
        Chain.BASE: base.with_overrides(
            message_transmitter_v2=a["transmitter"],
            token_messenger_v2=a["messenger"],
            swap_router02=a["router02"],
            tokens={**base.tokens, "USDC": usdc, "WETH": weth},
        )
    }
    db = tmp_path_factory.mktemp("v1-corridor") / "s.sqlite3"
    with FakeSolanaRpc().running() as rpc, FakeIris().running() as iris:
        port = free_port()
        settings = Settings(
            rate_limit="off",
            port=port,
            rpc_url_solana=rpc.url,
            rpc_url_base=chain.url,
            iris_url=iris.url,
            finality_confirmations="base=1,arbitrum=1,robinhood=1",
            database_url=f"sqlite+aiosqlite:///{db}",
        )
        app = create_app(settings, market=market, clock=clock, deployments=deployments)
        app.state.sessions.config.erc4337["base"] = {"factory": a["aa_factory"]}
        with running_server(app, port) as url:
            yield Env(url, chain, rpc, iris, a, app)
    chain.revert(snap)


# ---- the wallet side ---------------------------------------------------------------------------------------


def swap_result(
    action: dict[str, Any], wallet: Keypair, usdc_out: int, slot: int
) -> tuple[str, dict[str, Any]]:
    """The `getTransaction` answer of the signed prepared Raydium transaction: its instructions as signed, the
    fee TransferChecked and the wrap visible in the token balances, the swap's USDC delivered to the wallet."""
    ixs = [to_instruction(d) for d in action["instructions"]]
    blockhash = Hash(hashlib.sha256(f"blockhash {slot}".encode()).digest())
    message = Message.new_with_blockhash(ixs, wallet.pubkey(), blockhash)
    signed = Transaction([wallet], message, blockhash)
    signed.verify()
    keys = [str(k) for k in message.account_keys]
    owner = str(wallet.pubkey())
    usdc_ata = str(get_associated_token_address(wallet.pubkey(), Pubkey.from_string(USDC_MINT)))
    fee_ata = str(action.get("feeRecipientTokenAccount"))
    route_fee = int(action.get("routeFee") or 0)

    def bal(account: str, mint: str, amount: int, holder: str) -> dict[str, Any]:
        return {
            "accountIndex": keys.index(account),
            "mint": mint,
            "owner": holder,
            "programId": TOKEN_PROGRAM,
            "uiTokenAmount": ui_amount(amount, 9 if mint == WSOL else 6),
        }

    fee_owner = "DevFeeRecipientP1aceho1der11111111111111111"
    pre_tokens = [bal(fee_ata, WSOL, 0, fee_owner)] if route_fee else []
    post_tokens = [
        *([bal(fee_ata, WSOL, route_fee, fee_owner)] if route_fee else []),
        bal(usdc_ata, USDC_MINT, usdc_out, owner),
    ]
    n = len(keys)
    pre, post = [2_000_000_000] + [1_000_000] * (n - 1), [1_000_000_000] + [1_000_000] * (n - 1)
    h = message.header
    result = {
        "blockTime": 1_795_400_000 + slot % 1000,
        "slot": slot,
        "version": "legacy",
        "meta": {
            "computeUnitsConsumed": 120_000,
            "err": None,
            "fee": 5000,
            "innerInstructions": [],
            "loadedAddresses": {"readonly": [], "writable": []},
            "logMessages": ["Program CAMMCzo5YL8w4VFF8KVHrK22GGUsp5VTaW7grrKgrWqK success"],
            "postBalances": post,
            "postTokenBalances": post_tokens,
            "preBalances": pre,
            "preTokenBalances": pre_tokens,
            "rewards": [],
            "status": {"Ok": None},
        },
        "transaction": {
            "message": {
                "accountKeys": keys,
                "header": {
                    "numReadonlySignedAccounts": h.num_readonly_signed_accounts,
                    "numReadonlyUnsignedAccounts": h.num_readonly_unsigned_accounts,
                    "numRequiredSignatures": h.num_required_signatures,
                },
                "instructions": [
                    {
                        "accounts": list(ci.accounts),
                        "data": b58encode(bytes(ci.data)),
                        "programIdIndex": ci.program_id_index,
                        "stackHeight": None,
                    }
                    for ci in message.instructions
                ],
                "recentBlockhash": str(blockhash),
            },
            "signatures": [str(s) for s in signed.signatures],
        },
    }
    return str(signed.signatures[0]), result


def structured(result: Any) -> dict[str, Any]:
    text = json.loads(result.content[0].text)
    out: dict[str, Any] = result.structured_content
    if "decision" in text:  # a quote tool: the text block is the ~1 KB decision view of the structured quote
        assert text["decision"]["quote_id"] == (out.get("quote") or out)["quote_id"], text
    else:
        assert text == out
    assert_javascript_safe(out)
    return out


def ok(result: Any) -> dict[str, Any]:
    assert result.is_error is False, result.structured_content
    return structured(result)


def refused(result: Any, reason: str) -> dict[str, Any]:
    assert result.is_error is True, result.structured_content
    err: dict[str, Any] = structured(result)["error"]
    assert err["reason_class"] == reason, err
    return err


async def login(c: Client, wallet: Keypair) -> str:
    ch = ok(await c.call_tool("service_start_wallet_auth", {"source_wallet": str(wallet.pubkey())}))[
        "challenge"
    ]
    sig = str(wallet.sign_message(ch["message"].encode()))
    grant = ok(
        await c.call_tool(
            "service_finish_wallet_auth",
            {
                "challenge_id": ch["challenge_id"],
                "source_wallet": str(wallet.pubkey()),
                "signature": sig,
                "terms_version": ch["terms_version"],
            },
        )
    )["auth"]
    token: str = grant["access_token"]
    return token


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
        bundler = env.chain.accounts[1]

        def bundle(p: dict[str, Any], prefund: bool) -> str:
            permit_sig = Account.sign_message(
                encode_typed_data(full_message=p["permit"]["typedData"]), key
            ).signature
            signed = aa.attach_permit_signature(p, permit_sig)
            owner_sig = Account.sign_message(
                encode_defunct(primitive=bytes.fromhex(signed["userOpHash"][2:])), key
            ).signature
            op = aa.packed_user_operation(signed, owner_sig)
            if prefund:
                env.chain.send(signed["smartAccount"], "0x", value=int(p["bounds"]["maxGasCostWei"]))
            data = "0x" + aa.handle_ops_call_data([op], bundler).hex()
            tx_hash: str = env.chain.rpc.call(
                "eth_sendTransaction",
                {"from": bundler, "to": aa.ENTRY_POINT_V07, "data": data, "gas": hex(5_000_000)},
            )
            for _ in range(500):
                if env.chain.rpc.call("eth_getTransactionReceipt", tx_hash) is not None:
                    break
            return tx_hash

        # hostile: a user operation whose calldata differs from the plan (a lower minimum), not prefunded so it
        # reverts on chain: refused as not the prepared operation, nothing advances
        tampered = copy.deepcopy(plan)
        tampered["bounds"]["minimumEthOut"] = str(int(plan["bounds"]["minimumEthOut"]) - 1)
        bad_tx = bundle(tampered, prefund=False)
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
        good_tx = bundle(plan, prefund=True)
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
