"""POST /v2/prepare over HTTP (the real composition root, a fixed clock): 200, every 400 rule and every
409 reapproval case. On every refusal nothing is created: no id is drawn, no idempotency record kept."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from tests.unit.actions.support import (
    EVENT_SIGNER,
    FEE_RECIPIENTS,
    SOLANA_WALLET,
    START,
    approval_for,
    intent_for,
    wallets_for,
)

from routequote.app import create_app
from routequote.clock import FixedClock, SequentialIds
from routequote.config import Settings
from routequote.verify import verify_bundle

SAME_CHAIN = "base:USDC->base:ETH"
MULTI_STEP = "base:ETH->arbitrum:ETH"


class Api:
    def __init__(self) -> None:
        self.clock = FixedClock(START)
        self.ids = SequentialIds()
        self.app = create_app(Settings(rate_limit="off"), clock=self.clock, ids=self.ids)
        self.client = httpx.AsyncClient(transport=httpx.ASGITransport(app=self.app), base_url="http://test")

    async def quote(self, route_key: str, amount: int = 100) -> dict[str, Any]:
        r = await self.client.post("/v2/quote", json=intent_for(route_key, amount))
        assert r.status_code == 200, r.text
        q: dict[str, Any] = r.json()
        return q

    def body(
        self, route_key: str, quote: dict[str, Any] | None, amount: int = 100, **approval: Any
    ) -> dict[str, Any]:
        out: dict[str, Any] = {
            "caller_approved": True,
            **intent_for(route_key, amount),
            "wallets": wallets_for(route_key),
        }
        if quote is not None:
            out["approval_v3"] = approval_for(quote, **approval)
        return out

    async def prepare(self, body: Any) -> httpx.Response:
        return await self.client.post("/v2/prepare", json=body)

    def created(self) -> tuple[int, int]:
        return self.ids._n, self.app.state.prepare.idempotency.retained()


@pytest.fixture
async def api() -> AsyncIterator[Api]:
    a = Api()
    yield a
    await a.client.aclose()


async def assert_409(api: Api, body: dict[str, Any], reason: str) -> dict[str, Any]:
    before = api.created()
    r = await api.prepare(body)
    assert r.status_code == 409, r.text
    err = r.json()
    assert err["error"] == "reapproval_required"
    assert err["reason"] == reason == err["reason_class"]
    assert err["action_created"] is False
    assert err["fresh_read_only_quote_required"] is True
    assert err["recovery_operation"] == "obtain_new_quote_and_make_new_selection"
    assert err["server_signing"] is False and err["server_submission"] is False
    assert "required_wallet_chains" in err and "event_signer_public_required" in err
    assert api.created() == before
    return err


async def assert_400(api: Api, body: Any, reason: str) -> None:
    before = api.created()
    r = await api.prepare(body)
    assert r.status_code == 400, r.text
    assert r.json()["reason_class"] == reason, r.json()
    assert api.created() == before


async def test_prepare_approved_quote_returns_verified_bundle(api: Api) -> None:
    q = await api.quote(SAME_CHAIN)
    body = api.body(SAME_CHAIN, q)
    r = await api.prepare(body)
    assert r.status_code == 200, r.text
    b = r.json()
    assert b["signed"] is False and b["submitted"] is False and b["idempotent_replay"] is False
    assert b["quote_binding"]["quote_fingerprint"] == q["continuation_v3"]["quote_fingerprint"]
    assert b["unsigned_action"]["safety_receipt"]["custody"]["server_signing"] is False
    kwargs: dict[str, Any] = {
        "intent": intent_for(SAME_CHAIN),
        "wallets": body["wallets"],
        "approval_v3": body["approval_v3"],
        "direct_route_summary": q["direct_route_summary"],
        "now_unix": int(START.timestamp()),
        "fee_recipients": FEE_RECIPIENTS,
    }
    # the embedded market: modelled bounds are refused unless accepted, and the receipt says why
    refused = [f for f in verify_bundle(b, **kwargs) if f.severity == "error"]
    assert [f.code for f in refused] == ["bounds_modelled_not_live"]
    assert b["unsigned_action"]["safety_receipt"]["bounds"]["basis"] == "modelled"
    kwargs["accept_modelled_bounds"] = True
    findings = verify_bundle(b, **kwargs)
    assert [f for f in findings if f.severity == "error"] == []
    # same request again: the same bundle, flagged as a replay, nothing new created
    before = api.created()
    again = await api.prepare(body)
    assert again.status_code == 200 and again.json()["idempotent_replay"] is True
    assert again.json()["payload_sha256"] == b["payload_sha256"]
    assert verify_bundle(again.json(), **kwargs) == findings
    assert api.created() == before


async def test_legacy_advisory_without_approval(api: Api) -> None:
    r = await api.prepare(api.body(SAME_CHAIN, None))
    assert r.status_code == 200, r.text
    assert r.json()["quote_binding"]["version"] == "legacy_advisory"
    assert r.json()["quote_binding"]["whole_route_path_and_bounds_enforced"] is False


async def test_409_unknown_quote(api: Api) -> None:
    q = await api.quote(SAME_CHAIN)
    await assert_409(
        api,
        api.body(SAME_CHAIN, q, quote_id="00000000-0000-4000-8000-999999999999"),
        "approval_v3_quote_not_found_or_process_restarted",
    )


async def test_409_expired_quote(api: Api) -> None:
    q = await api.quote(SAME_CHAIN)
    api.clock.advance(61)
    await assert_409(api, api.body(SAME_CHAIN, q), "approval_v3_quote_not_found_or_process_restarted")


async def test_409_after_restart(api: Api) -> None:
    q = await api.quote(SAME_CHAIN)
    restarted = Api()
    try:
        await assert_409(
            restarted, restarted.body(SAME_CHAIN, q), "approval_v3_quote_not_found_or_process_restarted"
        )
    finally:
        await restarted.client.aclose()


async def test_409_less_than_15_seconds_left(api: Api) -> None:
    q = await api.quote(SAME_CHAIN)
    api.clock.advance(46)
    await assert_409(api, api.body(SAME_CHAIN, q), "approval_v3_quote_ttl_below_minimum")


async def test_409_fingerprint_mismatch(api: Api) -> None:
    q = await api.quote(SAME_CHAIN)
    fp = q["continuation_v3"]["quote_fingerprint"]
    await assert_409(
        api,
        api.body(SAME_CHAIN, q, quote_fingerprint=("0" if fp[0] != "0" else "1") + fp[1:]),
        "approval_v3_fingerprint_mismatch",
    )


async def test_409_summary_mismatch(api: Api) -> None:
    q = await api.quote(SAME_CHAIN)
    await assert_409(
        api,
        api.body(SAME_CHAIN, q, direct_route_summary_sha256="a" * 64),
        "approval_v3_route_summary_mismatch",
    )


@pytest.mark.parametrize("field,delta", [("maximum_input_base", 1), ("minimum_output_base", -1)])
async def test_409_weaker_bounds(api: Api, field: str, delta: int) -> None:
    q = await api.quote(SAME_CHAIN)
    base = approval_for(q)[field]
    await assert_409(
        api,
        api.body(SAME_CHAIN, q, **{field: str(int(base) + delta)}),
        "approval_v3_bounds_weaker_than_quote",
    )


async def test_stricter_minimum_output_is_enforced_in_calldata(api: Api) -> None:
    q = await api.quote(SAME_CHAIN)
    stricter = str(int(q["continuation_v3"]["minimum_output_base"]) + 7)
    r = await api.prepare(api.body(SAME_CHAIN, q, minimum_output_base=stricter))
    assert r.status_code == 200, r.text
    assert r.json()["unsigned_action"]["minimumOutput"] == stricter


async def test_409_maximum_input_below_exact_input(api: Api) -> None:
    q = await api.quote(SAME_CHAIN)
    base = approval_for(q)["maximum_input_base"]
    await assert_409(
        api,
        api.body(SAME_CHAIN, q, maximum_input_base=str(int(base) - 1)),
        "approval_v3_maximum_input_below_exact_input",
    )


async def test_409_mode_conflict_on_multistep_route(api: Api) -> None:
    q = await api.quote(MULTI_STEP)
    assert q["continuation_v3"]["allowed_modes"] == ["session"]
    err = await assert_409(
        api, api.body(MULTI_STEP, q, selected_mode="one_shot"), "approval_v3_mode_not_allowed"
    )
    assert err["required_wallet_chains"] == ["arbitrum", "base"]
    # a session approval belongs to /v2/session: prepare refuses it (issue 22 item 3)
    await assert_400(api, api.body(MULTI_STEP, q, selected_mode="session"), "approval_v3_mode_mismatch")


async def test_409_intent_differs_from_approved_quote(api: Api) -> None:
    q = await api.quote(SAME_CHAIN, 100)
    body = api.body(SAME_CHAIN, q, amount=101)
    await assert_409(api, body, "approval_v3_intent_mismatch")


async def test_409_idempotency_key_replayed_with_different_body(api: Api) -> None:
    q = await api.quote(SAME_CHAIN)
    first = api.body(SAME_CHAIN, q)
    assert (await api.prepare(first)).status_code == 200
    second = api.body(SAME_CHAIN, q)
    second["wallets"] = {"base": "0x5555555555555555555555555555555555555555"}
    await assert_409(api, second, "idempotency_key_reused_with_different_request")


@pytest.mark.parametrize(
    "mutate,reason",
    [
        (lambda b: b.update(private_key="0x" + "ab" * 32), "secret_material_rejected"),
        (lambda b: b["approval_v3"].update(signature="0x00"), "secret_material_rejected"),
        (lambda b: b.update(note="abandon " * 11 + "about"), "secret_material_rejected"),
        (lambda b: b["wallets"].update(base="0x" + "ab" * 32), "secret_material_rejected"),
        (lambda b: b.update(signed_transaction="02f8..."), "secret_material_rejected"),
        (lambda b: b.update(wallet_seed=[1] * 64), "secret_material_rejected"),
        (lambda b: b.update(caller_approved=False), "caller_approval_required"),
        (lambda b: b.update(caller_approved="true"), "caller_approval_required"),
        (lambda b: b.update(extra=1), "unknown_field"),
        (
            lambda b: b.update(
                wallets={
                    "base": "0x11",
                }
            ),
            "invalid_wallet_address",
        ),
        (
            lambda b: b.update(wallets={"base": "0x" + "11" * 20, "solana": SOLANA_WALLET}),
            "route_specific_chain_wallets_required",
        ),
        (
            lambda b: b.update(event_signer_public=EVENT_SIGNER),
            "event_signer_public_not_accepted_for_this_route",
        ),
        (
            lambda b: b["approval_v3"].update(selection_status="unranked_candidate"),
            "approval_v3_not_selected",
        ),
        (lambda b: b["approval_v3"].update(idempotency_key="short"), "invalid_idempotency_key"),
        (lambda b: b["approval_v3"].update(maximum_input_base="0"), "approval_v3_amount_invalid"),
        (lambda b: b["approval_v3"].pop("quote_id"), "approval_v3_missing_field"),
        (lambda b: b.update(amount_usd=0.5), "amount_below_minimum"),
    ],
)
async def test_400_rules_create_nothing(api: Api, mutate: Any, reason: str) -> None:
    q = await api.quote(SAME_CHAIN)
    body = api.body(SAME_CHAIN, q)
    mutate(body)
    await assert_400(api, body, reason)


async def test_400_event_signer_required_and_route_not_ready(api: Api) -> None:
    key = "solana:USDC->base:USDC"
    q = await api.quote(key)
    await assert_400(api, api.body(key, q), "event_signer_public_required")
    body = api.body(key, q)
    body["event_signer_public"] = EVENT_SIGNER
    assert (await api.prepare(body)).status_code == 200
    for swap_first in ("solana:SOL->solana:USDC", "solana:USDG->solana:USDC"):  # built from the snapshot
        q = await api.quote(swap_first)
        assert q["execution"]["first_unsigned_action_supported"] is True
        r = await api.prepare(api.body(swap_first, q))
        assert r.status_code == 200 and r.json()["unsigned_action"]["pool_state_source"] == "snapshot", r.text


async def test_capabilities_and_quotes_tell_the_truth(api: Api) -> None:
    caps = (await api.client.get("/v2/capabilities")).json()
    ready = api.app.state.prepare.supported_routes()
    assert caps["currently_prepare_ready_routes"] == len(ready) == 72
    reasons = {u["route"]: u["reason"] for u in caps["temporarily_unavailable_routes"]}
    assert "solana:SOL->solana:USDC" not in reasons  # embedded snapshot: built from its pool state
    assert (
        "robinhood:ETH->base:ETH" in ready and "robinhood:ETH->base:ETH" not in reasons
    )  # SwapRouter02 pinned
    assert (await api.quote(SAME_CHAIN))["execution"]["first_unsigned_action_supported"] is True
