"""Typed answers. Quote, capabilities and status reuse the server's contract models (routequote.contract.v2);
the prepared action bundle and the session, which have no contract model there, are defined here.

Every model keeps the exact JSON it was validated from in `.raw`: hashes are recomputed over it and a
wallet tool signs from it, never from a re-serialized model."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, PrivateAttr

from routequote.contract.v2 import CapabilitiesResponse, Closed, Open, QuoteResponse, StatusResponse

HEX64 = r"^[0-9a-f]{64}$"
SessionStatus = Literal[
    "action_ready",
    "awaiting_source_receipt",
    "awaiting_destination",
    "action_expired",
    "reapproval_required",
    "complete",
    "cancelled",
    "failed",
]
NextOperation = Literal["submit_current_action", "observe", "refresh_action", "none"]


class _Raw(BaseModel):
    _raw: dict[str, Any] = PrivateAttr(default_factory=dict)

    @property
    def raw(self) -> dict[str, Any]:
        """The exact JSON object the model was validated from."""
        return self._raw

    @classmethod
    def from_raw(cls, raw: dict[str, Any]) -> Any:
        model = cls.model_validate(raw)
        model._raw = raw
        return model


class SummaryStep(Closed):
    index: int = Field(ge=0)
    action: str
    provider: str
    from_: str = Field(alias="from")
    to: str
    expected_input_base: str = Field(pattern=r"^[1-9][0-9]*$")
    minimum_input_base: str = Field(pattern=r"^[1-9][0-9]*$")
    expected_output_base: str = Field(pattern=r"^[1-9][0-9]*$")
    minimum_output_base: str = Field(pattern=r"^[1-9][0-9]*$")
    service_fee_bps: int = Field(ge=0)
    direct_protocol: bool
    external_intent_protocol: bool
    aggregator_api_used: Literal[False]


class DirectRouteSummary(Open):
    version: str
    route: str
    from_: str = Field(alias="from")
    to: str
    step_count: int = Field(ge=1)
    steps: list[SummaryStep] = Field(min_length=1)
    server_signing: Literal[False]
    server_submission: Literal[False]


class Continuation(Open):
    version: str
    quote_id: str
    issued_at: str
    expires_at: str
    ttl_seconds: int
    amount_usd_decimal: str
    direct_route_summary_sha256: str = Field(pattern=HEX64)
    quote_payload_sha256: str = Field(pattern=HEX64)
    quote_payload_sha256_spec: str
    quote_fingerprint: str = Field(pattern=HEX64)
    quote_fingerprint_claim: dict[str, Any]
    input_base_bounds: dict[str, str]
    minimum_output_base: str
    required_wallet_chains: list[str]
    event_signer_public_required: bool
    step_count: int
    allowed_modes: list[Literal["one_shot", "session"]]
    approval_v3_version: str
    server_signing: Literal[False]
    server_submission: Literal[False]


class Quote(QuoteResponse, _Raw):
    """POST /v2/quote, validated: the server's QuoteResponse plus the summary and continuation typed."""

    direct_route_summary: DirectRouteSummary
    continuation_v3: Continuation
    server_signing: Literal[False]
    server_submission: Literal[False]

    @property
    def route_key(self) -> str:
        return self.route.route

    @property
    def input_base(self) -> int:
        return int(self.direct_route_summary.steps[0].expected_input_base)

    @property
    def expected_output_base(self) -> int:
        return int(self.direct_route_summary.steps[-1].expected_output_base)

    @property
    def minimum_output_base(self) -> int:
        return int(self.direct_route_summary.steps[-1].minimum_output_base)

    def request_intent(self) -> dict[str, Any]:
        """The five quote fields (what prepare, sessions and the verifier take)."""
        fc, ft = self.raw["intent"]["from"].split(":")
        tc, tt = self.raw["intent"]["to"].split(":")
        return {
            "from_chain": fc,
            "from_token": ft,
            "to_chain": tc,
            "to_token": tt,
            "amount_usd": self.raw["intent"]["amount_usd"],
        }


