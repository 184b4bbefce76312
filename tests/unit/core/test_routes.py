"""The route registry: 72 routes, 164 steps, paths as the reference matrix composes them."""

from __future__ import annotations

import pytest

from routequote.core.assets import ASSETS
from routequote.core.routes import ROUTES, Mode


def test_counts() -> None:
    assert len(ASSETS) == 9
    assert len(ROUTES) == 72
    assert sum(len(r.steps) for r in ROUTES.values()) == 164
    assert {len(r.steps) for r in ROUTES.values()} == {1, 2, 3, 4, 5}


def test_every_route_chains_and_has_exactly_one_fee_step() -> None:
    for r in ROUTES.values():
        assert r.steps[0].source == r.source and r.steps[-1].target == r.target
        for a, b in zip(r.steps, r.steps[1:]):
            assert a.target == b.source
        assert sum(s.fee_step for s in r.steps) == 1
        assert [s.index for s in r.steps] == list(range(len(r.steps)))


@pytest.mark.parametrize(
    ("route", "path", "fee_index", "wallets", "signer", "mode"),
    [
        ("base:ETH->base:USDC", "uniswap_v3", 0, "base", False, Mode.SAME_CHAIN_DIRECT),
        ("robinhood:USDG->robinhood:ETH", "uniswap_v3", 0, "robinhood", False, Mode.SAME_CHAIN_DIRECT),
        ("solana:SOL->solana:USDC", "raydium_clmm", 0, "solana", False, Mode.SAME_CHAIN_DIRECT),
        ("solana:USDC->solana:USDG", "orca_whirlpool", 0, "solana", False, Mode.SAME_CHAIN_DIRECT),
        (
            "solana:SOL->solana:USDG",
            "raydium_clmm>orca_whirlpool",
            1,
            "solana",
            False,
            Mode.SAME_CHAIN_COMPOSITION,
        ),
        (
            "solana:USDG->solana:SOL",
            "orca_whirlpool>raydium_clmm",
            0,
            "solana",
            False,
            Mode.SAME_CHAIN_COMPOSITION,
        ),
        ("solana:SOL->base:USDC", "raydium_clmm>circle_cctp", 1, "base,solana", True, Mode.CCTP_COMPOSITION),
        (
            "base:ETH->arbitrum:ETH",
            "uniswap_v3>circle_cctp>uniswap_v3",
            1,
            "arbitrum,base",
            False,
            Mode.CCTP_COMPOSITION,
        ),
        (
            "arbitrum:USDC->solana:SOL",
            "circle_cctp>raydium_clmm",
            0,
            "arbitrum,solana",
            False,
            Mode.CCTP_COMPOSITION,
        ),
        (
            "base:ETH->robinhood:USDG",
            "uniswap_v3>across_intent_bridge",
            0,
            "base,robinhood",
            False,
            Mode.ROBINHOOD_INGRESS,
        ),
        (
            "base:USDC->robinhood:ETH",
            "across_intent_bridge>uniswap_v3",
            1,
            "base,robinhood",
            False,
            Mode.ROBINHOOD_INGRESS,
        ),
        (
            "arbitrum:USDC->robinhood:USDG",
            "across_intent_bridge",
            0,
            "arbitrum,robinhood",
            False,
            Mode.ROBINHOOD_INGRESS,
        ),
        (
            "solana:SOL->robinhood:ETH",
            "raydium_clmm>circle_cctp>across_intent_bridge>uniswap_v3",
            1,
            "base,robinhood,solana",
            True,
            Mode.ROBINHOOD_INGRESS,
        ),
        (
            "robinhood:USDG->solana:USDG",
            "paxos_usdg_layerzero_oft",
            0,
            "robinhood,solana",
            False,
            Mode.ROBINHOOD_EGRESS,
        ),
        (
            "robinhood:ETH->base:ETH",
            "uniswap_v3>paxos_usdg_layerzero_oft>orca_whirlpool>circle_cctp>uniswap_v3",
            1,
            "base,robinhood,solana",
            True,
            Mode.ROBINHOOD_EGRESS,
        ),
    ],
)
def test_reference_paths(
    route: str, path: str, fee_index: int, wallets: str, signer: bool, mode: Mode
) -> None:
    r = ROUTES[route]
    assert ">".join(r.provider_path) == path
    assert r.fee_step_index == fee_index
    assert ",".join(r.required_wallet_chains) == wallets
    assert r.event_signer_required is signer
    assert r.mode is mode


def test_external_intent_classification_only_with_across() -> None:
    for r in ROUTES.values():
        assert (r.classification == "external_intent") is ("across_intent_bridge" in r.provider_path)


def test_event_signer_exactly_when_cctp_burns_on_solana() -> None:
    for r in ROUTES.values():
        burns_on_solana = any(
            s.provider.value == "circle_cctp" and s.source.chain.value == "solana" for s in r.steps
        )
        assert r.event_signer_required is burns_on_solana


def test_five_step_routes_are_robinhood_eth_egress_to_evm_eth() -> None:
    five = sorted(k for k, r in ROUTES.items() if len(r.steps) == 5)
    assert five == ["robinhood:ETH->arbitrum:ETH", "robinhood:ETH->base:ETH"]
