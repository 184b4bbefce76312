"""Every route has a modelled ETA (issue 39): the 14 Robinhood-egress routes used to say "no ETA" because the
LayerZero OFT delivery had no time model. It is now modelled in the snapshot like the CCTP attestation and the
Across fill, and every quote whose route has an OFT step says that its OFT time is modelled, not measured."""

from __future__ import annotations

from dataclasses import replace

import pytest

from routequote.core.market import MarketView
from routequote.core.pricing import price_route
from routequote.core.quote_costs import eta
from routequote.core.routes import ROUTES, Provider
from routequote.market.snapshot import EmbeddedSnapshot, load_snapshot_document

OFT_ROUTES = sorted(k for k, r in ROUTES.items() if any(s.provider is Provider.PAXOS_OFT for s in r.steps))


@pytest.fixture(scope="module")
def view() -> MarketView:
    return EmbeddedSnapshot().current()


def test_the_snapshot_models_the_oft_delivery_and_says_so() -> None:
    doc = load_snapshot_document(None)
    seconds = doc["oft"]["delivery_seconds"]
    assert isinstance(seconds, int) and seconds > 0
    assert any("OFT delivery" in n and f"{seconds} s" in n and "modelled" in n for n in doc["notes"])


def test_the_robinhood_egress_routes_are_the_oft_routes() -> None:
    assert len(OFT_ROUTES) == 14
    assert all(k.startswith("robinhood:") for k in OFT_ROUTES)


@pytest.mark.parametrize("key", OFT_ROUTES)
def test_an_oft_route_has_a_complete_modelled_eta(key: str, view: MarketView) -> None:
    route = ROUTES[key]
    pricing = price_route(route, 10**8 if route.steps[0].source.decimals == 6 else 10**17, view)
    got = eta(pricing, view)
    oft_step = next(s.index for s in route.steps if s.provider is Provider.PAXOS_OFT)
    assert got["complete_route_estimate"] is True
    assert got["per_step_seconds"][oft_step] == view.oft.delivery_seconds
    assert got["estimated_time_seconds"] == sum(got["per_step_seconds"])
    assert f"OFT delivery is modelled at {view.oft.delivery_seconds} s" in got["note"]
    assert "not measured" in got["note"]
    assert "https://docs.layerzero.network" in got["sources"]


def test_without_a_model_the_eta_says_it_has_none(view: MarketView) -> None:
    """A snapshot without the OFT time (an operator's older file) still gives no number rather than a guess."""
    unmodelled = replace(view, oft=replace(view.oft, delivery_seconds=None))
    got = eta(price_route(ROUTES[OFT_ROUTES[0]], 10**17, unmodelled), unmodelled)
    assert got["complete_route_estimate"] is False and got["estimated_time_seconds"] is None
    assert "no complete estimate" in got["note"]


def test_a_route_without_an_oft_step_does_not_mention_it(view: MarketView) -> None:
    got = eta(price_route(ROUTES["base:USDC->arbitrum:USDC"], 10**8, view), view)
    assert got["complete_route_estimate"] is True and "OFT" not in got["note"]
