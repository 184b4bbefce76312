"""The event log's entries (core/sessions/event_log.py) and the resting states (core/sessions/lifecycle.py): what an
event says about a change, its one JSON shape, and the table docs/sessions.md shows."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from routequote.core.sessions.event_log import describe, ends_stream, event_json, parse_event_id
from routequote.core.sessions.lifecycle import OUTCOMES, outcome, outcomes_table
from routequote.core.sessions.machine import NEXT_OPERATION, TERMINAL, Event, NextOperation, Status
from routequote.surfaces.rest_events import EVENT_SCHEMA

DOCS = Path(__file__).resolve().parents[3] / "docs" / "sessions.md"
SID = "072447e9-69d5-545a-b648-b067cce0e49a"
WALLET = "0x2222222222222222222222222222222222222222"


def document(steps: list[dict[str, Any]], funds: dict[str, Any], current: int = 0) -> dict[str, Any]:
    return {"steps": steps, "current_step": current, "funds": funds}


def step(**extra: Any) -> dict[str, Any]:
    return {"index": 0, "provider": "cctp_v2", "from": "base:USDC", "to": "arbitrum:USDC", **extra}


def test_the_docs_show_the_resting_states_table_and_every_event_type() -> None:
    text = DOCS.read_text()
    assert outcomes_table() in text
    vocabulary = text[text.index("| type | the change |") : text.index("## Resting states")]
    assert set(re.findall(r"^\| `([a-z_]+)` \|", vocabulary, re.M)) == {e.value for e in Event}


def test_every_status_that_waits_for_nobody_is_a_resting_state_and_no_other() -> None:
    resting = {s for s, op in NEXT_OPERATION.items() if op is NextOperation.NONE}
    assert {o.status for o in OUTCOMES} == resting
    assert {o.status for o in OUTCOMES if o.terminal} == set(TERMINAL)
    for status in Status:
        assert ends_stream(status.value) == (status in resting)
    assert outcome("failed", "refund_expected") is not None
    assert outcome("failed", "refund_expected").name == "refund_on_origin"  # type: ignore[union-attr]
    assert outcome("failed", None).name == "failed"  # type: ignore[union-attr]
    assert outcome("awaiting_destination", "in_flight") is None


def test_a_change_records_the_evidence_it_added_and_where_the_funds_are() -> None:
    named = ["0x" + "ab" * 32]
    before = document(
        [step()], {"endpoint": "base:USDC", "amount_base": "5000", "wallet": WALLET, "state": "in_wallet"}
    )
    pending = document(
        [step(claimed_tx_ids=named)],
        {"endpoint": "base:USDC", "amount_base": "5000", "wallet": WALLET, "state": "in_wallet"},
    )
    k, op, txs, funds = describe(before, pending, "awaiting_source_receipt")
    assert (k, op) == (0, "observe")
    assert txs == (
        {"step_index": 0, "side": "source", "chain": "base", "tx_id": named[0], "verified": False},
    )
    assert funds == {
        "chain": "base",
        "token": "USDC",
        "amount_base": "5000",
        "owner": WALLET,
        "wallet": WALLET,
        "state": "in_wallet",
    }
    flying = document(
        [step(claimed_tx_ids=named, source={"tx_ids": named})],
        {"endpoint": "arbitrum:USDC", "amount_base": None, "wallet": WALLET, "state": "in_flight"},
    )
    _, _, txs, funds = describe(pending, flying, "awaiting_destination")
    assert [t["verified"] for t in txs] == [True]  # the named one again, now verified; nothing else
    assert funds is not None and funds["owner"] == "bridge:cctp_v2" and funds["amount_base"] is None
    mint = "0x" + "cd" * 32
    landed = document(
        [step(claimed_tx_ids=named, source={"tx_ids": named}, destination={"tx_ids": [mint]})],
        {"endpoint": "arbitrum:USDC", "amount_base": "4990", "wallet": WALLET, "state": "delivered"},
    )
    _, op, txs, funds = describe(flying, landed, "complete")
    assert op == "none" and [(t["chain"], t["side"], t["tx_id"]) for t in txs] == [
        ("arbitrum", "destination", mint)
    ]
    assert funds is not None and funds["owner"] == WALLET and funds["amount_base"] == "4990"
    assert describe(landed, landed, "complete")[2] == ()  # nothing new recorded: no evidence


def test_the_event_json_has_exactly_the_documented_shape() -> None:
    at = datetime(2026, 11, 22, 5, 0, 0, 123456, tzinfo=UTC)
    funds = {
        "chain": "base",
        "token": "USDC",
        "amount_base": "1",
        "owner": WALLET,
        "wallet": WALLET,
        "state": "delivered",
    }
    body = event_json(
        session_id=SID,
        sequence=2,
        type_="step_verified_final",
        status="complete",
        previous_status="action_ready",
        step_index=0,
        next_operation="none",
        transactions=(),
        funds=funds,
        at=at,
    )
    assert list(body) == EVENT_SCHEMA["required"]
    assert body["id"] == f"{SID}:2" and body["at"] == "2026-11-22T05:00:00.123Z"
    assert (body["outcome"], body["terminal"], body["final_on_chain"]) == ("complete", True, True)
    legacy = event_json(
        session_id=SID,
        sequence=1,
        type_="create",
        status="action_ready",
        previous_status=None,
        step_index=None,
        next_operation=None,
        transactions=(),
        funds=None,
        at=at,
    )  # an event stored before the detail column: next_operation still follows from its status
    assert legacy["next_operation"] == "submit_current_action" and legacy["outcome"] is None
    assert legacy["terminal"] is False and legacy["final_on_chain"] is None


def test_last_event_id_names_an_event_of_this_session_only() -> None:
    assert parse_event_id(SID, f"{SID}:7") == 7
    assert parse_event_id(SID, "7") == 7
    assert parse_event_id(SID, " 12 ") == 12
    for bad in ("", "x", "-1", "1.5", f"{SID[:-1]}0:3", "other:3", "1" * 10, "٣"):
        assert parse_event_id(SID, bad) is None, bad
