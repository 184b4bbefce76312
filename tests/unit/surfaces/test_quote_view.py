"""The decision view of a quote (core/quote_view.py) over every route: within its byte bound on each surface's
form, its exact amounts equal the full quote's base units (checked with Decimal, not with the view's own
arithmetic), and its ids are the full quote's. Prints the bytes per result, full and decision."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal, localcontext
from typing import Any

import orjson
import pytest

from routequote.clock import FixedClock, SequentialIds
from routequote.core.assets import ASSETS
from routequote.core.quote_view import DECISION_VIEW_MAX_BYTES, decision_view, exact_token_amount
from routequote.core.routes import ROUTES
from routequote.errors import InvalidRequest
from routequote.market.snapshot import EmbeddedSnapshot
from routequote.service import RouteQuoteService, ServiceConfig
from routequote.storage.quotes import MemoryQuoteStore
from routequote.surfaces.quote_result import (
    FULL_IN_STRUCTURED_CONTENT,
    decision_result,
    quote_detail,
    quote_result,
)

AMOUNTS = (1, 137.5, 1000)


@pytest.fixture(scope="module")
def quotes() -> list[dict[str, Any]]:
    import asyncio

    service = RouteQuoteService(
        EmbeddedSnapshot(None),
        MemoryQuoteStore(),
        FixedClock(datetime(2026, 11, 22, tzinfo=UTC)),
        SequentialIds(),
        ServiceConfig(),
    )

    async def all_quotes() -> list[dict[str, Any]]:
        out = []
        for key in ROUTES:
            (fc, ft), (tc, tt) = (side.split(":") for side in key.split("->"))
            for amount in AMOUNTS:
                body = {
                    "from_chain": fc,
                    "from_token": ft,
                    "to_chain": tc,
                    "to_token": tt,
                    "amount_usd": amount,
                }
                out.append(dict(await service.quote_request(body)))
        return out

    return asyncio.run(all_quotes())


def _size(value: Any) -> int:
    return len(orjson.dumps(value))


def test_every_route_fits_the_bound_on_every_surface_form(quotes: list[dict[str, Any]]) -> None:
    assert len(quotes) == len(ROUTES) * len(AMOUNTS) == 216
    full = [_size(quote_result(q, "full")) for q in quotes]
    v2 = [_size(quote_result(q, "decision")) for q in quotes]
    spec_text = [_size(decision_result(q, full=FULL_IN_STRUCTURED_CONTENT)) for q in quotes]
    print(
        f"\nbytes per quote result over {len(quotes)} quotes (min / max): full {min(full)} / {max(full)}, "
        f"decision {min(v2)} / {max(v2)}, /mcp text block {min(spec_text)} / {max(spec_text)}"
    )
    assert max(v2) <= DECISION_VIEW_MAX_BYTES
    assert max(spec_text) <= DECISION_VIEW_MAX_BYTES
    assert min(full) > 5 * DECISION_VIEW_MAX_BYTES  # so the bound is a real saving, not a tautology


def test_exact_amounts_and_ids_are_the_full_quotes(quotes: list[dict[str, Any]]) -> None:
    with localcontext() as exact:
        exact.prec = 100  # exact products of 18-decimal amounts
        for q in quotes:
            _check_one(q)


def _check_one(q: dict[str, Any]) -> None:
    view = decision_view(q)
    steps = q["direct_route_summary"]["steps"]
    src, dst = ASSETS[q["intent"]["from"]], ASSETS[q["intent"]["to"]]
    scale_in, scale_out = Decimal(10) ** src.decimals, Decimal(10) ** dst.decimals
    assert Decimal(view["pay"]["amount"]) * scale_in == Decimal(q["estimated_input_base_decimal"])
    assert Decimal(view["receive"]["expected"]) * scale_out == Decimal(q["offer"]["expected_output_base"])
    assert Decimal(view["receive"]["minimum"]) * scale_out == Decimal(steps[-1]["minimum_output_base"])
    assert view["receive"]["minimum_base"] == q["continuation_v3"]["minimum_output_base"]
    cont = view["next"]
    assert cont["quote_fingerprint"] == q["continuation_v3"]["quote_fingerprint"]
    assert cont["modes"] == q["continuation_v3"]["allowed_modes"]
    assert (view["quote_id"], view["expires_at"], view["ttl_seconds"]) == (
        q["quote_id"],
        q["expires_at"],
        q["ttl_seconds"],
    )
    assert view["route"] == q["route"]["route"] and view["path"].count(">") == 2 * len(steps) - 2
    assert view["eta_seconds"] == q["eta"]["estimated_time_seconds"]
    # the embedded snapshot is a model, and the view says so in words
    assert q["market"]["live"] is False and "not live" in view["modelled"]


def test_a_live_quote_says_which_parts_are_still_modelled(quotes: list[dict[str, Any]]) -> None:
    longest = max(quotes, key=lambda q: len(q["direct_route_summary"]["steps"]))
    market = {**longest["market"], "live": True}
    live = decision_view({**longest, "market": market})
    # live prices, but the ETA stays a model (the LayerZero delivery's included)
    assert live["modelled"] == "eta"
    no_eta = {**longest, "market": market, "eta": {**longest["eta"], "complete_route_estimate": False}}
    assert decision_view(no_eta)["modelled"] == "eta: none"
    fallback = {**longest, "market": {**market, "fallback_components": ["across", "cctp", "orca:SOL-USDC"]}}
    text = decision_view(fallback)["modelled"]
    assert text.startswith("prices of 3 components: snapshot") and "not live" not in text
    assert (
        len(orjson.dumps(decision_result(fallback, full=FULL_IN_STRUCTURED_CONTENT)))
        <= DECISION_VIEW_MAX_BYTES
    )


def test_exact_token_amount_strings() -> None:
    assert exact_token_amount(0, 6) == "0"
    assert exact_token_amount(1, 18) == "0.000000000000000001"
    assert exact_token_amount(1_500_000, 6) == "1.5"
    assert exact_token_amount(2_000_000, 6) == "2"
    big = 123456789012345678901234567890
    whole, frac = exact_token_amount(big, 18).split(".")
    assert int(whole + frac.ljust(18, "0")) == big


def test_the_full_view_is_the_quote_itself(quotes: list[dict[str, Any]]) -> None:
    q = quotes[0]
    out = quote_result(q, "full")
    assert out["quote"] is q and out["guidance"]["automatic_selection_forbidden"] is True


def test_detail_values() -> None:
    assert quote_detail(None) == "decision"
    assert quote_detail("full") == "full"
    for bad in ("FULL", 1, "", ["full"]):
        with pytest.raises(InvalidRequest) as caught:
            quote_detail(bad)
        assert caught.value.reason_class == "invalid_detail"
        assert caught.value.message == "detail must be one of decision, full"  # never the value sent
