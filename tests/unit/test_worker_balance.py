"""The rule that spreads connections over workers, and the shared board of counts it reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from routequote.surfaces.worker_balance import Board, make_board, read_board, should_wait


@pytest.mark.parametrize(
    ("mine", "peers", "wait"),
    [
        (0, [], False),  # alone: always accept
        (5, [], False),
        (0, [0], False),  # level: accept
        (1, [0], True),  # ahead of the one peer: leave it the connection
        (8, [8], False),
        (9, [8], True),
        (3, [2, 7], True),  # ahead of the least loaded peer
        (2, [2, 7], False),
        (0, [1, 1, 1], False),
    ],
)
def test_a_worker_waits_only_while_it_holds_more_than_its_least_loaded_peer(
    mine: int, peers: list[int], wait: bool
) -> None:
    assert should_wait(mine, peers) is wait


def test_each_worker_claims_its_own_cell_and_reads_only_its_peers(tmp_path: Path) -> None:
    make_board(str(tmp_path))
    a, b, c = (Board(str(tmp_path), 3) for _ in range(3))
    assert sorted((a.index, b.index, c.index)) == [0, 1, 2]
    assert a.peers() == b.peers() == [(0, 0), (0, 0)]
    a.publish(7, 9)
    b.publish(2, 2**32 + 5)  # the accepted count wraps instead of overflowing
    assert sorted(c.peers()) == [(2, 5), (7, 9)]
    assert (7, 9) not in a.peers() and (2, 5) in a.peers()
    c.publish(1, 4, 2**32 + 3)  # so does the count of connections taken ahead
    cells = read_board(str(tmp_path), 3)
    assert cells[a.index] == (7, 9, 0) and cells[b.index] == (2, 5, 0) and cells[c.index] == (1, 4, 3)


def test_a_board_with_every_cell_taken_is_refused(tmp_path: Path) -> None:
    make_board(str(tmp_path))
    Board(str(tmp_path), 1)
    with pytest.raises(RuntimeError, match="no free worker balance"):
        Board(str(tmp_path), 1, claim_timeout=0.1)


def test_serve_names_the_balanced_loop_only_with_several_workers() -> None:
    from routequote.config import Settings
    from routequote.surfaces.input_guard import uvicorn_options

    assert "loop" not in uvicorn_options(Settings(workers=1))
    loop = uvicorn_options(Settings(workers=2))["loop"]
    module, name = loop.split(":")
    assert (module, name) == ("routequote.surfaces.worker_balance", "balanced_loop")
