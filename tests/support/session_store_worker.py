"""One OS process doing one session transition, for the cross-process concurrency tests.

    python -m tests.support.session_store_worker URL SESSION_ID EXPECTED_VERSION GO_FILE NAME

Opens the store, prints `ready`, waits until GO_FILE exists (so all workers fire together), attempts
the transition and prints `won` or `lost`.
"""

from __future__ import annotations

import asyncio
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from routequote.ports import SessionEvent
from routequote.storage.sessions_sql import SqlSessionStore


async def main(url: str, session_id: str, expected: int, go_file: str, name: str) -> int:
    store = SqlSessionStore(url)
    await store.start()
    record = await store.get(session_id)  # warm the pool: the race is on the transition, not on connecting
    assert record is not None
    print("ready", flush=True)
    deadline = time.monotonic() + 60
    while not Path(go_file).exists():
        if time.monotonic() > deadline:
            return 2
        await asyncio.sleep(0.002)
    event = SessionEvent(
        session_id, expected + 1, record.status, f"observe_{name}", "awaiting_destination", datetime.now(UTC)
    )
    won = await store.transition(
        session_id,
        expected,
        "awaiting_destination",
        {**record.state, "winner": name},
        event,
        (f"session:{session_id}", f"key-{name}", "0" * 64, {"by": name}),
    )
    print("won" if won else "lost", flush=True)
    await store.aclose()
    return 0


if __name__ == "__main__":
    url, session_id, expected, go_file, name = sys.argv[1:6]
    sys.exit(asyncio.run(main(url, session_id, int(expected), go_file, name)))
