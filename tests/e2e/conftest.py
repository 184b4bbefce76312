"""Anvil fixtures shared by the e2e tests.

* ``evm_toolchain`` (session): installs anvil + Uniswap artifacts from npm into ``tests/e2e/.npm-cache``;
  skips with the reason when node/npm are missing, the platform has no anvil build, or npm is offline.
* ``anvil_factory`` (session): ``anvil_factory(chain_id) -> AnvilChain`` starts anvil on a free
  127.0.0.1 port with ``--chain-id`` and deploys WETH9, a 6- and an 18-decimals ERC-20,
  UniswapV3Factory, NonfungiblePositionManager, SwapRouter02 and QuoterV2 (one node per chain id,
  reused for the session, stopped at teardown). ``AnvilChain`` exposes ``url``, ``rpc`` (JSON-RPC
  helper), ``accounts`` (unlocked), ``addresses`` and send/call/snapshot/revert helpers.
* ``anvil_chain`` (session, parametrized over 8453 / 42161 / 4663): the factory's node for that id.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _evm import AnvilChain, ToolchainUnavailable, deploy_uniswap, ensure_toolchain, start_anvil  # noqa: E402

CHAIN_IDS = (8453, 42161, 4663)


@pytest.fixture(scope="session")
def evm_toolchain() -> tuple[Path, Path]:
    try:
        return ensure_toolchain()
    except ToolchainUnavailable as e:
        pytest.skip(f"local EVM unavailable: {e}")


@pytest.fixture(scope="session")
def anvil_factory(evm_toolchain: tuple[Path, Path]) -> Iterator[Callable[[int], AnvilChain]]:
    anvil, artifacts = evm_toolchain
    chains: dict[int, AnvilChain] = {}

    def get(chain_id: int) -> AnvilChain:
        if chain_id not in chains:
            try:
                chain = start_anvil(anvil, artifacts, chain_id)
            except ToolchainUnavailable as e:
                pytest.skip(f"local EVM unavailable: {e}")
            deploy_uniswap(chain)
            chains[chain_id] = chain
        return chains[chain_id]

    yield get
    for chain in chains.values():
        chain.stop()


@pytest.fixture(scope="session", params=CHAIN_IDS, ids=lambda c: f"chain{c}")
def anvil_chain(request: pytest.FixtureRequest, anvil_factory: Callable[[int], AnvilChain]) -> AnvilChain:
    chain_id: int = request.param
    return anvil_factory(chain_id)
