"""The session engine's layering: the core imports no port (the chain data types live in core/chain.py),
ports.py imports only the core, and no adapter (storage, market, observers, the session engine, prepare)
imports a surface. Read from the source text, so an import inside a function counts too."""

from __future__ import annotations

from tests.unit.test_layering import MODULES, _imports, _under

ADAPTERS = ("storage", "market", "observe", "sessions", "prepare", "service")


def test_the_core_imports_no_port() -> None:
    bad = {
        (m, i)
        for m in MODULES
        if _under(m, "routequote.core")
        for i in _imports(m)
        if _under(i, "routequote.ports")
    }
    assert bad == set()


def test_ports_import_only_the_core() -> None:
    outside = {i for i in _imports("routequote.ports") if not _under(i, "routequote.core")}
    assert outside == set()
    assert "routequote.core.chain" in _imports("routequote.ports")  # so the test above can fail


def test_no_adapter_imports_a_surface() -> None:
    bad = {
        (m, i)
        for m in MODULES
        if any(_under(m, f"routequote.{a}") for a in ADAPTERS)
        for i in _imports(m)
        if _under(i, "routequote.surfaces")
    }
    assert bad == set()


def test_the_session_engine_is_split() -> None:
    assert "routequote.sessions.engine" in MODULES and "routequote.core.sessions.kinds.across" in MODULES
    sizes = {
        m: len(p.read_text().splitlines()) for m, p in MODULES.items() if _under(m, "routequote.sessions")
    }
    sizes |= {
        m: len(p.read_text().splitlines())
        for m, p in MODULES.items()
        if _under(m, "routequote.core.sessions")
    }
    assert max(sizes.values()) <= 600, max(sizes.items(), key=lambda kv: kv[1])
