"""The `peers` quote store: the issuing worker's slot in each quote id, and the lookup on its private socket.
Two store objects in one directory stand for two workers."""

from __future__ import annotations

import asyncio
import contextlib
import os
import struct
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from routequote.clock import SystemClock
from routequote.core.intent import parse_quote_request
from routequote.errors import DependencyUnavailable
from routequote.market.snapshot import EmbeddedSnapshot
from routequote.service import RouteQuoteService, ServiceConfig
from routequote.storage import peer_quotes
from routequote.storage.peer_quotes import MAX_ANSWER_BYTES, PeerQuoteStore, ask_peer, slot_of, slotted_uuid4
from routequote.storage.quote_records import issued_to_record

INTENT = {
    "from_chain": "base",
    "from_token": "ETH",
    "to_chain": "solana",
    "to_token": "USDC",
    "amount_usd": 100,
}


def worker(store: PeerQuoteStore, ttl: int = 60, clock: SystemClock | None = None) -> RouteQuoteService:
    return RouteQuoteService(
        EmbeddedSnapshot(), store, clock or SystemClock(), store.ids, ServiceConfig(quote_ttl_seconds=ttl)
    )


@contextlib.asynccontextmanager
async def workers(
    folder: Path, n: int = 2, serving: int | None = None, monotonic: Callable[[], float] | None = None
) -> AsyncIterator[list[PeerQuoteStore]]:
    extra = {} if monotonic is None else {"monotonic": monotonic}
    stores = [PeerQuoteStore(str(folder), n, **extra) for _ in range(serving if serving is not None else n)]
    async with contextlib.AsyncExitStack() as stack:
        for store in stores:
            await stack.enter_async_context(store.serving())
            stack.push_async_callback(store.aclose)
        yield stores


def test_every_slot_round_trips_in_a_valid_uuid4() -> None:
    for slot in range(peer_quotes.MAX_SLOTS):
        ids = {slotted_uuid4(slot) for _ in range(4)}
        assert len(ids) == 4  # still random
        for quote_id in ids:
            parsed = uuid.UUID(quote_id)
            assert parsed.version == 4 and parsed.variant == uuid.RFC_4122
            assert str(parsed) == quote_id
            assert slot_of(quote_id) == slot
    with pytest.raises(ValueError):
        slotted_uuid4(peer_quotes.MAX_SLOTS)


def test_ids_that_are_not_lowercase_uuid4_name_no_slot() -> None:
    good = slotted_uuid4(1)
    for bad in (
        good.upper(),
        str(uuid.uuid1()),
        good[:14] + "1" + good[15:],
        good[:19] + "c" + good[20:],
        "x",
        "",
    ):
        assert slot_of(bad) is None, bad


async def test_a_quote_issued_by_one_worker_is_found_by_the_other(tmp_path: Path) -> None:
    async with workers(tmp_path) as (a, b):
        assert {a.slot, b.slot} == {0, 1}
        issuer, other = worker(a), worker(b)
        issued = await asyncio.gather(*(issuer.quote(parse_quote_request(INTENT)) for _ in range(20)))
        for q in issued:
            assert slot_of(q.payload["quote_id"]) == a.slot
            found = await other.issued_quote(q.payload["quote_id"])
            assert found is not None and found.payload == q.payload
            assert found.body.pricing == q.body.pricing and found.intent == q.intent
            assert (
                -1 < found.expires_at_monotonic - q.expires_at_monotonic <= 0.01
            )  # never outlives its issue
        assert a.retained() == 20 and b.retained() == 0  # issuing wrote only the issuer's memory
        assert await other.issued_quote(slotted_uuid4(a.slot)) is None  # unknown to its issuer
        assert await other.issued_quote(slotted_uuid4(b.slot)) is None  # its own slot: never asked


class SetClock(SystemClock):
    """Monotonic time that moves only when the test moves it (a busy machine's pauses never count)."""

    def __init__(self) -> None:
        self.at = 1000.0

    def monotonic(self) -> float:
        return self.at


async def test_an_expired_quote_is_absent_on_the_other_worker(tmp_path: Path) -> None:
    clock = SetClock()
    async with workers(tmp_path, monotonic=clock.monotonic) as (a, b):
        issued = await worker(a, ttl=1, clock=clock).quote(parse_quote_request(INTENT))
        assert await worker(b, clock=clock).issued_quote(issued.payload["quote_id"]) is not None
        clock.at += 0.99
        assert await worker(b, clock=clock).issued_quote(issued.payload["quote_id"]) is not None
        clock.at += 0.01
        assert await worker(b, clock=clock).issued_quote(issued.payload["quote_id"]) is None


