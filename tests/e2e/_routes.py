"""The whole-route harness: one world (three anvil chains, a fake Solana RPC, a fake Iris, one server) and one
executor per step kind, shared by every route of `ROUTES`.

A route run creates a session through REST, then loops: the current action is signed by the run's own keys and
executed (anvil; LiteSVM + the simulator on Solana), the upstream the step waits for is played (the Across
relayer fills on the real SpokePool, Circle attests on the fake Iris, the Solana delivery is simulated), and the
service observes it through its production adapters until `complete`. Every step's amounts are measured on the
chains (balances before and after, gas paid) and held against the receipt. How each part of each step ran is
recorded by `proof(step)` labels, which the route proof table (`docs/routes.md`) is generated from.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from _evm import (
    MAX_UINT256,
    AnvilChain,
    ToolchainUnavailable,
    balance_of,
    deploy_all,
    deploy_raw,
    sign_and_send,
)
from _lz import NATIVE_FEE_WEI, deploy_layerzero
from _lzscan import FakeLayerZeroScan, scan_item
from _sessions import (
    SESSION_HEADER,
    FakeIris,
    SessionApi,
    approval,
    attest,
    b32,
    compile_standins,
    deposit_relay_data,
    emitted_message,
    fill_relay,
    intent,
    iris_item,
    new_key,
    new_token,
)
from _solana_sim import (
    CCTP_MTV2,
    CCTP_TMM,
    FakeSolanaRpc,
    simulate_cctp_burn,
    simulate_delivery,
    simulate_solana_swap,
    to_instruction,
)
from eth_account import Account
from eth_utils import keccak
from solders.instruction import AccountMeta, Instruction
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from solders.token.associated import get_associated_token_address
from tests.support.server import free_port, running_server

from routequote.app import create_app
from routequote.config import Settings
from routequote.core.actions.cctp_message import encode_cctp_burn_message
from routequote.core.actions.cctp_solana_receive import receive_message_ix
from routequote.core.actions.cctp_solana_state import TOKEN_MESSENGER_DISCRIMINATOR, token_messenger_address
from routequote.core.actions.evm import DEFAULT_DEPLOYMENTS, LZ_EID, EvmDeployment
from routequote.core.assets import ASSETS, Chain
from routequote.core.bridge_arrivals import (
    LzReceive,
    encode_lz_receive,
    oft_message,
    verify_cctp_solana_mint,
    verify_oft_solana_delivery,
)
from routequote.core.clmm import swap_exact_input
from routequote.core.routes import ROUTES, Provider, Route, Step
from routequote.market.snapshot import EmbeddedSnapshot
from routequote.observe.solana import parse_get_transaction
from routequote.verify import verify_bundle

BASE, ARBITRUM, ROBINHOOD = 8453, 42161, 4663
CHAIN_IDS = {Chain.BASE: BASE, Chain.ARBITRUM: ARBITRUM, Chain.ROBINHOOD: ROBINHOOD}
CCTP_DOMAINS = {BASE: 6, ARBITRUM: 3}
SOLANA_DOMAIN = 5
FAST_FEE_BPS_MILLI = {
    5: 1000,
    6: 1300,
    3: 1300,
}  # Circle's fast fee by source domain, as the snapshot models it
FEE_RECIPIENT_EVM = Settings().fee_recipient_evm
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

# How each side of each step kind runs here (the proof table's vocabulary).
REAL = "real protocol bytecode"
STAND_IN = "stand-in"
SIMULATOR = "simulator"
LITESVM_SIM = "LiteSVM (SPL parts) + simulator"
NOT_RUN = "not run"


def proof(step: Step) -> dict[str, str]:
    """How the suite executes each side of `step` (source action; destination, for bridges)."""
    src, dst = step.source.chain, step.target.chain
    p = step.provider
    if p is Provider.UNISWAP_V3:
        return {
            "source": f"{REAL}: Uniswap v3 SwapRouter02 + pool (npm @uniswap/v3-core, swap-router-contracts)"
        }
    if p is Provider.ACROSS:
        return {
            "source": f"{REAL}: Across SpokePool deposit (npm @across-protocol/contracts)",
            "destination": f"{REAL}: SpokePool fillRelay, the test as the relayer",
        }
    if p is Provider.CIRCLE_CCTP:
        source = (
            f"{LITESVM_SIM}: fee + ATA in LiteSVM, deposit_for_burn simulated"
            if src is Chain.SOLANA
            else f"{STAND_IN}: TokenMessengerV2 stand-in (solc at test time); Iris played by the test"
        )
        destination = (
            f"{SIMULATOR}: the prepared receive_message, signed by the caller, its program effect simulated "
            "(getTransaction wire format); its accounts are SDK-equal "
            "(tests/integration/test_cctp_solana_sdk_equality.py)"
            if dst is Chain.SOLANA
            else f"{STAND_IN}: MessageTransmitterV2 stand-in receiveMessage"
        )
        return {"source": source, "destination": destination}
    if p is Provider.PAXOS_OFT:
        return {
            "source": f"{REAL}: LayerZero EndpointV2 + SimpleMessageLib (npm), OFTAdapter compiled from npm sources",
            "destination": f"{SIMULATOR}: lz_receive on Solana (getTransaction wire format), found through a "
            "fake LayerZero Scan",
        }
    return {
        "source": f"{LITESVM_SIM}: SPL parts in LiteSVM, {p.value} swap_v2 simulated by the CLMM math; the "
        "instruction is SDK-equal (tests/integration/test_solana_swap_sdk_equality.py)"
    }


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


@contextlib.contextmanager
def build_world(
    anvil_factory: Callable[[int], AnvilChain],
    database_url: str,
    *,
    market: Any = None,
    pools: dict[str, Any] | None = None,
) -> Iterator[World]:
    """The chains, the fakes and one server over `database_url`; `market` (default: the embedded snapshot) is
    what the server prices with, `pools` its pool states (what the Solana swap simulator pays by)."""
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
        with (
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
                "finality_confirmations": "base=1,arbitrum=1,robinhood=1",
                "database_url": database_url,
                "dev_signing_key_path": "",
            }
            port = free_port()
            app = create_app(Settings(**settings, port=port), deployments=deployments, market=market)
            with running_server(app, port) as url:
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


# ---- one route run --------------------------------------------------------------------------------------------


@dataclass
class Measure:
    """Balances at a step's start (the caller's source and target asset, the fee recipient's source asset)."""

    src: int
    dst: int
    fee: int
    gas: dict[int, int] = field(default_factory=dict)  # chain id -> wei the wallet paid in this step
    source_ids: list[str] = field(default_factory=list)  # what the caller's source action was on chain
    destination_ids: list[str] = field(default_factory=list)  # what delivered it (mint, fill, delivery)


