"""The whole-session e2e tests' world and wallet (tests/e2e/test_sessions_anvil.py): the three anvil chains, the
app's deployments pointed at their local contracts, a throwaway funded wallet that signs and sends each action
exactly as returned, and the reads that check a session moved exactly once (or not at all)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from _evm import AnvilChain, balance_of, calldata, sign_and_send
from _sessions import FakeIris, SessionApi, deposit_relay_data, fund_relayer
from eth_account import Account

from routequote.config import Settings
from routequote.core.actions.evm import DEFAULT_DEPLOYMENTS, EvmDeployment
from routequote.core.assets import Chain

BASE, ARBITRUM, ROBINHOOD = 8453, 42161, 4663
FEE_RECIPIENT = Settings().fee_recipient_evm
ETH_USDC = "base:ETH->base:USDC"
ETH_USDG = "base:ETH->robinhood:USDG"
CCTP_ROUTE = "arbitrum:USDC->base:ETH"


@dataclass
class World:
    chains: dict[int, AnvilChain]
    api: SessionApi
    iris: FakeIris
    settings: dict[str, Any]
    deployments: dict[Chain, EvmDeployment]
    tmp: Path

    @property
    def base(self) -> AnvilChain:
        return self.chains[BASE]

    @property
    def arb(self) -> AnvilChain:
        return self.chains[ARBITRUM]

    @property
    def rh(self) -> AnvilChain:
        return self.chains[ROBINHOOD]


def local_deployments(chains: dict[int, AnvilChain]) -> dict[Chain, EvmDeployment]:
    """The builders pointed at the local contracts: token6 plays USDC (base, arbitrum) and USDG (robinhood)."""
    b, a, r = (chains[c].addresses for c in (BASE, ARBITRUM, ROBINHOOD))
    return {
        Chain.BASE: DEFAULT_DEPLOYMENTS[Chain.BASE].with_overrides(
            tokens={"USDC": b["token6"], "WETH": b["weth"]},
            swap_router02=b["router02"],
            across_spoke_pool=b["local_spoke"],
            token_messenger_v2=b["cctp_messenger"],
            message_transmitter_v2=b["cctp_transmitter"],
        ),
        Chain.ARBITRUM: DEFAULT_DEPLOYMENTS[Chain.ARBITRUM].with_overrides(
            tokens={"USDC": a["token6"], "WETH": a["weth"]},
            swap_router02=a["router02"],
            across_spoke_pool=a["local_spoke"],
            token_messenger_v2=a["cctp_messenger"],
            message_transmitter_v2=a["cctp_transmitter"],
        ),
        Chain.ROBINHOOD: DEFAULT_DEPLOYMENTS[Chain.ROBINHOOD].with_overrides(
            tokens={"USDG": r["token6"], "WETH": r["weth"]},
            swap_router02=r["router02"],
            across_spoke_pool=r["local_spoke"],
        ),
    }


def wallet(w: World) -> tuple[str, str]:
    """A throwaway key, funded with ETH and the 6-decimals stable on every chain (same address everywhere)."""
    acct = Account.create()
    for chain in w.chains.values():
        chain.send(acct.address, "0x", value=10 * 10**18)
        chain.transact(chain.addresses["token6"], "mint(address,uint256)", acct.address, 10_000 * 10**6)
    return str(acct.address), acct.key.hex()


def eth(chain: AnvilChain, who: str) -> int:
    return int(chain.rpc.call("eth_getBalance", who, "latest"), 16)


def usd(chain: AnvilChain, who: str) -> int:
    return balance_of(chain, chain.addresses["token6"], who)


def gas_paid(receipts: list[dict[str, Any]]) -> int:
    return sum(int(r["gasUsed"], 16) * int(r["effectiveGasPrice"], 16) for r in receipts)


def hashes(receipts: list[dict[str, Any]]) -> list[str]:
    return [str(r["transactionHash"]) for r in receipts]


def catch_up(chain: AnvilChain) -> None:
    """The wallet waits for a block of the current second. An Across deposit's quoteTimestamp is the second it
    was prepared, and eth_estimateGas runs against the latest block: mined a second earlier, it reverts
    (InvalidQuoteTimestamp: quoteTimestamp > block.timestamp)."""
    latest = int(chain.rpc.call("eth_getBlockByNumber", "latest", False)["timestamp"], 16)
    chain.rpc.call("evm_mine", max(latest + 1, int(time.time()) + 1))


def submit(chain: AnvilChain, key: str, session: dict[str, Any]) -> list[dict[str, Any]]:
    """The wallet signs and sends the current action's transactions exactly as returned."""
    action = session["current_action"]["unsigned_action"]
    assert all(int(tx["chainId"]) == chain.chain_id for tx in action["transactions"])
    catch_up(chain)
    return sign_and_send(chain, key, action["transactions"])