class Capabilities(CapabilitiesResponse, _Raw):
    pass


class Status(StatusResponse, _Raw):
    pass


class QuoteBinding(Open):
    quote_id: str
    quote_fingerprint: str = Field(pattern=HEX64)
    direct_route_summary_sha256: str = Field(pattern=HEX64)
    selected_mode: Literal["one_shot", "session"]
    maximum_input_base: str
    minimum_output_base: str
    server_signing: Literal[False]
    server_submission: Literal[False]


class PreparedAction(Open, _Raw):
    """An unsigned action bundle (POST /v2/prepare, or a session's current action), verified before return."""

    version: str
    status: str
    workflow_id: str
    action_id: str
    step_index: int = Field(ge=0)
    route: str
    prepared_at: str
    expires_at: str
    expires_in_seconds: int | None = None
    quote_binding: QuoteBinding | None = None
    workflow: dict[str, Any] | None = None
    unsigned_action: dict[str, Any]
    payload_sha256: str = Field(pattern=HEX64)
    server_signing: Literal[False]
    server_submission: Literal[False]
    signed: Literal[False]
    submitted: Literal[False]
    idempotent_replay: bool = False
    # advice on what each chain will need before signing (response-only, outside payload_sha256)
    preflight: dict[str, Any] | None = None
    _warnings: list[Any] = PrivateAttr(default_factory=list)

    @property
    def warnings(self) -> list[Any]:
        """The verifier's warnings (findings that do not refuse the bundle), e.g. an unpinned fee recipient."""
        return self._warnings

    def keep_warnings(self, warnings: list[Any]) -> None:
        """Set by the client's verifier (`plans.verified_action`) once it has checked the bundle."""
        self._warnings = list(warnings)


class Funds(Closed):
    endpoint: str
    amount_base: str | None = Field(default=None, pattern=r"^[0-9]+$")
    wallet: str
    state: str
    note: str


class Session(Open, _Raw):
    """A session's `session` view (create, read, observe, refresh, cancel answers)."""

    version: str
    view: Literal["session"]
    session_id: str
    status: SessionStatus
    next_operation: NextOperation
    operations_allowed: list[str]
    route: str
    step_count: int = Field(ge=1)
    current_step: int = Field(ge=0)
    phase: str
    session_version: int = Field(ge=1)
    action_available: bool
    current_action: PreparedAction | None = None
    quote_binding: dict[str, Any]
    funds: Funds
    steps: list[dict[str, Any]]
    reapproval: dict[str, Any] | None = None
    cancelled: dict[str, Any] | None = None
    note: str | None = None
    idempotent_replay: bool
    preflight: dict[str, Any] | None = None  # advice for `current_action` (absent without one)
    watch: dict[str, Any] | None = None  # {active, reason, chain}: whether the service follows it by itself
    signed: Literal[False]
    submitted: Literal[False]
    server_signing: Literal[False]
    server_submission: Literal[False]
    _handle: Any = PrivateAttr(default=None)

    @property
    def handle(self) -> Any:
        """The SessionHandle (id, token, verification context) that drives this session."""
        return self._handle

    def attach(self, handle: Any) -> None:
        """Set by the client (`plans`) on every session answer it parses."""
        self._handle = handle


class SessionView(Open, _Raw):
    """The workflow, receipt and next_action views (their extra fields stay as parsed JSON)."""

    version: str
    view: Literal["workflow", "receipt", "next_action"]
    session_id: str
    status: SessionStatus
    next_operation: NextOperation
    route: str
    current_step: int = Field(ge=0)
    session_version: int = Field(ge=1)
    server_signing: Literal[False]
    server_submission: Literal[False]


__all__ = [
    "Capabilities",
    "Continuation",
    "DirectRouteSummary",
    "Funds",
    "PreparedAction",
    "Quote",
    "QuoteBinding",
    "Session",
    "SessionView",
    "Status",
    "SummaryStep",
]
