"""The whole-route harness: one world (`_route_world.py`: three anvil chains, a fake Solana RPC, a fake Iris, one
server) and one executor per step kind, shared by every route of `ROUTES`.

A route run creates a session through REST, then loops: the current action is checked by the caller's verifier
(`Run.wallet_verifies`), signed by the run's own keys and executed (anvil; on Solana the run's one LiteSVM, the
programs no package ships simulated by `_solana_programs.py`), the upstream the step waits for is played (the
Across relayer fills on the real SpokePool, Circle attests on the fake Iris the message the burn really emitted,
the LayerZero executor delivers the packet the endpoint really emitted), and the service observes it through its
production adapters until `complete`. Every step's amounts are measured on the chains (balances before and
after, gas and Solana fees paid) and held against the receipt (`_route_receipt.py`). Each side of each step
records the id of the executor that ran it (`routes_doc.EXECUTORS` turns ids into the proof table's labels),
with the measured amounts and transaction ids, in the results `docs/routes.md` is generated from.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

from _bridge_wire import (
    CctpBurn,
    decode_cctp,
    iris_fee,
    lz_receive_data,
    packet_sent,
    parse_receive_message,
)
from _evm import (
    MAX_UINT256,
    AnvilChain,
    balance_of,
    sign_and_send,
)
from _lz import NATIVE_FEE_WEI
from _lzscan import scan_item
from _route_receipt import check_receipt as check_receipt
from _route_world import (
    ATTESTATION,
    CCTP_DOMAINS,
    CHAIN_IDS,
    CIRCLE_FEE_ACCOUNT,
    CIRCLE_FEE_OWNER,
    EVM_SOURCE_EXECUTORS,
    FEE_RECIPIENT_EVM,
    FEE_RECIPIENT_SOLANA,
    IRIS_FEE_BPS_MILLI,
    LZ_EXECUTOR,
    OFT_SENT,
    PACKET_SENT,
    SIMULATED_OFT_PROGRAM,
    SOLANA_GAS,
    START_SOLANA_LAMPORTS,
    START_SOLANA_USDC,
    START_TOKEN6,
    World,
)
from _route_world import build_world as build_world
from _route_world import fresh_chains as fresh_chains
from _sessions import (
    SESSION_HEADER,
    approval,
    b32,
    deposit_relay_data,
    emitted_message,
    fill_relay,
    intent,
    iris_item,
    new_key,
    new_token,
)
from _solana_programs import CCTP_MTV2, CCTP_TMM, SimulatedPrograms
from _solana_sim import to_instruction
from _solana_vm import SolanaVm, ata
from eth_account import Account
from routes_doc import EXECUTORS
from solders.instruction import AccountMeta, Instruction
from solders.keypair import Keypair
from solders.pubkey import Pubkey

from routequote.core.actions.evm import LZ_EID
from routequote.core.assets import ASSETS, Chain
from routequote.core.routes import ROUTES, Provider, Route, Step
from routequote.verify import verify_bundle

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
    executors: dict[str, str] = field(default_factory=dict)  # side -> the executor that ran it


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
    executors: dict[str, str]


@dataclass
class Run:
    world: World
    route_name: str
    amount_usd: int
    evm_key: str = ""
    evm_wallet: str = ""
    sol_wallet: Keypair = field(default_factory=Keypair)
    event: Keypair = field(default_factory=Keypair)
    vm: SolanaVm | None = None  # the run's Solana chain (one LiteSVM for all its transactions)
    programs: SimulatedPrograms | None = None  # the simulated Solana programs acting on `vm`
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
    iris_bps_milli: int | None = None  # Circle's fee for this run, in place of IRIS_FEE_BPS_MILLI's
    sent_solana_instructions: list[Instruction] = field(default_factory=list)  # the last Solana transaction's
    last_answer: dict[str, Any] = field(default_factory=dict)
    quote: dict[str, Any] = field(default_factory=dict)
    stopped: bool = False
    approved_minimum: int | None = None  # the caller strengthens approval_v3.minimum_output_base to this
    approval_v3: dict[str, Any] = field(default_factory=dict)
    create_extra: dict[str, Any] = field(default_factory=dict)  # more members of the create body (`webhook`)

    @property
    def route(self) -> Route:
        return ROUTES[self.route_name]

    # -- balances ------------------------------------------------------------------------------------------
    def wallet_of(self, chain: Chain) -> str:
        return str(self.sol_wallet.pubkey()) if chain is Chain.SOLANA else self.evm_wallet

    def balance(self, asset_key: str, owner: str) -> int:
        a = ASSETS[asset_key]
        if a.chain is Chain.SOLANA:
            return self.solana.balance(owner, asset_key)
        chain = self.world.chain(a.chain)
        if a.is_native:
            return int(chain.rpc.call("eth_getBalance", owner, "latest"), 16)
        return balance_of(chain, chain.addresses["token6"], owner)

    def fee_balance(self, asset_key: str) -> int:
        """The configured fee recipient's balance of the asset (on Solana: its associated token account, wrapped
        SOL for SOL), as the chain holds it."""
        a = ASSETS[asset_key]
        if a.chain is Chain.SOLANA:
            return self.solana.fee_balance(asset_key)
        return self.balance(asset_key, FEE_RECIPIENT_EVM)

    @property
    def solana(self) -> SolanaVm:
        assert self.vm is not None, "fund() first"
        return self.vm

    @property
    def sim(self) -> SimulatedPrograms:
        assert self.programs is not None, "fund() first"
        return self.programs

    # -- setup -----------------------------------------------------------------------------------------------
    def fund(self) -> None:
        acct = Account.create()
        self.evm_key, self.evm_wallet = acct.key.hex(), str(acct.address)
        for chain in self.world.chains.values():
            chain.send(self.evm_wallet, "0x", value=10 * 10**18)
            chain.transact(chain.addresses["token6"], "mint(address,uint256)", self.evm_wallet, START_TOKEN6)
        self.vm = SolanaVm(FEE_RECIPIENT_SOLANA)
        usdc = ASSETS["solana:USDC"]
        self.vm.token_account(Pubkey.from_string(CIRCLE_FEE_ACCOUNT), usdc, CIRCLE_FEE_OWNER, 0)
        self.vm.fund(
            self.sol_wallet.pubkey(),
            START_SOLANA_LAMPORTS,
            {"solana:USDC": START_SOLANA_USDC, "solana:USDG": START_SOLANA_USDC},
        )
        self.vm.svm.airdrop(LZ_EXECUTOR.pubkey(), START_SOLANA_LAMPORTS)
        # the messengers of THIS world's deployments (its server's), never the chains' latest: the chains are
        # shared, and a world built later (PostgreSQL, live market) deploys its own messengers on them
        remotes = {}
        for chain, cid in CHAIN_IDS.items():
            if cid in CCTP_DOMAINS:
                messenger = self.world.deployments[chain].token_messenger_v2
                assert messenger is not None, chain
                remotes[CCTP_DOMAINS[cid]] = b32(messenger)
        self.programs = SimulatedPrograms(
            sdk=self.world.sdk,
            pools={p.address: p for p in self.world.pools.values() if p.address},
            remote_messengers=remotes,
            circle_fee_account=Pubkey.from_string(CIRCLE_FEE_ACCOUNT),
            oft_program=SIMULATED_OFT_PROGRAM,
        )

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
            **self.create_extra,
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
                self.fee_balance(step.source.key),
            )
            self.statuses = []

    def ids(self) -> Measure:
        assert self.measure is not None
        return self.measure

    def ran(self, side: str, executor: str) -> None:
        assert executor in EXECUTORS, executor
        self.ids().executors[side] = executor

    def paid_gas(self, chain: AnvilChain, receipts: list[dict[str, Any]]) -> None:
        assert self.measure is not None
        wei = sum(int(r["gasUsed"], 16) * int(r["effectiveGasPrice"], 16) for r in receipts)
        self.measure.gas[chain.chain_id] = self.measure.gas.get(chain.chain_id, 0) + wei

    def finish_step(self, step: Step) -> None:
        m = self.measure
        assert m is not None
        src_gas = m.gas.get(CHAIN_IDS.get(step.source.chain, SOLANA_GAS), 0) if step.source.is_native else 0
        dst_gas = m.gas.get(CHAIN_IDS.get(step.target.chain, SOLANA_GAS), 0) if step.target.is_native else 0
        src_after = self.balance(step.source.key, self.wallet_of(step.source.chain))
        dst_after = self.balance(step.target.key, self.wallet_of(step.target.chain))
        fee_after = self.fee_balance(step.source.key)
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
                dict(m.executors),
            )
        )
        self.measure = None

    # -- executors, one per step kind and side --------------------------------------------------------------
    def submit_evm(self, chain: AnvilChain) -> list[dict[str, Any]]:
        self.wallet_verifies(self.session["current_action"])
        action = self.session["current_action"]["unsigned_action"]
        assert all(int(tx["chainId"]) == chain.chain_id for tx in action["transactions"])
        latest = int(chain.rpc.call("eth_getBlockByNumber", "latest", False)["timestamp"], 16)
        chain.rpc.call("evm_mine", max(latest + 1, int(time.time()) + 1))  # Across: quoteTimestamp <= now
        receipts = sign_and_send(chain, self.evm_key, action["transactions"])
        self.paid_gas(chain, receipts)
        return receipts

    def submit_solana(
        self,
        signers: list[Keypair],
        *,
        fee_payer: Keypair | None = None,
        ixs: list[Instruction] | None = None,
    ) -> str:
        """The current action's instructions (or `ixs`), signed and executed in the run's VM (the simulated
        programs applied by `SimulatedPrograms`); its getTransaction answer is published on the fake RPC. A
        transaction that fails, as a program would fail it, fails the run, as an EVM revert does."""
        if ixs is None:
            action = self.session["current_action"]["unsigned_action"]
            ixs = [to_instruction(d) for d in action["instructions"]]
        payer = fee_payer or signers[0]
        self.sent_solana_instructions = ixs
        done = self.solana.execute(
            ixs, signers, self.sim.effects(), fee_payer=payer, existing=self.sim.existing
        )
        if payer.pubkey() == self.sol_wallet.pubkey() and self.measure is not None:
            self.measure.gas[SOLANA_GAS] = self.measure.gas.get(SOLANA_GAS, 0) + int(
                done.result["meta"]["fee"]
            )
        assert not done.failed, (
            f"{self.route_name}: the Solana transaction failed: {done.result['meta']['logMessages'][-2:]}"
        )
        return self.world.solana.publish(done.result)

    def solana_swap(self, step: Step) -> None:
        """A Raydium / Orca swap in the run's VM: its SPL parts executed, the swap_v2 simulated with the venue's
        SDK math and the instruction's own minimum enforced (`_solana_programs`)."""
        self.wallet_verifies(self.session["current_action"])
        sig = self.submit_solana([self.sol_wallet])
        raydium = step.provider is Provider.RAYDIUM_CLMM
        self.ran("source", "solana_raydium_simulated" if raydium else "solana_orca_simulated")
        self.ids().source_ids.append(sig)
        self.observe([sig])

    def source_action(self, step: Step) -> None:
        if step.provider in (Provider.RAYDIUM_CLMM, Provider.ORCA_WHIRLPOOL):
            self.solana_swap(step)
            return
        if step.source.chain is Chain.SOLANA:  # the CCTP deposit_for_burn
            self.wallet_verifies(self.session["current_action"])
            sig = self.submit_solana([self.sol_wallet, self.event])
            self.ran("source", "solana_cctp_burn_simulated")
            self.ids().source_ids.append(sig)
            self.observe([sig])
            return
        chain = self.world.chain(step.source.chain)
        eth_before = int(chain.rpc.call("eth_getBalance", self.evm_wallet, "latest"), 16)
        receipts = self.submit_evm(chain)
        self.ran("source", EVM_SOURCE_EXECUTORS[step.provider])
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
            self.oft_delivery(step)
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
        self.ran("destination", "evm_across_fill")
        self.ids().destination_ids.append(str(fill["transactionHash"]).lower())

    def cctp_attest(self, step: Step, bridge: dict[str, Any]) -> None:
        """Circle attests the burn the source chain really made: the message the stand-in TokenMessengerV2 emitted
        on anvil, or the one the simulated deposit_for_burn wrote to its MessageSent account in the run's VM,
        with Iris's nonce and its fee from the test's own schedule (`IRIS_FEE_BPS_MILLI`, or this run's)."""
        if step.source.chain is Chain.SOLANA:
            burn_ix = [ix for ix in self.sent_solana_instructions if str(ix.program_id) == CCTP_TMM]
            assert len(burn_ix) == 1, "the burn transaction carries one deposit_for_burn"
            sent = self.sim.sent_message(self.solana, burn_ix[0].accounts[11].pubkey)
        else:
            sent = emitted_message(self.last_source_receipts[-1])
        burn = decode_cctp(sent)
        src_domain = burn.source_domain
        assert src_domain == int(bridge["source_domain"]), (src_domain, bridge)
        bps = self.iris_bps_milli if self.iris_bps_milli is not None else IRIS_FEE_BPS_MILLI[src_domain]
        fee = burn.max_fee if self.fee_at_max else iris_fee(burn.amount, burn.max_fee, bps)
        attested = CctpBurn(
            **{
                **burn.__dict__,
                "nonce": os.urandom(32),
                "finality_executed": burn.min_finality,
                "fee_executed": fee,
                "expiration_block": 10**9 if step.source.chain is not Chain.SOLANA else 0,
            }
        ).encode()
        self.sim.attested[attested] = ATTESTATION
        self.world.iris.publish(src_domain, bridge["source_tx"], [iris_item(attested, ATTESTATION)])

    def oft_delivery_instruction(self) -> Instruction:
        """The LayerZero executor's `lz_receive` of the packet the real EndpointV2 emitted on anvil (PacketSent,
        decoded by the test): the recipient, amount and GUID are the packet's."""
        packet = packet_sent(self.last_source_receipts[-1], self.world.lz["lz_endpoint"])
        self.sim.committed[packet.guid] = packet
        usdg = ASSETS["solana:USDG"]
        metas = [
            AccountMeta(LZ_EXECUTOR.pubkey(), True, True),
            AccountMeta(ata(Pubkey(packet.send_to), usdg), False, True),
            AccountMeta(Pubkey.from_string(str(usdg.address)), False, True),
        ]
        return Instruction(Pubkey.from_string(SIMULATED_OFT_PROGRAM), lz_receive_data(packet), metas)

    def oft_delivery(self, step: Step) -> None:
        sig = self.submit_solana([LZ_EXECUTOR], ixs=[self.oft_delivery_instruction()])
        self.ran("destination", "solana_oft_delivery_simulated")
        self.ids().destination_ids.append(sig)
        self.publish_scan(step, sig)  # the executor delivered it: the service finds it through LayerZero Scan
        self.observe(None)

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
        """The prepared CCTP receive_message on Solana: the caller verifies and signs the action's instructions as
        prepared; it must relay exactly the message and attestation Iris published; the program's effect (the
        message's amount less its feeExecuted minted to its mintRecipient) is SIMULATED in the run's VM."""
        self.wallet_verifies(self.session["current_action"])
        action = self.session["current_action"]["unsigned_action"]
        bridge = self.session["steps"][step.index]["bridge"]
        ixs = [to_instruction(d) for d in action["instructions"]]
        receive = [ix for ix in ixs if str(ix.program_id) == CCTP_MTV2]
        assert len(receive) == 1, "the prepared mint carries one receive_message"
        message, attestation = parse_receive_message(bytes(receive[0].data))
        assert self.sim.attested.get(message) == attestation, (
            "the prepared receive_message relays Iris's message"
        )
        assert "0x" + message.hex() == bridge["message"], "the session's message is Iris's"
        sig = self.submit_solana([self.sol_wallet])
        self.ran("destination", "solana_cctp_mint_simulated")
        self.ids().destination_ids.append(sig)
        self.observe([sig])

    def wallet_verifies(self, bundle: dict[str, Any]) -> None:
        """The caller's verifier (`routequote.verify`, what `routequote verify-action` and the client run), run
        as a wallet would before signing: it must accept every prepared action the suite executes, against the
        caller's own intent, wallets and approval. The one place the suite calls it."""
        extra: dict[str, Any] = {}
        if self.route.event_signer_required:
            extra["event_signer_public"] = str(self.event.pubkey())
        if self.session["current_step"] > 0 and self.session["phase"] == "source":
            extra["session_actual_input_base"] = self.outcomes[-1].measured_output  # what the chain delivered
        findings = verify_bundle(
            bundle,
            intent=intent(self.route_name, self.amount_usd),
            wallets=self.wallets(),
            approval_v3=self.approval_v3,
            direct_route_summary=self.quote["direct_route_summary"],
            now_unix=int(time.time()),
            deployments=self.world.deployments,
            fee_recipients={"evm": FEE_RECIPIENT_EVM, "solana": str(FEE_RECIPIENT_SOLANA)},
            # local chains priced from the embedded snapshot: modelled bounds, accepted explicitly
            accept_modelled_bounds=True,
            **extra,
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
        self.ran("destination", "evm_cctp_mint_standin")
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
                funds, chain = int(self.session["funds"]["amount_base"]), self.outcomes[-1].measured_output
                assert funds == chain, f"{self.route_name} step {k}: funds {funds} != the chain's {chain}"
        assert self.session["status"] == "complete", self.session

    def receipt(self) -> dict[str, Any]:
        rc: dict[str, Any] = self.world.api.read(self.sid, self.token, "receipt")["receipt"]
        return rc
