"""The legacy v1 corridor's local world, shared by tests/e2e/test_v1_corridor.py (its docstring says what is real
and what is recorded) and test_watch_v1_corridor.py: anvil base with EntryPoint v0.7, SimpleAccountFactory, the
CCTP v2 stand-ins and a Uniswap v3 WETH/USDC pool at the recorded market's price; a fake Solana RPC and a fake
Iris on loopback; the app under uvicorn on SQLite. Also the wallet side's helpers (the Raydium swap's
`getTransaction` answer, the MCP login) and the bundler."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal, getcontext
from typing import Any

import pytest
from _evm import MAX_UINT256, AnvilChain, ToolchainUnavailable, calldata, deploy_all, deploy_raw
from _sessions import FakeIris, compile_standins
from _solana_session import (
    CCTP_TMM,
    SOLANA_DOMAIN,
    USDC_MINT,
    FakeSolanaRpc,
)
from eth_abi import encode
from eth_account import Account
from eth_account.messages import encode_defunct, encode_typed_data
from eth_utils import to_checksum_address
from mcp import Client
from solders.keypair import Keypair
from solders.pubkey import Pubkey
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

T0 = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)  # the recordings' time
BASE_DOMAIN = 6
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


@contextmanager
def corridor_world(
    anvil_factory: Callable[[int], AnvilChain], tmp_path_factory: pytest.TempPathFactory, **overrides: Any
) -> Iterator[Env]:
    """The corridor's world (module docstring of test_v1_corridor.py) and a server on it; `overrides` are
    `Settings` fields (the watcher, finality)."""
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
            **{
                "finality_confirmations": "base=1,arbitrum=1,robinhood=1",
                "database_url": f"sqlite+aiosqlite:///{db}",
                **overrides,
            },
        )
        app = create_app(settings, market=market, clock=clock, deployments=deployments)
        app.state.sessions.config.erc4337["base"] = {"factory": a["aa_factory"]}
        try:
            with running_server(app, port) as url:
                yield Env(url, chain, rpc, iris, a, app)
        finally:
            chain.revert(snap)


# ---- the wallet side ---------------------------------------------------------------------------------------


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


def bundle(env: Env, plan: dict[str, Any], key: str, prefund: bool, mined: bool = True) -> str:
    """As the bundler: the owner (`key`) signs the permit and the userOpHash, `handleOps` is sent (mined at once
    on anvil; with `mined` false anvil's automine is turned off first, so it waits in the mempool until the
    caller mines and turns automine back on); its transaction hash."""
    bundler = env.chain.accounts[1]
    permit_sig = Account.sign_message(
        encode_typed_data(full_message=plan["permit"]["typedData"]), key
    ).signature
    signed = aa.attach_permit_signature(plan, permit_sig)
    owner_sig = Account.sign_message(
        encode_defunct(primitive=bytes.fromhex(signed["userOpHash"][2:])), key
    ).signature
    op = aa.packed_user_operation(signed, owner_sig)
    if prefund:
        env.chain.send(signed["smartAccount"], "0x", value=int(plan["bounds"]["maxGasCostWei"]))
    data = "0x" + aa.handle_ops_call_data([op], bundler).hex()
    if not mined:
        env.chain.rpc.call("evm_setAutomine", False)
    tx_hash: str = env.chain.rpc.call(
        "eth_sendTransaction",
        {"from": bundler, "to": aa.ENTRY_POINT_V07, "data": data, "gas": hex(5_000_000)},
    )
    for _ in range(500 if mined else 0):
        if env.chain.rpc.call("eth_getTransactionReceipt", tx_hash) is not None:
            break
    return tx_hash
