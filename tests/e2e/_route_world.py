"""The whole-route suite's world: three anvil chains with the protocols deployed, a fake Solana RPC, a fake Iris,
a fake LayerZero Scan and one server over them (`build_world`), and the constants the route harness
(`_routes.py`) shares with it."""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from _evm import (
    AnvilChain,
    ToolchainUnavailable,
    deploy_all,
    deploy_raw,
)
from _lz import deploy_layerzero
from _lzscan import FakeLayerZeroScan
from _sessions import (
    FakeIris,
    SessionApi,
    b32,
    compile_standins,
)
from _solana_programs import CCTP_TMM
from _solana_sim import FakeSolanaRpc
from _venue_model import VenueSdk
from eth_utils import keccak
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from solders.token.associated import get_associated_token_address
from tests.support.server import free_port, running_server

from routequote.app import create_app
from routequote.config import Settings
from routequote.core.actions.cctp_solana_state import TOKEN_MESSENGER_DISCRIMINATOR, token_messenger_address
from routequote.core.actions.evm import DEFAULT_DEPLOYMENTS, LZ_EID, EvmDeployment
from routequote.core.assets import ASSETS, Chain
from routequote.core.routes import Provider
from routequote.market.snapshot import EmbeddedSnapshot

BASE, ARBITRUM, ROBINHOOD = 8453, 42161, 4663
SOLANA_GAS = 0  # Measure.gas key of the lamports the wallet paid in Solana transaction fees
EVM_SOURCE_EXECUTORS = {
    Provider.UNISWAP_V3: "evm_uniswap_v3",
    Provider.ACROSS: "evm_across_deposit",
    Provider.CIRCLE_CCTP: "evm_cctp_burn_standin",
    Provider.PAXOS_OFT: "evm_oft_send",
}
CHAIN_IDS = {Chain.BASE: BASE, Chain.ARBITRUM: ARBITRUM, Chain.ROBINHOOD: ROBINHOOD}
CCTP_DOMAINS = {BASE: 6, ARBITRUM: 3}
SOLANA_DOMAIN = 5
# The test's Iris: Circle's fast-transfer fee by source domain, in thousandths of a basis point (Circle's published
# Standard/Fast fee table as of the recordings; written here, not read from the service's fee model).
IRIS_FEE_BPS_MILLI = {5: 1000, 6: 1300, 3: 1300}
FEE_RECIPIENT_EVM = Settings().fee_recipient_evm
# The Solana fee recipient the world's server is configured with (a setting the test chooses): the fee is read at
# its associated token accounts in the run's VM.
FEE_RECIPIENT_SOLANA = Pubkey(
    hashlib.sha256(b"routequote route suite: configured Solana fee recipient").digest()
)
START_TOKEN6 = 20_000 * 10**6
START_SOLANA_USDC = 20_000 * 10**6
START_SOLANA_LAMPORTS = 100 * 10**9
# The Solana USDG OFT program is not pinned by this build (ROUTEQUOTE_USDG_OFT_SOLANA_PROGRAM): a labelled
# placeholder id stands for it in the simulated lz_receive, and the world's server is configured with it.
PACKET_SENT = "0x" + keccak(text="PacketSent(bytes,bytes,address)").hex()
OFT_SENT = "0x" + keccak(text="OFTSent(bytes32,uint32,address,uint256,uint256)").hex()
LZ_EXECUTOR = Keypair.from_seed(hashlib.sha256(b"routequote simulated LayerZero executor").digest())
CIRCLE_FEE_OWNER = Pubkey(hashlib.sha256(b"routequote simulated Circle fee recipient").digest())
CIRCLE_FEE_ACCOUNT = str(
    get_associated_token_address(
        CIRCLE_FEE_OWNER,
        Pubkey.from_string(str(ASSETS["solana:USDC"].address)),
        Pubkey.from_string(str(ASSETS["solana:USDC"].token_program)),
    )
)
SIMULATED_OFT_PROGRAM = str(Pubkey(hashlib.sha256(b"routequote simulated USDG OFT program").digest()))
ATTESTATION = b"".join(bytes([i]) * 64 + b"\x1c" for i in (1, 2))


