"""Raydium CLMM SOL/USDC swaps from a live market that reads the pinned pool account (recorded responses:
`pinned_raydium` in solana_getMultipleAccounts.json). The observation, bitmap extension and tick arrays come from
that live read: the observation is the pool account's observation_key, the tick arrays are the existing
initialized arrays in swap direction from the current tick (the recorded pool has no array below the current
one, so a price-down swap skips it). Every Raydium route prepares a bundle the verifier accepts; tampering with
the tick arrays, observation, vaults or amounts is refused; a live pool naming other vaults is refused."""

from __future__ import annotations

import base64
import copy
import struct
from collections.abc import AsyncIterator
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
from tests.unit.actions.test_solana_swaps import pinned_live_market, pinned_raydium_upstreams

from routequote.clock import FixedClock, SequentialIds
from routequote.core.actions import solana_swaps as sw
from routequote.core.routes import ROUTES, Provider
from routequote.errors import InvalidRequest, UpstreamUnavailable
from routequote.prepare import PrepareService
from routequote.service import RouteQuoteService, ServiceConfig
from routequote.storage.quotes import MemoryIdempotencyStore, MemoryQuoteStore
from routequote.verify import verify_bundle

T0 = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)  # the recordings' time
RAYDIUM_ROUTES = sorted(k for k, r in ROUTES.items() if r.steps[0].provider is Provider.RAYDIUM_CLMM)
RP = sw.RAYDIUM_SOL_USDC
RECORDED_TICK = -18813
RECORDED_OBSERVATION = "CeJdXgFxPB2vMyCYuZGcEwBUiWM2BH2AqVZVRmE8yCSr"


class Env:
    def __init__(self, mutate: Any = None) -> None:
        self.clock = FixedClock(T0)
        fake = pinned_raydium_upstreams(self.clock)
        if mutate is not None:
            mutate(fake.solana["accounts"])
        self.market = pinned_live_market(self.clock, fake, raydium=True)
        self.service = RouteQuoteService(
            self.market, MemoryQuoteStore(), self.clock, SequentialIds(), ServiceConfig(quote_ttl_seconds=60)
        )
        self.prepare = PrepareService(self.service, SETTINGS, idempotency=MemoryIdempotencyStore())

    async def prepared(self, route_key: str, usd: float = 100) -> tuple[dict[str, Any], dict[str, Any]]:
        intent = intent_for(route_key, usd)
        quote = await self.service.quote_request(intent)
        body = {
            "caller_approved": True,
            **intent,
            "wallets": wallets_for(route_key),
            "approval_v3": approval_for(quote),
        }
        signer = EVENT_SIGNER if ROUTES[route_key].event_signer_required else None
        if signer:
            body["event_signer_public"] = signer
        bundle = await self.prepare.prepare(body, mode=body["approval_v3"]["selected_mode"])
        kwargs = {
            "intent": intent,
            "wallets": wallets_for(route_key),
            "approval_v3": body["approval_v3"],
            "direct_route_summary": quote["direct_route_summary"],
            "now_unix": int(self.clock.now().timestamp()),
            "fee_recipients": FEE_RECIPIENTS,
            "event_signer_public": signer,
        }
        return bundle, kwargs


@pytest.fixture
async def live() -> AsyncIterator[Env]:
    env = Env()
    yield env
    await env.market.aclose()


def _errors(bundle: dict[str, Any], kwargs: dict[str, Any]) -> set[str]:
    return {f.code for f in verify_bundle(bundle, **kwargs) if f.severity == "error"}


def _swap(bundle: dict[str, Any]) -> dict[str, Any]:
    ixs = bundle["unsigned_action"]["instructions"]
    found: list[dict[str, Any]] = [i for i in ixs if i["programId"] == str(sw.RAYDIUM_CLMM_PROGRAM)]
    assert len(found) == 1
    return found[0]


async def test_live_pool_state_carries_the_pinned_accounts(live: Env) -> None:
    view = await live.market.view()
    pool = view.pools[RP.pool_id]
    assert view.live and pool.address == RP.pool and pool.clmm.tick_current == RECORDED_TICK
    assert pool.accounts == {
        "amm_config": RP.amm_config,
        "vault_0": RP.vault_0,
        "vault_1": RP.vault_1,
        "observation": RECORDED_OBSERVATION,
        "tick_array_bitmap_extension": RP.bitmap_extension,
    }
    assert pool.initialized_tick_arrays == (-20400, -19200, -18600, -18000)  # -19800 has no account
    assert live.prepare.supported_routes() >= set(RAYDIUM_ROUTES) and len(RAYDIUM_ROUTES) == 9


