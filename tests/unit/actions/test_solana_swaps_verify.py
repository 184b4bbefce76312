"""Prepared Orca Whirlpool swap bundles (live market, pinned pool, recorded responses) verify; the caller-side
verifier refuses tampering with the swap: a changed minimum, another owner account, another program, an extra
instruction, a changed amount or pool account, whether or not the hashes are recomputed."""

from __future__ import annotations

import base64
import copy
import struct
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
from solders.pubkey import Pubkey
from tests.unit.actions.support import (
    EVENT_SIGNER,
    FEE_RECIPIENTS,
    SETTINGS,
    approval_for,
    intent_for,
    rehash,
    wallets_for,
)
from tests.unit.actions.test_solana_swaps import pinned_live_market, pinned_orca_upstreams

from routequote.clock import FixedClock, SequentialIds
from routequote.core.actions import solana_swaps as sw
from routequote.core.routes import ROUTES, Provider
from routequote.prepare import PrepareService
from routequote.service import RouteQuoteService, ServiceConfig
from routequote.storage.quotes import MemoryIdempotencyStore, MemoryQuoteStore
from routequote.verify import verify_bundle

ORCA_ROUTES = sorted(k for k, r in ROUTES.items() if r.steps[0].provider is Provider.ORCA_WHIRLPOOL)
T0 = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)  # the recordings' time (tests/integration/test_live_market.py)
RAYDIUM_ROUTES = sorted(k for k, r in ROUTES.items() if r.steps[0].provider is Provider.RAYDIUM_CLMM)


@dataclass
class LiveEnv:
    clock: FixedClock
    service: RouteQuoteService
    prepare: PrepareService


@pytest.fixture
async def live() -> AsyncIterator[LiveEnv]:
    clock = FixedClock(T0)
    market = pinned_live_market(clock, pinned_orca_upstreams(clock))
    service = RouteQuoteService(
        market, MemoryQuoteStore(), clock, SequentialIds(), ServiceConfig(quote_ttl_seconds=60)
    )
    prepare = PrepareService(service, SETTINGS, idempotency=MemoryIdempotencyStore())
    yield LiveEnv(clock, service, prepare)
    await market.aclose()


async def _prepared(env: LiveEnv, route_key: str, usd: float = 100) -> tuple[dict[str, Any], dict[str, Any]]:
    intent = intent_for(route_key, usd)
    quote = await env.service.quote_request(intent)
    body = {
        "caller_approved": True,
        **intent,
        "wallets": wallets_for(route_key),
        "approval_v3": approval_for(quote),
    }
    signer = EVENT_SIGNER if ROUTES[route_key].event_signer_required else None  # a later step burns on Solana
    if signer:
        body["event_signer_public"] = signer
    bundle = await env.prepare.prepare(body, mode=body["approval_v3"]["selected_mode"])
    kwargs = {
        "intent": intent,
        "wallets": wallets_for(route_key),
        "approval_v3": body["approval_v3"],
        "direct_route_summary": quote["direct_route_summary"],
        "now_unix": int(env.clock.now().timestamp()),
        "fee_recipients": FEE_RECIPIENTS,
        "event_signer_public": signer,
    }
    return bundle, kwargs


def _errors(bundle: dict[str, Any], kwargs: dict[str, Any]) -> set[str]:
    return {f.code for f in verify_bundle(bundle, **kwargs) if f.severity == "error"}


def test_readiness_follows_the_market(live: LiveEnv) -> None:
    ready = live.prepare.supported_routes()
    assert set(ORCA_ROUTES) <= ready and len(ORCA_ROUTES) == 9
    # readiness no longer depends on the market: a pool that cannot be read is refused at prepare time
    assert set(RAYDIUM_ROUTES) <= ready and live.prepare.unsupported_reasons() == {}