@dataclass
class World:
    chains: dict[int, AnvilChain]
    api: SessionApi
    iris: FakeIris
    solana: FakeSolanaRpc
    deployments: dict[Chain, EvmDeployment]
    settings: dict[str, Any]
    lz: dict[str, str] = field(default_factory=dict)
    pools: dict[str, Any] = field(default_factory=dict)  # pool id -> PoolState the server prices with
    slot: int = 390_000_000
    lzscan: Any = None  # FakeLayerZeroScan
    sdk: Any = None  # VenueSdk: the venues' swap math for the Solana swap simulator

    def chain(self, c: Chain) -> AnvilChain:
        return self.chains[CHAIN_IDS[c]]

    def next_slot(self) -> int:
        self.slot += 10
        return self.slot


def deploy_cctp(standins: dict[str, dict[str, Any]], chains: dict[int, AnvilChain]) -> None:
    """One stand-in TokenMessengerV2 + MessageTransmitterV2 on base and on arbitrum, each knowing the other and
    Solana's TokenMessengerMinterV2 as remotes, with the local USDC linked to theirs (burnable, mintable)."""
    evm = [chains[BASE], chains[ARBITRUM]]
    for chain in evm:
        a = chain.addresses
        a["cctp_transmitter"] = deploy_raw(
            chain, standins["MessageTransmitterV2StandIn"], ["uint32"], CCTP_DOMAINS[chain.chain_id]
        )
        a["cctp_messenger"] = deploy_raw(
            chain, standins["TokenMessengerV2StandIn"], ["address"], a["cctp_transmitter"]
        )
        chain.transact(a["token6"], "addMinter(address)", a["cctp_messenger"])
        chain.transact(a["token6"], "addBurner(address)", a["cctp_messenger"])
    usdc_mint = bytes(Pubkey.from_string(str(ASSETS["solana:USDC"].address)))
    for here in evm:
        m = here.addresses["cctp_messenger"]
        remotes = [
            (CCTP_DOMAINS[o.chain_id], b32(o.addresses["cctp_messenger"]), b32(o.addresses["token6"]))
            for o in evm
            if o is not here
        ]
        remotes.append((SOLANA_DOMAIN, bytes(Pubkey.from_string(CCTP_TMM)), usdc_mint))
        for domain, messenger, token in remotes:
            here.transact(m, "addRemoteTokenMessenger(uint32,bytes32)", domain, messenger)
            here.transact(m, "linkTokenPair(address,uint32,bytes32)", here.addresses["token6"], domain, token)


def local_deployments(chains: dict[int, AnvilChain], usdg_oft: str) -> dict[Chain, EvmDeployment]:
    """The builders pointed at the local contracts: token6 plays USDC (base, arbitrum) and USDG (robinhood)."""
    out = {}
    for chain, cid in CHAIN_IDS.items():
        a = chains[cid].addresses
        stable = "USDG" if chain is Chain.ROBINHOOD else "USDC"
        extra: dict[str, Any] = (
            {"usdg_oft": usdg_oft}
            if chain is Chain.ROBINHOOD
            else {"token_messenger_v2": a["cctp_messenger"], "message_transmitter_v2": a["cctp_transmitter"]}
        )
        out[chain] = DEFAULT_DEPLOYMENTS[chain].with_overrides(
            tokens={stable: a["token6"], "WETH": a["weth"]},
            swap_router02=a["router02"],
            across_spoke_pool=a["local_spoke"],
            **extra,
        )
    return out


def token_messenger_state() -> bytes:
    """TokenMessengerMinterV2's `TokenMessenger` account as Circle's layout stores it (constructed here, not read
    from mainnet): the fee recipient is the simulated Circle fee owner."""
    filler = bytes(Pubkey(hashlib.sha256(b"routequote simulated Circle owner").digest()))
    return (
        TOKEN_MESSENGER_DISCRIMINATOR
        + filler * 3
        + (1).to_bytes(4, "little")
        + bytes([255])
        + bytes(CIRCLE_FEE_OWNER)
        + filler
        + (0).to_bytes(4, "little")
    )


