"""The nested entries of a session document, typed: each step's record (`StepEntry`, with its `StepStatus`),
the funds (`Funds`), the action entries (`ActionEntry`) and each bridge's source evidence (`AcrossDeposit`,
`CctpBurn`, `OftSend`), what a step proved (`Proof`), its re-quote (`Requote`), and the reapproval and cancel
records. Parsed from the stored JSON at the store boundary (`SessionDocument.parse`) and
written back exactly (`to_json`): the stored keys keep their order, a key appears only once it is set, and a
key the type does not name is kept as it was. Frozen: a change makes a new entry (`set`, `unset`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields, replace
from enum import StrEnum
from typing import Any, Self, TypeVar

JsonObject = dict[str, Any]


class StepStatus(StrEnum):
    """Where one step stands (`steps[k].status`); the session's own status is `machine.Status`."""

    PENDING = "pending"
    ACTION_REQUIRED = "action_required"
    ACTION_READY = "action_ready"
    ACTION_EXPIRED = "action_expired"
    AWAITING_RECEIPT = "awaiting_receipt"
    IN_FLIGHT = "in_flight"
    COMPLETE = "complete"
    REAPPROVAL_REQUIRED = "reapproval_required"
    REFUNDED_ON_ORIGIN = "refunded_on_origin"


@dataclass(frozen=True, kw_only=True)
class Stored:
    """A typed JSON object that round-trips exactly: `keys` are the stored keys in their order (a field the
    record never had stays absent), `extra` what the type does not name. A field's stored key is its name, or
    its `metadata["key"]` (`from`)."""

    keys: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @classmethod
    def of(cls, **values: Any) -> Self:
        """A new record with these fields, stored in this order (by field name)."""
        names = _attrs(cls)
        return cls(**values, keys=tuple(names[a] for a in values))

    @classmethod
    def parse(cls, raw: Any) -> Self:
        if not isinstance(raw, dict):
            raise ValueError(f"{cls.__name__}: not a JSON object")
        keys = _keys(cls)
        values = {keys[k]: cls.read_field(keys[k], v) for k, v in raw.items() if k in keys}
        return cls(**values, keys=tuple(raw), extra={k: v for k, v in raw.items() if k not in keys})

    @classmethod
    def read_field(cls, name: str, value: Any) -> Any:
        """The typed value of field `name` from its stored JSON (as stored unless a record says otherwise)."""
        return value

    def to_json(self) -> JsonObject:
        keys = _keys(type(self))
        out: JsonObject = {}
        for k in self.keys:
            out[k] = _json(getattr(self, keys[k])) if k in keys else self.extra[k]
        return out

    def set(self, **changes: Any) -> Self:
        """A copy with these fields set; a field not stored yet is appended after the stored ones."""
        names = _attrs(type(self))
        for name, value in changes.items():
            if isinstance(value, dict) and _typed_field(self, name, value):
                raise TypeError(
                    f"{type(self).__name__}.{name} is typed: set it as such, not as a JSON object"
                )
        added = tuple(names[a] for a in changes if names[a] not in self.keys)
        return replace(self, keys=self.keys + added, **changes)

    def unset(self, name: str) -> Self:
        """A copy without field `name` (absent, as if never stored)."""
        key = _attrs(type(self))[name]
        default: Any = next(f.default for f in fields(self) if f.name == name)
        if default is MISSING:
            raise ValueError(f"{type(self).__name__}.{name} is required")
        return replace(self, keys=tuple(k for k in self.keys if k != key), **{name: default})


def _typed_field(record: Stored, name: str, value: JsonObject) -> bool:
    """Whether field `name` holds a typed entry (what its stored JSON parses to is not a JSON object)."""
    try:
        return not isinstance(record.read_field(name, value), dict)
    except (TypeError, ValueError):
        return True


_ATTRS: dict[type[Stored], dict[str, str]] = {}
_KEYS: dict[type[Stored], dict[str, str]] = {}


def _attrs(cls: type[Stored]) -> dict[str, str]:
    """Field name -> stored key."""
    if cls not in _ATTRS:
        _ATTRS[cls] = {
            f.name: f.metadata.get("key", f.name) for f in fields(cls) if f.name not in ("keys", "extra")
        }
    return _ATTRS[cls]


