"""What any wallet needs along a route, before its own balances are known: the route document's `before_signing`
(served by a running server, rendered by the explorer's quote panel under "Before you sign"). Expected values
written out by hand from the route's steps: who signs where (the CCTP mint on the destination is the caller's;
an Across fill or an OFT delivery is relayed) and which Solana token accounts the route creates."""

from __future__ import annotations

from typing import Any

import httpx

RENT = 2_039_280


def _routes(http: httpx.Client) -> dict[str, dict[str, Any]]:
    r = http.get("/v2/capabilities/routes")
    assert r.status_code == 200
    return {route["route"]: route["before_signing"] for route in r.json()["routes"]}


def test_solana_sol_to_base_eth_needs_sol_base_eth_and_two_accounts(http: httpx.Client) -> None:
    need = _routes(http)["solana:SOL->base:ETH"]
    assert [(c["chain"], c["steps"], c["actions"]) for c in need["sign_on"]] == [
        ("solana", [1, 2], ["solana_swap", "cctp_burn"]),
        ("base", [2, 3], ["cctp_receive_message", "uniswap_v3_swap"]),
    ]
    assert (
        need["sign_on"][1]["text"]
        == "you sign 2 action(s) on base (steps 2-3): hold ETH on base for their fees"
    )
    assert need["sign_on"][0]["text"].endswith(
        "hold SOL on solana for their fees and the rent of the token accounts below"
    )
    # the wrapped-SOL account the input is wrapped in, and the swap's USDC output account
    assert need["solana_token_accounts"] == [
        {"step": 1, "token": "wSOL", "rent_lamports_if_missing": RENT},
        {"step": 1, "token": "USDC", "rent_lamports_if_missing": RENT},
    ]


def test_robinhood_eth_to_arbitrum_eth_signs_on_three_chains(http: httpx.Client) -> None:
    need = _routes(http)["robinhood:ETH->arbitrum:ETH"]
    assert [(c["chain"], c["native"], c["steps"]) for c in need["sign_on"]] == [
        ("robinhood", "ETH", [1, 2]),
        ("solana", "SOL", [3, 4]),  # the OFT delivery to Solana is relayed; the swap and the burn are yours
        ("arbitrum", "ETH", [4, 5]),
    ]
    assert [(a["step"], a["token"]) for a in need["solana_token_accounts"]] == [(2, "USDG"), (3, "USDC")]


def test_a_one_chain_evm_route_creates_no_solana_account(http: httpx.Client) -> None:
    need = _routes(http)["base:ETH->base:USDC"]
    assert need["solana_token_accounts"] == [] and [c["chain"] for c in need["sign_on"]] == ["base"]
    assert "preflight" in need["checked_per_wallet_by"]


def test_the_explorer_renders_the_route_documents_block(http: httpx.Client) -> None:
    """Browser-free: the served script reads these members into its "Before you sign" list (the Playwright test
    checks the rendered text where a browser is installed)."""
    script = http.get("/explorer/explorer.js").text
    for member in (
        "before_signing",
        "sign_on",
        "solana_token_accounts",
        "rent_lamports_if_missing",
        "checked_per_wallet_by",
    ):
        assert member in script, member
    assert 'h("h3", { text: "Before you sign" })' in script