@pytest.mark.parametrize("route_key", ORCA_ROUTES)
async def test_every_orca_route_prepares_a_bundle_that_verifies(live: LiveEnv, route_key: str) -> None:
    bundle, kwargs = await _prepared(live, route_key, 250)
    assert _errors(bundle, kwargs) == set()
    action = bundle["unsigned_action"]
    assert action["poolTickCurrent"] == 3  # the recorded live tick, not the snapshot's
    ixs = action["instructions"]
    assert ixs[-1]["programId"] == str(sw.ORCA_WHIRLPOOL_PROGRAM)
    assert action["kinds"][-2:] == ["create_output_token_account", "orca_whirlpool_swap_v2"]
    data = base64.b64decode(ixs[-1]["data"])
    assert struct.unpack_from("<QQ", data, 8) == (int(action["netInputAmount"]), int(action["minimumOutput"]))
    receipt = action["safety_receipt"]
    assert receipt["action"]["kind"] == "solana_orca_whirlpool_swap"
    assert receipt["target_or_program_allowlist"] and bundle["server_signing"] is False


def _swap(bundle: dict[str, Any]) -> dict[str, Any]:
    ix: dict[str, Any] = bundle["unsigned_action"]["instructions"][-1]
    return ix


def _set_data(ix: dict[str, Any], data: bytes) -> None:
    ix["data"] = base64.b64encode(data).decode()


def _lower_minimum(b: dict[str, Any]) -> None:
    data = bytearray(base64.b64decode(_swap(b)["data"]))
    struct.pack_into("<Q", data, 16, 1)
    _set_data(_swap(b), bytes(data))


def _other_owner_account(b: dict[str, Any]) -> None:
    _swap(b)["keys"][9]["pubkey"] = str(Pubkey.new_unique())  # the output token account


def _other_program(b: dict[str, Any]) -> None:
    _swap(b)["programId"] = str(Pubkey.new_unique())


def _extra_instruction(b: dict[str, Any]) -> None:
    ixs = b["unsigned_action"]["instructions"]
    ixs.insert(len(ixs) - 1, copy.deepcopy(ixs[0]))


def _more_input(b: dict[str, Any]) -> None:
    data = bytearray(base64.b64decode(_swap(b)["data"]))
    struct.pack_into("<Q", data, 8, struct.unpack_from("<Q", data, 8)[0] + 1)
    _set_data(_swap(b), bytes(data))


def _other_vault(b: dict[str, Any]) -> None:
    _swap(b)["keys"][8]["pubkey"] = str(Pubkey.new_unique())


def _flip_direction(b: dict[str, Any]) -> None:
    data = bytearray(base64.b64decode(_swap(b)["data"]))
    data[41] ^= 1
    _set_data(_swap(b), bytes(data))


def _drop_tick(b: dict[str, Any]) -> None:
    del b["unsigned_action"]["poolTickCurrent"]


TAMPERS = {
    "changed_minimum": (_lower_minimum, "minimum_output_mismatch"),
    "changed_owner_account": (_other_owner_account, "token_owner_mismatch"),
    "other_program": (_other_program, "program_not_allowed"),
    "extra_instruction": (_extra_instruction, "instruction_mismatch"),
    "more_input": (_more_input, "amount_mismatch"),
    "other_vault": (_other_vault, "pool_accounts_mismatch"),
    "flipped_direction": (_flip_direction, "direction_mismatch"),
    "no_pool_tick": (_drop_tick, "pool_tick_missing"),
}


@pytest.mark.parametrize("name", sorted(TAMPERS))
@pytest.mark.parametrize("rehashed", [False, True])
async def test_swap_tampering_is_refused(live: LiveEnv, name: str, rehashed: bool) -> None:
    bundle, kwargs = await _prepared(live, "solana:USDG->solana:USDC")
    tamper, code = TAMPERS[name]
    bad = copy.deepcopy(bundle)
    tamper(bad)
    if rehashed:
        rehash(bad)
    errors = _errors(bad, kwargs)
    assert code in errors, errors
    assert ("payload_sha256_mismatch" in errors) is not rehashed


