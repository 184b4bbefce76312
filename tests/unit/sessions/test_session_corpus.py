"""The recorded session corpus (`tests/golden/session_corpus.jsonl`, see `corpus.py`) is answered byte for byte
the same: splitting the engine by step kind changed no answer."""

from __future__ import annotations

import difflib

from tests.unit.sessions.corpus import GOLDEN, run


def test_session_corpus_replays_byte_for_byte() -> None:
    recorded = GOLDEN.read_text()
    replayed = run()
    if replayed != recorded:
        diff = "".join(
            list(difflib.unified_diff(recorded.splitlines(True), replayed.splitlines(True), "golden", "now"))[
                :80
            ]
        )
        raise AssertionError(f"the session corpus answers changed:\n{diff}")
    assert recorded.count("\n") > 500  # the corpus is not empty: every create, view and transition