def _keys(cls: type[Stored]) -> dict[str, str]:
    """Stored key -> field name."""
    if cls not in _KEYS:
        _KEYS[cls] = {k: a for a, k in _attrs(cls).items()}
    return _KEYS[cls]


def _json(value: Any) -> Any:
    if isinstance(value, Stored):
        return value.to_json()
    if isinstance(value, StrEnum):
        return value.value
    return value


# ---- funds and actions ---------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Funds(Stored):
    """Where the caller's funds are: an endpoint (`chain:token`), an amount when known, the wallet, and the
    `state` (in_wallet, in_flight, delivered, refund_expected)."""

    endpoint: str
    amount_base: str | None = None
    wallet: str | None = None
    state: str | None = None
    note: str | None = None


@dataclass(frozen=True, kw_only=True)
class ActionEntry(Stored):
    """One action handed out (its bundle is `current_action` while it is current)."""

    action_id: str
    step_index: int | None = None
    phase: str | None = None
    payload_sha256: str | None = None
    prepared_at: str | None = None
    expires_at: str | None = None
    refreshed: bool | None = None


@dataclass(frozen=True, kw_only=True)
class Reapproval(Stored):
    """Why the session parked the funds (409 reapproval_required) and where to quote from."""

    reason: str
    message: str | None = None
    funds: Funds | None = None
    quote_from_here: JsonObject | None = None

    @classmethod
    def read_field(cls, name: str, value: Any) -> Any:
        return Funds.parse(value) if name == "funds" and value is not None else value


@dataclass(frozen=True, kw_only=True)
class Cancelled(Stored):
    """When the caller cancelled, from which status, and where the funds were then."""

    at: str
    from_status: str | None = None
    funds: Funds | None = None

    @classmethod
    def read_field(cls, name: str, value: Any) -> Any:
        return Funds.parse(value) if name == "funds" and value is not None else value


# ---- what a step proved, and its re-quote -----------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Proof(Stored):
    """What a step's transactions proved on its source (`steps[k].source`) or destination
    (`steps[k].destination`): the transaction ids, the amounts (base units, as text), fees and block times;
    a destination proof names its `kind` (cctp_receive_message, across_fill, layerzero_delivery, ...) and may
    carry its bridge message's facts."""

    kind: str | None = None
    tx_ids: list[str] | None = None
    actual_input_base: str | None = None
    actual_output_base: str | None = None
    service_fee_paid_base: str | None = None
    network_fee: dict[str, str] | None = None
    block_times: list[int | None] | None = None
    bridge: JsonObject | None = None


@dataclass(frozen=True, kw_only=True)
class Requote(Stored):
    """A step re-priced fresh from the verified output of the step before it."""

    market_as_of: str | None = None
    market_source: str | None = None
    market_live: bool | None = None
    input_base: str
    expected_output_base: str | None = None
    minimum_output_base: str | None = None
    projected_route_expected_output_base: str | None = None
    projected_route_minimum_output_base: str | None = None


# ---- each bridge's source evidence --------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class AcrossDeposit(Stored):
    """An Across deposit as its `FundsDeposited` recorded it (what its fill must repeat), and the block the
    fill search started from."""

    kind: str = "across"
    origin_chain_id: int
    destination_chain_id: int | None = None
    deposit_id: int
    input_amount: int
    input_token: str | None = None  # these four: recorded by deposits observed since they were added
    depositor: str | None = None
    exclusive_relayer: str | None = None
    message_hash: str | None = None
    output_amount: int
    output_token: str
    recipient: str
    fill_deadline: int
    spoke_pool: str | None = None
    source_tx: str | None = None
    source_block: int | None = None
    search_from_block: int | None = None