@dataclass
class StepOutcome:
    index: int
    provider: str
    measured_input: int
    measured_output: int
    measured_fee: int
    statuses: list[str]
    source_ids: list[str]
    destination_ids: list[str]


@dataclass
class Run:
    world: World
    route_name: str
    amount_usd: int
    evm_key: str = ""
    evm_wallet: str = ""
    sol_wallet: Keypair = field(default_factory=Keypair)
    event: Keypair = field(default_factory=Keypair)
    sol_ledger: dict[tuple[str, str], int] = field(default_factory=dict)  # (owner, token) -> base units
    sid: str = ""
    token: str = ""
    session: dict[str, Any] = field(default_factory=dict)
    outcomes: list[StepOutcome] = field(default_factory=list)
    measure: Measure | None = None
    statuses: list[str] = field(default_factory=list)
    last_source_receipts: list[dict[str, Any]] = field(default_factory=list)
    reapproval: dict[str, Any] | None = None  # the 409 answer, when the run allows one
    allow_reapproval: bool = False
    fee_at_max: bool = False  # Circle executes the fast fee at the burn's full maxFee
    short_delivery: int = 0  # a simulated Solana arrival this many base units below the step minimum
    last_answer: dict[str, Any] = field(default_factory=dict)
    quote: dict[str, Any] = field(default_factory=dict)
    stopped: bool = False
    approved_minimum: int | None = None  # the caller strengthens approval_v3.minimum_output_base to this
    approval_v3: dict[str, Any] = field(default_factory=dict)

    @property
    def route(self) -> Route:
        return ROUTES[self.route_name]

    # -- balances ------------------------------------------------------------------------------------------
    def wallet_of(self, chain: Chain) -> str:
        return str(self.sol_wallet.pubkey()) if chain is Chain.SOLANA else self.evm_wallet

    def balance(self, asset_key: str, owner: str) -> int:
        a = ASSETS[asset_key]
        if a.chain is Chain.SOLANA:
            return self.sol_ledger.get((owner, a.token.value), 0)
        chain = self.world.chain(a.chain)
        if a.is_native:
            return int(chain.rpc.call("eth_getBalance", owner, "latest"), 16)
        return balance_of(chain, chain.addresses["token6"], owner)

    def fee_recipient(self, chain: Chain) -> str:
        return "solana-fee-recipient" if chain is Chain.SOLANA else FEE_RECIPIENT_EVM

    # -- setup -----------------------------------------------------------------------------------------------
    def fund(self) -> None:
        acct = Account.create()
        self.evm_key, self.evm_wallet = acct.key.hex(), str(acct.address)
        for chain in self.world.chains.values():
            chain.send(self.evm_wallet, "0x", value=10 * 10**18)
            chain.transact(chain.addresses["token6"], "mint(address,uint256)", self.evm_wallet, START_TOKEN6)
        sol_owner = str(self.sol_wallet.pubkey())
        self.sol_ledger[(sol_owner, "USDC")] = START_SOLANA_USDC
        self.sol_ledger[(sol_owner, "USDG")] = START_SOLANA_USDC
        self.sol_ledger[(sol_owner, "SOL")] = START_SOLANA_LAMPORTS

    def wallets(self) -> dict[str, str]:
        return {c: self.wallet_of(Chain(c)) for c in self.route.required_wallet_chains}

    def create(self) -> dict[str, Any]:
        api = self.world.api
        self.token, key = new_token(), new_key("create")
        q = api.quote(self.route_name, self.amount_usd)
        self.quote = q
        bound = approval(q, key)
        if self.approved_minimum is not None:
            assert self.approved_minimum >= int(bound["minimum_output_base"])  # only ever strengthened
            bound["minimum_output_base"] = str(self.approved_minimum)
        self.approval_v3 = bound
        body: dict[str, Any] = {
            "caller_approved": True,
            **intent(self.route_name, self.amount_usd),
            "wallets": self.wallets(),
            "approval_v3": bound,
            "idempotency_key": key,
        }
        if self.route.event_signer_required:
            body["event_signer_public"] = str(self.event.pubkey())
        r = api.http.post("/v2/session", json=body, headers={SESSION_HEADER: self.token})
        assert r.status_code == 201, r.text
        self.session = dict(r.json())
        self.sid = self.session["session_id"]
        self.check_funds(self.session)
        return self.session

    # -- observation -------------------------------------------------------------------------------------------
    def observe(self, named: list[str] | None, *, expect: int = 200) -> dict[str, Any]:
        before = self.session
        r = self.world.api.observe(self.sid, self.token, named)
        if r.status_code == 409 and self.allow_reapproval:
            self.reapproval = self.last_answer = dict(r.json())
            return self.reapproval
        assert r.status_code == expect, (self.route_name, r.text)
        s = dict(r.json())
        if expect != 200:
            return s
        assert s["session_version"] == before["session_version"] + 1, s
        self.statuses.append(s["status"])
        self.session = s
        self.check_funds(s)
        return s

    def check_funds(self, s: dict[str, Any]) -> None:
        """`funds` names where the caller's money is at this stop."""
        f = s["funds"]
        route, k = self.route, s["current_step"]
        step = route.steps[k]
        state = f["state"]
        if s["status"] == "complete":
            assert (state, f["endpoint"]) == ("delivered", route.target.key), f
            assert f["wallet"] == self.wallet_of(route.target.chain) and int(f["amount_base"]) > 0, f
        elif s["status"] == "awaiting_destination" or s["phase"] == "destination":
            assert (state, f["endpoint"]) == ("in_flight", step.target.key), f
            assert f["wallet"] == self.wallet_of(step.target.chain), f
        else:  # the next action spends what is in the wallet
            assert (state, f["endpoint"]) == ("in_wallet", step.source.key), f
            assert f["wallet"] == self.wallet_of(step.source.chain), f
            assert int(f["amount_base"]) > 0, f

    # -- measuring ---------------------------------------------------------------------------------------------
    def start_step(self, step: Step) -> None:
        if self.measure is None:
            self.measure = Measure(
                self.balance(step.source.key, self.wallet_of(step.source.chain)),
                self.balance(step.target.key, self.wallet_of(step.target.chain)),
                self.balance(step.source.key, self.fee_recipient(step.source.chain)),
            )
            self.statuses = []

    def ids(self) -> Measure:
        assert self.measure is not None
        return self.measure

    def paid_gas(self, chain: AnvilChain, receipts: list[dict[str, Any]]) -> None:
        assert self.measure is not None
        wei = sum(int(r["gasUsed"], 16) * int(r["effectiveGasPrice"], 16) for r in receipts)
        self.measure.gas[chain.chain_id] = self.measure.gas.get(chain.chain_id, 0) + wei

    def finish_step(self, step: Step) -> None:
        m = self.measure
        assert m is not None
        src_gas = m.gas.get(CHAIN_IDS.get(step.source.chain, 0), 0) if step.source.is_native else 0
        dst_gas = m.gas.get(CHAIN_IDS.get(step.target.chain, 0), 0) if step.target.is_native else 0
        src_after = self.balance(step.source.key, self.wallet_of(step.source.chain))
        dst_after = self.balance(step.target.key, self.wallet_of(step.target.chain))
        fee_after = self.balance(step.source.key, self.fee_recipient(step.source.chain))
        self.outcomes.append(
            StepOutcome(
                step.index,
                step.provider.value,
                m.src - src_after - src_gas,
                dst_after - m.dst + dst_gas,
                fee_after - m.fee,
                list(self.statuses),
                m.source_ids,
                m.destination_ids,
            )
        )
        self.measure = None

    # -- executors, one per step kind and side --------------------------------------------------------------
    def submit_evm(self, chain: AnvilChain) -> list[dict[str, Any]]:
        action = self.session["current_action"]["unsigned_action"]
        assert all(int(tx["chainId"]) == chain.chain_id for tx in action["transactions"])
        latest = int(chain.rpc.call("eth_getBlockByNumber", "latest", False)["timestamp"], 16)
        chain.rpc.call("evm_mine", max(latest + 1, int(time.time()) + 1))  # Across: quoteTimestamp <= now
        receipts = sign_and_send(chain, self.evm_key, action["transactions"])
        self.paid_gas(chain, receipts)
        return receipts

    def solana_swap(self, step: Step) -> None:
        """A Raydium / Orca swap: LiteSVM for the SPL parts, the swap by the CLMM math over the snapshot pool
        the service priced (`_solana_sim.simulate_solana_swap`, a SIMULATOR)."""
        action = self.session["current_action"]["unsigned_action"]
        owner = str(self.sol_wallet.pubkey())
        pool = self.world.pools[str(step.pool_id)]
        zero_for_one = step.source.key == pool.token0
        start = {step.source.key: self.sol_ledger.get((owner, step.source.token.value), 0)}
        sim = simulate_solana_swap(
            action,
            self.sol_wallet,
            lambda net: swap_exact_input(pool.clmm, zero_for_one, net).amount_out,
            start,
            self.world.next_slot(),
        )
        fee = int(action["routeFee"])
        self.sol_ledger[(owner, step.source.token.value)] -= int(action["inputAmount"])
        dst_key = (owner, step.target.token.value)
        self.sol_ledger[dst_key] = self.sol_ledger.get(dst_key, 0) + sim.amount_out
        fee_key = (self.fee_recipient(Chain.SOLANA), step.source.token.value)
        self.sol_ledger[fee_key] = self.sol_ledger.get(fee_key, 0) + fee
        self.world.solana.publish(sim.result)
        self.ids().source_ids.append(sim.signature)
        self.observe([sim.signature])

    def source_action(self, step: Step) -> None:
        if step.provider in (Provider.RAYDIUM_CLMM, Provider.ORCA_WHIRLPOOL):
            self.solana_swap(step)
            return
        if step.source.chain is Chain.SOLANA:
            action = self.session["current_action"]["unsigned_action"]
            owner = str(self.sol_wallet.pubkey())
            burn = simulate_cctp_burn(
                action, self.sol_wallet, self.event, self.sol_ledger[(owner, "USDC")], self.world.next_slot()
            )
            self.sol_ledger[(owner, "USDC")] -= burn.usdc_spent
            fee_key = (self.fee_recipient(Chain.SOLANA), "USDC")
            self.sol_ledger[fee_key] = self.sol_ledger.get(fee_key, 0) + burn.fee_paid
            self.world.solana.publish(burn.result)
            self.ids().source_ids.append(burn.signature)
            self.observe([burn.signature])
            return
        chain = self.world.chain(step.source.chain)
        eth_before = int(chain.rpc.call("eth_getBalance", self.evm_wallet, "latest"), 16)
        receipts = self.submit_evm(chain)
        self.last_source_receipts = receipts
        if step.provider is Provider.PAXOS_OFT:
            self.check_oft_send(chain, receipts, eth_before)
        self.ids().source_ids.extend(str(r["transactionHash"]).lower() for r in receipts)
        self.observe([str(r["transactionHash"]) for r in receipts])

    def check_oft_send(self, chain: AnvilChain, receipts: list[dict[str, Any]], eth_before: int) -> None:
        """The real EndpointV2 took exactly the library's fee (the rest of the value came back) and emitted the
        packet; the real OFTAdapter emitted OFTSent."""
        gas = sum(int(r["gasUsed"], 16) * int(r["effectiveGasPrice"], 16) for r in receipts)
        eth_after = int(chain.rpc.call("eth_getBalance", self.evm_wallet, "latest"), 16)
        assert eth_before - eth_after == gas + NATIVE_FEE_WEI
        logs = receipts[-1]["logs"]
        assert any(
            lg["address"].lower() == self.world.lz["lz_endpoint"].lower() and lg["topics"][0] == PACKET_SENT
            for lg in logs
        )
        assert any(
            lg["address"].lower() == self.world.lz["usdg_oft"].lower() and lg["topics"][0] == OFT_SENT
            for lg in logs
        )

    def destination(self, step: Step) -> None:
        """The upstream the in-flight step waits for, then one observation."""
        bridge = self.session["steps"][step.index]["bridge"]
        kind = bridge["kind"]
        if kind == "across":
            self.across_fill(step)
            self.observe(None)
        elif kind == "oft":
            self.delivery(step, "USDG", int(bridge["amount_received"]), "lz_receive")
        elif kind == "cctp":
            self.cctp_attest(step, bridge)
            self.observe(None)
        else:  # pragma: no cover - a new bridge kind needs its executor here
            raise AssertionError(f"no executor for bridge kind {kind}")

    def across_fill(self, step: Step) -> None:
        src, dst = self.world.chain(step.source.chain), self.world.chain(step.target.chain)
        relay = deposit_relay_data(self.last_source_receipts[-1], src.addresses["local_spoke"], src.chain_id)
        relayer = dst.accounts[1]
        dst.transact(dst.addresses["token6"], "mint(address,uint256)", relayer, 10**12)
        dst.transact(
            dst.addresses["token6"],
            "approve(address,uint256)",
            dst.addresses["local_spoke"],
            MAX_UINT256,
            sender=relayer,
        )
        fill = fill_relay(dst, relayer, relay, src.chain_id)
        self.ids().destination_ids.append(str(fill["transactionHash"]).lower())

    def cctp_attest(self, step: Step, bridge: dict[str, Any]) -> None:
        amount, max_fee = int(bridge["burn_amount"]), int(bridge["max_fee"])
        src_domain = int(bridge["source_domain"])
        fee = min(max_fee, -(-amount * FAST_FEE_BPS_MILLI[src_domain] // 10_000_000))
        if self.fee_at_max:
            fee = max_fee
        if step.source.chain is Chain.SOLANA:
            dst = self.world.chain(step.target.chain)
            message = encode_cctp_burn_message(
                source_domain=SOLANA_DOMAIN,
                destination_domain=int(bridge["destination_domain"]),
                nonce=os.urandom(32),
                sender=bytes(Pubkey.from_string(CCTP_TMM)),
                recipient=b32(dst.addresses["cctp_messenger"]),
                destination_caller=bytes(32),
                min_finality_threshold=int(bridge["min_finality_threshold"]),
                finality_threshold_executed=int(bridge["min_finality_threshold"]),
                burn_token=bytes(Pubkey.from_string(str(ASSETS["solana:USDC"].address))),
                mint_recipient=bytes.fromhex(bridge["mint_recipient"][2:]),
                amount=amount,
                message_sender=bytes(self.sol_wallet.pubkey()),
                max_fee=max_fee,
                fee_executed=fee,
                expiration_block=0,
            )
        else:
            message = attest(
                emitted_message(self.last_source_receipts[-1]),
                nonce=os.urandom(32),
                fee_executed=fee,
                expiration_block=10**9,
            )
        self.world.iris.publish(src_domain, bridge["source_tx"], [iris_item(message, ATTESTATION)])

    def arrival_instruction(self, step: Step, token: str, amount: int) -> Instruction:
        """The bridge's own delivery instruction for this session's message: MessageTransmitterV2
        `receive_message` of the attested CCTP message (relayed by the caller), or the OFT's `lz_receive` of the
        send's GUID (the LayerZero executor)."""
        owner = str(self.sol_wallet.pubkey())
        bridge = self.session["steps"][step.index]["bridge"]
        if token == "USDC":
            message = bytes.fromhex(bridge["message"][2:])
            attestation = bytes.fromhex(bridge["attestation"][2:])
            return receive_message_ix(
                self.sol_wallet.pubkey(), owner, message, attestation, CIRCLE_FEE_ACCOUNT
            )
        mint = Pubkey.from_string(str(ASSETS["solana:USDG"].address))
        program = Pubkey.from_string(str(ASSETS["solana:USDG"].token_program))
        ata = get_associated_token_address(Pubkey.from_string(owner), mint, program)
        params = LzReceive(
            LZ_EID[Chain.ROBINHOOD],
            b32(self.world.lz["usdg_oft"]),
            1,
            bytes.fromhex(bridge["guid"][2:]),
            oft_message(bytes(Pubkey.from_string(owner)), amount),
            b"",
        )
        metas = [
            AccountMeta(LZ_EXECUTOR.pubkey(), True, True),
            AccountMeta(ata, False, True),
            AccountMeta(mint, False, True),
        ]
        return Instruction(Pubkey.from_string(SIMULATED_OFT_PROGRAM), encode_lz_receive(params), metas)

    def check_arrival(self, step: Step, token: str, sig: str, result: dict[str, Any], amount: int) -> None:
        """The simulated arrival is what the core's bridge-arrival rules (`core/bridge_arrivals.py`) accept."""
        tx = parse_get_transaction(sig, result)
        assert tx is not None
        owner = str(self.sol_wallet.pubkey())
        bridge = self.session["steps"][step.index]["bridge"]
        if token == "USDC":
            got = verify_cctp_solana_mint(
                tx, message=bytes.fromhex(bridge["message"][2:]), recipient_owner=owner
            )
        else:
            got = verify_oft_solana_delivery(
                tx,
                oft_program=SIMULATED_OFT_PROGRAM,
                guid=bridge["guid"],
                src_eid=LZ_EID[Chain.ROBINHOOD],
                source_oapp=b32(self.world.lz["usdg_oft"]),
                recipient_owner=owner,
            )
        assert got.amount_base == amount, (got, amount)

    def delivery(self, step: Step, token: str, amount: int, instruction: str) -> None:
        owner = str(self.sol_wallet.pubkey())
        pre = self.sol_ledger.get((owner, token), 0)
        if self.short_delivery:
            quoted = self.quote["direct_route_summary"]["steps"][step.index]["minimum_output_base"]
            minimum = int(self.session["steps"][step.index].get("minimum_output_base") or quoted)
            amount = minimum - self.short_delivery
        program = CCTP_MTV2 if token == "USDC" else SIMULATED_OFT_PROGRAM
        relayer = self.sol_wallet if token == "USDC" else LZ_EXECUTOR  # the caller relays the CCTP mint
        result = simulate_delivery(
            relayer=relayer,
            owner=owner,
            token=token,
            amount=amount,
            pre_amount=pre,
            program=program,
            data=instruction.encode(),
            slot=self.world.next_slot(),
            instruction=self.arrival_instruction(step, token, amount),
        )
        self.sol_ledger[(owner, token)] = pre + amount
        self.check_arrival(step, token, str(result["transaction"]["signatures"][0]), result, amount)
        sig = self.world.solana.publish(result)
        self.ids().destination_ids.append(sig)
        if (
            token == "USDG"
        ):  # the LayerZero executor delivered it: the service finds it through LayerZero Scan
            self.publish_scan(step, sig)
            self.observe(None)
        else:
            self.observe([sig])

    def publish_scan(self, step: Step, delivery: str | None) -> None:
        bridge = self.session["steps"][step.index]["bridge"]
        item = scan_item(
            guid=bridge["guid"],
            src_eid=LZ_EID[Chain.ROBINHOOD],
            dst_eid=30168,
            sender=self.world.lz["usdg_oft"],
            receiver=SIMULATED_OFT_PROGRAM,
            source_tx=bridge["source_tx"],
            delivery=delivery,
        )
        self.world.lzscan.publish(bridge["source_tx"], [item])

    def solana_receive(self, step: Step) -> None:
        """The prepared CCTP receive_message on Solana: the caller signs the action's instructions as prepared;
        the program's effect (USDC out of custody to the caller) is SIMULATED."""
        self.check_verified(self.session["current_action"])
        action = self.session["current_action"]["unsigned_action"]
        bridge = self.session["steps"][step.index]["bridge"]
        owner = str(self.sol_wallet.pubkey())
        ixs = [to_instruction(d) for d in action["instructions"]]
        assert ixs[-1] == self.arrival_instruction(step, "USDC", 0), (
            "the prepared receive_message, as Circle's"
        )
        amount = int(bridge["burn_amount"]) - int(bridge["fee_executed"] or 0)
        if self.short_delivery:
            quoted = self.quote["direct_route_summary"]["steps"][step.index]["minimum_output_base"]
            minimum = int(self.session["steps"][step.index].get("minimum_output_base") or quoted)
            amount = minimum - self.short_delivery
        pre = self.sol_ledger.get((owner, "USDC"), 0)
        result = simulate_delivery(
            relayer=self.sol_wallet,
            owner=owner,
            token="USDC",
            amount=amount,
            pre_amount=pre,
            program=CCTP_MTV2,
            data=b"",
            slot=self.world.next_slot(),
            instructions=ixs,
        )
        self.sol_ledger[(owner, "USDC")] = pre + amount
        sig = str(result["transaction"]["signatures"][0])
        self.check_arrival(step, "USDC", sig, result, amount)
        self.world.solana.publish(result)
        self.ids().destination_ids.append(sig)
        self.observe([sig])

    def check_verified(self, bundle: dict[str, Any]) -> None:
        """The caller's verifier (`routequote.verify`, what `routequote verify-action` and the client run)
        accepts the prepared action against the caller's own intent, wallets and approval."""
        findings = verify_bundle(
            bundle,
            intent=intent(self.route_name, self.amount_usd),
            wallets=self.wallets(),
            approval_v3=self.approval_v3,
            direct_route_summary=self.quote["direct_route_summary"],
            now_unix=int(time.time()),
            deployments=self.world.deployments,
            # local chains priced from the embedded snapshot: modelled bounds, accepted explicitly
            accept_modelled_bounds=True,
        )
        assert [f for f in findings if f.severity == "error"] == [], findings

    def destination_action(self, step: Step) -> None:
        """A prepared CCTP mint on the destination: the caller submits it (receiveMessage on EVM,
        receive_message on Solana)."""
        if step.target.chain is Chain.SOLANA:
            self.solana_receive(step)
            return
        chain = self.world.chain(step.target.chain)
        receipts = self.submit_evm(chain)
        self.ids().destination_ids.extend(str(r["transactionHash"]).lower() for r in receipts)
        self.observe([str(r["transactionHash"]) for r in receipts])

    # -- the loop -------------------------------------------------------------------------------------------
    def drive(self, max_observations: int = 20) -> None:
        """Carry the session to `complete`, measuring every step."""
        for _ in range(max_observations):
            s = self.session
            if s["status"] == "complete" or self.reapproval is not None or self.stopped:
                return
            k = s["current_step"]
            step = self.route.steps[k]
            self.start_step(step)
            if s["status"] == "action_ready" and s["phase"] == "source":
                self.source_action(step)
            elif s["status"] == "action_ready":
                self.destination_action(step)
            elif s["status"] == "awaiting_destination":
                self.destination(step)
            else:
                raise AssertionError(f"{self.route_name}: unexpected status {s['status']}: {s}")
            if self.reapproval is not None:  # step k was verified; the next one was not built
                self.finish_step(step)
                return
            if self.session["status"] == "complete" or self.session["current_step"] != k:
                self.finish_step(step)
                # the money is where `funds` says, in the amount the chain shows arrived
                assert int(self.session["funds"]["amount_base"]) == self.outcomes[-1].measured_output
        assert self.session["status"] == "complete", self.session

    def receipt(self) -> dict[str, Any]:
        rc: dict[str, Any] = self.world.api.read(self.sid, self.token, "receipt")["receipt"]
        return rc


def check_receipt(run: Run) -> list[dict[str, Any]]:
    """Every step: output >= its minimum, the receipt's amounts = the measured balance changes; the 1 bp service
    fee at exactly one step. Returns the per-step record for the results file."""
    rc = run.receipt()
    steps = rc["steps"]
    session_steps = run.world.api.read(run.sid, run.token)["steps"]
    assert len(steps) == len(run.route.steps) == len(run.outcomes)
    fee_steps = []
    out = []
    for step, got, measured, live in zip(run.route.steps, steps, run.outcomes, session_steps, strict=True):
        actual = got["actual"]
        minimum = int(live.get("minimum_output_base") or got["quoted"]["minimum_output_base"])
        output, inp = int(actual["output_base"]), int(actual["input_base"])
        where = f"{run.route_name} ${run.amount_usd} step {step.index} ({step.provider.value})"
        assert output >= minimum, f"{where}: output {output} < minimum {minimum}"
        assert output == measured.measured_output, (
            f"{where}: receipt output {output} != chain {measured.measured_output}"
        )
        assert inp == measured.measured_input, (
            f"{where}: receipt input {inp} != chain {measured.measured_input}"
        )
        src_ids = [i.lower() if i.startswith("0x") else i for i in actual["source_tx_ids"] or []]
        assert src_ids == measured.source_ids, f"{where}: source ids {src_ids} != {measured.source_ids}"
        dst_ids = [i.lower() if i.startswith("0x") else i for i in actual.get("destination_tx_ids") or []]
        assert dst_ids == measured.destination_ids, (
            f"{where}: destination ids {dst_ids} != {measured.destination_ids}"
        )
        fee = int(actual["service_fee_paid_base"])
        assert fee == measured.measured_fee, (
            f"{where}: receipt fee {fee} != fee recipient's {measured.measured_fee}"
        )
        if fee:
            fee_steps.append(step.index)
            assert fee == inp // 10_000, f"{where}: fee {fee} is not 1 bp of the input {inp}"
            assert step.fee_step, where
        out.append({"index": step.index, "provider": step.provider.value, **proof(step)})
    assert fee_steps == [next(s.index for s in run.route.steps if s.fee_step)], (run.route_name, fee_steps)
    route = rc["route"]
    assert route["complete"] is True and route["at_or_above_minimum"] is True
    assert int(route["actual_output_base"]) == run.outcomes[-1].measured_output
    return out
