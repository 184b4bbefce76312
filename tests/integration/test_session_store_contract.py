"""One contract for every SessionStore: memory, an SQLite file, and PostgreSQL (a database of this run's own).

The PostgreSQL cases skip with the reason when the server is not reachable on 127.0.0.1:5432. Several OS processes and
each backend's own cases: test_session_store_backends.py (the fixtures: tests/integration/conftest.py)."""

from __future__ import annotations

import asyncio
import base64
import secrets
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest
from tests.support.session_store_contract import T0, create, new_session, step, url_of

from routequote.ports import (
    IdempotencyConflict,
    IdempotentAnswer,
    SessionEvent,
    SessionStore,
    StoreUnavailable,
    TransactionAlreadyUsed,
)
from routequote.storage.sessions_common import create_scope, session_scope
from routequote.storage.sessions_sql import SqlSessionStore

# ---- round trip --------------------------------------------------------------------------------------


async def test_create_then_get_round_trips_the_record_exactly(store: SessionStore) -> None:
    state = {
        "amounts": [2**53 + 1, 2**64, 2**70, -(2**65), 0],  # Python ints beyond doubles and int64
        "as_text": str(2**80),
        "nested": {"b": [True, False, None], "a": {"x": "ünïcødé ✓", "y": ""}},
        "bps": -3,
    }
    record, event = new_session(state)
    assert (
        await store.create(record, event, create_scope(record.token_sha256), "k1", "a" * 64, {"n": 2**66})
        is None
    )
    got = await store.get(record.session_id)
    assert got == record
    assert got is not None and got.state["amounts"][2] == 2**70 and isinstance(got.state["amounts"][2], int)
    assert got.created_at.utcoffset() == timedelta(0) and got.updated_at.tzinfo is not None
    assert await store.get("ses_unknown") is None
    assert await store.events(record.session_id) == [event]
    assert await store.idempotent(create_scope(record.token_sha256), "k1") == IdempotentAnswer(
        "a" * 64, {"n": 2**66}
    )


async def test_timestamps_come_back_as_the_same_instant_in_utc(store: SessionStore) -> None:
    at = datetime(2026, 5, 6, 12, 0, 0, 123456, tzinfo=timezone(timedelta(hours=5, minutes=30)))
    record, event = new_session(at=at)
    await store.create(record, event, create_scope(record.token_sha256), "k", "a" * 64, {})
    got = await store.get(record.session_id)
    assert got is not None
    assert got.created_at == at and got.created_at.utcoffset() == timedelta(0)
    assert got.created_at.hour == 6 and got.created_at.minute == 30
    assert (await store.events(record.session_id))[0].at.utcoffset() == timedelta(0)


async def test_a_read_is_a_copy(store: SessionStore) -> None:
    record = await create(store, {"steps": [{"n": 1}]})
    got = await store.get(record.session_id)
    assert got is not None
    got.state["steps"].append({"n": 2})
    again = await store.get(record.session_id)
    assert again is not None and again.state == {"steps": [{"n": 1}]}


async def test_arguments_that_contradict_themselves_are_refused(store: SessionStore) -> None:
    record, event = new_session()
    scope = create_scope(record.token_sha256)
    with pytest.raises(ValueError):
        await store.create(record, replace(event, seq=2), scope, "k", "a" * 64, {})
    with pytest.raises(ValueError):
        await store.create(
            replace(record, created_at=T0.replace(tzinfo=None)), event, scope, "k", "a" * 64, {}
        )
    with pytest.raises(ValueError):
        await store.create(replace(record, state={"x": float("nan")}), event, scope, "k", "a" * 64, {})
    assert await store.get(record.session_id) is None
    assert await store.idempotent(scope, "k") is None
    await store.create(record, event, scope, "k", "a" * 64, {})
    with pytest.raises(ValueError):  # seq must be the version the transition produces
        await store.transition(record.session_id, 1, "x", {}, step(record, 2, "action_ready", "x"))
    with pytest.raises(ValueError):  # the event must lead where the transition goes
        await store.transition(record.session_id, 1, "x", {}, step(record, 1, "action_ready", "y"))
    assert (await store.get(record.session_id)) == record


async def test_a_second_session_under_an_existing_id_is_refused(store: SessionStore) -> None:
    record = await create(store)
    again = replace(record, token_sha256=secrets.token_hex(32), state={"other": 1})
    with pytest.raises(ValueError):
        await store.create(
            again,
            SessionEvent(record.session_id, 1, None, "create", record.status, T0),
            create_scope(again.token_sha256),
            "fresh",
            "b" * 64,
            {},
        )
    assert await store.get(record.session_id) == record
    assert await store.idempotent(create_scope(again.token_sha256), "fresh") is None


