"""The `preflight` block of POST /v2/prepare against real local chains (anvil 8453 as Base, 42161 as Arbitrum),
read by the production `JsonRpcEvmState`: an empty wallet, enough input but no gas on the destination chain, an
expiring quote, and a wallet that has everything (`ok: true`). Expected `needed`/`has` are computed from the
chain in the test (balances, eth_gasPrice, eth_estimateGas), not by the code under test. Advice only: the
bundle's payload hash is the same with the block as without it.

With `RQ_PREFLIGHT_SAMPLES=<dir>` set, the issue's two routes (`solana:SOL->base:ETH`,
`robinhood:ETH->arbitrum:ETH`) write the `preflight` block they got to `<dir>/<route>.json` (a sample for a
closing note; the assertions are the same either way)."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from _evm import AnvilChain
from _evm import deploy_all as _deploy_all
from _litesvm_rpc import LiteSvmRpc
from _solana_vm import SolanaVm
from eth_account import Account
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from test_prepare_anvil import _deployments
from tests.support.loopback import json_server
from tests.unit.actions.support import EVENT_SIGNER, SOLANA_WALLET, approval_for, intent_for, make_env

from routequote.config import Settings
from routequote.core.actions.bundle import payload_sha256
from routequote.core.actions.common import associated_token_address
from routequote.core.assets import ASSETS, Chain
from routequote.core.preflight import (
    EVM_GAS_BUDGET,
    FIRST_SIGNATURE_SECONDS,
    FURTHER_TRANSACTION_SECONDS,
    SOLANA_ACTION_FEE_BUDGET_LAMPORTS,
)
from routequote.core.routes import ROUTES
from routequote.observe.evm import JsonRpcEvmReader
from routequote.observe.evm_state import JsonRpcEvmState
from routequote.observe.solana import JsonRpcSolanaReader
from routequote.preflight import NO_CHAIN_ACCESS, PreflightChecker

pytestmark = pytest.mark.chain
SYSTEM = "11111111111111111111111111111111"


@pytest.fixture(scope="module")
def chains(anvil_factory: Callable[[int], AnvilChain]) -> tuple[AnvilChain, AnvilChain]:
    base, arbitrum = anvil_factory(8453), anvil_factory(42161)
    _deploy_all(base)
    return base, arbitrum


def _wallet(chain: AnvilChain, eth: int = 0, usdc: int = 0) -> str:
    who = str(Account.create().address)
    if eth:
        chain.send(who, "0x", value=eth)
    if usdc:
        chain.transact(chain.addresses["token6"], "mint(address,uint256)", who, usdc)
    return who


def _prepare(
    chains: tuple[AnvilChain, AnvilChain],
    route: str,
    wallets: dict[str, str],
    wait_seconds: float = 0,
    solana_url: str | None = None,
    robinhood: AnvilChain | None = None,
) -> dict[str, Any]:
    """POST /v2/prepare's service with a preflight over the chains' RPCs: Base's deployment (anvil 8453), and
    Robinhood's (anvil 4663) where `robinhood` is given."""
    base, arbitrum = chains
    source = robinhood or base
    block = source.rpc.call("eth_getBlockByNumber", "latest", False)
    deployments = _deployments(base.addresses, Chain.BASE)
    urls = {"base": base.url, "arbitrum": arbitrum.url}
    if robinhood is not None:
        deployments |= _deployments(robinhood.addresses, Chain.ROBINHOOD)
        urls["robinhood"] = robinhood.url
    env = make_env(deployments, start=datetime.fromtimestamp(int(block["timestamp"], 16), UTC))

    async def run() -> dict[str, Any]:
        async with httpx.AsyncClient() as client:
            env.prepare.preflight = PreflightChecker(
                enabled=True,
                reason="",
                evm=JsonRpcEvmState(JsonRpcEvmReader(urls, client)),
                solana=JsonRpcSolanaReader(solana_url, client),
                token_address=env.prepare.token_address,
            )
            intent = intent_for(route, 100)
            quote = await env.service.quote_request(intent)
            env.clock.advance(wait_seconds)
            body = {"caller_approved": True, **intent, "wallets": wallets, "approval_v3": approval_for(quote)}
            if ROUTES[route].event_signer_required:
                body["event_signer_public"] = EVENT_SIGNER
            out: dict[str, Any] = await env.prepare.prepare(body, mode=approval_for(quote)["selected_mode"])
            return out

    return asyncio.run(run())


