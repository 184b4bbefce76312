"""Uniswap v3 on Robinhood Chain (4663): the pinned SwapRouter02 is trusted only because the pool the quotes
price follows from the corroborated Factory.

Golden tests/golden/actions_robinhood_uniswap_v3.json: the Factory, WETH and USDG of chain 4663, the standard
v3 POOL_INIT_CODE_HASH (`@uniswap/v3-periphery` `contracts/libraries/PoolAddress.sol`) and the CREATE2 pool
addresses per fee tier. The pinned 0.05 % pool (chains.md §6) and the other third-party WETH/USDG pool
(0.01 %) must both be Factory-derived, and the snapshot / synthetic market must price exactly that pool.
Regenerate with REGEN_GOLDEN_ACTIONS=1 after an intended change, and review the diff.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

from eth_abi.abi import encode
from eth_utils.address import to_checksum_address
from eth_utils.crypto import keccak
from tests.unit.actions.support import make_env, prepare_route

from routequote.core.actions.evm import DEFAULT_DEPLOYMENTS, decode_call
from routequote.core.assets import ASSETS, Chain
from routequote.core.routes import ROUTES, Provider
from routequote.market.synthetic import POOLS
from routequote.verify import verify_bundle

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "actions_robinhood_uniswap_v3.json"
REGEN = os.environ.get("REGEN_GOLDEN_ACTIONS") == "1"
SNAPSHOT = Path(__file__).resolve().parents[3] / "src" / "routequote" / "data" / "market_snapshot.json"

FACTORY = "0x1f7d7550B1b028f7571E69A784071F0205FD2EfA"  # two independent catalogs agree (chains.md §6)
SWAP_ROUTER02 = "0xCaf681a66D020601342297493863E78C959E5cb2"
POOL_INIT_CODE_HASH = "0xe34f199b19b2b4f47f68442619d555527d244f78a3297ea89325f843f87b8b54"
PINNED_POOL_500 = "0x69BfaF19C9f377BB306a89aEd9F6B07e2c1a8d9a"  # chains.md: WETH/USDG 0.05 %
THIRD_PARTY_POOL = "0x52e65B17fB6E5BA00Ed806f37Afcd2DaA50271Ca"  # chains.md: the other WETH/USDG pool


def v3_pool_address(factory: str, token_a: str, token_b: str, fee: int, init_code_hash: str) -> str:
    """PoolAddress.computeAddress: CREATE2(factory, keccak(abi.encode(token0, token1, fee)), init code hash)."""
    t0, t1 = sorted((token_a, token_b), key=lambda a: int(a, 16))
    salt = keccak(encode(["address", "address", "uint24"], [t0, t1, fee]))
    digest = keccak(b"\xff" + bytes.fromhex(factory[2:]) + salt + bytes.fromhex(init_code_hash[2:]))
    return str(to_checksum_address(digest[12:]))


def _derived() -> dict[str, Any]:
    weth, usdg = ASSETS["robinhood:ETH"].wrapped_address, ASSETS["robinhood:USDG"].address
    assert weth and usdg
    return {
        "chain_id": 4663,
        "factory": FACTORY,
        "pool_init_code_hash": POOL_INIT_CODE_HASH,
        "swap_router02": SWAP_ROUTER02,
        "token0": weth if int(weth, 16) < int(usdg, 16) else usdg,
        "token1": usdg if int(weth, 16) < int(usdg, 16) else weth,
        "weth": weth,
        "usdg": usdg,
        "pools_by_fee_pips": {
            str(f): v3_pool_address(FACTORY, weth, usdg, f, POOL_INIT_CODE_HASH)
            for f in (100, 500, 3000, 10000)
        },
    }


def test_pool_address_derivation_reproduces_known_mainnet_pools() -> None:
    # the derivation itself, on the canonical Base and Arbitrum WETH/USDC 0.05 % pools the market also reads
    base = v3_pool_address(
        "0x33128a8fC17869897dcE68Ed026d694621f6FDfD",
        "0x4200000000000000000000000000000000000006",
        "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
        500,
        POOL_INIT_CODE_HASH,
    )
    arb = v3_pool_address(
        "0x1F98431c8aD98523631AE4a59f267346ea31F984",
        "0x82aF49447D8a07e3bd95BD0d56f35241523fBab1",
        "0xaf88d065e77c8cC2239327C5EDb3A432268e5831",
        500,
        POOL_INIT_CODE_HASH,
    )
    by_id = {p.pool_id: p.address for p in POOLS}
    assert base == by_id["base:uniswap_v3:ETH-USDC"] == "0xd0b53D9277642d899DF5C87A3966A349A798F224"
    assert arb == by_id["arbitrum:uniswap_v3:ETH-USDC"] == "0xC6962004f452bE9203591991D15f6b388e09E8D0"


def test_robinhood_pools_follow_from_the_factory_golden() -> None:
    derived = _derived()
    if REGEN:
        GOLDEN.write_text(json.dumps(derived, indent=1, sort_keys=True) + "\n")
    assert derived == json.loads(GOLDEN.read_text())
    pools = derived["pools_by_fee_pips"]
    assert pools["500"] == PINNED_POOL_500 and pools["100"] == THIRD_PARTY_POOL
    assert derived["token0"] == derived["weth"]  # WETH sorts first: the snapshot's token0 is robinhood:ETH


def test_market_prices_the_factory_derived_pool() -> None:
    spec = next(p for p in POOLS if p.pool_id == "robinhood:uniswap_v3:ETH-USDG")
    want = _derived()["pools_by_fee_pips"][str(spec.fee_pips)]
    assert (spec.address, spec.fee_pips, spec.token0, spec.token1) == (
        want,
        500,
        "robinhood:ETH",
        "robinhood:USDG",
    )
    snap = json.loads(SNAPSHOT.read_text())
    rows = [p for p in snap["pools"] if p["pool_id"] == spec.pool_id]
    assert len(rows) == 1 and rows[0]["address"] == want and rows[0]["fee_pips"] == 500
    assert (rows[0]["token0"], rows[0]["token1"]) == ("robinhood:ETH", "robinhood:USDG")


def test_swap_router_pinned_for_robinhood() -> None:
    dep = DEFAULT_DEPLOYMENTS[Chain.ROBINHOOD]
    assert dep.contract(Provider.UNISWAP_V3) == SWAP_ROUTER02 and dep.unpinned_reasons == {}
    assert dep.token(ASSETS["robinhood:ETH"]) == _derived()["weth"]


def test_every_route_swapping_first_on_robinhood_prepares_and_verifies() -> None:
    env = make_env()
    keys = sorted(
        k
        for k, r in ROUTES.items()
        if r.steps[0].provider is Provider.UNISWAP_V3 and r.steps[0].source.chain is Chain.ROBINHOOD
    )
    assert len(keys) == 9 and set(keys) <= env.prepare.supported_routes()
    for key in keys:
        p = asyncio.run(prepare_route(env, key, 100))
        txs = p.bundle["unsigned_action"]["transactions"]
        swap = txs[-1]
        assert swap["to"] == SWAP_ROUTER02 and swap["chainId"] == 4663, key
        call = decode_call(bytes.fromhex(swap["data"][2:]))
        assert call is not None and call.name == "multicall"
        inner = decode_call(bytes(call.args[1][0]))
        assert inner is not None and inner.name == "exactInputSingle"
        assert inner.args[0][2] == 500, key  # the fee tier of the Factory-derived pool
        errors = [f for f in verify_bundle(p.bundle, **p.verify_kwargs()) if f.severity == "error"]
        assert errors == [], (key, errors)
