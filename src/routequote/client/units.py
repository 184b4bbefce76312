"""Exact token-unit formatting from integer base units (never through a float)."""

from __future__ import annotations

from routequote.core.assets import ASSETS


def decimals_of(endpoint: str) -> int:
    """Decimals of a chain:TOKEN endpoint (KeyError for an unknown one)."""
    return ASSETS[endpoint].decimals


def symbol_of(endpoint: str) -> str:
    return endpoint.split(":", 1)[1]


def format_units(base: int | str, decimals: int) -> str:
    """`80017923257435307`, 18 -> `0.080017923257435307`: every digit kept, exact."""
    value = int(base)
    sign = "-" if value < 0 else ""
    digits = str(abs(value))
    if decimals == 0:
        return sign + digits
    digits = digits.rjust(decimals + 1, "0")
    return f"{sign}{digits[:-decimals]}.{digits[-decimals:]}"


def token_amount(base: int | str, endpoint: str) -> str:
    """`0.080017923257435307 ETH` for base units of a chain:TOKEN endpoint."""
    return f"{format_units(base, decimals_of(endpoint))} {symbol_of(endpoint)}"
