"""Layering of src/routequote: the core imports no edge (adapter or surface), discovery no surface, and the command line and
the client's commands import each other one way only (any import, at module level or inside a function)."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = SRC / "routequote"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _imports(module: str) -> set[str]:
    """Every routequote module this module imports, anywhere in its text."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(MODULES[module].read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("routequote"):
            out.add(node.module)
            out |= {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("routequote")}
    return out & set(MODULES)


def _under(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_the_graph_is_read() -> None:
    assert "routequote.cli" in MODULES and "routequote.client.commands" in MODULES
    assert "routequote.client.commands" in _imports("routequote.cli")  # so the next test can fail


def test_the_client_commands_do_not_import_the_command_line() -> None:
    assert "routequote.cli" not in _imports("routequote.client.commands")


def test_discovery_imports_no_surface() -> None:
    bad = {
        (m, i)
        for m in MODULES
        if _under(m, "routequote.discovery")
        for i in _imports(m)
        if _under(i, "routequote.surfaces")
    }
    assert bad == set()


def test_the_core_imports_no_edge() -> None:
    edges = (
        "surfaces",
        "storage",
        "market",
        "observe",
        "client",
        "discovery",
        "app",
        "cli",
        "sessions",
        "prepare",
    )
    bad = {
        (m, i)
        for m in MODULES
        if _under(m, "routequote.core")
        for i in _imports(m)
        if any(_under(i, f"routequote.{edge}") for edge in edges)
    }
    assert bad == set()
