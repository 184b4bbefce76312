"""The session engine's layering: the core imports no port (the chain data types live in core/chain.py),
ports.py imports only the core, and no adapter (storage, market, observers, the session engine, prepare)
imports a surface; the gatherer and the watcher import no step kind's module and choose nothing by a kind's
name. Read from the source text, so an import inside a function counts too."""

from __future__ import annotations

import ast

from tests.unit.test_layering import MODULES, imports_of, under

from routequote.core.sessions.kinds import BridgeKind, KindKey

ADAPTERS = ("storage", "market", "observe", "sessions", "prepare", "service")


def test_the_core_imports_no_port() -> None:
    bad = {
        (m, i)
        for m in MODULES
        if under(m, "routequote.core")
        for i in imports_of(m)
        if under(i, "routequote.ports")
    }
    assert bad == set()


def test_ports_import_only_the_core() -> None:
    outside = {i for i in imports_of("routequote.ports") if not under(i, "routequote.core")}
    assert outside == set()
    assert "routequote.core.chain" in imports_of("routequote.ports")  # so the test above can fail


def test_no_adapter_imports_a_surface() -> None:
    bad = {
        (m, i)
        for m in MODULES
        if any(under(m, f"routequote.{a}") for a in ADAPTERS)
        for i in imports_of(m)
        if under(i, "routequote.surfaces")
    }
    assert bad == set()


def test_the_session_engine_is_split() -> None:
    """The engine and one module per step kind exist; that no file is over 600 lines (these included) is
    tests/unit/test_layering.py::test_no_file_in_src_is_over_600_lines."""
    assert "routequote.sessions.engine" in MODULES and "routequote.core.sessions.kinds.across" in MODULES


# the shell modules that run any kind reach one through the registry only: no kind module imported, no kind
# chosen by name (issue 41)
KIND_BLIND = (
    "routequote.sessions.gather",
    "routequote.sessions.batch_gather",
    "routequote.sessions.watch",
    "routequote.sessions.watch_cache",
)
KINDS = "routequote.core.sessions.kinds"


def kind_choices(text: str) -> list[int]:
    """The lines comparing a value with a step kind's or a bridge kind's name (`==`, `!=`, `in (...)`)."""
    names = {k.value for k in KindKey} | {b.value for b in BridgeKind}
    found: list[int] = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Compare):
            for side in (node.left, *node.comparators):
                values = side.elts if isinstance(side, ast.Tuple | ast.List | ast.Set) else [side]
                found += [node.lineno for v in values if isinstance(v, ast.Constant) and v.value in names]
    return found


def test_the_kind_choice_rule_can_fail() -> None:
    planted = 'if kind == "across":\n    pass\nelif bridge in ("oft", "x"):\n    pass\n'
    assert kind_choices(planted) == [1, 3]


def test_the_gatherer_and_the_watcher_know_no_step_kind() -> None:
    assert KINDS in imports_of("routequote.sessions.gather")  # the registry: so the import rule can fail
    assert {(m, i) for m in KIND_BLIND for i in imports_of(m) if under(i, KINDS) and i != KINDS} == set()
    assert {m: kind_choices(MODULES[m].read_text()) for m in KIND_BLIND} == {m: [] for m in KIND_BLIND}
