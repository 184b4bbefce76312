"""The quote intent: parsing and validating a QuoteRequest body into domain values.

Every rule of the contract has its own `reason_class`, so a caller (or an agent) can tell which rule
it broke without parsing prose.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from typing import Any

from routequote.core.assets import ASSETS, Asset, Chain, Token
from routequote.core.field_rules import require_object
from routequote.core.market import USD_E8
from routequote.errors import InvalidRequest
from routequote.input_rules import name_list

QUOTE_FIELDS = ("from_chain", "from_token", "to_chain", "to_token", "amount_usd")
MIN_AMOUNT_USD = 1
MAX_AMOUNT_USD = 1000
_CHAINS = {c.value for c in Chain}
_TOKENS = {t.value for t in Token}


@dataclass(frozen=True, slots=True)
class QuoteIntent:
    source: Asset
    target: Asset
    amount_usd: int | float  # exactly as the caller sent it (JSON number)
    route_key: str = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "route_key", f"{self.source.key}->{self.target.key}")

    @property
    def amount_usd_decimal(self) -> str:
        """Plain decimal, no exponent, trailing zeros stripped (the fingerprint's form)."""
        return amount_decimal(self.amount_usd)

    def input_base(self, price_usd_e8: int) -> int:
        """Source-token base units worth `amount_usd` at the reference price, rounded down."""
        return int(amount_fraction(self.amount_usd) * self.source.one * USD_E8 / price_usd_e8)

    def as_request(self) -> dict[str, Any]:
        return {
            "from_chain": self.source.chain.value,
            "from_token": self.source.token.value,
            "to_chain": self.target.chain.value,
            "to_token": self.target.token.value,
            "amount_usd": self.amount_usd,
        }


def amount_fraction(amount: int | float) -> Fraction:
    """The exact value of a JSON number as the caller wrote it (shortest float repr, not binary noise)."""
    return Fraction(Decimal(repr(amount)))


def amount_decimal(amount: int | float) -> str:
    text = format(Decimal(repr(amount)).normalize(), "f")
    return text[:-2] if text.endswith(".0") else text


def _endpoint(body: dict[str, Any], side: str) -> Asset:
    chain, token = body[f"{side}_chain"], body[f"{side}_token"]
    for name, value in ((f"{side}_chain", chain), (f"{side}_token", token)):
        if not isinstance(value, str):
            raise InvalidRequest("wrong_type", f"{name} must be a string")
    if chain not in _CHAINS:
        raise InvalidRequest("unknown_chain", f"{side}_chain must be one of {sorted(_CHAINS)}")
    if token not in _TOKENS:
        raise InvalidRequest("unknown_token", f"{side}_token must be one of {sorted(_TOKENS)}")
    found = ASSETS.get(f"{chain}:{token}")
    if found is None:
        raise InvalidRequest("token_not_on_chain", f"{token} is not a supported endpoint on {chain}")
    return found


def parse_amount_usd(value: Any, *, integer_only: bool = False) -> int | float:
    if isinstance(value, bool):
        raise InvalidRequest("boolean_not_number", "amount_usd must be a number, not a boolean")
    if isinstance(value, str):
        raise InvalidRequest("string_not_number", "amount_usd must be a JSON number, not a string")
    if not isinstance(value, int | float):
        raise InvalidRequest("wrong_type", "amount_usd must be a number")
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidRequest("non_finite_number", "amount_usd must be finite")
    if integer_only and isinstance(value, float) and not value.is_integer():
        raise InvalidRequest("wrong_type", "amount_usd must be an integer")
    if value < MIN_AMOUNT_USD:
        raise InvalidRequest("amount_below_minimum", f"amount_usd must be >= {MIN_AMOUNT_USD}")
    if value > MAX_AMOUNT_USD:
        raise InvalidRequest("amount_above_maximum", f"amount_usd must be <= {MAX_AMOUNT_USD}")
    return value


def parse_quote_request(body: Any) -> QuoteIntent:
    body = require_object(body)
    extra = sorted(set(body) - set(QUOTE_FIELDS))
    if extra:
        raise InvalidRequest("unknown_field", f"properties not allowed: {name_list(extra)}")
    missing = [f for f in QUOTE_FIELDS if f not in body]
    if missing:
        raise InvalidRequest("missing_field", f"required: {', '.join(missing)}")
    source = _endpoint(body, "from")
    target = _endpoint(body, "to")
    amount = parse_amount_usd(body["amount_usd"])
    if source.key == target.key:
        raise InvalidRequest("identity_route", "source and destination endpoints must differ")
    return QuoteIntent(source, target, amount)
