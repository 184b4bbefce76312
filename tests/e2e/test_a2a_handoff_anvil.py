"""The A2A prepare skill's caller-wallet handoff, executed on a real local chain (anvil, chain id 8453).

An agent quotes and prepares over A2A with the official client (approval_v3 + verification context), checks
the handoff (its own SHA-256, bound to the bundle), then hands each EIP-1193 `eth_sendTransaction` request,
unchanged, to a wallet: here anvil's own `eth_sendTransaction` for an impersonated fresh account, one at a
time, each after the previous is confirmed. Balances show the wallet received at least the quoted minimum
and the fee recipient exactly floor(input/10000). Reuses the anvil fixtures of `tests/e2e/conftest.py`
and the local Uniswap v3 deployment of `test_prepare_anvil.py`.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from _evm import AnvilChain, balance_of
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.helpers import get_data_parts, new_data_part
from a2a.types.a2a_pb2 import Message, Role, SendMessageRequest
from eth_account import Account
from starlette.applications import Starlette
from test_prepare_anvil import CHAIN_ID, _deploy_all, _deployments
from tests.support.a2a import CAMEL, narrow
from tests.support.server import free_port, running_server

from routequote.clock import FixedClock, SequentialIds
from routequote.config import Settings
from routequote.market.snapshot import EmbeddedSnapshot
from routequote.prepare import PrepareService
from routequote.service import RouteQuoteService, ServiceConfig
from routequote.storage.quotes import MemoryIdempotencyStore, MemoryQuoteStore
from routequote.surfaces.a2a_agent import build_a2a, verify_handoff
from routequote.surfaces.a2a_card import prepare_skill
from routequote.surfaces.a2a_prepare import prepare_operation
from routequote.verify import verification_context

pytestmark = pytest.mark.chain


@pytest.fixture
def chain(anvil_factory: Callable[[int], AnvilChain]) -> Iterator[AnvilChain]:
    c = anvil_factory(CHAIN_ID)
    _deploy_all(c)
    snap = c.snapshot()
    yield c
    c.revert(snap)


@pytest.fixture
def agent_url(chain: AnvilChain) -> Iterator[tuple[str, Settings]]:
    """The A2A agent over a service whose clock is the chain's and whose prepare builder targets the local
    contracts (the composition root's defaults target mainnet)."""
    block = chain.rpc.call("eth_getBlockByNumber", "latest", False)
    clock = FixedClock(datetime.fromtimestamp(int(block["timestamp"], 16), UTC))
    service = RouteQuoteService(
        EmbeddedSnapshot(None), MemoryQuoteStore(), clock, SequentialIds(), ServiceConfig()
    )
    port = free_port()
    settings = Settings(port=port, rate_limit="off")
    prepare = PrepareService(
        service, settings, deployments=_deployments(chain.addresses), idempotency=MemoryIdempotencyStore()
    )
    service.config.prepare_ready_routes = prepare.supported_routes()
    surface = build_a2a(service, settings, extra=[(prepare_operation(prepare, clock), prepare_skill())])
    with running_server(Starlette(routes=surface.routes), port) as url:
        yield url, settings


async def _ask(client: Any, payload: dict[str, Any]) -> dict[str, Any]:
    msg = Message(role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=[new_data_part(payload)])
    replies = [ev async for ev in client.send_message(SendMessageRequest(message=msg))]
    return narrow(get_data_parts(replies[0].message.parts)[0])


def _wallet_send(chain: AnvilChain, request: dict[str, Any]) -> dict[str, Any]:
    """An EIP-1193 wallet: the request's params go to eth_sendTransaction as they are."""
    assert request["method"] == "eth_sendTransaction"
    tx_hash = chain.rpc.call("eth_sendTransaction", *request["params"])
    for _ in range(500):
        receipt = chain.rpc.call("eth_getTransactionReceipt", tx_hash)
        if receipt is not None:
            assert int(receipt["status"], 16) == 1, receipt
            return dict(receipt)
        time.sleep(0.01)
    raise AssertionError("no receipt")


@pytest.mark.parametrize(("source", "target"), [("ETH", "USDC"), ("USDC", "ETH")])
async def test_a2a_handoff_executes_on_chain(
    chain: AnvilChain, agent_url: tuple[str, Settings], source: str, target: str
) -> None:
    url, settings = agent_url
    a = chain.addresses
    wallet = Account.create().address
    chain.send(wallet, "0x", value=10 * 10**18)
    chain.transact(a["token6"], "mint(address,uint256)", wallet, 10_000 * 10**6)
    chain.rpc.call("anvil_impersonateAccount", wallet)
    intent = {
        "from_chain": "base",
        "from_token": source,
        "to_chain": "base",
        "to_token": target,
        "amount_usd": 100,
    }
    wallets = {"base": wallet}
    async with httpx.AsyncClient(timeout=30) as http:
        card = await A2ACardResolver(http, url).get_agent_card()
        client = ClientFactory(ClientConfig(streaming=False, httpx_client=http)).create(card)
        quote = (await _ask(client, {**{CAMEL[k]: v for k, v in intent.items()}, "detail": "full"}))["quote"]
        c = quote["continuation_v3"]
        approval = {
            "version": c["approval_v3_version"],
            "quote_id": quote["quote_id"],
            "quote_fingerprint": c["quote_fingerprint"],
            "selection_status": "selected",
            "selected_mode": "one_shot",
            "maximum_input_base": c["input_base_bounds"]["maximum"],
            "minimum_output_base": c["minimum_output_base"],
            "direct_route_summary_sha256": c["direct_route_summary_sha256"],
            "idempotency_key": "e2e-" + uuid.uuid4().hex,
        }
        ctx = verification_context(
            intent=intent,
            wallets=wallets,
            event_signer_public=None,
            approval_v3=approval,
            direct_route_summary=quote["direct_route_summary"],
        )
        reply = await _ask(
            client,
            {
                "operation": "prepare",
                "callerApproved": True,
                **{CAMEL[k]: v for k, v in intent.items()},
                "wallets": wallets,
                "approvalV3": approval,
                "verificationContext": ctx,
                "acceptUnconfiguredFeeRecipient": True,  # a local chain: the development placeholder is fine
                "acceptModelledBounds": True,  # and bounds priced from the embedded snapshot
            },
        )
    assert "error" not in reply, reply
    bundle, handoff = reply["bundle"], reply["caller_wallet_handoff"]
    assert verify_handoff(handoff, bundle) == []
    # the handoff says the bounds are modelled, not live: never passed off as safe to sign on mainnet
    assert (
        handoff["bounds"]["modelled_not_live"] is True
        and "not live market data" in handoff["bounds"]["statement"]
    )
    assert reply["action_verification"]["bounds"]["accepted_as_modelled"] is True
    action = bundle["unsigned_action"]
    fee, min_out = int(action["routeFee"]), int(action["minimumOutput"])
    fee_to = settings.fee_recipient_evm

    def balances() -> tuple[int, int, int, int]:
        eth = int(chain.rpc.call("eth_getBalance", wallet, "latest"), 16)
        fee_eth = int(chain.rpc.call("eth_getBalance", fee_to, "latest"), 16)
        return eth, balance_of(chain, a["token6"], wallet), fee_eth, balance_of(chain, a["token6"], fee_to)

    before = balances()
    receipts = [_wallet_send(chain, request) for request in handoff["requests"]]
    after = balances()
    gas = sum(int(r["gasUsed"], 16) * int(r["effectiveGasPrice"], 16) for r in receipts)
    assert len(receipts) == len(action["transactions"])
    if target == "USDC":
        assert after[1] - before[1] >= min_out
        assert after[2] - before[2] == fee  # the 1 bp fee in native ETH, exactly
    else:
        assert after[0] - before[0] + gas >= min_out
        assert after[3] - before[3] == fee  # the 1 bp fee in USDC, exactly
    assert fee == int(action["inputAmount"]) // 10_000 > 0
