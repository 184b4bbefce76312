"""Issued quotes with several workers on one machine, at memory speed: each worker asks the issuing one.

- Each worker keeps the quotes it issues in its own bounded TTL memory, exactly as with one worker: issuing costs
  nothing more than that.
- Each worker holds a slot (0..workers-1), claimed at start with an exclusive lock on `slot-<n>.lock` in the
  per-serve directory that `routequote serve` creates (mode 0700, removed at exit) and hands its workers. The lock
  goes with the process, so a worker restarted by the supervisor takes the freed slot.
- A quote id is a spec-valid uuid4 whose last byte is the issuing worker's slot (114 random bits remain).
- Each worker listens on `slot-<n>.sock` there. A prepare whose quote misses locally asks that one worker: one
  37-byte request (the id and a newline), one answer (length and remaining lifetime, then the record in the form
  the Redis store keeps), bounded in size and time. Whatever cannot be answered (a slot no worker holds, a worker
  gone, a timeout, an oversized answer) is simply absent: binding fails closed, as in memory. An answer that does
  not parse, or is not the quote asked for, is a fault of the store: 503 `quote_store_unavailable`, logged once.
- Prepare idempotency records are not on the quote path: one SQLite file in the same directory, first answer wins
  on every worker (`sqlite_quotes.SqliteIdempotencyStore`).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import socket
import struct
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import orjson

from routequote.clock import random_uuid4
from routequote.core.field_rules import ISSUED_UUID4_RE
from routequote.ports import IssuedQuote
from routequote.storage.quote_records import issued_from_stored, issued_to_record, record_head
from routequote.storage.quotes import MemoryQuoteStore
from routequote.storage.sqlite_quotes import IdempotencyFile
from routequote.storage.store_faults import MalformedRecord
from routequote.store_errors import log_malformed, store_unavailable

PEER_DIR_ENV = "ROUTEQUOTE_SERVE_PEER_DIR"  # set by `routequote serve` for its workers, never by hand
MAX_SLOTS = 256  # one byte of the id
MAX_ANSWER_BYTES = 256 * 1024  # a quote record is a few KiB
LOOKUP_TIMEOUT_SECONDS = 1.0
CLAIM_TIMEOUT_SECONDS = 10.0
_HEADER = struct.Struct(">II")  # record length (0: not held), remaining lifetime in ms
_REQUEST_BYTES = 37
_MAX_SOCKET_PATH = 100  # AF_UNIX paths end at 107 bytes on Linux


def slotted_uuid4(slot: int) -> str:
    """A random uuid4 (version and variant bits kept) whose last byte is `slot`."""
    if not 0 <= slot < MAX_SLOTS:
        raise ValueError("slot out of range")
    return random_uuid4(last_byte=slot)


def slot_of(quote_id: str) -> int | None:
    """The slot a quote id names, or None when it is not a lowercase uuid4."""
    if len(quote_id) != 36 or not ISSUED_UUID4_RE.fullmatch(quote_id):
        return None
    return int(quote_id[34:], 16)


class SlottedIds:
    def __init__(self, slot: int) -> None:
        self.slot = slot

    def new_id(self) -> str:
        return slotted_uuid4(self.slot)


def _socket_path(folder: str, slot: int) -> str:
    return os.path.join(folder, f"slot-{slot}.sock")


def claim_index(
    folder: str, stem: str, count: int, timeout: float = CLAIM_TIMEOUT_SECONDS
) -> tuple[int, int]:
    """Lock the first free `<stem>-<n>.lock` (n < count) in the serve directory: (n, lock fd). The lock goes
    with the process, so a worker restarted by the supervisor takes the index its predecessor held."""
    deadline = time.monotonic() + timeout
    while True:
        for index in range(count):
            fd = os.open(os.path.join(folder, f"{stem}-{index}.lock"), os.O_CREAT | os.O_RDWR, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            return index, fd
        if time.monotonic() >= deadline:
            raise RuntimeError(f"no free worker {stem} in the serve directory (workers={count})")
        time.sleep(0.05)


def claim_slot(
    folder: str, workers: int, timeout: float = CLAIM_TIMEOUT_SECONDS
) -> tuple[int, int, socket.socket]:
    """Lock the first free slot and bind its socket: (slot, lock fd, listening socket)."""
    slot, fd = claim_index(folder, "slot", min(workers, MAX_SLOTS), timeout)
    path = _socket_path(folder, slot)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)  # left by the slot's previous holder
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    listener.setblocking(False)
    return slot, fd, listener


async def ask_peer(
    path: str, quote_id: str, timeout: float = LOOKUP_TIMEOUT_SECONDS
) -> tuple[int, bytes] | None:
    """One lookup on a peer's socket: (remaining ms, record bytes), or None for anything but a held quote."""
    writer: asyncio.StreamWriter | None = None
    try:
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_unix_connection(path)
            writer.write(quote_id.encode("ascii") + b"\n")
            length, remaining_ms = _HEADER.unpack(await reader.readexactly(_HEADER.size))
            if length == 0 or length > MAX_ANSWER_BYTES or remaining_ms == 0:
                return None
            return remaining_ms, await reader.readexactly(length)
    except (OSError, TimeoutError, asyncio.IncompleteReadError, struct.error):
        return None
    finally:
        if writer is not None:
            writer.close()