# ---- create idempotency ------------------------------------------------------------------------------


async def test_create_with_a_used_key_returns_the_stored_answer_and_inserts_nothing(
    store: SessionStore,
) -> None:
    token_sha = secrets.token_hex(32)
    first, e1 = new_session(token_sha256=token_sha)
    assert (
        await store.create(
            first, e1, create_scope(token_sha), "key-1", "1" * 64, {"session_id": first.session_id}
        )
        is None
    )
    second, e2 = new_session(token_sha256=token_sha)
    answer = await store.create(second, e2, create_scope(token_sha), "key-1", "2" * 64, {"other": True})
    assert answer == IdempotentAnswer("1" * 64, {"session_id": first.session_id})
    assert await store.get(second.session_id) is None
    assert await store.events(second.session_id) == []
    assert await store.count_by_status() == {"action_ready": 1}

    # the same key under another token's scope is another key
    other_sha = secrets.token_hex(32)
    third, e3 = new_session(token_sha256=other_sha)
    assert await store.create(third, e3, create_scope(other_sha), "key-1", "3" * 64, {"n": 3}) is None
    assert await store.get(third.session_id) == third
    assert await store.idempotent(create_scope(token_sha), "key-1") == IdempotentAnswer(
        "1" * 64, {"session_id": first.session_id}
    )
    assert await store.idempotent(create_scope(other_sha), "key-1") == IdempotentAnswer("3" * 64, {"n": 3})
    assert await store.idempotent(create_scope(other_sha), "key-2") is None


async def test_concurrent_creates_with_one_key_make_exactly_one_session(store: SessionStore) -> None:
    token_sha = secrets.token_hex(32)
    attempts = [new_session(token_sha256=token_sha) for _ in range(10)]
    answers = await asyncio.gather(
        *(
            store.create(r, e, create_scope(token_sha), "same-key", f"{i:064d}", {"session_id": r.session_id})
            for i, (r, e) in enumerate(attempts)
        )
    )
    winners = [i for i, a in enumerate(answers) if a is None]
    assert len(winners) == 1
    winner = attempts[winners[0]][0]
    assert all(
        a == IdempotentAnswer(f"{winners[0]:064d}", {"session_id": winner.session_id})
        for a in answers
        if a is not None
    )
    assert await store.count_by_status() == {"action_ready": 1}
    stored = [await store.get(r.session_id) for r, _ in attempts]
    assert [s for s in stored if s is not None] == [winner]


# ---- transitions -------------------------------------------------------------------------------------


async def test_a_transition_bumps_the_version_and_records_its_event(store: SessionStore) -> None:
    record = await create(store, {"step": 0})
    ev = step(record, 1, "action_ready", "awaiting_source_receipt", "submit")
    key = (session_scope(record.session_id), "obs-1", "c" * 64, {"status": "awaiting_source_receipt"})
    assert (
        await store.transition(record.session_id, 1, "awaiting_source_receipt", {"step": 1}, ev, key) is True
    )
    got = await store.get(record.session_id)
    assert got is not None
    assert (got.version, got.status, got.state) == (2, "awaiting_source_receipt", {"step": 1})
    assert got.created_at == record.created_at and got.updated_at == ev.at
    assert (got.token_sha256, got.route) == (record.token_sha256, record.route)
    events = await store.events(record.session_id)
    assert [e.seq for e in events] == [1, 2] and events[1] == ev
    assert await store.idempotent(session_scope(record.session_id), "obs-1") == IdempotentAnswer(
        "c" * 64, {"status": "awaiting_source_receipt"}
    )
    # a transition without an idempotency record is fine too
    ev3 = step(record, 2, "awaiting_source_receipt", "complete")
    assert await store.transition(record.session_id, 2, "complete", {"step": 2}, ev3) is True
    assert (await store.get(record.session_id)).version == 3  # type: ignore[union-attr]


async def test_a_stale_version_changes_nothing(store: SessionStore) -> None:
    record = await create(store, {"step": 0})
    assert await store.transition(
        record.session_id, 1, "s2", {"step": 1}, step(record, 1, "action_ready", "s2")
    )
    before = await store.get(record.session_id)
    key = (session_scope(record.session_id), "late", "d" * 64, {"late": True})
    assert (
        await store.transition(
            record.session_id, 1, "s3", {"step": 9}, step(record, 1, "action_ready", "s3"), key
        )
        is False
    )
    assert await store.get(record.session_id) == before
    assert len(await store.events(record.session_id)) == 2
    assert await store.idempotent(session_scope(record.session_id), "late") is None
    # an unknown session is not an error, just not committed
    assert await store.transition("ses_nope", 1, "s2", {}, step("ses_nope", 1, "action_ready", "s2")) is False


