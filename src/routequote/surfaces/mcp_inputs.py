"""The input models of the MCP tools: each is a closed pydantic model (strict, extra fields forbidden) that
publishes the tool's JSON schema and validates its arguments."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from routequote.contract.v2 import ChainName, TokenName
from routequote.core.assets import ENDPOINT_KEYS, TOKENS_BY_CHAIN
from routequote.core.field_rules import (
    EVM_ADDRESS_PATTERN,
    EVM_TX_HASH_PATTERN,
    IDEMPOTENCY_KEY_MAX_CHARS,
    IDEMPOTENCY_KEY_MIN_CHARS,
    IDEMPOTENCY_KEY_PATTERN,
    V1_SIGNATURE_MAX_CHARS,
    V1_SIGNATURE_MIN_CHARS,
    V1_UUID_PATTERN,
    V1_WALLET_MAX_CHARS,
    V1_WALLET_MIN_CHARS,
)
from routequote.core.intent import MAX_AMOUNT_USD, MIN_AMOUNT_USD
from routequote.surfaces.legacy import DEFAULT_DESTINATION

assert DEFAULT_DESTINATION == "base"  # the schema's default below is the legacy module's

# ---- input models (each publishes its JSON schema; additionalProperties: false) ------------------------


class ToolInput(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class NoArguments(ToolInput):
    """No arguments."""


ENDPOINTS_TEXT = ", ".join(ENDPOINT_KEYS)
QUOTE_RULES = (
    f"The nine endpoints (chain:token; no other pair is valid): {ENDPOINTS_TEXT}. Source and destination "
    f"must differ (an identity route is refused). amount_usd is {MIN_AMOUNT_USD}..{MAX_AMOUNT_USD} (USD "
    "notional; no funds move)."
)
_TOKEN_RULE = "; ".join(f"{c.value}: {', '.join(t.value for t in ts)}" for c, ts in TOKENS_BY_CHAIN.items())


class V2QuoteArguments(ToolInput):
    """A QuoteRequest: one of the nine endpoints on each side, different endpoints, 1 <= amount_usd <= 1000."""

    from_chain: ChainName
    from_token: TokenName = Field(description=f"Must be valid on from_chain ({_TOKEN_RULE})")
    to_chain: ChainName
    to_token: TokenName = Field(
        description=f"Must be valid on to_chain ({_TOKEN_RULE}); to_chain:to_token differs from the source"
    )
    amount_usd: float = Field(
        ge=MIN_AMOUNT_USD,
        le=MAX_AMOUNT_USD,
        description=f"USD notional, {MIN_AMOUNT_USD}..{MAX_AMOUNT_USD}; no funds move",
    )


class V2ProfileQuoteArguments(V2QuoteArguments):
    """The v2 profile's quote (/mcp/v2, stdio --profile v2, the caller-side MCP): the QuoteRequest plus the
    view it answers with."""

    detail: Literal["decision", "full"] = Field(
        "decision",
        description='"decision" (default): about 1 KB, what a decision and approval need; "full": the complete '
        "POST /v2/quote JSON, whose hashes verify",
    )


class LegacyQuoteArguments(ToolInput):
    """Legacy v1 corridor quote: solana SOL -> native ETH on base or arbitrum."""

    amount_usd: int = Field(ge=MIN_AMOUNT_USD, le=MAX_AMOUNT_USD, description="Whole USD notional")
    destination_chain: Literal["base", "arbitrum"] = Field("base", description="Default base")


# The session tools of the spec's table (served by `v1_session_tools` over the v1 corridor engine), in the v1
# shapes that table fixes (core/field_rules.py `V1_*`: a UUID in either case, wider signature and wallet lengths).
V1Uuid = Annotated[str, Field(pattern=V1_UUID_PATTERN, json_schema_extra={"format": "uuid"})]
SourceWallet = Annotated[str, Field(min_length=V1_WALLET_MIN_CHARS, max_length=V1_WALLET_MAX_CHARS)]
Signature = Annotated[str, Field(min_length=V1_SIGNATURE_MIN_CHARS, max_length=V1_SIGNATURE_MAX_CHARS)]
# v1 and v2 tools alike: the one idempotency key rule, pattern included
IdempotencyKey = Annotated[
    str,
    Field(
        min_length=IDEMPOTENCY_KEY_MIN_CHARS,
        max_length=IDEMPOTENCY_KEY_MAX_CHARS,
        pattern=IDEMPOTENCY_KEY_PATTERN,
    ),
]
AccessToken = Annotated[
    str, Field(min_length=20, max_length=512, description="Sensitive: never logged or echoed")
]


class StartWalletAuthArguments(ToolInput):
    source_wallet: SourceWallet


class FinishWalletAuthArguments(ToolInput):
    challenge_id: V1Uuid
    source_wallet: SourceWallet
    signature: Signature
    terms_version: Annotated[str, Field(min_length=1, max_length=160)]


class CreateSessionArguments(ToolInput):
    access_token: AccessToken
    quote_id: V1Uuid
    idempotency_key: IdempotencyKey
    source_wallet: SourceWallet
    destination_wallet: Annotated[str, Field(pattern=EVM_ADDRESS_PATTERN)]


class ReadSessionArguments(ToolInput):
    access_token: AccessToken
    session_id: V1Uuid
    view: Literal["session", "workflow", "receipt", "next_action"] | None = None


class SessionArguments(ToolInput):
    access_token: AccessToken
    session_id: V1Uuid


class VerifySourceReceiptArguments(SessionArguments):
    signature: Signature
    idempotency_key: IdempotencyKey


class PrepareCctpArguments(SessionArguments):
    event_signer_public: SourceWallet
    idempotency_key: IdempotencyKey


class ObserveCctpArguments(SessionArguments):
    burn_signature: Signature
    idempotency_key: IdempotencyKey


class PrepareDestinationArguments(SessionArguments):
    idempotency_key: IdempotencyKey


class ObserveDestinationArguments(SessionArguments):
    transaction_hash: Annotated[str, Field(pattern=EVM_TX_HASH_PATTERN)]
    idempotency_key: IdempotencyKey


SESSION_TOOL_INPUTS: dict[str, type[ToolInput]] = {
    "service_start_wallet_auth": StartWalletAuthArguments,
    "service_finish_wallet_auth": FinishWalletAuthArguments,
    "service_create_session": CreateSessionArguments,
    "service_read_session": ReadSessionArguments,
    "service_prepare_source_action": SessionArguments,
    "service_verify_source_receipt": VerifySourceReceiptArguments,
    "service_prepare_cctp_action": PrepareCctpArguments,
    "service_observe_cctp": ObserveCctpArguments,
    "service_prepare_destination_action": PrepareDestinationArguments,
    "service_observe_destination": ObserveDestinationArguments,
}


def input_schema(model: type[ToolInput]) -> dict[str, Any]:
    schema = model.model_json_schema()
    schema.setdefault("properties", {})
    schema["additionalProperties"] = False
    return schema
