"""The session state machine: every legal transition is in the one table and reachable from a caller
operation; every other (status, event) pair is refused and names both."""

from __future__ import annotations

import itertools

import pytest

from routequote.core.sessions.machine import (
    NEXT_OPERATION,
    OPERATION_EVENTS,
    OPERATIONS,
    TERMINAL,
    TRANSITIONS,
    Event,
    IllegalTransition,
    NextOperation,
    OperationNotAllowed,
    Status,
    check_operation,
    next_status,
)

STATUSES: list[Status | None] = [None, *Status]


@pytest.mark.parametrize(("status", "event"), sorted(TRANSITIONS, key=lambda k: (str(k[0]), k[1].value)))
def test_every_legal_transition(status: Status | None, event: Event) -> None:
    assert next_status(status, event) is TRANSITIONS[(status, event)]


ILLEGAL = [(s, e) for s, e in itertools.product(STATUSES, Event) if (s, e) not in TRANSITIONS]


@pytest.mark.parametrize(("status", "event"), ILLEGAL)
def test_every_illegal_transition_is_refused(status: Status | None, event: Event) -> None:
    with pytest.raises(IllegalTransition) as info:
        next_status(status, event)
    assert info.value.status is status and info.value.event is event
    assert event.value in str(info.value)


def test_terminal_statuses_have_no_way_out() -> None:
    for status in TERMINAL:
        assert not [e for (s, e) in TRANSITIONS if s is status]
        assert OPERATIONS[status] == frozenset()
        assert NEXT_OPERATION[status] is NextOperation.NONE


def test_every_status_is_reachable_from_create() -> None:
    seen = {Status.ACTION_READY}
    frontier = [Status.ACTION_READY]
    while frontier:
        s = frontier.pop()
        for (src, _), dst in TRANSITIONS.items():
            if src is s and dst not in seen:
                seen.add(dst)
                frontier.append(dst)
    assert seen == set(Status)


def test_each_allowed_operation_can_fire_and_others_are_refused() -> None:
    for status in Status:
        for op in OPERATION_EVENTS:
            if op in OPERATIONS[status]:
                check_operation(status, op)
                assert any((status, e) in TRANSITIONS for e in OPERATION_EVENTS[op]), (status, op)
            else:
                with pytest.raises(OperationNotAllowed):
                    check_operation(status, op)


def test_refresh_only_for_expired_and_only_verified_output_moves_forward() -> None:
    assert [s for s in Status if "refresh" in OPERATIONS[s]] == [Status.ACTION_EXPIRED]
    into_complete = {e for (s, e), d in TRANSITIONS.items() if d is Status.COMPLETE}
    assert into_complete == {Event.STEP_VERIFIED_FINAL}
    next_action = {e for (s, e), d in TRANSITIONS.items() if d is Status.ACTION_READY and s is not None}
    # v1 corridor: an action is also built when the caller asks for it after a verified step (prepare_action)
    assert next_action == {
        Event.STEP_VERIFIED_NEXT_READY,
        Event.DESTINATION_ACTION_READY,
        Event.REFRESH,
        Event.PREPARE_ACTION,
    }


def test_docs_draw_exactly_the_table() -> None:
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[3] / "docs" / "sessions.md").read_text()
    drawn = {line.strip() for line in doc.splitlines() if "-->" in line and not line.strip().endswith("[*]")}
    table = {
        f"{'[*]' if s is None else s.value} --> {d.value}: {e.value}" for (s, e), d in TRANSITIONS.items()
    }
    assert drawn == table