def _check(
    chains: tuple[AnvilChain, AnvilChain], route: str, wallets: dict[str, str], bundle: dict[str, Any]
) -> dict[str, Any]:
    """The preflight of `bundle` (as given, not rebuilt) over the chains' RPCs."""
    base, arbitrum = chains

    async def run() -> dict[str, Any]:
        async with httpx.AsyncClient() as client:
            env = make_env(_deployments(base.addresses, Chain.BASE))
            reader = JsonRpcEvmReader({"base": base.url, "arbitrum": arbitrum.url}, client)
            checker = PreflightChecker(
                enabled=True, reason="", evm=JsonRpcEvmState(reader), token_address=env.prepare.token_address
            )
            return await checker.check(ROUTES[route], wallets, bundle, env.clock.now())

    return asyncio.run(run())


def _sample(route: str, bundle: dict[str, Any]) -> None:
    """Write the block to RQ_PREFLIGHT_SAMPLES (see the module docstring); nothing without it."""
    where = os.environ.get("RQ_PREFLIGHT_SAMPLES")
    if where:
        name = route.replace(":", "_").replace("->", "__") + ".json"
        (Path(where) / name).write_text(json.dumps(bundle["preflight"], indent=2) + "\n")


def _by_code(bundle: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f"{f['code']}:{f['chain']}": f for f in bundle["preflight"]["findings"]}


def _gas_price(chain: AnvilChain) -> int:
    return int(chain.rpc.call("eth_gasPrice"), 16)


def _estimate(chain: AnvilChain, tx: dict[str, Any]) -> int:
    call = {"from": tx["from"], "to": tx["to"], "data": tx["data"], "value": hex(int(tx["value"]))}
    return int(chain.rpc.call("eth_estimateGas", call), 16)


def _budget(tx: dict[str, Any]) -> int:
    """The documented budget of one transaction of the first action (an approval, else a swap's)."""
    return EVM_GAS_BUDGET["erc20_approve" if tx["data"].startswith("0x095ea7b3") else "uniswap_v3_swap"]


def test_an_empty_wallet_is_told_what_input_and_gas_it_needs(chains: Any) -> None:
    base, _ = chains
    who = _wallet(base)
    bundle = _prepare(chains, "base:USDC->base:ETH", {"base": who})
    pf = bundle["preflight"]
    assert pf["checked"] is True and pf["ok"] is False and pf["advice_only"] is True
    found = _by_code(bundle)
    action = bundle["unsigned_action"]
    assert found["input_balance:base"]["needed"] == str(int(action["inputAmount"]))
    assert found["input_balance:base"]["has"] == "0" and found["input_balance:base"]["blocking"]
    gas = found["gas:base"]
    txs = action["transactions"]
    # the node will not estimate an empty wallet's first transaction: each takes its budget, said to be an estimate
    units = sum(_budget(tx) for tx in txs)
    assert gas["needed"] == str(units * _gas_price(base)) and gas["has"] == "0" and gas["blocking"]
    assert gas["estimate"] and "an estimate" in gas["message"]
    assert gas["message"].startswith("you need about") and "on base for step 1; you have 0" in gas["message"]
    # advice only: outside the payload hash, the action unchanged
    assert bundle["payload_sha256"] == payload_sha256(bundle)
    assert "preflight" not in action and "preflight" not in action["safety_receipt"]


def test_input_but_no_gas_on_the_destination_chain(chains: Any) -> None:
    base, arbitrum = chains
    who = _wallet(base, eth=10**18, usdc=1_000 * 10**6)
    bundle = _prepare(chains, "base:USDC->arbitrum:ETH", {"base": who, "arbitrum": who})
    found = _by_code(bundle)
    assert bundle["preflight"]["ok"] is False
    assert not found["input_balance:base"]["blocking"] and not found["gas:base"]["blocking"]
    dest = found["gas:arbitrum"]
    units = EVM_GAS_BUDGET["cctp_receive_message"] + EVM_GAS_BUDGET["uniswap_v3_swap"]
    assert dest["needed"] == str(units * _gas_price(arbitrum)) and dest["has"] == "0"
    assert dest["blocking"] and dest["estimate"] and dest["step_index"] == 0
    assert "on arbitrum for steps 1-2; you have 0" in dest["message"]
    assert "an estimate" in dest["message"]


