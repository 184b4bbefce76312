"""The typed session document round-trips the stored JSON exactly (keys, values and their order), keeps what
it does not name, and refuses a document of another version."""

from __future__ import annotations

import asyncio
import copy
import json
from typing import Any

import pytest
from tests.unit.sessions.corpus import TOKEN, Recorder, swap_receipts

from routequote.core.sessions.document import SESSION_VERSION, SessionDocument
from routequote.core.sessions.entries import (
    AcrossDeposit,
    ActionEntry,
    Cancelled,
    CctpBurn,
    Funds,
    OftSend,
    Requote,
    Settlement,
    StepEntry,
    StepStatus,
    parse_bridge,
)


async def _stored_documents() -> list[dict[str, Any]]:
    r = Recorder()
    out = []
    for seed, route in enumerate(("base:ETH->base:USDC", "base:ETH->arbitrum:USDC")):
        made = await r.sessions.create(await r.create_body(route), TOKEN)
        sid = made.body["session_id"]
        out.append((await r.sessions.store.get(sid)).state)
        action = made.body["current_action"]["unsigned_action"]
        await r.sessions.observe(
            sid,
            TOKEN,
            {
                "idempotency_key": r.key(),
                "transaction_hashes": swap_receipts(r.evm, action, 10**18, 70 + seed),
            },
        )
        out.append((await r.sessions.store.get(sid)).state)
        other = (await r.sessions.create(await r.create_body(route), TOKEN)).body["session_id"]
        await r.sessions.cancel(other, TOKEN, {"idempotency_key": r.key()})
        out.append((await r.sessions.store.get(other)).state)
    return out


def test_stored_documents_round_trip_exactly() -> None:
    documents = asyncio.run(_stored_documents())
    assert len(documents) == 6 and len({json.dumps(d, sort_keys=True) for d in documents}) == 6
    for raw in documents:
        assert json.dumps(SessionDocument.parse(raw).to_json()) == json.dumps(raw)


def test_an_older_document_keeps_its_shape() -> None:
    raw = asyncio.run(_stored_documents())[0]
    older = {k: v for k, v in raw.items() if k not in ("mode", "cancelled")}
    older["kept_from_an_older_release"] = {"x": 1}
    doc = SessionDocument.parse(copy.deepcopy(older))
    assert doc.mode is None and not doc.is_v1
    assert json.dumps(doc.to_json()) == json.dumps(older)
    cancelled = doc.evolve(cancelled=Cancelled.of(at="t")).to_json()  # a key set later is written
    assert cancelled["cancelled"] == {"at": "t"} and "mode" not in cancelled
    with pytest.raises(TypeError):  # a typed entry is never handed over as a JSON object
        doc.evolve(cancelled={"at": "t"})
    with pytest.raises(TypeError):
        doc.step(0).set(source={"tx_ids": []})


@pytest.mark.parametrize(
    "broken",
    [
        {"version": "routequote-session-v0"},
        {"version": SESSION_VERSION},
        [],
    ],
)
def test_a_document_of_another_shape_is_refused(broken: Any) -> None:
    with pytest.raises(ValueError):
        SessionDocument.parse(broken)


def test_changes_make_new_documents() -> None:
    raw = asyncio.run(_stored_documents())[0]
    doc = SessionDocument.parse(raw)
    entry = doc.step(0).set(status=StepStatus.ACTION_EXPIRED)
    changed = doc.with_step(0, entry, phase="done")
    assert doc.steps[0].status is StepStatus.ACTION_READY and doc.phase == "source"
    assert changed.steps[0].status is StepStatus.ACTION_EXPIRED and changed.phase == "done"
    assert changed.to_json()["steps"][0]["status"] == "action_expired"
    with pytest.raises(AttributeError):
        doc.phase = "done"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        entry.status = StepStatus.COMPLETE  # type: ignore[misc]


def test_typed_entries_keep_their_keys_in_stored_order() -> None:
    """A key set later goes after the stored ones, a key set again keeps its place, an unset key is gone, a key
    the type does not name is kept; the funds and action entries round-trip the same way."""
    raw = asyncio.run(_stored_documents())[1]  # a verified swap: action_id, claimed_tx_ids, source, output
    stored = raw["steps"][0]
    entry = StepEntry.parse({**stored, "kept": [1]})
    assert list(entry.to_json()) == [*stored, "kept"] and entry.from_ == stored["from"]
    again = entry.set(status=StepStatus.PENDING, requote=Requote.of(input_base="1")).unset("claimed_tx_ids")
    assert list(again.to_json()) == [k for k in [*stored, "kept", "requote"] if k != "claimed_tx_ids"]
    assert again.to_json()["status"] == "pending" and type(again.to_json()["status"]) is str
    funds = Funds.parse(raw["funds"])
    assert funds.to_json() == raw["funds"] and list(funds.to_json()) == list(raw["funds"])
    assert [ActionEntry.parse(a).to_json() for a in raw["actions"]] == raw["actions"]


def test_bridge_evidence_is_typed_by_its_kind() -> None:
    across = {
        "kind": "across",
        "origin_chain_id": 8453,
        "deposit_id": 7,
        "input_amount": 5,
        "output_amount": 4,
        "output_token": "0x" + "33" * 20,
        "recipient": "0x" + "22" * 20,
        "fill_deadline": 9,
    }
    d = parse_bridge(across)
    assert isinstance(d, AcrossDeposit) and d.depositor is None and d.to_json() == across
    assert list(d.set(search_from_block=3).to_json())[-1] == "search_from_block"
    burn = parse_bridge({"kind": "cctp", "source_domain": 6, "source_tx": "0x01", "burn_amount": 10})
    assert isinstance(burn, CctpBurn) and burn.attestation is None
    assert isinstance(parse_bridge({"kind": "oft", "guid": "0x02", "source_tx": "0x03"}), OftSend)
    for broken in ({"kind": "wormhole"}, {"kind": "across"}, [], {"kind": "cctp", "source_domain": 6}):
        with pytest.raises((ValueError, TypeError)):
            parse_bridge(broken)
    with pytest.raises(ValueError):  # a step status the machine does not know
        StepEntry.parse({"index": 0, "provider": "p", "from": "a", "to": "b", "status": "lost"})


def test_the_settlement_record_is_typed_and_round_trips() -> None:
    """The v1 corridor's ERC-4337 settlement facts (`steps[2].settlement`), keys in their stored order."""
    settlement = {
        "kind": "erc4337_user_operation",
        "user_op_hash": "0x01",
        "entry_point": "0x02",
        "sender": "0x03",
        "nonce": 5,
        "actual_gas_cost": 7,
        "actual_gas_used": 9,
        "eth_recipient": "0x04",
    }
    raw = {
        "index": 2,
        "provider": "p",
        "from": "a",
        "to": "b",
        "status": "complete",
        "settlement": settlement,
    }
    entry = StepEntry.parse(raw)
    assert isinstance(entry.settlement, Settlement) and entry.settlement.user_op_hash == "0x01"
    assert json.dumps(entry.to_json()) == json.dumps(raw)
    with pytest.raises(TypeError):  # typed: set as a record, never as a JSON object
        entry.set(settlement=settlement)