async def test_embedded_market_prepares_orca_from_the_snapshot_and_says_so() -> None:
    from tests.unit.actions.support import make_env, prepare_route

    env = make_env()
    assert set(ORCA_ROUTES) <= env.prepare.supported_routes()
    p = await prepare_route(env, "solana:USDG->solana:USDC", 250)
    action = p.bundle["unsigned_action"]
    assert (
        action["pool_state_source"] == "snapshot" and "may be refused on mainnet" in action["pool_state_note"]
    )
    assert action["poolTickCurrent"] == 0  # the snapshot's modelled tick
    risks = action["safety_receipt"]["risks"]["provider"]
    assert any(r.startswith("pool_state_from_the_embedded_snapshot") for r in risks)


async def test_prepared_orca_bundle_runs_in_litesvm_up_to_the_swap(live: LiveEnv) -> None:
    """solana:USDG -> solana:USDC prepared for a wallet we hold: the fee account creation, the Token-2022 fee
    TransferChecked and the USDC output account creation execute in LiteSVM, signed by the wallet alone; the
    Whirlpool swap (no program binary offline) is the last instruction and is checked by the golden layout."""
    from solders.account import Account
    from solders.keypair import Keypair
    from solders.litesvm import LiteSVM
    from solders.message import Message
    from solders.token.state import Mint, TokenAccount, TokenAccountState
    from solders.transaction import Transaction

    from routequote.core.actions import common as ak
    from routequote.core.actions import solana as sol
    from routequote.core.assets import ASSETS

    kp = Keypair()
    route_key = "solana:USDG->solana:USDC"
    intent = intent_for(route_key, 250)
    quote = await live.service.quote_request(intent)
    body = {
        "caller_approved": True,
        **intent,
        "wallets": {"solana": str(kp.pubkey())},
        "approval_v3": approval_for(quote),
    }
    action = (await live.prepare.prepare(body))["unsigned_action"]
    assert action["requiredSigners"] == [str(kp.pubkey())]
    ixs = [sol.instruction_from_dict(d) for d in action["instructions"]]
    assert ixs[-1].program_id == sw.ORCA_WHIRLPOOL_PROGRAM and len(ixs) == 4
    usdg, usdc = ASSETS["solana:USDG"], ASSETS["solana:USDC"]
    svm = LiteSVM()
    svm.airdrop(kp.pubkey(), 10**10)
    for a in (usdg, usdc):
        mint = Mint(Pubkey.new_unique(), 10**15, a.decimals, True, None)
        svm.set_account(ak.mint(a), Account(10**9, bytes(mint), ak.token_program(a), False, 0))
    start = 10**12
    acct = TokenAccount(ak.mint(usdg), kp.pubkey(), start, None, TokenAccountState.Initialized, None, 0, None)
    svm.set_account(
        ak.associated_token_address(kp.pubkey(), usdg),
        Account(10**9, bytes(acct), ak.token_program(usdg), False, 0),
    )
    msg = Message.new_with_blockhash(ixs[:-1], kp.pubkey(), svm.latest_blockhash())
    result = svm.send_transaction(Transaction([kp], msg, svm.latest_blockhash()))
    assert not hasattr(result, "err"), result

    def amount(owner: Pubkey, a: Any) -> int:
        got = svm.get_account(ak.associated_token_address(owner, a))
        assert got is not None
        return int(TokenAccount.from_bytes(bytes(got.data)[:165]).amount)

    fee = int(action["routeFee"])
    assert fee == int(action["inputAmount"]) // 10_000 > 0
    assert amount(Pubkey.from_string(SETTINGS.fee_recipient_solana), usdg) == fee
    assert amount(kp.pubkey(), usdg) == start - fee  # the swap would take exactly netInputAmount next
    assert amount(kp.pubkey(), usdc) == 0  # the output account exists for the swap to pay into