def test_an_expiring_quote_is_a_blocking_time_finding(chains: Any) -> None:
    base, _ = chains
    who = _wallet(base, eth=10**18, usdc=1_000 * 10**6)
    bundle = _prepare(
        chains, "base:USDC->base:ETH", {"base": who}, wait_seconds=44
    )  # 16 s left of a 60 s quote (prepare needs 15)
    time_left = _by_code(bundle)["time_left:base"]
    expiry = bundle["unsigned_action"]["safety_receipt"]["timing"]["quote_expiry_unix"]
    prepared = bundle["unsigned_action"]["safety_receipt"]["timing"]["prepared_at_unix"]
    assert time_left["has"] == str(expiry - prepared) == "16"
    txs = len(bundle["unsigned_action"]["transactions"])
    assert time_left["needed"] == str(FIRST_SIGNATURE_SECONDS + (txs - 1) * FURTHER_TRANSACTION_SECONDS)
    assert time_left["blocking"] and bundle["preflight"]["ok"] is False


def test_a_wallet_that_has_everything_is_ok(chains: Any) -> None:
    base, arbitrum = chains
    who = _wallet(base, eth=10**18, usdc=1_000 * 10**6)
    arbitrum.send(who, "0x", value=10**17)
    bundle = _prepare(chains, "base:USDC->arbitrum:ETH", {"base": who, "arbitrum": who})
    pf = bundle["preflight"]
    assert pf["checked"] is True and pf["ok"] is True, pf
    found = _by_code(bundle)
    assert found["gas:arbitrum"]["has"] == str(10**17)
    txs = bundle["unsigned_action"][
        "transactions"
    ]  # the approval is estimated by the node, the burn budgeted
    units = _estimate(base, txs[0]) + sum(_budget(tx) for tx in txs[1:])
    assert found["gas:base"]["needed"] == str(units * _gas_price(base))
    assert found["input_balance:base"]["has"] == str(1_000 * 10**6)


def test_a_missing_solana_token_account_with_too_little_sol_for_rent(chains: Any) -> None:
    """USDC from Base to Solana over CCTP: the caller's USDC account on Solana does not exist (the fake RPC has
    no such account) and the wallet holds 1,000,000 lamports: short of one account's rent plus the mint's fee."""
    base, _ = chains
    who = _wallet(base, eth=10**18, usdc=1_000 * 10**6)
    seen: list[str] = []

    def answer(method: str, path: str, body: bytes) -> tuple[int, Any]:
        request = json.loads(body)
        address = request["params"][0]
        seen.append(address)
        value = None
        if address == SOLANA_WALLET:
            value = {"owner": SYSTEM, "executable": False, "lamports": 1_000_000, "data": ["", "base64"]}
        result = {"context": {"slot": 1}, "value": value}
        return 200, {"jsonrpc": "2.0", "id": request["id"], "result": result}

    with json_server(answer) as url:
        bundle = _prepare(
            chains, "base:USDC->solana:USDC", {"base": who, "solana": SOLANA_WALLET}, solana_url=url
        )
    rent = _by_code(bundle)["solana_rent_and_fees:solana"]
    ata = str(associated_token_address(SOLANA_WALLET, ASSETS["solana:USDC"]))
    assert seen == [SOLANA_WALLET, ata]
    assert rent["needed"] == str(2_039_280 + 100_000) and rent["has"] == "1000000"  # one account, one mint
    assert rent["blocking"] and ata in rent["message"] and bundle["preflight"]["ok"] is False