@dataclass(frozen=True, kw_only=True)
class CctpBurn(Stored):
    """A CCTP v2 burn (`DepositForBurn` and `MessageSent`), then Circle's attested message, and the block the
    relayed mint's search started from (v1)."""

    kind: str = "cctp"
    source_domain: int
    destination_domain: int | None = None
    source_tx: str
    source_block: int | None = None
    burn_token: str | None = None
    burn_amount: int
    max_fee: int | None = None
    min_finality_threshold: int | None = None
    mint_recipient: str | None = None
    message_sent: str | None = None
    message: str | None = None
    attestation: str | None = None
    fee_executed: str | None = None
    mint_search_from_block: int | None = None


@dataclass(frozen=True, kw_only=True)
class OftSend(Stored):
    """A LayerZero OFT send (`OFTSent`): the GUID its delivery must carry, and what LayerZero Scan last said."""

    kind: str = "oft"
    guid: str
    dst_eid: int | None = None
    amount_sent: int | None = None
    amount_received: int | None = None
    to: str | None = None
    oft: str | None = None
    source_tx: str
    source_block: int | None = None
    layerzero_status: str | None = None


BridgeEvidence = AcrossDeposit | CctpBurn | OftSend
B = TypeVar("B", AcrossDeposit, CctpBurn, OftSend)
BRIDGES: dict[str, type[AcrossDeposit] | type[CctpBurn] | type[OftSend]] = {
    "across": AcrossDeposit,
    "cctp": CctpBurn,
    "oft": OftSend,
}


def parse_bridge(raw: Any) -> BridgeEvidence:
    """A step's `bridge` record, by the `kind` its source evidence wrote."""
    kind = raw.get("kind") if isinstance(raw, dict) else None
    record = BRIDGES.get(str(kind))
    if record is None:
        raise ValueError(f"a bridge record of unknown kind {kind!r}")
    return record.parse(raw)


@dataclass(frozen=True, kw_only=True)
class Settlement(Stored):
    """The v1 corridor's ERC-4337 settlement as its `UserOperationEvent` proved it (`evidence_4337`)."""

    kind: str = "erc4337_user_operation"
    user_op_hash: str
    entry_point: str
    sender: str
    nonce: int
    actual_gas_cost: int
    actual_gas_used: int
    eth_recipient: str


# ---- a step -----------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class StepEntry(Stored):
    """One step's record: its status, the action handed out for it, what was named and proven on the source
    (`source`) and destination (`destination`), its bridge, its re-quote and its actual output."""

    index: int
    provider: str
    from_: str = field(metadata={"key": "from"})
    to: str
    status: StepStatus
    action_id: str | None = None
    minimum_output_base: str | None = None
    claimed_tx_ids: list[str] | None = None
    destination_claimed_tx_ids: list[str] | None = None
    source: Proof | None = None
    bridge: BridgeEvidence | None = None
    destination_status: str | None = None
    destination: Proof | None = None
    actual_output_base: str | None = None
    requote: Requote | None = None
    settlement: Settlement | None = None

    @classmethod
    def read_field(cls, name: str, value: Any) -> Any:
        if name == "status":
            return StepStatus(value)
        if value is None:
            return None
        if name == "bridge":
            return parse_bridge(value)
        if name in ("source", "destination"):
            return Proof.parse(value)
        if name == "requote":
            return Requote.parse(value)
        if name == "settlement":
            return Settlement.parse(value)
        return value

    def the_bridge(self) -> BridgeEvidence:
        """The bridge in flight (the destination phase guarantees one; a document without it is corrupt)."""
        if self.bridge is None:
            raise ValueError(f"step {self.index} has no bridge record")
        return self.bridge

    def bridge_as(self, kind: type[B]) -> B:
        """The bridge in flight, of the kind its step kind follows (another is a corrupt document)."""
        bridge = self.the_bridge()
        if not isinstance(bridge, kind):
            raise ValueError(f"step {self.index} records a {bridge.kind} bridge, not {kind.__name__}")
        return bridge


__all__ = [
    "BRIDGES",
    "AcrossDeposit",
    "ActionEntry",
    "BridgeEvidence",
    "Cancelled",
    "CctpBurn",
    "Funds",
    "OftSend",
    "Proof",
    "Reapproval",
    "Requote",
    "Settlement",
    "StepEntry",
    "StepStatus",
    "Stored",
    "parse_bridge",
]
