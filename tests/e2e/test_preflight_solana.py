"""The Solana findings of `preflight` against real account state: a running server (real HTTP) whose Solana RPC
is a JSON-RPC endpoint over a LiteSVM (`_litesvm_rpc`). The wallet's SOL and SPL token accounts, the fee
recipient's token accounts and the mints live in the VM (`_solana_vm.SolanaVm`). Expected `needed`/`has` are
read from the VM in the test: the token account's amount, the wallet's lamports, the VM's rent for a 165-byte
account, and its fee per signature measured by executing a transfer; never from the code under test."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from _litesvm_rpc import LiteSvmRpc
from _solana_vm import SYSTEM_PROGRAM, SolanaVm, ata
from solders.account import Account as SolAccount
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from tests.support.openapi_component import validate_component
from tests.support.server import free_port, running_server
from tests.unit.actions.support import EVENT_SIGNER, START, approval_for, intent_for, wallets_for

from routequote.app import create_app
from routequote.clock import FixedClock
from routequote.config import Settings
from routequote.core.assets import ASSETS
from routequote.core.preflight import SOLANA_TOKEN_ACCOUNT_RENT_LAMPORTS

pytestmark = pytest.mark.chain
USDC = ASSETS["solana:USDC"]
SETTINGS = Settings(rate_limit="off")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[httpx.Client, SolanaVm, LiteSvmRpc]]:
    vm = SolanaVm(fee_owner=Pubkey.from_string(SETTINGS.fee_recipient_solana))
    rpc = LiteSvmRpc(vm.svm)
    tmp: Path = tmp_path_factory.mktemp("pf-solana")
    with rpc.running():
        port = free_port()
        settings = Settings(
            rate_limit="off",
            database_url=f"sqlite+aiosqlite:///{tmp}/s.sqlite3",
            port=port,
            rpc_url_solana=rpc.url,
        )
        app = create_app(settings, clock=FixedClock(START))
        with running_server(app, port) as url, httpx.Client(base_url=url, timeout=30) as http:
            yield http, vm, rpc


def _prepare(http: httpx.Client, route: str, wallet: str) -> dict[str, Any]:
    intent = intent_for(route, 100)
    quote = http.post("/v2/quote", json=intent).json()
    body: dict[str, Any] = {
        "caller_approved": True,
        **intent,
        "wallets": {**wallets_for(route), "solana": wallet},
        "approval_v3": approval_for(quote, key=f"pf-{secrets.token_hex(6)}"),
    }
    if route == "solana:USDC->base:USDC":
        body["event_signer_public"] = EVENT_SIGNER
    r = http.post("/v2/prepare", json=body)
    assert r.status_code == 200, r.text
    out: dict[str, Any] = r.json()
    validate_component(http.get("/v2/openapi.json").json(), "PrepareResponse", out)  # findings as documented
    return out


def _found(bundle: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f"{f['code']}:{f['chain']}": f for f in bundle["preflight"]["findings"]}


def test_the_rent_constant_is_the_chains_rent_for_a_token_account(world: Any) -> None:
    _, vm, _ = world
    assert vm.svm.minimum_balance_for_rent_exemption(165) == SOLANA_TOKEN_ACCOUNT_RENT_LAMPORTS


def test_a_funded_wallet_passes_with_its_usdc_and_the_nodes_fee(world: Any) -> None:
    http, vm, rpc = world
    owner = Keypair().pubkey()
    vm.fund(owner, 10**9, {"solana:USDC": 1_000 * 10**6})
    bundle = _prepare(http, "solana:USDC->base:USDC", str(owner))
    action = bundle["unsigned_action"]
    pf = bundle["preflight"]
    # computed wherever an RPC URL is set, whatever the market: this server prices from the embedded snapshot
    assert http.get("/v2/capabilities").json()["action_bounds"]["bounds"] == "modelled"
    assert pf["checked"] is True and pf["ok"] is True, pf
    found = _found(bundle)
    held = vm.token_amount(ata(owner, USDC))
    assert held == 1_000 * 10**6
    balance = found["input_balance:solana"]
    assert balance["needed"] == action["inputAmount"] and balance["has"] == str(held)
    assert not balance["blocking"]
    sol = found["solana_rent_and_fees:solana"]
    # no account to create (the fee recipient's USDC account exists); the burn's fee: one fee per signature
    assert sol["needed"] == str(rpc.per_signature * len(action["requiredSigners"])) == "10000"
    assert sol["has"] == str(vm.lamports(owner)) and not sol["blocking"] and sol["estimate"] is False
    assert (
        "the node's fee for its message" in sol["message"]
        and "not counted: the rent of the message" in sol["message"]
    )
    assert "getFeeForMessage" in [method for method, _ in rpc.calls]
    # Base has no RPC URL on this server: its gas is unknown, said so, and does not block
    assert (
        found["unknown:base"]["blocking"] is False
        and "no RPC URL for base" in found["unknown:base"]["message"]
    )


def test_an_empty_wallet_gets_exact_needed_and_has(world: Any) -> None:
    http, _, rpc = world
    owner = str(Keypair().pubkey())
    bundle = _prepare(http, "solana:USDC->base:USDC", owner)
    action = bundle["unsigned_action"]
    assert bundle["preflight"]["ok"] is False
    found = _found(bundle)
    balance = found["input_balance:solana"]
    assert (balance["needed"], balance["has"], balance["blocking"]) == (action["inputAmount"], "0", True)
    assert (
        f"you need {action['inputAmount']} base units of USDC on solana for step 1; you have 0"
        in (balance["message"])
    )
    sol = found["solana_rent_and_fees:solana"]
    assert (sol["needed"], sol["has"], sol["blocking"]) == (str(2 * rpc.per_signature), "0", True)


def test_missing_token_accounts_and_too_little_sol_for_their_rent(world: Any) -> None:
    """SOL -> USDC on Solana: the swap creates the wallet's wrapped-SOL and USDC accounts, neither of which
    exists, and the wallet holds its input plus 1,000,000 lamports: short of two accounts' rent and the fee.
    Once the USDC account exists, one rent less is needed."""
    http, vm, rpc = world
    owner = Keypair().pubkey()
    route = "solana:SOL->solana:USDC"
    spend = int(_prepare(http, route, str(owner))["unsigned_action"]["inputAmount"])
    vm.svm.airdrop(owner, spend + 1_000_000)
    bundle = _prepare(http, route, str(owner))
    action = bundle["unsigned_action"]
    assert int(action["inputAmount"]) == spend
    wsol, usdc = ata(owner, ASSETS["solana:SOL"]), ata(owner, USDC)
    assert vm.account(wsol) is None and vm.account(usdc) is None
    rent = vm.svm.minimum_balance_for_rent_exemption(165)
    fee = rpc.per_signature * len(action["requiredSigners"])
    sol = _found(bundle)["solana_rent_and_fees:solana"]
    assert sol["needed"] == str(2 * rent + fee) and sol["has"] == str(vm.lamports(owner) - spend) == "1000000"
    assert sol["blocking"] and bundle["preflight"]["ok"] is False
    assert str(wsol) in sol["message"] and str(usdc) in sol["message"]
    assert not _found(bundle)["input_balance:solana"]["blocking"]  # the SOL input itself is there

    vm.token_account(usdc, USDC, owner, 0)
    again = _found(_prepare(http, route, str(owner)))["solana_rent_and_fees:solana"]
    assert again["needed"] == str(rent + fee) and str(usdc) not in again["message"]

    vm.svm.airdrop(owner, rent + fee - 1_000_000)  # now it covers exactly the one account and the fee
    enough = _prepare(http, route, str(owner))
    sol = _found(enough)["solana_rent_and_fees:solana"]
    assert sol["has"] == sol["needed"] == str(rent + fee) and not sol["blocking"]
    assert enough["preflight"]["ok"] is True, enough["preflight"]


def test_the_fee_recipients_missing_account_is_rent_the_caller_pays(world: Any) -> None:
    """The fee step creates the fee recipient's token account when it is missing, paid by the caller."""
    http, vm, rpc = world
    fee_account = ata(vm.fee_owner, USDC)
    kept = vm.svm.get_account(fee_account)
    assert kept is not None
    vm.svm.set_account(fee_account, SolAccount(0, b"", Pubkey.from_string(SYSTEM_PROGRAM), False, 0))
    try:
        owner = Keypair().pubkey()
        vm.fund(owner, 10**9, {"solana:USDC": 1_000 * 10**6})
        bundle = _prepare(http, "solana:USDC->base:USDC", str(owner))
    finally:
        vm.svm.set_account(fee_account, kept)
    action = bundle["unsigned_action"]
    assert action["feeRecipientTokenAccount"] == str(fee_account)
    sol = _found(bundle)["solana_rent_and_fees:solana"]
    rent = vm.svm.minimum_balance_for_rent_exemption(165)
    assert sol["needed"] == str(rent + rpc.per_signature * len(action["requiredSigners"]))
    assert f"fee recipient's account {fee_account} (step 1)" in sol["message"] and not sol["blocking"]
