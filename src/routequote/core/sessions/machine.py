"""The session state machine: one explicit table, nothing else decides a transition.

A session carries an approved quote through every step of its route. Only verified actual output
advances it; each next action is prepared from a fresh quote of what the chain shows arrived. Every
operation maps to an *event*; `TRANSITIONS[(status, event)]` is the only source of the next status. A
pair missing from the table is illegal and refused (`IllegalTransition`, nothing changes).
"""

from __future__ import annotations

from enum import StrEnum


class Status(StrEnum):
    ACTION_REQUIRED = (
        "action_required"  # v1 corridor: the next action is built only when the caller asks for it
    )
    ACTION_READY = "action_ready"  # an unsigned action is waiting for the caller to sign and submit
    AWAITING_SOURCE_RECEIPT = "awaiting_source_receipt"  # named transactions are not yet final on chain
    AWAITING_DESTINATION = (
        "awaiting_destination"  # a bridge message is in flight (attestation, fill, delivery)
    )
    ACTION_EXPIRED = "action_expired"  # the action's bundle expired unsubmitted: refresh it
    REAPPROVAL_REQUIRED = "reapproval_required"  # a fresh quote fell below the approved bounds: funds parked
    COMPLETE = "complete"
    CANCELLED = "cancelled"
    FAILED = "failed"


class Event(StrEnum):
    CREATE = "create"  # session created with its first action
    CREATE_WITHOUT_ACTION = (
        "create_without_action"  # v1 corridor: the quote is locked, no transaction is built
    )
    SUBMITTED_PENDING = "submitted_pending"  # the caller named transactions; not final yet
    STEP_VERIFIED_NEXT_READY = (
        "step_verified_next_ready"  # step output verified; next step re-quoted and built
    )
    STEP_VERIFIED_NEXT_REQUIRED = (
        "step_verified_next_required"  # v1: step output verified; next step not built yet
    )
    STEP_VERIFIED_BRIDGE_IN_FLIGHT = "step_verified_bridge_in_flight"  # source side of a bridge verified
    STEP_VERIFIED_FINAL = "step_verified_final"  # the last step's output verified
    DESTINATION_PENDING = "destination_pending"  # the bridge has not delivered yet
    DESTINATION_ACTION_READY = (
        "destination_action_ready"  # the mint needs the caller's transaction (CCTP receive)
    )
    REQUOTE_BELOW_APPROVAL = (
        "requote_below_approval"  # fresh pricing breaks the approved bounds: stop, say where funds are
    )
    EXPIRE = "expire"  # the current action's bundle expired with nothing observed
    REFRESH = "refresh"  # a new action for the same step, inside the approved bounds
    PREPARE_ACTION = "prepare_action"  # v1: the caller asked for the next step's action; re-quoted and built
    BRIDGE_FAILED = "bridge_failed"  # the bridge refunded or the message can never be delivered
    CANCEL = "cancel"


class NextOperation(StrEnum):
    SUBMIT_CURRENT_ACTION = "submit_current_action"
    OBSERVE = "observe"
    REFRESH_ACTION = "refresh_action"
    PREPARE_ACTION = "prepare_action"
    NONE = "none"


S, E = Status, Event
_VERIFIED = {
    E.STEP_VERIFIED_NEXT_READY: S.ACTION_READY,
    E.STEP_VERIFIED_NEXT_REQUIRED: S.ACTION_REQUIRED,
    E.STEP_VERIFIED_BRIDGE_IN_FLIGHT: S.AWAITING_DESTINATION,
    E.STEP_VERIFIED_FINAL: S.COMPLETE,
    E.REQUOTE_BELOW_APPROVAL: S.REAPPROVAL_REQUIRED,
}
_DELIVERED = {
    E.DESTINATION_PENDING: S.AWAITING_DESTINATION,
    E.DESTINATION_ACTION_READY: S.ACTION_READY,
    E.STEP_VERIFIED_NEXT_READY: S.ACTION_READY,
    E.STEP_VERIFIED_NEXT_REQUIRED: S.ACTION_REQUIRED,
    E.STEP_VERIFIED_FINAL: S.COMPLETE,
    E.REQUOTE_BELOW_APPROVAL: S.REAPPROVAL_REQUIRED,
    E.BRIDGE_FAILED: S.FAILED,
}