async def test_a_slot_no_worker_holds_fails_closed_without_asking(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with workers(tmp_path, n=2, serving=1) as (a,):
        assert await a.get(slotted_uuid4(1), 0.0) is None  # in range, but its socket does not exist
        asked: list[str] = []

        async def spy(path: str, quote_id: str, timeout: float = 1.0) -> None:
            asked.append(quote_id)

        monkeypatch.setattr(peer_quotes, "ask_peer", spy)
        for slot in (2, 17, 255):  # a hostile id naming a worker that does not exist
            assert await a.get(slotted_uuid4(slot), 0.0) is None
        assert await a.get("not-a-uuid", 0.0) is None
        assert asked == []


def test_a_slot_is_held_by_one_worker_only(tmp_path: Path) -> None:
    first = peer_quotes.claim_slot(str(tmp_path), 1)
    try:
        with pytest.raises(RuntimeError, match="no free worker slot"):
            peer_quotes.claim_slot(str(tmp_path), 1, timeout=0.1)
    finally:
        first[2].close()
        os.close(first[1])
    again = peer_quotes.claim_slot(str(tmp_path), 1, timeout=0.1)  # freed with its holder
    assert again[0] == 0
    again[2].close()
    os.close(again[1])


Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@contextlib.asynccontextmanager
async def fake_peer(path: Path, handler: Handler) -> AsyncIterator[None]:
    server = await asyncio.start_unix_server(handler, path=str(path))
    try:
        yield
    finally:
        server.close()


async def answering(payload: bytes, hold: float = 0.0) -> Handler:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readexactly(37)
        writer.write(payload)
        await writer.drain()
        await asyncio.sleep(hold)
        writer.close()

    return handle


async def test_a_peer_that_never_answers_times_out(tmp_path: Path) -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(30)

    async with fake_peer(tmp_path / "p.sock", silent):
        answer = await asyncio.wait_for(ask_peer(str(tmp_path / "p.sock"), slotted_uuid4(1), timeout=0.2), 10)
    assert answer is None


async def test_an_oversized_answer_is_refused_unread(tmp_path: Path) -> None:
    header = struct.pack(">II", MAX_ANSWER_BYTES + 1, 60_000)
    async with fake_peer(tmp_path / "p.sock", await answering(header + b"x" * 64, hold=30)):
        answer = await asyncio.wait_for(ask_peer(str(tmp_path / "p.sock"), slotted_uuid4(1), timeout=5), 10)
    assert answer is None


async def test_a_short_answer_fails_closed(tmp_path: Path) -> None:
    async with fake_peer(tmp_path / "p.sock", await answering(struct.pack(">II", 100, 60_000) + b"{}")):
        assert await ask_peer(str(tmp_path / "p.sock"), slotted_uuid4(1)) is None


@pytest.mark.parametrize(
    "kind", ["garbage", "not_a_record", "another_quote", "no_lifetime", "too_long_lifetime"]
)
async def test_a_malformed_answer_is_a_store_fault_and_never_bound(tmp_path: Path, kind: str) -> None:
    (tmp_path / "peers").mkdir()
    async with workers(tmp_path / "peers", n=2, serving=1) as (a,):
        # a real quote bearing slot 1, priced outside any store; a fake peer stands in slot 1's socket
        issued = await RouteQuoteService(
            EmbeddedSnapshot(),
            _Sink(),
            SystemClock(),
            peer_quotes.SlottedIds(1),
            ServiceConfig(quote_ttl_seconds=60),
        ).quote(parse_quote_request(INTENT))
        quote_id = issued.payload["quote_id"]
        record = issued_to_record(issued)
        bodies = {
            "garbage": (b"\xff{not json", 60_000),
            "not_a_record": (b'{"payload": 7}', 60_000),
            "another_quote": (record.replace(quote_id.encode(), slotted_uuid4(1).encode()), 60_000),
            "no_lifetime": (record, 0),
            "too_long_lifetime": (record, 60_001),
        }
        body, remaining = bodies[kind]
        handler = await answering(struct.pack(">II", len(body), remaining) + body)
        async with fake_peer(tmp_path / "peers" / "slot-1.sock", handler):
            if kind == "no_lifetime":  # an expired quote: absent, as in memory
                assert await a.get(quote_id, 0.0) is None
            else:  # an answer that does not parse, or is not the quote asked for: 503, never a quote, never a 500
                with pytest.raises(DependencyUnavailable) as caught:
                    await a.get(quote_id, 0.0)
                assert caught.value.reason_class == "quote_store_unavailable"
                assert caught.value.details == {"store_fault": "malformed_record"}
        good = await answering(struct.pack(">II", len(record), 60_000) + record)
        async with fake_peer(tmp_path / "peers" / "slot-1.sock", good):  # the same path answers a real record
            found = await a.get(quote_id, 0.0)
            assert found is not None and found.payload == issued.payload


class _Sink:
    async def put(self, issued: object) -> None:
        return None

    async def get(self, quote_id: str, now_monotonic: float) -> None:
        return None

    def retained(self) -> int | None:
        return 0


async def test_a_worker_answers_only_well_formed_requests_for_its_own_slot(tmp_path: Path) -> None:
    async with workers(tmp_path, n=2) as (a, b):
        issued = await worker(a).quote(parse_quote_request(INTENT))
        path = str(tmp_path / f"slot-{a.slot}.sock")
        quote_id = issued.payload["quote_id"]
        for request in (b"\x00" * 37, quote_id.upper().encode() + b"\n", quote_id.encode() + b"X"):
            reader, writer = await asyncio.open_unix_connection(path)
            writer.write(request)
            assert await reader.readexactly(8) == struct.pack(">II", 0, 0)
            writer.close()
        answer = await ask_peer(path, quote_id)
        assert answer is not None and answer[1] == issued_to_record(issued)


def test_the_serve_directory_is_private_and_short_enough_for_its_sockets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    long = tmp_path / ("d" * 90)
    long.mkdir()
    for base in (tmp_path, long):
        monkeypatch.setattr("tempfile.tempdir", str(base))
        folder = peer_quotes.make_serve_dir()
        try:
            assert Path(folder).stat().st_mode & 0o777 == 0o700
            assert len(os.path.join(folder, "slot-255.sock")) <= 100
            if base == long:
                assert long not in Path(folder).parents  # moved to a shorter temporary folder
        finally:
            os.rmdir(folder)
