"""What the live market reads and within which bounds: `LiveConfig` (upstream URLs, pool accounts, timeout,
cache, staleness and circuit-breaker settings) built from Settings, and the pinned Chainlink feeds and
LayerZero OFT it reads on chain."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from routequote.core.assets import Chain, Token

MAX_TIMEOUT_SECONDS = 1.5

CHAINLINK_FEEDS: dict[Chain, dict[Token, str]] = {
    Chain.BASE: {
        Token.ETH: "0x71041dddad3595F9CEd3DcCFBe3D1F4b0a16Bb70",
        Token.USDC: "0x7e860098F58bBFC8648a4311b374B1D669a2bc6B",
    },
    Chain.ROBINHOOD: {Token.USDG: "0x61B7e5650328764B076A108EFF5fa7282a1B9aD2"},
}
USDG_OFT_ROBINHOOD = "0x0d54755f5106BfdB43f7a35f5D49a23F940628d1"
LZ_EID_SOLANA = 30168


@dataclass(frozen=True)
class LiveConfig:
    rpc_urls: dict[Chain, str] = field(default_factory=dict)
    iris_url: str = "https://iris-api.circle.com"
    across_url: str = "https://app.across.to/api"
    hermes_url: str = "https://hermes.pyth.network"
    solana_pools: dict[str, str] = field(default_factory=dict)  # pool id -> pool account
    evm_pool_addresses: dict[str, str] = field(default_factory=dict)  # pool id -> address override
    timeout_seconds: float = 1.5
    cache_ttl_seconds: float = 2.0
    pool_max_age_seconds: float = 120.0
    fee_max_age_seconds: float = 600.0
    price_max_age_seconds: float = 90_000.0  # Chainlink stablecoin feeds heartbeat once a day
    failure_threshold: int = 3
    cooldown_seconds: float = 15.0
    fallback: str = "none"  # "none" | "embedded"
    across_amount_base: int = 500_000_000  # a USD 500 reference deposit (USDC, 6 decimals)

    def __post_init__(self) -> None:
        if not 0 < self.timeout_seconds <= MAX_TIMEOUT_SECONDS:
            raise ValueError(f"timeout_seconds must be in (0, {MAX_TIMEOUT_SECONDS}]")
        if self.fallback not in ("none", "embedded"):
            raise ValueError("fallback must be 'none' or 'embedded'")


def live_config_from_settings(settings: Any) -> LiveConfig:
    """LiveConfig from `routequote.config.Settings` (ROUTEQUOTE_RPC_URL_*, ROUTEQUOTE_MARKET_*, ...)."""
    rpc = {
        Chain.SOLANA: settings.rpc_url_solana,
        Chain.BASE: settings.rpc_url_base,
        Chain.ARBITRUM: settings.rpc_url_arbitrum,
        Chain.ROBINHOOD: settings.rpc_url_robinhood,
    }
    pools: dict[str, str] = {}
    for item in filter(None, (x.strip() for x in settings.live_solana_pools.split(","))):
        pool_id, sep, address = item.partition("=")
        if not sep or not address.strip():
            raise ValueError(f"ROUTEQUOTE_LIVE_SOLANA_POOLS: {item!r} is not pool_id=ADDRESS")
        pools[pool_id.strip()] = address.strip()
    return LiveConfig(
        rpc_urls={c: u for c, u in rpc.items() if u},
        iris_url=settings.iris_url,
        across_url=settings.across_url,
        hermes_url=settings.hermes_url,
        solana_pools=pools,
        timeout_seconds=settings.market_timeout_seconds,
        cache_ttl_seconds=settings.market_cache_ttl_seconds,
        failure_threshold=settings.market_failure_threshold,
        cooldown_seconds=settings.market_cooldown_seconds,
        fallback=settings.market_fallback,
    )
