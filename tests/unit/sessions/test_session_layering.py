"""The session engine's layering: the core imports no port (the chain data types live in core/chain.py),
ports.py imports only the core, and no adapter (storage, market, observers, the session engine, prepare)
imports a surface. Read from the source text, so an import inside a function counts too."""

from __future__ import annotations

from tests.unit.test_layering import MODULES, imports_of, under

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
