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
    cancelled = doc.evolve(cancelled={"at": "t"}).to_json()  # a key set later is written
    assert cancelled["cancelled"] == {"at": "t"} and "mode" not in cancelled


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
    entry = doc.step(0)
    entry["status"] = "changed"
    changed = doc.with_step(0, entry, phase="done")
    assert doc.steps[0]["status"] != "changed" and doc.phase == "source"
    assert changed.steps[0]["status"] == "changed" and changed.phase == "done"
    with pytest.raises(AttributeError):
        doc.phase = "done"  # type: ignore[misc]
