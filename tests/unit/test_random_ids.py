"""Quote ids: RFC 4122 version-4 UUIDs from the OS CSPRNG, read in chunks, never repeated across a fork."""

from __future__ import annotations

import os
import uuid

from routequote.clock import UuidFactory, random_uuid4
from routequote.storage.peer_quotes import slot_of, slotted_uuid4


def test_every_id_is_a_canonical_uuid4() -> None:
    for _ in range(5000):  # crosses several 4 KiB refills
        text = random_uuid4()
        parsed = uuid.UUID(text)
        assert str(parsed) == text and parsed.version == 4 and parsed.variant == uuid.RFC_4122


def test_ids_do_not_repeat_and_use_all_their_random_bits() -> None:
    ids = [UuidFactory().new_id() for _ in range(20_000)]
    assert len(set(ids)) == len(ids)
    # every one of the 122 random bits takes both values somewhere (a stuck or reused byte would not)
    ones = 0
    for text in ids:
        ones |= uuid.UUID(text).int
    fixed = (0xF << 76) | (0x3 << 62)  # version and variant bits
    assert ones | fixed == (1 << 128) - 1


def test_a_slotted_id_keeps_its_slot_and_stays_a_uuid4() -> None:
    for slot in range(256):
        text = slotted_uuid4(slot)
        parsed = uuid.UUID(text)
        assert str(parsed) == text and parsed.version == 4 and parsed.variant == uuid.RFC_4122
        assert slot_of(text) == slot and parsed.int & 0xFF == slot


def test_a_forked_child_never_hands_out_its_parents_buffered_bytes() -> None:
    random_uuid4()  # the parent has a buffer now
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        os.write(write, "".join(random_uuid4() for _ in range(8)).encode())
        os._exit(0)
    os.waitpid(pid, 0)
    child = os.read(read, 4096).decode()
    os.close(read)
    os.close(write)
    parent = "".join(random_uuid4() for _ in range(8))
    assert len(child) == len(parent) == 8 * 36 and child != parent