class PeerQuoteStore:
    scope = "process_local_ttl_peers_asked_by_slot_restart_fails_closed"

    def __init__(
        self,
        folder: str,
        workers: int,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.folder = folder
        self.workers = workers
        self.monotonic = monotonic
        self.local = MemoryQuoteStore()
        self.slot, self._lock_fd, self._listener = claim_slot(folder, workers)
        self.ids = SlottedIds(self.slot)
        self.idempotency_file = IdempotencyFile(os.path.join(folder, "idempotency.sqlite3"))
        self._server: asyncio.Server | None = None

    async def put(self, issued: IssuedQuote) -> None:
        await self.local.put(issued)

    async def get(self, quote_id: str, now_monotonic: float) -> IssuedQuote | None:
        found = await self.local.get(quote_id, now_monotonic)
        if found is not None:
            return found
        slot = slot_of(quote_id)
        if slot is None or slot == self.slot or slot >= self.workers:
            return None
        answer = await ask_peer(_socket_path(self.folder, slot), quote_id)
        if answer is None:
            return None
        remaining_ms, raw = answer
        try:
            try:
                head = record_head(raw)
                if head["quote_id"] != quote_id or remaining_ms > int(head["ttl_seconds"]) * 1000:
                    # another quote, or a lifetime longer than the quote was issued with
                    raise MalformedRecord("a peer's answer that is not the quote asked for")
            except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as exc:
                raise MalformedRecord("a peer's answer that does not parse") from exc
            return issued_from_stored(raw, now_monotonic + remaining_ms / 1000)
        except MalformedRecord as exc:  # a fault of the store: 503 (never bound, never a 500), logged once
            log_malformed(f"peer:{slot}", quote_id, exc)
            raise store_unavailable(
                "quote_store_unavailable", "workers' shared quote store", "malformed_record"
            ) from None

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Only this worker's own memory answers (never forwarded on: no loops)."""
        try:
            async with asyncio.timeout(LOOKUP_TIMEOUT_SECONDS):
                request = await reader.readexactly(_REQUEST_BYTES)
                quote_id = request[:-1].decode("ascii", "replace")
                found, now = None, self.monotonic()
                if request.endswith(b"\n") and slot_of(quote_id) == self.slot:
                    found = await self.local.get(quote_id, now)
                if found is None:
                    writer.write(_HEADER.pack(0, 0))
                else:
                    record = issued_to_record(found)
                    remaining_ms = max(0, int((found.expires_at_monotonic - now) * 1000))
                    writer.write(_HEADER.pack(len(record), remaining_ms) + record)
                await writer.drain()
        except (OSError, TimeoutError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    @contextlib.asynccontextmanager
    async def serving(self) -> AsyncIterator[None]:
        self._server = await asyncio.start_unix_server(self._answer, sock=self._listener)
        try:
            yield
        finally:
            await self._stop_serving()

    async def _stop_serving(self) -> None:
        server, self._server = self._server, None
        if server is not None:  # closes the listening socket too
            server.close()
            await server.wait_closed()

    def retained(self) -> int | None:
        return self.local.retained()

    async def aclose(self) -> None:
        with contextlib.suppress(OSError):
            os.unlink(_socket_path(self.folder, self.slot))
        await self._stop_serving()
        self._listener.close()
        await asyncio.get_running_loop().run_in_executor(None, self.idempotency_file.close)
        os.close(self._lock_fd)  # the slot is free again


def make_serve_dir() -> str:
    """The per-serve directory (0700) the parent creates before its workers start."""
    import tempfile

    folder = tempfile.mkdtemp(prefix="routequote-peers-")
    if len(_socket_path(folder, MAX_SLOTS - 1).encode()) > _MAX_SOCKET_PATH:  # a long TMPDIR: bind would fail
        os.rmdir(folder)
        folder = tempfile.mkdtemp(prefix="routequote-peers-", dir="/tmp")
    Path(folder).chmod(0o700)
    return folder
