"""Chains, tokens and the nine asset endpoints the service quotes between."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class Chain(StrEnum):
    SOLANA = "solana"
    BASE = "base"
    ARBITRUM = "arbitrum"
    ROBINHOOD = "robinhood"


class Token(StrEnum):
    SOL = "SOL"
    ETH = "ETH"
    USDC = "USDC"
    USDG = "USDG"


class ChainFamily(StrEnum):
    EVM = "evm"
    SOLANA = "solana"


@dataclass(frozen=True, slots=True)
class ChainInfo:
    chain: Chain
    family: ChainFamily
    chain_id: int | None  # EVM chain id; None on Solana
    cctp_domain: int | None  # Circle CCTP domain; None where CCTP does not run
    block_time_ms: int


CHAINS: dict[Chain, ChainInfo] = {
    Chain.SOLANA: ChainInfo(Chain.SOLANA, ChainFamily.SOLANA, None, 5, 400),
    Chain.BASE: ChainInfo(Chain.BASE, ChainFamily.EVM, 8453, 6, 2000),
    Chain.ARBITRUM: ChainInfo(Chain.ARBITRUM, ChainFamily.EVM, 42161, 3, 250),
    Chain.ROBINHOOD: ChainInfo(Chain.ROBINHOOD, ChainFamily.EVM, 4663, None, 250),
}


@dataclass(frozen=True, slots=True)
class Asset:
    """One chain/token endpoint. `address` is the ERC-20 contract or SPL mint; native assets name their
    wrapped form in `wrapped_address` because venues trade the wrapped token."""

    chain: Chain
    token: Token
    decimals: int
    address: str | None
    wrapped_address: str | None = None
    token_program: str | None = None  # Solana only: SPL Token or Token-2022
    key: str = field(init=False, compare=False, repr=False)  # "chain:TOKEN", read on every quote

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", f"{self.chain.value}:{self.token.value}")

    @property
    def is_native(self) -> bool:
        return self.address is None

    @property
    def is_stable(self) -> bool:
        return self.token in (Token.USDC, Token.USDG)

    @property
    def one(self) -> int:
        return int(10**self.decimals)


SPL_TOKEN_PROGRAM = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"
TOKEN_2022_PROGRAM = "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb"
WSOL_MINT = "So11111111111111111111111111111111111111112"

ASSETS: dict[str, Asset] = {
    a.key: a
    for a in (
        Asset(Chain.SOLANA, Token.SOL, 9, None, WSOL_MINT, SPL_TOKEN_PROGRAM),
        Asset(
            Chain.SOLANA,
            Token.USDC,
            6,
            "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",
            None,
            SPL_TOKEN_PROGRAM,
        ),
        Asset(
            Chain.SOLANA,
            Token.USDG,
            6,
            "2u1tszSeqZ3qBWF3uNGPFc8TzMk2tdiwknnRMWGWjGWH",
            None,
            TOKEN_2022_PROGRAM,
        ),
        Asset(Chain.BASE, Token.ETH, 18, None, "0x4200000000000000000000000000000000000006"),
        Asset(Chain.BASE, Token.USDC, 6, "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"),
        Asset(Chain.ARBITRUM, Token.ETH, 18, None, "0x82aF49447D8a07e3bd95BD0d56f35241523fBab1"),
        Asset(Chain.ARBITRUM, Token.USDC, 6, "0xaf88d065e77c8cC2239327C5EDb3A432268e5831"),
        Asset(Chain.ROBINHOOD, Token.ETH, 18, None, "0x0Bd7D308f8E1639FAb988df18A8011f41EAcAD73"),
        Asset(Chain.ROBINHOOD, Token.USDG, 6, "0x5fc5360D0400a0Fd4f2af552ADD042D716F1d168"),
    )
}

ENDPOINT_KEYS: tuple[str, ...] = tuple(ASSETS)
TOKENS_BY_CHAIN: dict[Chain, tuple[Token, ...]] = {
    c: tuple(a.token for a in ASSETS.values() if a.chain is c) for c in Chain
}


def asset(chain: Chain | str, token: Token | str) -> Asset:
    """The endpoint for a chain/token pair; KeyError if the pair is not supported."""
    return ASSETS[f"{Chain(chain).value}:{Token(token).value}"]
