"""Pricing on the embedded snapshot: hand-checked bridge legs, swap legs equal to the CLMM math."""

from __future__ import annotations

import pytest

from routequote.core.clmm import swap_exact_input
from routequote.core.market import MarketView
from routequote.core.pricing import price_route, service_fee
from routequote.core.routes import ROUTES
from routequote.errors import InvalidRequest
from routequote.market.snapshot import EmbeddedSnapshot


@pytest.fixture(scope="module")
def view() -> MarketView:
    return EmbeddedSnapshot().current()


def test_service_fee_is_floor_of_one_bp() -> None:
    assert service_fee(9_999) == 0
    assert service_fee(10_000) == 1
    assert service_fee(1_000_000_000) == 100_000
    assert service_fee(1_000_019_999) == 100_001


def test_cctp_leg_hand_checked(view: MarketView) -> None:
    # base USDC -> arbitrum USDC, one CCTP step that also collects the fee; Base fast fee 1.3 bp, 20 % maxFee buffer
    p = price_route(ROUTES["base:USDC->arbitrum:USDC"], 1_000_000_000, view)
    (s,) = p.steps
    assert s.service_fee_base == 100_000
    # fee = ceil(999_900_000 * 1.3 / 10_000) = 129_987; maxFee = ceil(129_987 * 1.2) = 155_985
    assert s.provider_fee_base == 129_987 and s.provider_fee_max_base == 155_985
    assert s.expected_output_base == 999_900_000 - 129_987
    assert s.minimum_output_base == 999_900_000 - 155_985


def test_across_leg_hand_checked(view: MarketView) -> None:
    p = price_route(ROUTES["arbitrum:USDC->robinhood:USDG"], 1_000_000_000, view)
    (s,) = p.steps
    # relayer fee = ceil(999_900_000 * 500 ppm) + 0.015 USDG gas = 499_950 + 15_000
    assert s.provider_fee_base == 514_950
    assert s.expected_output_base == 999_385_050
    # minimum: 25 bp tolerance below the fresh-quote output, rounded down
    assert s.minimum_output_base == 999_385_050 * 9975 // 10_000 == 996_886_587


def test_oft_leg_is_one_to_one_with_a_native_fee(view: MarketView) -> None:
    p = price_route(ROUTES["robinhood:USDG->solana:USDG"], 1_000_000_000, view)
    (s,) = p.steps
    assert s.expected_output_base == s.minimum_output_base == 999_900_000
    assert s.native_fee_wei == 42_000_000_000_000 and s.native_fee_max_wei == 52_500_000_000_000


def test_swap_leg_equals_clmm_math_and_minimum_applies_tolerance(view: MarketView) -> None:
    route = ROUTES["base:ETH->base:USDC"]
    amount = 3 * 10**17
    p = price_route(route, amount, view)
    (s,) = p.steps
    pool = view.pools["base:uniswap_v3:ETH-USDC"]
    direct = swap_exact_input(pool.clmm, True, amount - amount // 10_000)
    assert s.expected_output_base == direct.amount_out
    assert s.provider_fee_base == direct.fee_amount
    assert s.minimum_output_base == direct.amount_out * (10_000 - 50) // 10_000


def test_minimum_path_reprices_the_minimum_input(view: MarketView) -> None:
    p = price_route(ROUTES["solana:SOL->base:ETH"], 6 * 10**9, view)
    last = p.steps[-1]
    assert last.minimum_input_base == p.steps[-2].minimum_output_base < last.expected_input_base
    pool = view.pools["base:uniswap_v3:ETH-USDC"]
    worst = swap_exact_input(pool.clmm, False, last.minimum_input_base).amount_out
    assert last.minimum_output_base == worst * 9950 // 10_000


def test_every_route_prices_at_the_extremes(view: MarketView) -> None:
    for route in ROUTES.values():
        price = view.prices_usd_e8[route.source.token]
        for usd in (1, 1000):
            base = usd * route.source.one * 10**8 // price
            p = price_route(route, base, view)
            assert 0 < p.minimum_output_base <= p.expected_output_base


def test_zero_input_is_rejected(view: MarketView) -> None:
    with pytest.raises(InvalidRequest) as info:
        price_route(ROUTES["base:ETH->base:USDC"], 0, view)
    assert info.value.reason_class == "amount_below_route_minimum"
