"""One whole session for `solana:USDC->base:USDC` (one circle_cctp step): the burn on Solana, Circle's
attestation, the mint on base. Real HTTP (uvicorn, the real composition root, SQLite store); the production
observers read a fake Solana JSON-RPC (loopback), a fake Circle Iris (loopback, `_sessions.FakeIris`) and
anvil (chain id 8453). The Solana side and Circle's part below are built by `_solana_session.py`.

Solana side. The wallet (a solders Keypair) and the MessageSent event account (a fresh Keypair: its public key
is `event_signer_public`) sign the prepared instructions; the test signs, never the service. The transaction
runs in LiteSVM (solders 0.29) as far as LiteSVM can run it: the USDC mint (6 decimals, SPL Token) and the
wallet's funded token account are set up, and the fee recipient's associated token account creation and the
fee `TransferChecked` execute for real. **Circle's CCTP v2 programs are not available to LiteSVM** (no package
carries their `.so`; the full signed transaction fails in LiteSVM for that reason, which the test checks), so
the transaction runs without its `deposit_for_burn` instruction, and the `getTransaction` answer of the FULL
signed transaction is produced in the RPC's JSON wire format from what LiteSVM did, plus the burn's effect:
the burned amount (the instruction's) leaves the wallet's token account, the second signature's fee and the
MessageSent account's rent leave the wallet. CCTP accounts LiteSVM does not hold carry placeholder lamports
that do not move; `innerInstructions` is left empty (the production reader does not use it); the logs are
LiteSVM's, then the burn's. The answer for the session below is deterministic (fixed keys, LiteSVM's
deterministic blockhash) and committed as `tests/recordings/observe/solana_session_cctp_burn.json`; the test
compares what it produced with it (regenerate: `ROUTEQUOTE_UPDATE_RECORDINGS=1`).

Base side. Circle is played by the test: Iris answers 404 first, then `complete` with a CCTP v2 message
consistent with the burn (encoded by `encode_cctp_burn_message`), which the CCTP v2 stand-ins of `standins/`
(compiled at test time) accept: a STAND-IN MessageTransmitterV2 / TokenMessengerV2, not Circle's contracts.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from _bridge_wire import parse_deposit_for_burn
from _evm import AnvilChain, ToolchainUnavailable, balance_of, sign_and_send
from _sessions import (
    SESSION_HEADER,
    FakeIris,
    SessionApi,
    approval,
    b32,
    compile_standins,
    intent,
    new_key,
    new_token,
)
from _solana_session import (
    ATTESTATION,
    BASE_DOMAIN,
    BLOCK_TIME,
    CCTP_TMM,
    GOLDEN_BASE_KEY,
    GOLDEN_EVENT,
    GOLDEN_WALLET,
    SOLANA_DOMAIN,
    START_USDC,
    USDC_MINT,
    FakeSolanaRpc,
    attested_message,
    iris_solana_item,
    solana_burn,
)
from eth_abi import encode
from eth_account import Account
from eth_utils import to_checksum_address
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from tests.support.server import free_port, running_server

from routequote.app import create_app
from routequote.config import Settings
from routequote.core.actions.evm import DEFAULT_DEPLOYMENTS
from routequote.core.assets import Chain

ROUTE = "solana:USDC->base:USDC"
GOLDEN = Path(__file__).resolve().parents[1] / "recordings" / "observe" / "solana_session_cctp_burn.json"
UPDATE_ENV = "ROUTEQUOTE_UPDATE_RECORDINGS"


# ---- the environment ---------------------------------------------------------------------------------------


@dataclass
class Env:
    api: SessionApi
    chain: AnvilChain
    rpc: FakeSolanaRpc
    iris: FakeIris
    usdc: str
    messenger: str
    transmitter: str


@pytest.fixture(scope="module")
def env(
    anvil_factory: Callable[[int], AnvilChain], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Env]:
    chain = anvil_factory(8453)
    try:
        standins = compile_standins()
    except ToolchainUnavailable as e:
        pytest.skip(f"solc-js unavailable: {e}")

    def deploy(name: str, types: list[str], *args: Any) -> str:
        art = standins[name]
        receipt = chain.send(None, art["bytecode"] + (encode(types, list(args)).hex() if types else ""))
        return str(to_checksum_address(receipt["contractAddress"]))

    # this module's own local USDC and CCTP v2 stand-ins on base, knowing Solana's TokenMessengerMinterV2 (5)
    usdc = chain.deploy(
        "MintableERC20", ["string", "string", "uint8"], "USD Coin (test, solana session)", "USDC", 6
    )
    transmitter = deploy("MessageTransmitterV2StandIn", ["uint32"], BASE_DOMAIN)
    messenger = deploy("TokenMessengerV2StandIn", ["address"], transmitter)
    chain.transact(
        messenger,
        "addRemoteTokenMessenger(uint32,bytes32)",
        SOLANA_DOMAIN,
        bytes(Pubkey.from_string(CCTP_TMM)),
    )
    chain.transact(
        messenger,
        "linkTokenPair(address,uint32,bytes32)",
        usdc,
        SOLANA_DOMAIN,
        bytes(Pubkey.from_string(USDC_MINT)),
    )
    chain.transact(usdc, "addMinter(address)", messenger)
    base = DEFAULT_DEPLOYMENTS[Chain.BASE]
    deployments = {
        Chain.BASE: base.with_overrides(
            message_transmitter_v2=transmitter,
            token_messenger_v2=messenger,
            tokens={**base.tokens, "USDC": usdc},
        )
    }
    db = tmp_path_factory.mktemp("solana-sessions") / "s.sqlite3"
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
        with running_server(create_app(settings, deployments=deployments), port) as url:
            api = SessionApi(url)
            try:
                yield Env(api, chain, rpc, iris, usdc, messenger, transmitter)
            finally:
                api.close()


@dataclass
class Started:
    sid: str
    token: str
    session: dict[str, Any]
    action: dict[str, Any]
    quote: dict[str, Any]
    base_wallet: str


def start_session(env: Env, wallet: Keypair, event: Keypair, base_key: str) -> Started:
    base_wallet = str(Account.from_key(base_key).address)
    token, key = new_token(), new_key("create")
    q = env.api.quote(ROUTE, 100)
    body = {
        "caller_approved": True,
        **intent(ROUTE, 100),
        "wallets": {"solana": str(wallet.pubkey()), "base": base_wallet},
        "event_signer_public": str(event.pubkey()),
        "approval_v3": approval(q, key),
        "idempotency_key": key,
    }
    r = env.api.http.post("/v2/session", json=body, headers={SESSION_HEADER: token})
    assert r.status_code == 201, r.text
    s = r.json()
    assert (
        s["status"] == "action_ready"
        and s["step_count"] == 1
        and s["current_action"]["unsigned_action"]["family"] == "solana"
    )
    action = s["current_action"]["unsigned_action"]
    assert action["feePayer"] == str(wallet.pubkey()) and str(event.pubkey()) in action["requiredSigners"]
    return Started(s["session_id"], token, s, action, q, base_wallet)


def observe(env: Env, st: Started, hashes: list[str] | None) -> Any:
    return env.api.observe(st.sid, st.token, hashes)


def refused(env: Env, st: Started, hashes: list[str], reason: str) -> None:
    """The observation is refused with `reason` and the session does not move (status, version, step)."""
    before = env.api.read(st.sid, st.token)
    r = observe(env, st, hashes)
    assert r.status_code == 400 and r.json()["reason_class"] == reason, r.text
    after = env.api.read(st.sid, st.token)
    for k in ("status", "session_version", "current_step", "phase", "steps", "funds"):
        assert after[k] == before[k], k


# ---- the tests ---------------------------------------------------------------------------------------------


def test_whole_session_solana_usdc_to_base_usdc(env: Env) -> None:
    st = start_session(env, GOLDEN_WALLET, GOLDEN_EVENT, GOLDEN_BASE_KEY)
    action = st.action
    burn_ix = action["instructions"][-1]
    f = parse_deposit_for_burn(base64.b64decode(burn_ix["data"]))
    route_fee, net = int(action["routeFee"]), int(action["netInputAmount"])
    assert f["amount"] == net and int(action["inputAmount"]) == route_fee + net
    assert f["domain"] == BASE_DOMAIN and f["mint_recipient"] == b32(st.base_wallet)

    burn = solana_burn(action, GOLDEN_WALLET, GOLDEN_EVENT)
    assert burn.burned == net and burn.fee_paid == route_fee
    assert burn.wallet_usdc_after == START_USDC - route_fee - net
    doc = {
        "route": ROUTE,
        "note": "produced by tests/e2e/test_sessions_solana.py (see its docstring)",
        "signature": burn.signature,
        "instructions": action["instructions"],
        "response": {"jsonrpc": "2.0", "id": 1, "result": burn.result},
    }
    if os.environ.get(UPDATE_ENV) == "1":
        GOLDEN.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    assert GOLDEN.exists(), f"no {GOLDEN.name}: generate it with {UPDATE_ENV}=1 and review it"
    assert json.loads(GOLDEN.read_text()) == json.loads(json.dumps(doc)), (
        f"the getTransaction answer drifted from {GOLDEN.name}: regenerate with {UPDATE_ENV}=1 and review"
    )

    # submitted, not finalized yet: the RPC answers null -> awaiting the source receipt
    r = observe(env, st, [burn.signature])
    assert r.status_code == 200 and r.json()["status"] == "awaiting_source_receipt", r.text
    assert (
        "getTransaction",
        [
            burn.signature,
            {"commitment": "finalized", "encoding": "json", "maxSupportedTransactionVersion": 0},
        ],
    ) in env.rpc.calls
    env.rpc.publish(burn.result)
    r = observe(env, st, [burn.signature])
    assert r.status_code == 200, r.text
    s = r.json()
    assert (
        s["status"] == "awaiting_destination"
        and s["next_operation"] == "observe"
        and s["current_action"] is None
    )
    bridge = s["steps"][0]["bridge"]
    assert (
        bridge["kind"] == "cctp"
        and bridge["source_domain"] == SOLANA_DOMAIN
        and bridge["source_tx"] == burn.signature
    )
    assert bridge["burn_amount"] == net and bridge["destination_domain"] == BASE_DOMAIN
    assert s["funds"]["state"] == "in_flight" and s["funds"]["endpoint"] == "base:USDC"

    # Iris has not indexed the burn: 404 -> still awaiting the destination
    r = observe(env, st, None)
    assert r.status_code == 200 and r.json()["status"] == "awaiting_destination", r.text
    assert r.json()["steps"][0]["destination_status"] == "awaiting_attestation"
    assert any(
        p.startswith(f"/v2/messages/{SOLANA_DOMAIN}?") and burn.signature in p for p in env.iris.requests
    )

    # Circle attests: the message of this burn, the fast-transfer fee executed within maxFee
    expected_out = int(st.quote["direct_route_summary"]["steps"][0]["expected_output_base"])
    fee_executed = max(0, min(f["max_fee"], net - expected_out))
    message = attested_message(
        burn_ix,
        str(GOLDEN_WALLET.pubkey()),
        env.messenger,
        nonce=hashlib.sha256(b"solana session nonce").digest(),
        fee_executed=fee_executed,
    )
    env.iris.publish(SOLANA_DOMAIN, burn.signature, [iris_solana_item(message, ATTESTATION, env.messenger)])
    r = observe(env, st, None)
    assert r.status_code == 200, r.text
    s = r.json()
    assert s["status"] == "action_ready" and s["phase"] == "destination", s
    mint_action = s["current_action"]["unsigned_action"]
    assert mint_action["kinds"] == ["cctp_receive_message"] and len(mint_action["transactions"]) == 1
    tx = mint_action["transactions"][0]
    assert (
        tx["to"].lower() == env.transmitter.lower() and tx["from"] == st.base_wallet and tx["chainId"] == 8453
    )

    # the caller signs and sends the receiveMessage on base (anvil) with its own key
    env.chain.send(st.base_wallet, "0x", value=10**18)  # gas money
    before = balance_of(env.chain, env.usdc, st.base_wallet)
    (receipt,) = sign_and_send(env.chain, GOLDEN_BASE_KEY, [tx])
    minted = balance_of(env.chain, env.usdc, st.base_wallet) - before
    assert minted == net - fee_executed
    r = observe(env, st, [receipt["transactionHash"]])
    assert r.status_code == 200, r.text
    s = r.json()
    assert s["status"] == "complete" and s["next_operation"] == "none"
    assert s["funds"]["state"] == "delivered" and int(s["funds"]["amount_base"]) == minted

    rec = env.api.read(st.sid, st.token, "receipt")["receipt"]
    step = rec["steps"][0]
    assert int(step["actual"]["output_base"]) == minted
    assert int(step["actual"]["input_base"]) == route_fee + net
    assert int(step["actual"]["service_fee_paid_base"]) == route_fee
    assert step["actual"]["network_fee"] == {"lamports": str(burn.result["meta"]["fee"])}
    assert step["actual"]["source_tx_ids"] == [burn.signature]
    assert [h.lower() for h in step["actual"]["destination_tx_ids"]] == [receipt["transactionHash"].lower()]
    assert step["actual"]["block_times"] == [BLOCK_TIME]
    route = rec["route"]
    exp = int(route["quoted_expected_output_base"])
    assert route["complete"] is True and int(route["actual_output_base"]) == minted
    assert route["at_or_above_minimum"] is (minted >= int(route["quoted_minimum_output_base"])) is True
    assert route["realized_vs_quoted_expected_bps"] == round(float(Fraction(minted - exp, exp) * 10_000), 2)
    # realized cost: the quoted expected cost, scaled by what actually arrived against what was expected
    exp_cost = Fraction(str(st.quote["cost_summary"]["expected_total_cost_percent"])) * 100
    realized = 10_000 - (10_000 - exp_cost) * Fraction(minted, exp)
    assert route["realized_cost_bps"] == round(float(realized), 2) and route["realized_cost_bps"] > 0


def test_hostile_observations_leave_the_session_unchanged(env: Env) -> None:
    wallet, event = Keypair(), Keypair()
    base_key = "0x" + os.urandom(32).hex()
    st = start_session(env, wallet, event, base_key)
    net = int(st.action["netInputAmount"])

    # reverted on chain (meta.err set): refused, nothing advances
    failed = solana_burn(st.action, wallet, event, reverted=True, expire=1)
    assert failed.result["meta"]["err"] is not None
    env.rpc.publish(failed.result)
    refused(env, st, [failed.signature], "observation_reverted")

    # not the prepared transaction: the burn names another amount
    other = solana_burn(st.action, wallet, event, burn_amount=net - 1, expire=2)
    assert other.burned == net - 1
    env.rpc.publish(other.result)
    refused(env, st, [other.signature], "observation_not_prepared_action")
    assert env.api.read(st.sid, st.token)["status"] == "action_ready"

    # the real burn advances it; an attested message minting to another recipient is refused
    burn = solana_burn(st.action, wallet, event)
    env.rpc.publish(burn.result)
    r = observe(env, st, [burn.signature])
    assert r.status_code == 200 and r.json()["status"] == "awaiting_destination", r.text
    stranger = b32("0x" + "5a" * 20)
    message = attested_message(
        st.action["instructions"][-1],
        str(wallet.pubkey()),
        env.messenger,
        nonce=hashlib.sha256(b"hostile nonce").digest(),
        fee_executed=0,
        mint_recipient=stranger,
    )
    env.iris.publish(SOLANA_DOMAIN, burn.signature, [iris_solana_item(message, ATTESTATION, env.messenger)])
    before = env.api.read(st.sid, st.token)
    r = observe(env, st, None)
    assert r.status_code == 400, r.text
    assert r.json()["reason_class"] == "observation_bridge_mismatch", r.text
    assert "another account" in r.json()["message"], r.text
    after = env.api.read(st.sid, st.token)
    assert after["status"] == "awaiting_destination" and after["current_action"] is None
    for k in ("session_version", "steps", "funds", "phase"):
        assert after[k] == before[k], k