def advance(
    w: World,
    sid: str,
    token: str,
    session: dict[str, Any],
    tx_hashes: list[str] | None,
    status: str,
    next_operation: str | None = None,
) -> dict[str, Any]:
    """Observe and require exactly one transition to `status` (version + 1), as read back."""
    r = w.api.observe(sid, token, tx_hashes)
    assert r.status_code == 200, r.text
    s = r.json()
    assert s["status"] == status, s
    assert s["session_version"] == session["session_version"] + 1
    if next_operation is not None:
        assert s["next_operation"] == next_operation
    back = w.api.read(sid, token)
    assert (back["status"], back["session_version"]) == (status, s["session_version"])
    return dict(s)


def state_of(s: dict[str, Any]) -> tuple[Any, ...]:
    return s["status"], s["session_version"], s["current_step"], s["phase"], s["next_operation"]


def refused(
    w: World, sid: str, token: str, before: dict[str, Any], r: httpx.Response, code: int, reason: str
) -> None:
    """A clear 4xx with the reason, and the session exactly as it was."""
    assert r.status_code == code, r.text
    assert r.json()["reason_class"] == reason, r.text
    assert state_of(w.api.read(sid, token)) == state_of(before)


def receipt_steps(w: World, sid: str, token: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    rc = w.api.read(sid, token, "receipt")["receipt"]
    return rc["steps"], rc["route"]


def signed_transfer(chain: AnvilChain, key: str, to: str, value: int) -> dict[str, Any]:
    who = Account.from_key(key).address
    return sign_and_send(
        chain, key, [{"from": who, "to": to, "value": str(value), "data": "0x", "chainId": chain.chain_id}]
    )[0]


def push_pool_price(chain: AnvilChain, weth_in: int) -> None:
    """Another trader sells WETH into the pool: USDC per ETH drops, below what the prepared minimum needs."""
    a, me = chain.addresses, chain.deployer
    chain.send(a["weth"], calldata("deposit()"), value=weth_in)
    chain.transact(a["weth"], "approve(address,uint256)", a["router02"], weth_in)
    chain.transact(
        a["router02"],
        "exactInputSingle((address,address,uint24,address,uint256,uint256,uint160))",
        (a["weth"], a["token6"], 500, me, weth_in, 0, 0),
    )


def to_across_in_flight(w: World) -> tuple[str, str, str, dict[str, Any], tuple[Any, ...]]:
    """A base:ETH->robinhood:USDG session whose Across deposit is observed (in flight). -> (who, sid, token, s, relay)"""
    who, key = wallet(w)
    s, token = w.api.create(ETH_USDG, {"base": who, "robinhood": who})
    sid = s["session_id"]
    s = advance(w, sid, token, s, hashes(submit(w.base, key, s)), "action_ready")
    deposit = submit(w.base, key, s)
    s = advance(w, sid, token, s, hashes(deposit), "awaiting_destination")
    relay = deposit_relay_data(deposit[-1], w.base.addresses["local_spoke"], BASE)
    fund_relayer(w.rh, w.rh.accounts[1], 10**12)
    return who, sid, token, s, relay


def step_minimum(w: World, sid: str, token: str, k: int) -> int:
    steps = w.api.read(sid, token, "session")["steps"]
    return int(steps[k]["minimum_output_base"])


def send_unmined(chain: AnvilChain, key: str, txs: list[dict[str, Any]]) -> list[str]:
    """Sign and send without waiting (automine off): nonces from the pending pool, fixed gas."""
    out = []
    base_fee = int(chain.rpc.call("eth_getBlockByNumber", "latest", False)["baseFeePerGas"], 16)
    for tx in txs:
        full = {
            "to": tx["to"],
            "value": int(tx["value"]),
            "data": tx["data"],
            "chainId": tx["chainId"],
            "type": 2,
            "nonce": int(chain.rpc.call("eth_getTransactionCount", tx["from"], "pending"), 16),
            "maxPriorityFeePerGas": 10**6,
            "maxFeePerGas": 2 * base_fee + 10**6,
            "gas": 1_000_000,
        }
        raw = Account.sign_transaction(full, key).raw_transaction
        out.append(str(chain.rpc.call("eth_sendRawTransaction", "0x" + raw.hex())))
    return out


def race_observes(apis: list[SessionApi], sid: str, token: str, named: list[str]) -> list[httpx.Response]:
    """One observe per API, released together (same hashes, different idempotency keys)."""
    barrier = threading.Barrier(len(apis))
    answers: list[httpx.Response] = []

    def go(api: SessionApi) -> None:
        barrier.wait()
        answers.append(api.observe(sid, token, named))

    threads = [threading.Thread(target=go, args=(api,)) for api in apis]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    return answers
