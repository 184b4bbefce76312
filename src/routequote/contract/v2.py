"""Wire models of the v2 quote-only contract. They document the shapes in OpenAPI and carry the spec's
constraints; the hot path renders payloads directly and the tests validate them against these."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field
from pydantic.config import JsonDict, JsonValue

from routequote.core.assets import TOKENS_BY_CHAIN

ChainName = Literal["solana", "base", "arbitrum", "robinhood"]
TokenName = Literal["SOL", "ETH", "USDC", "USDG"]


class Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


def endpoint_rule_parts() -> list[JsonDict]:
    """The endpoint rules as JSON Schema, generated from the asset registry: each side must be one of
    the nine chain/token pairs, and the two sides must differ (no identity route)."""

    def side(prefix: str) -> JsonDict:
        return {
            "anyOf": [
                {
                    "properties": {
                        f"{prefix}_chain": {"const": chain.value},
                        f"{prefix}_token": {"enum": [t.value for t in tokens]},
                    }
                }
                for chain, tokens in TOKENS_BY_CHAIN.items()
            ]
        }

    identity: JsonDict = {
        "anyOf": [
            {
                "properties": {
                    "from_chain": {"const": chain.value},
                    "to_chain": {"const": chain.value},
                    "from_token": {"const": token.value},
                    "to_token": {"const": token.value},
                }
            }
            for chain, tokens in TOKENS_BY_CHAIN.items()
            for token in tokens
        ]
    }
    return [side("from"), side("to"), {"not": identity}]


def _endpoint_rules() -> JsonDict:
    return {"allOf": list[JsonValue](endpoint_rule_parts())}


class QuoteRequest(Closed):
    """One of the nine endpoints on each side; (from, to) must differ. 1 <= amount_usd <= 1000."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_endpoint_rules())

    from_chain: ChainName
    from_token: TokenName = Field(description="Must be valid on from_chain")
    to_chain: ChainName
    to_token: TokenName = Field(description="Must be valid on to_chain")
    amount_usd: float = Field(ge=1, le=1000, description="USD notional; no funds move")


class AssetEndpoint(Closed):
    chain: ChainName
    token: TokenName


class Intent(Closed):
    from_: str = Field(alias="from")
    to: str
    amount_usd: float = Field(ge=1, le=1000)
    estimated_input_base: int = Field(ge=1)


class Offer(Open):
    expected_receive_amount: float = Field(gt=0)
    estimated_min_receive_amount: float = Field(gt=0)
    output_symbol: TokenName
    expected_receive_usd: float = Field(gt=0)
    estimated_min_receive_usd: float = Field(gt=0)
    service_fee_bps: int = Field(ge=0)
    fee_collection_steps: list[int] = Field(json_schema_extra={"items": {"type": "integer", "minimum": 0}})
    estimated_time_seconds: int | None = Field(default=None, ge=0)


class RouteBlock(Open):
    route: str = Field(min_length=1)
    steps: list[dict[str, object]] = Field(min_length=1)
    quote_latency_ms: int = Field(ge=0)
    server_signing: Literal[False] = False
    server_submission: Literal[False] = False


class Risk(Open):
    non_atomic: bool
    fresh_quote_required_each_step: Literal[True] = True
    server_signing: Literal[False] = False
    server_submission: Literal[False] = False


class Execution(Open):
    supported: Literal[True] = True
    first_unsigned_action_supported: bool
    future_actions_require_verified_receipts: Literal[True] = True


class QuoteResponse(Open):
    quote_id: UUID
    status: Literal["capped_public_agent_release"]
    as_of: datetime
    ttl_seconds: int = Field(ge=1)
    intent: Intent
    estimated_input_base_decimal: str | None = Field(
        default=None,
        pattern=r"^[1-9][0-9]*$",
        description="intent.estimated_input_base as an exact decimal string (a JavaScript-safe twin)",
    )
    offer: Offer
    route: RouteBlock
    risk: Risk
    execution: Execution


class ActionBounds(Closed):
    """`unsigned_action.safety_receipt.bounds` of every market-priced action (hashed with the receipt): where the
    numbers it enforces came from. `basis` is `modelled` when any bound came wholly or partly from the embedded
    snapshot (`modelled_parts` names each: `market:<component>`, `solana_tick_arrays:<pool>`,
    `approved_quote:<component>`); verifiers refuse such an action (`bounds_modelled_not_live`) unless the
    caller accepts modelled bounds. A CCTP destination mint has no `bounds`: it mints the attested amount."""

    basis: Literal["live", "modelled"]
    market_source: str = Field(description="The pricing market's label: embedded_snapshot, live, ...")
    live: bool = Field(description="The pricing market's own live flag (as the quote's market block)")
    data_as_of: str = Field(description="RFC 3339 time of the market data")
    modelled_parts: list[str]
    snapshot_as_of: str | None = Field(description="The snapshot's time when modelled, else null")
    statement: str


