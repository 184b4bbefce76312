from __future__ import annotations

import os
import tempfile

from hypothesis import settings

# The suite must never read an operator's environment by accident.
for key in [k for k in os.environ if k.startswith("ROUTEQUOTE_")]:
    del os.environ[key]

# Sessions: every app the suite builds keeps its sessions in a throwaway SQLite file, never in the repo's var/.
_SESSION_DB_DIR = tempfile.mkdtemp(prefix="routequote-test-db-")
os.environ["ROUTEQUOTE_DATABASE_URL"] = f"sqlite+aiosqlite:///{_SESSION_DB_DIR}/sessions.sqlite3"

# CI replays a fixed set of generated examples (a red CI must be reproducible); local runs explore anew.
# Neither has Hypothesis's per-example deadline (200 ms by default): it is a timing, and on a busy machine an
# example that passes can exceed it.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("local", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "local")
