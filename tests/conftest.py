from __future__ import annotations

import logging
import os
import random
import tempfile
from collections.abc import Iterator

import pytest
from hypothesis import settings

# The suite must never read an operator's environment by accident.
for key in [k for k in os.environ if k.startswith("ROUTEQUOTE_")]:
    del os.environ[key]

# Sessions: every app the suite builds keeps its sessions in a throwaway SQLite file, never in the repo's var/.
_SESSION_DB_DIR = tempfile.mkdtemp(prefix="routequote-test-db-")
os.environ["ROUTEQUOTE_DATABASE_URL"] = f"sqlite+aiosqlite:///{_SESSION_DB_DIR}/sessions.sqlite3"
# The watcher (sessions/watch.py) is off unless a test turns it on (`Settings(watch=True)`): the tests that drive
# each transition with observe expect exactly the transitions they ask for, not one the service made meanwhile.
os.environ["ROUTEQUOTE_WATCH"] = "0"

# CI replays a fixed set of generated examples (a red CI must be reproducible); local runs explore anew.
# Neither has Hypothesis's per-example deadline (200 ms by default): it is a timing, and on a busy machine an
# example that passes can exceed it.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("local", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "local")


# ---- a reproducible random order (off by default) -----------------------------------------------------------
# `pytest --order-seed N` runs the modules in an order drawn from N, and each module's tests in an order drawn
# from it too (a module stays together: its module-scoped servers start once). A test that passes only after
# another one shows up; the seed in the header replays the order.


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--order-seed", type=int, default=None, help="shuffle modules and their tests with this seed"
    )


def pytest_report_header(config: pytest.Config) -> str | None:
    seed = config.getoption("order_seed")
    return None if seed is None else f"test order: shuffled with --order-seed {seed}"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    seed = config.getoption("order_seed")
    if seed is None:
        return
    rng = random.Random(seed)
    modules: dict[str, list[pytest.Item]] = {}
    for item in items:
        modules.setdefault(item.nodeid.split("::", 1)[0], []).append(item)
    groups = list(modules.values())
    rng.shuffle(groups)
    for group in groups:
        rng.shuffle(group)
    items[:] = [item for group in groups for item in group]


@pytest.fixture(autouse=True, scope="module")
def logging_level_kept_per_module() -> Iterator[None]:
    """A module that builds an app in this process (`create_app` configures logging: some tests serve at debug)
    leaves the root logger's level as it found it, so a later module's output does not depend on the order the
    modules ran in (asyncio's debug lines reached the CLI tests' output after a debug app ran before them)."""
    root = logging.getLogger()
    level = root.level
    yield
    root.setLevel(level)