@pytest.mark.parametrize("route_key", RAYDIUM_ROUTES)
async def test_every_raydium_route_prepares_a_bundle_that_verifies(live: Env, route_key: str) -> None:
    bundle, kwargs = await live.prepared(route_key, 250)
    assert _errors(bundle, kwargs) == set()
    action = bundle["unsigned_action"]
    assert action["poolTickCurrent"] == RECORDED_TICK
    stated = action["poolAccountsFromLiveChainState"]
    zero_for_one = ROUTES[route_key].steps[0].source.key == RP.token_0
    # as the Raydium SDK picks them: one initialized array behind the current one, then the swap's arrays + 1
    starts = [-18600, -19200, -20400] if zero_for_one else [-20400, -19200, -18600]
    assert stated["tickArrayStartIndexes"] == starts and stated["observationState"] == RECORDED_OBSERVATION
    assert stated["source"].startswith("server_live_read")
    swap = _swap(bundle)
    keys = [k["pubkey"] for k in swap["keys"]]
    assert (
        keys[1:3] == [RP.amm_config, RP.pool]
        and keys[7] == RECORDED_OBSERVATION
        and keys[13] == RP.bitmap_extension
    )
    assert keys[5:7] == ([RP.vault_0, RP.vault_1] if zero_for_one else [RP.vault_1, RP.vault_0])
    assert keys[14:] == [sw.raydium_tick_array_address(RP.pool, s) for s in starts]
    assert swap["keys"][13]["isWritable"] is True  # the bitmap extension, writable as the SDK passes it
    data = base64.b64decode(swap["data"])
    assert struct.unpack_from("<QQ", data, 8) == (int(action["netInputAmount"]), int(action["minimumOutput"]))
    assert action["kinds"][-1] == ("raydium_clmm_swap_v2" if zero_for_one else "close_wsol_token_account")
    risks = action["safety_receipt"]["risks"]["provider"]
    assert any(r.startswith("observation_and_tick_arrays_from_the_servers_read") for r in risks)
    assert action["pool_state_source"] == "live" and "pool_state_note" not in action
    assert bundle["server_signing"] is False and bundle["server_submission"] is False


def _other_pool_tick_array(b: dict[str, Any]) -> None:
    other = str(Pubkey.new_unique())
    start = b["unsigned_action"]["poolAccountsFromLiveChainState"]["tickArrayStartIndexes"][0]
    _swap(b)["keys"][14]["pubkey"] = sw.raydium_tick_array_address(other, start)


def _arrays_out_of_order(b: dict[str, Any]) -> None:  # the swap's arrays reordered, stated and keys alike
    stated = b["unsigned_action"]["poolAccountsFromLiveChainState"]
    for seq in (stated["tickArrayStartIndexes"], stated["tickArrays"], _swap(b)["keys"]):
        seq[-2], seq[-1] = seq[-1], seq[-2]


def _other_observation(b: dict[str, Any]) -> None:
    _swap(b)["keys"][7]["pubkey"] = str(Pubkey.new_unique())


def _other_vault(b: dict[str, Any]) -> None:
    _swap(b)["keys"][6]["pubkey"] = str(Pubkey.new_unique())


def _lower_minimum(b: dict[str, Any]) -> None:
    ix = _swap(b)
    data = bytearray(base64.b64decode(ix["data"]))
    struct.pack_into("<Q", data, 16, 1)
    ix["data"] = base64.b64encode(bytes(data)).decode()


def _price_limit(b: dict[str, Any]) -> None:
    ix = _swap(b)
    data = bytearray(base64.b64decode(ix["data"]))
    data[24] = 1
    ix["data"] = base64.b64encode(bytes(data)).decode()


def _no_live_accounts(b: dict[str, Any]) -> None:
    del b["unsigned_action"]["poolAccountsFromLiveChainState"]


def _other_payer_account(b: dict[str, Any]) -> None:
    _swap(b)["keys"][4]["pubkey"] = str(Pubkey.new_unique())


def _stated_arrays_of_another_pool(b: dict[str, Any]) -> None:  # the label only; the instruction is unchanged
    stated = b["unsigned_action"]["poolAccountsFromLiveChainState"]
    stated["tickArrays"] = [
        sw.raydium_tick_array_address(str(Pubkey.new_unique()), s) for s in stated["tickArrayStartIndexes"]
    ]


TAMPERS = {
    "stated_tick_arrays_of_another_pool": (_stated_arrays_of_another_pool, "tick_array_mismatch"),
    "tick_array_of_another_pool": (_other_pool_tick_array, "tick_array_mismatch"),
    "tick_arrays_out_of_order": (_arrays_out_of_order, "tick_arrays_not_in_swap_direction"),
    "other_observation": (_other_observation, "observation_mismatch"),
    "other_vault": (_other_vault, "pool_accounts_mismatch"),
    "changed_minimum": (_lower_minimum, "minimum_output_mismatch"),
    "price_limit": (_price_limit, "price_limit_mismatch"),
    "no_live_accounts": (_no_live_accounts, "live_pool_accounts_missing"),
    "other_output_account": (_other_payer_account, "token_owner_mismatch"),
}


