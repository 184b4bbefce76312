"""POST /v2/route-matrix: every route priced at one amount in one request (issue 39: the explorer spent 75 of a
visitor's 120 requests a minute on one fill). Against a real server over loopback: each cell says what a quote
of its route says, a route that cannot be priced says why (the error its quote answers), the whole matrix
costs one request of the rate limit, input follows the quote's rules, and the operation is in the OpenAPI
document. The service keeps its CPU bounded: one matrix computed at a time, a bounded queue, then 503."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime

import httpx
import pytest
from tests.support.server import free_port, running_server

from routequote.app import create_app
from routequote.clock import FixedClock, SequentialIds
from routequote.config import Settings
from routequote.core.market import MarketView
from routequote.core.routes import ROUTES
from routequote.errors import CapacityBusy
from routequote.market.snapshot import EmbeddedSnapshot
from routequote.ports import SourceHealth
from routequote.service import MATRIX_QUEUE, RouteQuoteService, ServiceConfig
from routequote.storage.quotes import MemoryQuoteStore

AMOUNT = 250


class SolPriceDown:
    """The embedded snapshot with the SOL price source failing: every route that needs it cannot be priced."""

    label = "embedded_snapshot"

    def __init__(self) -> None:
        self.inner = EmbeddedSnapshot()

    async def view(self) -> MarketView:
        view = self.inner.current()
        return replace(
            view, unavailable={"price:SOL": "hermes: timed out"}, version=view.version + "-sol-down"
        )

    def health(self) -> list[SourceHealth]:
        return [SourceHealth(name="hermes", ok=False, reason="hermes: timed out", components=("price:SOL",))]


def _quote_body(route: str, amount: int) -> dict[str, object]:
    (fc, ft), (tc, tt) = (side.split(":") for side in route.split("->"))
    return {"from_chain": fc, "from_token": ft, "to_chain": tc, "to_token": tt, "amount_usd": amount}


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    port = free_port()
    with running_server(create_app(Settings(rate_limit="off", port=port)), port) as base:
        yield base


def test_every_cell_says_what_its_quote_says(url: str) -> None:
    with httpx.Client(base_url=url, timeout=60) as http:
        matrix = http.post("/v2/route-matrix", json={"amount_usd": AMOUNT})
        assert matrix.status_code == 200, matrix.text
        doc = matrix.json()
        assert doc["route_count"] == 72 == doc["priced_routes"] and doc["unpriced_routes"] == 0
        assert [c["route"] for c in doc["routes"]] == list(ROUTES)
        assert doc["indicative_only"] is True and "cannot be approved, prepared" in doc["note"]
        assert doc["server_signing"] is False and doc["server_submission"] is False
        for cell in doc["routes"]:
            assert "quote_id" not in cell and "quote_fingerprint" not in cell  # never something to approve
            q = http.post("/v2/quote", json=_quote_body(cell["route"], AMOUNT)).json()
            assert doc["market"] == q["market"]
            assert cell == {
                "route": cell["route"],
                "priced": True,
                "estimated_input_base": q["estimated_input_base_decimal"],
                "expected_output_base": q["offer"]["expected_output_base"],
                "minimum_output_base": q["offer"]["minimum_output_base"],
                "expected_total_cost_percent": q["cost_summary"]["expected_total_cost_percent"],
                "maximum_total_cost_percent": q["cost_summary"]["maximum_total_cost_percent"],
                "small_amount_warning": q["cost_summary"]["small_amount_warning"],
                "estimated_time_seconds": q["eta"]["estimated_time_seconds"],
                "first_unsigned_action_supported": q["execution"]["first_unsigned_action_supported"],
                "blocker": q["execution"]["blocker"],
            }, cell["route"]


def test_a_route_that_cannot_be_priced_says_why_as_its_quote_would() -> None:
    port = free_port()
    app = create_app(Settings(rate_limit="off", port=port), market=SolPriceDown())
    with running_server(app, port) as base, httpx.Client(base_url=base, timeout=60) as http:
        doc = http.post("/v2/route-matrix", json={"amount_usd": AMOUNT}).json()
        unpriced = [c for c in doc["routes"] if not c["priced"]]
        assert (
            unpriced
            and doc["unpriced_routes"] == len(unpriced)
            and doc["priced_routes"] == 72 - len(unpriced)
        )
        assert all("SOL" in c["route"] for c in unpriced)
        for cell in unpriced:
            refused = http.post("/v2/quote", json=_quote_body(cell["route"], AMOUNT))
            assert refused.status_code == 502
            assert cell == {"route": cell["route"], "priced": False, **refused.json()}
        assert any(c["priced"] for c in doc["routes"])  # the others are still priced


def test_the_whole_matrix_is_one_request_of_the_rate_limit() -> None:
    port = free_port()
    app = create_app(Settings(rate_limit="3/minute", port=port), market=EmbeddedSnapshot())
    with running_server(app, port) as base, httpx.Client(base_url=base, timeout=60) as http:
        first = http.post("/v2/route-matrix", json={"amount_usd": 1000})
        assert first.status_code == 200 and first.headers["ratelimit-remaining"] == "2"
        assert http.post("/v2/route-matrix", json={"amount_usd": 999}).status_code == 200
        assert http.post("/v2/quote", json=_quote_body("base:ETH->base:USDC", 10)).status_code == 200
        limited = http.post("/v2/route-matrix", json={"amount_usd": 1000})
        assert limited.status_code == 429 and limited.json()["reason_class"] == "rate_limit_exceeded"


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b'{"amount_usd": 5000}', "amount_above_maximum"),
        (b'{"amount_usd": 0.5}', "amount_below_minimum"),
        (b'{"amount_usd": "100"}', "string_not_number"),
        (b'{"amount_usd": true}', "boolean_not_number"),
        (b'{"amount_usd": 100, "route": "x"}', "unknown_field"),
        (b"{}", "missing_field"),
        (b"[100]", "body_not_object"),
        (b'{"amount_usd": 1, "amount_usd": 2}', "duplicate_key"),
    ],
)
def test_input_follows_the_quotes_rules(url: str, body: bytes, reason: str) -> None:
    r = httpx.post(url + "/v2/route-matrix", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 400 and r.json()["reason_class"] == reason, r.text


def test_it_is_in_the_openapi_document(url: str) -> None:
    doc = httpx.get(url + "/v2/openapi.json").json()
    op = doc["paths"]["/v2/route-matrix"]["post"]
    assert op["operationId"] == "quoteRouteMatrix"
    body = op["requestBody"]["content"]["application/json"]["schema"]
    assert body["required"] == ["amount_usd"] and body["additionalProperties"] is False
    assert (body["properties"]["amount_usd"]["minimum"], body["properties"]["amount_usd"]["maximum"]) == (
        1,
        1000,
    )
    assert {"200", "400", "429", "502", "503"} <= set(op["responses"])
    assert "one request against the rate limit" in op["description"]


def test_one_matrix_is_computed_at_a_time_and_the_queue_is_bounded() -> None:
    service = RouteQuoteService(
        EmbeddedSnapshot(),
        MemoryQuoteStore(),
        FixedClock(datetime(2026, 11, 22, tzinfo=UTC)),
        SequentialIds(),
        ServiceConfig(),
    )

    async def run() -> None:
        await service._matrix_turn.acquire()  # a matrix is being computed
        waiting = [
            asyncio.create_task(service.route_matrix({"amount_usd": 100 + i})) for i in range(MATRIX_QUEUE)
        ]
        while service._matrix_waiting < MATRIX_QUEUE:
            await asyncio.sleep(0)
        with pytest.raises(CapacityBusy) as busy:
            await service.route_matrix({"amount_usd": 7})
        assert busy.value.reason_class == "matrix_capacity_busy" and busy.value.retry_after_seconds == 1
        service._matrix_turn.release()
        done = await asyncio.gather(*waiting)
        assert [d["amount_usd"] for d in done] == [100 + i for i in range(MATRIX_QUEUE)]
        # a matrix kept is answered without a turn, even while another is computed
        await service._matrix_turn.acquire()
        again = await service.route_matrix({"amount_usd": 100})
        assert again is done[0]
        service._matrix_turn.release()

    asyncio.run(run())