class SafetyReceipt(Open):
    bounds: ActionBounds | None = None


class UnsignedAction(Open):
    safety_receipt: SafetyReceipt


class PreparedBundle(Open):
    """An unsigned action bundle (POST /v2/prepare; a session's current action). Verify before signing."""

    payload_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    unsigned_action: UnsignedAction
    server_signing: Literal[False]
    server_submission: Literal[False]


PreflightCode = Literal[
    "input_balance", "input_allowance", "gas", "solana_rent_and_fees", "time_left", "unknown"
]
UNITS = "base units as a decimal string (wei, lamports, token units; seconds for time_left); null when unread"


class PreflightFinding(Closed):
    """One thing a chain of the route will need from the caller (routequote.preflight)."""

    code: PreflightCode
    chain: ChainName | None
    step_index: int | None = Field(ge=0, description="The route step (0-based) the finding is about")
    needed: str | None = Field(pattern=r"^[0-9]+$", description=f"What the route needs: {UNITS}")
    has: str | None = Field(pattern=r"^[0-9]+$", description=f"What the caller has: {UNITS}")
    blocking: bool = Field(
        description="True when the route would stop here; `ok` is false when any finding blocks"
    )
    estimate: bool = Field(description="True where `needed` comes from a documented budget, not the node")
    message: str


class Preflight(Open):
    """Advice before signing, computed per answer from chain reads: never refuses anything, and is outside
    `payload_sha256` and the safety receipt (a response-only member). `checked: false` with a `reason` where this
    instance has no chain access."""

    checked: bool
    ok: bool | None = Field(description="False when any finding blocks; null when not checked")
    advice_only: Literal[True]
    reason: str | None = Field(
        default=None, description="Why nothing was checked (only when checked is false)"
    )
    findings: list[PreflightFinding]


class PrepareResponse(PreparedBundle):
    """POST /v2/prepare: the bundle, with the response-only `idempotent_replay` and `preflight`."""

    idempotent_replay: bool
    preflight: Preflight


class SessionResponse(Open):
    """A session answer (create, read, observe, next, cancel): `preflight` advises on `current_action` and is
    absent when there is none."""

    session_id: str
    status: str
    current_action: PreparedBundle | None = None
    preflight: Preflight | None = None


class ExecutionMode(Open):
    """Whether this instance's actions carry live or modelled bounds (capabilities `action_bounds`, the safety
    document's `claims.action_bounds`)."""

    bounds: Literal["live", "modelled"]
    market: str
    snapshot_as_of: str | None
    fallback_to_snapshot: bool
    verifiers_refuse_modelled_bounds_by_default: Literal[True]
    refusal_code: Literal["bounds_modelled_not_live"]
    statement: str


class CapabilitiesResponse(Open):
    status: Literal["capped_public_agent_release"]
    public_api_enabled: Literal[True]
    chains: list[ChainName] = Field(min_length=4, max_length=4)
    asset_endpoints: list[AssetEndpoint] = Field(min_length=9, max_length=9)
    directed_conversion_routes: Literal[72]
    unsigned_route_plans_ready: Literal[72]
    action_bounds: ExecutionMode
    server_signing: Literal[False]
    server_submission: Literal[False]


class RouteDetailsResponse(Open):
    version: str
    route_count: Literal[72]
    routes: list[dict[str, Any]] = Field(min_length=72, max_length=72)
    server_signing: Literal[False]
    server_submission: Literal[False]


class RouteMatrixRequest(Closed):
    """Every directed route priced at one amount: 1 <= amount_usd <= 1000 (the quote's amount rule)."""

    amount_usd: float = Field(ge=1, le=1000, description="USD notional for every route; no funds move")


class RouteMatrixCell(Open):
    route: str = Field(min_length=1)
    priced: bool = Field(description="false: `error`, `reason_class` and `message` say why, as a quote would")


class RouteMatrixResponse(Open):
    version: Literal["routequote-route-matrix-v1"]
    amount_usd: float
    indicative_only: Literal[True]
    market: dict[str, Any]
    route_count: Literal[72]
    routes: list[RouteMatrixCell] = Field(min_length=72, max_length=72)
    server_signing: Literal[False]
    server_submission: Literal[False]


class StatusResponse(Open):
    status: Literal["capped_public_agent_release"]
    server_signing: Literal[False]
    server_submission: Literal[False]


class ErrorResponse(Open):
    error: str = Field(min_length=1)
    retry_after_seconds: int | None = Field(default=None, ge=0, le=3600)
    reason_class: str | None = Field(default=None, min_length=1)