async def test_concurrent_transitions_from_one_version_have_exactly_one_winner(store: SessionStore) -> None:
    record = await create(store, {"step": 0})
    results = await asyncio.gather(
        *(
            store.transition(
                record.session_id,
                1,
                f"to_{i}",
                {"winner": i},
                step(record, 1, "action_ready", f"to_{i}"),
                (session_scope(record.session_id), f"k{i}", "e" * 64, {"i": i}),
            )
            for i in range(10)
        )
    )
    assert results.count(True) == 1
    winner = results.index(True)
    got = await store.get(record.session_id)
    assert got is not None
    assert (got.version, got.status, got.state) == (2, f"to_{winner}", {"winner": winner})
    assert [e.to_status for e in await store.events(record.session_id)] == ["action_ready", f"to_{winner}"]
    for i in range(10):
        expected = IdempotentAnswer("e" * 64, {"i": i}) if i == winner else None
        assert await store.idempotent(session_scope(record.session_id), f"k{i}") == expected


async def test_a_used_idempotency_key_inside_a_transition_raises_and_changes_nothing(
    store: SessionStore,
) -> None:
    record = await create(store, {"step": 0})
    scope = session_scope(record.session_id)
    assert await store.transition(
        record.session_id,
        1,
        "s2",
        {"step": 1},
        step(record, 1, "action_ready", "s2"),
        (scope, "k", "f" * 64, {"first": True}),
    )
    before = await store.get(record.session_id)
    with pytest.raises(IdempotencyConflict):
        await store.transition(
            record.session_id,
            2,
            "s3",
            {"step": 2},
            step(record, 2, "s2", "s3"),
            (scope, "k", "0" * 64, {"second": True}),
        )
    assert await store.get(record.session_id) == before
    assert [e.seq for e in await store.events(record.session_id)] == [1, 2]
    assert await store.idempotent(scope, "k") == IdempotentAnswer("f" * 64, {"first": True})
    # the same key on another session is another key
    other = await create(store)
    assert await store.transition(
        other.session_id,
        1,
        "s2",
        {},
        step(other, 1, "action_ready", "s2"),
        (session_scope(other.session_id), "k", "1" * 64, {}),
    )


async def test_count_by_status_and_event_order(store: SessionStore) -> None:
    assert await store.count_by_status() == {}
    a = await create(store)
    b = await create(store)
    await create(store, status="awaiting_destination")
    path = ["awaiting_source_receipt", "awaiting_destination", "action_ready", "complete"]
    previous = "action_ready"
    for version, status in enumerate(path, start=1):
        assert await store.transition(
            a.session_id, version, status, {"v": version}, step(a, version, previous, status, f"ev{version}")
        )
        previous = status
    assert await store.transition(
        b.session_id, 1, "cancelled", {}, step(b, 1, "action_ready", "cancelled", "cancel")
    )
    assert await store.count_by_status() == {"complete": 1, "cancelled": 1, "awaiting_destination": 1}
    events = await store.events(a.session_id)
    assert [(e.seq, e.from_status, e.event, e.to_status) for e in events] == [
        (1, None, "create", "action_ready"),
        (2, "action_ready", "ev1", "awaiting_source_receipt"),
        (3, "awaiting_source_receipt", "ev2", "awaiting_destination"),
        (4, "awaiting_destination", "ev3", "action_ready"),
        (5, "action_ready", "ev4", "complete"),
    ]
    assert [e.at for e in events] == sorted(e.at for e in events)
    assert await store.events("ses_unknown") == []


async def test_start_is_idempotent_and_keeps_data(store: SessionStore) -> None:
    record = await create(store)
    await store.start()
    assert await store.get(record.session_id) == record
    if isinstance(
        store, SqlSessionStore
    ):  # a second instance (a restarted process) migrates to the same head
        again = SqlSessionStore(url_of(store))
        await again.start()
        await again.start()
        try:
            assert await again.get(record.session_id) == record
        finally:
            await again.aclose()