@pytest.mark.parametrize("name", sorted(TAMPERS))
@pytest.mark.parametrize("rehashed", [False, True])
async def test_raydium_swap_tampering_is_refused(live: Env, name: str, rehashed: bool) -> None:
    bundle, kwargs = await live.prepared("solana:SOL->solana:USDC")
    assert _errors(bundle, kwargs) == set()
    tamper, code = TAMPERS[name]
    bad = copy.deepcopy(bundle)
    tamper(bad)
    if rehashed:
        rehash(bad)
    errors = _errors(bad, kwargs)
    assert code in errors, errors
    assert ("payload_sha256_mismatch" in errors) is not rehashed


def _set_pubkey(accounts: dict[str, Any], address: str, offset: int, value: str) -> None:
    acc = accounts[address]
    raw = bytearray(base64.b64decode(acc["data"][0]))
    raw[offset : offset + 32] = bytes(Pubkey.from_string(value))
    accounts[address] = {**acc, "data": [base64.b64encode(bytes(raw)).decode(), "base64"]}


def _set_bitmap(accounts: dict[str, Any], starts: set[int]) -> None:
    acc = accounts[RP.pool]
    raw = bytearray(base64.b64decode(acc["data"][0]))
    raw[904:1032] = sum(1 << (s // 600 + 512) for s in starts).to_bytes(128, "little")
    accounts[RP.pool] = {**acc, "data": [base64.b64encode(bytes(raw)).decode(), "base64"]}


def _logged(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What the live market sends to the log for a failing source (its own account stays out of answers)."""
    import routequote.market.live as live

    seen: list[str] = []
    monkeypatch.setattr(live, "log_failure", lambda dep, method, kind, exc: seen.append(str(exc)))
    return seen


async def test_the_pool_bitmap_decides_which_arrays_are_initialized(monkeypatch: pytest.MonkeyPatch) -> None:
    """An existing array whose bitmap bit is clear is not walked (the program would skip it too); a bit set for
    an array that does not exist is inconsistent state and refuses the read."""
    env = Env(lambda accounts: _set_bitmap(accounts, {-20400, -18000}))
    try:
        view = await env.market.view()
        assert view.pools[RP.pool_id].initialized_tick_arrays == (-20400, -18000)
    finally:
        await env.market.aclose()
    env = Env(lambda accounts: _set_bitmap(accounts, {-20400, -19800, -19200}))
    try:
        logs = _logged(monkeypatch)
        view = await env.market.view()
        assert RP.pool_id not in view.pools
        # the answer classifies; the account's own story goes to the log (issue 22 item 4)
        assert (
            view.unavailable[RP.pool_id] == "invalid_data: solana_pools: answered data that failed validation"
        )
        assert any("marks tick array -19800 initialized but it" in e for e in logs)
    finally:
        await env.market.aclose()


async def test_a_live_pool_naming_another_vault_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    env = Env(lambda accounts: _set_pubkey(accounts, RP.pool, 137, str(Pubkey.new_unique())))
    try:
        logs = _logged(monkeypatch)
        view = await env.market.view()  # the Solana pools component is unavailable, with the reason
        assert RP.pool_id not in view.pools
        detail = " ".join(logs)
        assert (
            "invalid_data" in view.unavailable[RP.pool_id]
            and "names vault_0" in detail
            and "not the pinned" in detail
        )
        before = env.service.ids._n  # type: ignore[attr-defined]
        with pytest.raises((InvalidRequest, UpstreamUnavailable)):
            await env.prepare.prepare(
                {
                    "caller_approved": True,
                    **intent_for("solana:SOL->solana:USDC"),
                    "wallets": wallets_for("solana:SOL->solana:USDC"),
                }
            )
        assert env.service.ids._n == before  # type: ignore[attr-defined]
    finally:
        await env.market.aclose()


async def test_no_initialized_tick_array_in_swap_direction_is_refused() -> None:
    """Without the arrays at and above the current one, a price-up swap (USDC -> SOL) has nothing to walk."""

    def drop(accounts: dict[str, Any]) -> None:  # the arrays' accounts and their pool bitmap bits
        for start in (-19200, -18600, -18000):
            accounts.pop(sw.raydium_tick_array_address(RP.pool, start))
        _set_bitmap(accounts, {-20400})

    env = Env(drop)
    try:
        before = env.service.ids._n  # type: ignore[attr-defined]
        with pytest.raises(InvalidRequest) as exc:
            await env.prepare.prepare(
                {
                    "caller_approved": True,
                    **intent_for("solana:USDC->solana:SOL"),
                    "wallets": wallets_for("solana:USDC->solana:SOL"),
                }
            )
        assert exc.value.details["unavailable_reason"] == "solana_no_initialized_tick_array_in_swap_direction"
        assert env.service.ids._n == before  # type: ignore[attr-defined]
        bundle, kwargs = await env.prepared("solana:SOL->solana:USDC")  # price-down still has -20400
        assert bundle["unsigned_action"]["poolAccountsFromLiveChainState"]["tickArrayStartIndexes"] == [
            -20400
        ]
        assert _errors(bundle, kwargs) == set()
    finally:
        await env.market.aclose()