# (status, event) -> next status. `None` is the status before a session exists.
TRANSITIONS: dict[tuple[Status | None, Event], Status] = {
    (None, E.CREATE): S.ACTION_READY,
    # v1 corridor: create locks the quote and builds nothing; each action is built when the caller asks
    (None, E.CREATE_WITHOUT_ACTION): S.ACTION_REQUIRED,
    (S.ACTION_REQUIRED, E.PREPARE_ACTION): S.ACTION_READY,
    (S.ACTION_REQUIRED, E.REQUOTE_BELOW_APPROVAL): S.REAPPROVAL_REQUIRED,
    (S.ACTION_REQUIRED, E.CANCEL): S.CANCELLED,
    # the caller submitted the current action and names its transactions
    (S.ACTION_READY, E.SUBMITTED_PENDING): S.AWAITING_SOURCE_RECEIPT,
    **{(S.ACTION_READY, e): s for e, s in _VERIFIED.items()},
    (S.ACTION_READY, E.EXPIRE): S.ACTION_EXPIRED,
    # a destination action (the CCTP mint) was submitted and is not final yet
    (S.ACTION_READY, E.DESTINATION_PENDING): S.AWAITING_DESTINATION,
    (S.ACTION_READY, E.CANCEL): S.CANCELLED,
    (S.AWAITING_SOURCE_RECEIPT, E.SUBMITTED_PENDING): S.AWAITING_SOURCE_RECEIPT,
    **{(S.AWAITING_SOURCE_RECEIPT, e): s for e, s in _VERIFIED.items()},
    (S.AWAITING_SOURCE_RECEIPT, E.CANCEL): S.CANCELLED,
    # the message is in flight: only the destination side (or a cancel) moves it
    **{(S.AWAITING_DESTINATION, e): s for e, s in _DELIVERED.items()},
    (S.AWAITING_DESTINATION, E.CANCEL): S.CANCELLED,
    # an expired bundle may still have been mined before its deadline: observing it is legal
    (S.ACTION_EXPIRED, E.REFRESH): S.ACTION_READY,
    (S.ACTION_EXPIRED, E.SUBMITTED_PENDING): S.AWAITING_SOURCE_RECEIPT,
    (S.ACTION_EXPIRED, E.DESTINATION_PENDING): S.AWAITING_DESTINATION,
    **{(S.ACTION_EXPIRED, e): s for e, s in _VERIFIED.items()},
    (S.ACTION_EXPIRED, E.CANCEL): S.CANCELLED,
    (S.REAPPROVAL_REQUIRED, E.CANCEL): S.CANCELLED,
}

NEXT_OPERATION: dict[Status, NextOperation] = {
    S.ACTION_REQUIRED: NextOperation.PREPARE_ACTION,
    S.ACTION_READY: NextOperation.SUBMIT_CURRENT_ACTION,
    S.AWAITING_SOURCE_RECEIPT: NextOperation.OBSERVE,
    S.AWAITING_DESTINATION: NextOperation.OBSERVE,
    S.ACTION_EXPIRED: NextOperation.REFRESH_ACTION,
    S.REAPPROVAL_REQUIRED: NextOperation.NONE,
    S.COMPLETE: NextOperation.NONE,
    S.CANCELLED: NextOperation.NONE,
    S.FAILED: NextOperation.NONE,
}

TERMINAL: frozenset[Status] = frozenset({S.COMPLETE, S.CANCELLED, S.FAILED})

# What a caller may do in each status (read is always allowed). The service checks this first, so an
# operation that cannot apply is refused before any chain or market is read; the table above then decides.
OPERATIONS: dict[Status, frozenset[str]] = {
    S.ACTION_REQUIRED: frozenset({"prepare", "cancel"}),
    S.ACTION_READY: frozenset({"observe", "cancel"}),
    S.AWAITING_SOURCE_RECEIPT: frozenset({"observe", "cancel"}),
    S.AWAITING_DESTINATION: frozenset({"observe", "cancel"}),
    S.ACTION_EXPIRED: frozenset({"observe", "refresh", "cancel"}),
    S.REAPPROVAL_REQUIRED: frozenset({"cancel"}),
    S.COMPLETE: frozenset(),
    S.CANCELLED: frozenset(),
    S.FAILED: frozenset(),
}

# the events each operation may raise; every (status, operation) pair above reaches at least one legal event
OPERATION_EVENTS: dict[str, frozenset[Event]] = {
    "observe": frozenset(
        {
            E.SUBMITTED_PENDING,
            E.STEP_VERIFIED_NEXT_READY,
            E.STEP_VERIFIED_NEXT_REQUIRED,
            E.STEP_VERIFIED_BRIDGE_IN_FLIGHT,
            E.STEP_VERIFIED_FINAL,
            E.DESTINATION_PENDING,
            E.DESTINATION_ACTION_READY,
            E.REQUOTE_BELOW_APPROVAL,
            E.BRIDGE_FAILED,
        }
    ),
    "prepare": frozenset({E.PREPARE_ACTION, E.REQUOTE_BELOW_APPROVAL}),
    "refresh": frozenset({E.REFRESH, E.REQUOTE_BELOW_APPROVAL}),
    "cancel": frozenset({E.CANCEL}),
}


class OperationNotAllowed(Exception):
    """`operation` cannot apply while the session is in `status` (refused before anything is read)."""

    def __init__(self, status: Status, operation: str) -> None:
        allowed = sorted(OPERATIONS[status])
        super().__init__(
            f"{operation} is not allowed while the session is {status.value}; allowed: {', '.join(['read', *allowed])}"
        )
        self.status = status
        self.operation = operation


def check_operation(status: Status, operation: str) -> None:
    if operation not in OPERATIONS[status]:
        raise OperationNotAllowed(status, operation)


class IllegalTransition(Exception):
    """`event` is not allowed in `status`. Carries both so the caller can be told exactly why."""

    def __init__(self, status: Status | None, event: Event) -> None:
        super().__init__(
            f"{event.value} is not allowed while the session is {status.value if status else 'new'}"
        )
        self.status = status
        self.event = event


def next_status(status: Status | None, event: Event) -> Status:
    """The status after `event`, or IllegalTransition (nothing may change)."""
    try:
        return TRANSITIONS[(status, event)]
    except KeyError:
        raise IllegalTransition(status, event) from None


def allowed_events(status: Status | None) -> list[Event]:
    return [e for (s, e) in TRANSITIONS if s == status]


def operations_allowed(status: Status) -> list[str]:
    return ["read", *sorted(OPERATIONS[status])]