async def test_one_transaction_advances_one_step_across_sessions(store: SessionStore) -> None:
    """Issue 18 part 3: a transaction id that advanced a step (claims) cannot advance another step of this or
    any other session; the refused transition writes nothing (state, version, events, idempotency)."""
    tx = "0x" + secrets.token_hex(32)
    sig = base64.b32encode(secrets.token_bytes(20)).decode()
    first, second = await create(store, {"step": 0}), await create(store, {"step": 0})
    assert await store.transition(
        first.session_id,
        1,
        "s2",
        {"step": 1},
        step(first, 1, "action_ready", "s2"),
        (session_scope(first.session_id), "k1", "1" * 64, {}),
        ((tx, 0), (sig, 0)),
    )
    for record, version, claims in (
        (second, 1, ((tx, 0),)),  # another session
        (first, 2, ((tx, 1),)),  # another step of the same session
        (second, 1, (("0x" + secrets.token_hex(32), 0), (sig, 0))),  # one of several already used
    ):
        before = await store.get(record.session_id)
        events = await store.events(record.session_id)
        with pytest.raises(TransactionAlreadyUsed):
            await store.transition(
                record.session_id,
                version,
                "s3",
                {"step": 9},
                step(record, version, before.status if before else None, "s3"),
                (session_scope(record.session_id), "k2", "2" * 64, {}),
                claims,
            )
        assert await store.get(record.session_id) == before
        assert await store.events(record.session_id) == events
        assert await store.idempotent(session_scope(record.session_id), "k2") is None
    # a fresh transaction still advances the second session
    assert await store.transition(
        second.session_id,
        1,
        "s2",
        {"step": 1},
        step(second, 1, "action_ready", "s2"),
        None,
        (("0x" + secrets.token_hex(32), 0),),
    )


async def test_a_stored_document_that_does_not_parse_is_a_store_fault(store: SessionStore) -> None:
    """A session's state or an idempotent answer changed under the store (not JSON, or not a JSON object) is
    StoreUnavailable with fault malformed_record (503 session_store_unavailable), never a KeyError's 500."""
    if not isinstance(store, SqlSessionStore):
        pytest.skip("the memory store keeps only what it wrote itself")
    record, event = new_session()
    scope = create_scope(record.token_sha256)
    assert (
        await store.create(record, event, scope, "k-doc", "a" * 64, {"session_id": record.session_id}) is None
    )
    documents = ["[1, 2]", '"text"'] + (["notjson"] if store.scope == "sqlite" else [])
    for document in documents:
        cast = "::jsonb" if store.scope == "postgresql" else ""
        statements = (
            f"UPDATE sessions SET state = '{document}'{cast} WHERE session_id = '{record.session_id}'",
            f"UPDATE session_idempotency SET response = '{document}'{cast} WHERE key = 'k-doc'",
        )
        if store.scope == "postgresql":  # white box: the documents changed under the store
            async with store._engine.begin() as conn:
                for statement in statements:
                    await conn.exec_driver_sql(statement)
        else:
            with store._sync.begin() as sync:
                for statement in statements:
                    sync.exec_driver_sql(statement)
        with pytest.raises(StoreUnavailable) as read:
            await store.get(record.session_id)
        with pytest.raises(StoreUnavailable) as answered:
            await store.idempotent(scope, "k-doc")
        assert (
            getattr(read.value, "fault", None) == getattr(answered.value, "fault", None) == "malformed_record"
        )


# ---- the event log (issue 42) --------------------------------------------------------------------------


async def test_the_event_log_keeps_each_events_detail_and_pages_in_order(store: SessionStore) -> None:
    """Each event's detail (step index, next operation, chain evidence, funds) reads back as written, on every
    backend; `events_after` pages the log in sequence order from any point; an event written without detail
    reads back without it."""
    funds = {
        "chain": "base",
        "token": "USDC",
        "amount_base": str(2**70),
        "owner": "0xabc",
        "state": "in_wallet",
    }
    record = await create(store)
    version, status = 1, "action_ready"
    written = [(await store.events(record.session_id))[0]]
    for n in range(7):
        tx = {
            "step_index": 0,
            "side": "source",
            "chain": "base",
            "tx_id": f"0x{n:064x}",
            "verified": n % 2 == 0,
        }
        event = replace(
            step(record, version, status, f"s{n}"),
            step_index=n % 3,
            next_operation="observe",
            transactions=(tx,) if n != 3 else (),
            funds=None if n == 5 else {**funds, "note": "ünïcødé ✓"},
        )
        assert await store.transition(record.session_id, version, f"s{n}", {"v": n}, event)
        written.append(event)
        version, status = version + 1, f"s{n}"
    assert await store.events(record.session_id) == written
    assert await store.events_after(record.session_id, 0, 100) == written
    assert await store.events_after(record.session_id, 3, 2) == written[3:5]
    assert await store.events_after(record.session_id, 8, 10) == []
    assert await store.events_after(record.session_id, 2, 0) == []
    back = (await store.events_after(record.session_id, 1, 1))[0]
    assert back.transactions[0]["tx_id"] == f"0x{0:064x}" and back.funds is not None
    assert back.funds["amount_base"] == str(2**70)
    assert (await store.events(record.session_id))[0].funds is None  # written without detail: none read back
    other = await create(store)
    many = [record.session_id, "ses_unknown", other.session_id] + [f"ses_{n}" for n in range(1200)]
    assert await store.versions(many) == {record.session_id: 8, other.session_id: 1}  # IN lists in chunks
    assert await store.versions([]) == {}