def test_without_chain_access_nothing_is_read(chains: Any) -> None:
    class Refuse:
        def __getattr__(self, name: str) -> Any:  # pragma: no cover - must not be reached
            raise AssertionError(f"no chain call without chain access ({name})")

    base, _ = chains
    env = make_env(_deployments(base.addresses, Chain.BASE))
    env.prepare.preflight = PreflightChecker(
        enabled=False, reason=NO_CHAIN_ACCESS, evm=Refuse(), solana=Refuse()
    )
    intent = intent_for("base:USDC->base:ETH", 100)

    async def run() -> dict[str, Any]:
        quote = await env.service.quote_request(intent)
        body = {
            "caller_approved": True,
            **intent,
            "wallets": {"base": _wallet(base)},
            "approval_v3": approval_for(quote),
        }
        out: dict[str, Any] = await env.prepare.prepare(body, mode="one_shot")
        return out

    bundle = asyncio.run(run())
    assert bundle["preflight"] == {
        "checked": False,
        "ok": None,
        "advice_only": True,
        "reason": NO_CHAIN_ACCESS,
        "findings": [],
    }


def test_solana_sol_to_base_eth_on_litesvm_and_anvil(chains: Any) -> None:
    """The issue's route: SOL on Solana (a LiteSVM behind a JSON-RPC endpoint), nothing on Base (anvil). The
    SOL covers the input, both new token accounts and the fees; Base has no ETH for the mint and the swap."""
    base, _ = chains
    vm = SolanaVm(fee_owner=Pubkey.from_string(Settings().fee_recipient_solana))
    owner = Keypair().pubkey()
    vm.svm.airdrop(owner, 2 * 10**9)
    evm = _wallet(base)
    with LiteSvmRpc(vm.svm).running() as rpc:
        bundle = _prepare(
            chains, "solana:SOL->base:ETH", {"solana": str(owner), "base": evm}, solana_url=rpc.url
        )
    action = bundle["unsigned_action"]
    found = _by_code(bundle)
    spend = int(action["inputAmount"])
    assert (
        found["input_balance:solana"]["has"] == str(2 * 10**9)
        and not found["input_balance:solana"]["blocking"]
    )
    rent = vm.svm.minimum_balance_for_rent_exemption(165)
    sol = found["solana_rent_and_fees:solana"]
    # the wSOL and USDC accounts, this swap's fee from the node, the burn's budget
    assert sol["needed"] == str(2 * rent + rpc.per_signature + SOLANA_ACTION_FEE_BUDGET_LAMPORTS)
    assert sol["has"] == str(2 * 10**9 - spend) and not sol["blocking"] and sol["estimate"] is True
    gas = found["gas:base"]
    units = EVM_GAS_BUDGET["cctp_receive_message"] + EVM_GAS_BUDGET["uniswap_v3_swap"]
    assert gas["needed"] == str(units * _gas_price(base)) and gas["has"] == "0" and gas["blocking"]
    assert "on base for steps 2-3; you have 0" in gas["message"] and gas["estimate"]
    assert bundle["preflight"]["ok"] is False
    assert "wSOL account" in sol["message"] and "USDC account" in sol["message"]
    _sample("solana:SOL->base:ETH", bundle)


