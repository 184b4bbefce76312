"""`routequote quote` in process says what a running server says (issue 39): the CLI used to build its own
service object without the prepare builder's readiness, so every in-process quote said
`first_unsigned_action_supported: false` with a null blocker while the server said true. Both now come from
`app.build_service`; a quote that cannot be prepared names why in `execution.blocker`."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime

import httpx
import pytest
from tests.support.server import free_port, running_server
from typer.testing import CliRunner

from routequote.app import create_app
from routequote.cli import app as cli_app
from routequote.clock import FixedClock, SequentialIds
from routequote.config import Settings
from routequote.market.snapshot import EmbeddedSnapshot
from routequote.service import RouteQuoteService, ServiceConfig
from routequote.storage.quotes import MemoryQuoteStore

# one swap, a CCTP route, an Across route and an OFT route (Robinhood egress)
ROUTES = [
    ("base:ETH", "base:USDC"),
    ("solana:SOL", "base:USDC"),
    ("base:USDC", "robinhood:USDG"),
    ("robinhood:USDG", "arbitrum:USDC"),
]


def _request(src: str, dst: str, amount: int) -> dict[str, object]:
    (fc, ft), (tc, tt) = src.split(":"), dst.split(":")
    return {"from_chain": fc, "from_token": ft, "to_chain": tc, "to_token": tt, "amount_usd": amount}


@pytest.mark.parametrize(("src", "dst"), ROUTES, ids=lambda x: x)
def test_in_process_quote_says_what_the_server_says(src: str, dst: str) -> None:
    port = free_port()
    with running_server(create_app(Settings(rate_limit="off", port=port)), port) as url:
        served = httpx.post(url + "/v2/quote", json=_request(src, dst, 100), timeout=30).json()
        route = httpx.get(url + "/v2/capabilities/routes", timeout=30).json()
    local = CliRunner().invoke(cli_app, ["quote", src, dst, "100", "--json"])
    assert local.exit_code == 0, local.output
    in_process = json.loads(local.output)
    assert in_process["execution"] == served["execution"]
    ready = next(r["prepare_ready"] for r in route["routes"] if r["route"] == f"{src}->{dst}")
    assert served["execution"]["first_unsigned_action_supported"] is ready
    assert (served["execution"]["blocker"] is None) is ready


def test_a_quote_that_cannot_be_prepared_names_why() -> None:
    """A service without a prepare builder (nothing prepare-ready): false, and the readiness reason code."""
    service = RouteQuoteService(
        EmbeddedSnapshot(),
        MemoryQuoteStore(),
        FixedClock(datetime(2026, 11, 22, tzinfo=UTC)),
        SequentialIds(),
        ServiceConfig(prepare_unavailable_reasons={"base:ETH->base:USDC": "pool_not_pinned: no pool"}),
    )

    async def both() -> list[dict[str, object]]:
        return [
            await service.quote_request(_request("base:ETH", "base:USDC", 100)),
            await service.quote_request(_request("solana:SOL", "base:USDC", 100)),
        ]

    pinned, default = asyncio.run(both())
    assert pinned["execution"] == {
        "supported": True,
        "first_unsigned_action_supported": False,
        "future_actions_require_verified_receipts": True,
        "blocker": "pool_not_pinned",
    }
    assert default["execution"]["blocker"] == "prepare_not_available_in_this_build"
    unavailable = {u["route"]: u["reason"] for u in service.unavailable_routes()}
    assert unavailable["base:ETH->base:USDC"] == "pool_not_pinned"  # the same reason, one home