# what runs the world's server: (settings, deployments) -> a context yielding the URL it answers on
Serve = Callable[[dict[str, Any], dict[Chain, EvmDeployment]], contextlib.AbstractContextManager[str]]


def in_process(market: Any = None) -> Serve:
    """The app in this process under uvicorn (a thread), pricing with `market`."""

    @contextlib.contextmanager
    def serve(settings: dict[str, Any], deployments: dict[Chain, EvmDeployment]) -> Iterator[str]:
        port = free_port()
        app = create_app(Settings(**settings, port=port), deployments=deployments, market=market)
        with running_server(app, port) as url:
            yield url

    return serve


@contextlib.contextmanager
def build_world(
    anvil_factory: Callable[[int], AnvilChain],
    database_url: str,
    *,
    market: Any = None,
    pools: dict[str, Any] | None = None,
    overrides: dict[str, Any] | None = None,
    serve: Serve | None = None,
) -> Iterator[World]:
    """The chains, the fakes and one server over `database_url`; `market` (default: the embedded snapshot) is
    what the server prices with, `pools` its pool states (what the Solana swap simulator pays by), `overrides`
    settings on top of the world's, and `serve` what runs the server (default: this app in this process)."""
    try:
        standins = compile_standins()
    except ToolchainUnavailable as e:
        pytest.skip(f"solc-js unavailable: {e}")
    chains = {cid: anvil_factory(cid) for cid in (BASE, ARBITRUM, ROBINHOOD)}
    for chain in chains.values():
        deploy_all(chain)
    snaps = {cid: c.snapshot() for cid, c in chains.items()}  # leaves nothing behind for other modules
    try:
        deploy_cctp(standins, chains)
        try:
            lz = deploy_layerzero(chains[ROBINHOOD], LZ_EID[Chain.ROBINHOOD])
        except ToolchainUnavailable as e:
            pytest.skip(f"LayerZero packages unavailable: {e}")
        deployments = local_deployments(chains, lz["usdg_oft"])
        try:
            sdk = VenueSdk()
        except ToolchainUnavailable as e:
            pytest.skip(f"the venues' SDKs are unavailable: {e}")
        with (
            contextlib.closing(sdk),
            FakeIris().running() as iris,
            FakeSolanaRpc().running() as solana,
            FakeLayerZeroScan().running() as lzscan,
        ):
            solana.accounts[token_messenger_address()] = token_messenger_state()
            settings = {
                "rate_limit": "off",
                "rpc_url_base": chains[BASE].url,
                "rpc_url_arbitrum": chains[ARBITRUM].url,
                "rpc_url_robinhood": chains[ROBINHOOD].url,
                "rpc_url_solana": solana.url,
                "iris_url": iris.url,
                "layerzero_scan_url": lzscan.url,
                "usdg_oft_solana_program": SIMULATED_OFT_PROGRAM,
                "fee_recipient_solana": str(FEE_RECIPIENT_SOLANA),
                "finality_confirmations": "base=1,arbitrum=1,robinhood=1",
                "database_url": database_url,
                "dev_signing_key_path": "",
                **(overrides or {}),
            }
            with (serve or in_process(market))(settings, deployments) as url:
                api = SessionApi(url)
                try:
                    snapshot_pools = dict(EmbeddedSnapshot().current().pools)
                    yield World(
                        chains,
                        api,
                        iris,
                        solana,
                        deployments,
                        settings,
                        lz,
                        pools or snapshot_pools,
                        lzscan=lzscan,
                        sdk=sdk,
                    )
                finally:
                    api.close()
    finally:
        for cid, chain in chains.items():
            chain.revert(snaps[cid])


@contextlib.contextmanager
def fresh_chains(world: World) -> Iterator[None]:
    """One route run on the chains as the world left them: everything it did is reverted afterwards."""
    snaps = {cid: c.snapshot() for cid, c in world.chains.items()}
    try:
        yield
    finally:
        for cid, chain in world.chains.items():
            chain.revert(snaps[cid])