def test_robinhood_eth_to_arbitrum_eth_on_anvil_and_litesvm(chains: Any, anvil_factory: Any) -> None:
    """The OFT route out of Robinhood: ETH on Robinhood (anvil 4663), nothing on Solana (a LiteSVM) or Arbitrum.
    The swap and the OFT send on Robinhood are covered; Solana needs the rent of the USDG account the OFT
    delivers to and of the USDC account the swap creates, and the fees of its two actions; Arbitrum needs gas
    for the CCTP mint and the swap (steps 4-5)."""
    base, arbitrum = chains
    robinhood = anvil_factory(4663)
    _deploy_all(robinhood)
    route = "robinhood:ETH->arbitrum:ETH"
    # the route this test's arithmetic is about: swap and OFT on Robinhood, swap and CCTP burn on Solana, the
    # mint (the caller's) and a swap on Arbitrum
    assert [(s.source.key, s.target.key) for s in ROUTES[route].steps] == [
        ("robinhood:ETH", "robinhood:USDG"),
        ("robinhood:USDG", "solana:USDG"),
        ("solana:USDG", "solana:USDC"),
        ("solana:USDC", "arbitrum:USDC"),
        ("arbitrum:USDC", "arbitrum:ETH"),
    ]
    vm = SolanaVm(fee_owner=Pubkey.from_string(Settings().fee_recipient_solana))
    owner = Keypair().pubkey()
    who = _wallet(robinhood, eth=10**18)
    with LiteSvmRpc(vm.svm).running() as rpc:
        bundle = _prepare(
            chains,
            route,
            {"robinhood": who, "solana": str(owner), "arbitrum": who},
            solana_url=rpc.url,
            robinhood=robinhood,
        )
    _sample(route, bundle)
    action = bundle["unsigned_action"]
    found = _by_code(bundle)
    assert set(found) == {
        "input_balance:robinhood",
        "gas:robinhood",
        "solana_rent_and_fees:solana",
        "gas:arbitrum",
        "time_left:robinhood",
    }
    spend = int(action["inputAmount"])
    assert (
        found["input_balance:robinhood"]["has"] == str(10**18)
        and not found["input_balance:robinhood"]["blocking"]
    )
    txs = action["transactions"]
    sent = sum(int(tx["value"]) for tx in txs)
    assert sent == spend
    # this action estimated by the node (and its further transactions budgeted), the OFT send's budget
    units = _estimate(robinhood, txs[0]) + sum(_budget(tx) for tx in txs[1:]) + EVM_GAS_BUDGET["oft_send"]
    gas = found["gas:robinhood"]
    assert gas["needed"] == str(units * _gas_price(robinhood)) and gas["has"] == str(10**18 - sent)
    assert not gas["blocking"] and gas["estimate"] and "on robinhood for steps 1-2" in gas["message"]
    rent = vm.svm.minimum_balance_for_rent_exemption(165)
    sol = found["solana_rent_and_fees:solana"]
    assert sol["needed"] == str(2 * rent + 2 * SOLANA_ACTION_FEE_BUDGET_LAMPORTS) and sol["has"] == "0"
    assert sol["blocking"] and sol["estimate"] and sol["step_index"] == 1
    usdg = associated_token_address(str(owner), ASSETS["solana:USDG"])
    usdc = associated_token_address(str(owner), ASSETS["solana:USDC"])
    assert f"USDG account {usdg} (step 2)" in sol["message"]
    assert f"USDC account {usdc} (step 3)" in sol["message"]
    dest = found["gas:arbitrum"]
    units = EVM_GAS_BUDGET["cctp_receive_message"] + EVM_GAS_BUDGET["uniswap_v3_swap"]
    assert dest["needed"] == str(units * _gas_price(arbitrum)) and dest["has"] == "0"
    assert dest["blocking"] and dest["step_index"] == 3
    assert "on arbitrum for steps 4-5; you have 0" in dest["message"]
    assert bundle["preflight"]["ok"] is False and not found["time_left:robinhood"]["blocking"]


def test_an_action_that_relies_on_an_allowance_is_checked_against_it(chains: Any) -> None:
    """Every prepared ERC-20 action approves its own spender, so no allowance is read for it. An action
    without its approval (the case the allowance finding is for) is checked against the chain's allowance:
    0, then exactly the net input the spender pulls once the wallet approves it."""
    base, _ = chains
    who = _wallet(base, eth=10**18, usdc=1_000 * 10**6)
    route = "base:USDC->base:ETH"
    bundle = _prepare(chains, route, {"base": who})
    assert "input_allowance:base" not in _by_code(bundle)  # it approves its own spender
    action = bundle["unsigned_action"]
    relying = {
        **bundle,
        "unsigned_action": {
            **action,
            "transactions": [tx for tx in action["transactions"] if not tx["data"].startswith("0x095ea7b3")],
        },
    }
    spender = relying["unsigned_action"]["transactions"][-1]["to"]
    pulled = int(action["netInputAmount"])
    found = {f["code"]: f for f in _check(chains, route, {"base": who}, relying)["findings"]}
    allowance = found["input_allowance"]
    assert (allowance["needed"], allowance["has"], allowance["blocking"]) == (str(pulled), "0", True)
    assert spender in allowance["message"]
    base.rpc.call("anvil_impersonateAccount", who)
    base.transact(base.addresses["token6"], "approve(address,uint256)", spender, pulled, sender=who)
    found = {f["code"]: f for f in _check(chains, route, {"base": who}, relying)["findings"]}
    allowance = found["input_allowance"]
    assert (allowance["has"], allowance["blocking"]) == (str(pulled), False)
