"""Layering of src/routequote: the core imports no edge (adapter or surface), discovery no surface, and the command line and
the client's commands import each other one way only (any import, at module level or inside a function); the session
wing, auth and prepare import no adapter (storage, market, observe); no module takes another module's private
(`_name`) name, by import (src, tests, bench, examples) or off an object (src); and no file under src/routequote, and no
Python file under tests, bench or examples, is over 600 lines."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = SRC / "routequote"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def imports_of(module: str) -> set[str]:
    """Every routequote module this module imports, anywhere in its text."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(MODULES[module].read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("routequote"):
            out.add(node.module)
            out |= {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("routequote")}
    return out & set(MODULES)


def under(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_the_graph_is_read() -> None:
    assert "routequote.cli" in MODULES and "routequote.client.commands" in MODULES
    assert "routequote.client.commands" in imports_of("routequote.cli")  # so the next test can fail


def test_the_client_commands_do_not_import_the_command_line() -> None:
    assert "routequote.cli" not in imports_of("routequote.client.commands")


def test_discovery_imports_no_surface() -> None:
    bad = {
        (m, i)
        for m in MODULES
        if under(m, "routequote.discovery")
        for i in imports_of(m)
        if under(i, "routequote.surfaces")
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
        if under(m, "routequote.core")
        for i in imports_of(m)
        if any(under(i, f"routequote.{edge}") for edge in edges)
    }
    assert bad == set()


# The service's side of the ports: they talk to stores, markets and chains through ports.py, and the composition
# root (app.py) hands them the adapters. `stored` and the store-fault words are routequote/store_errors.py.
PORT_USERS = ("routequote.sessions", "routequote.auth", "routequote.prepare")
ADAPTER_PACKAGES = ("routequote.storage", "routequote.market", "routequote.observe")


def test_the_session_wing_auth_and_prepare_import_no_adapter() -> None:
    users = {m for m in MODULES if any(under(m, u) for u in PORT_USERS)}
    assert {
        "routequote.sessions.engine",
        "routequote.auth",
        "routequote.prepare",
    } <= users  # the rule reads them
    bad = {(m, i) for m in users for i in imports_of(m) if any(under(i, a) for a in ADAPTER_PACKAGES)}
    assert bad == set()


ROOT = SRC.parent
FIRST_PARTY = ("routequote", "tests", "bench", "examples")


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def first_party_sources() -> dict[str, str]:
    """The text of every Python file of src/, tests/, bench/ and examples/, by dotted module name."""
    out = {name: path.read_text() for name, path in MODULES.items()}
    for top in ("tests", "bench", "examples"):
        for path in (ROOT / top).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if not is_first_party(parts):
                continue
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path.read_text()
    return out


def is_first_party(parts: Sequence[str]) -> bool:
    """Not inside a hidden directory or node_modules: what tests install at test time (the conformance kit's
    cached Node ships Python files of its own, e.g. tests/conformance/.cache/.../lldb_commands.py)."""
    return not any(part.startswith(".") or part in ("node_modules", "__pycache__") for part in parts)


def private_imports(sources: dict[str, str]) -> list[str]:
    """`from m import _x` of a first-party module, and an import of a private module of src (`pkg._mod`) from
    outside its package (tests/e2e's `_helper.py` files are the suite's helpers, not collected as tests). A module's private names stay its own: what several modules share gets a public name."""
    found: list[str] = []
    for me, text in sources.items():
        for node in ast.walk(ast.parse(text)):
            modules: list[str] = []
            names: list[str] = []
            if isinstance(node, ast.ImportFrom):
                if not node.level and (node.module or "").split(".")[0] not in FIRST_PARTY:
                    continue
                names = [a.name for a in node.names]
                modules = [node.module] if node.module and not node.level else []
            elif isinstance(node, ast.Import):
                modules = [a.name for a in node.names if a.name.split(".")[0] in FIRST_PARTY]
            found += [f"{me}:{node.lineno} imports {n}" for n in names if _private(n)]
            for mod in modules:
                parts = mod.split(".")
                found += [
                    f"{me}:{node.lineno} imports the private module {mod}"
                    for i, part in enumerate(parts)
                    if _private(part) and parts[0] == "routequote" and not under(me, ".".join(parts[:i]))
                ]
    return found


def _defined(tree: ast.AST) -> set[str]:
    """The names a module defines: its functions and classes, the names it binds, the attributes it sets on
    `self` or `cls`."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and _own_object(node.value):
            out.add(node.attr)
    return out


def _own_object(node: ast.expr) -> bool:
    """`self`, `cls` or `super()`: the class's own attributes, wherever in its hierarchy they are defined."""
    if isinstance(node, ast.Name):
        return node.id in ("self", "cls")
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"


def _reached(node: ast.AST) -> str | None:
    """The attribute name `node` reads or writes off an object other than self/cls/super(), if any."""
    if isinstance(node, ast.Attribute) and not _own_object(node.value):
        return node.attr
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("getattr", "setattr", "hasattr", "delattr")
        and len(node.args) >= 2
        and not _own_object(node.args[0])
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
    ):
        return node.args[1].value
    return None


def private_reaches(sources: dict[str, str]) -> list[str]:
    """A private attribute read or written off another object (`self.prepare._parse`, `store._run`,
    `setattr(discovery, "_safety", None)`) whose name another of these modules defines and this one does not.
    A third party's private names, and a marker only this module sets, are not this rule's business."""
    trees = {me: ast.parse(text) for me, text in sources.items()}
    defined = {me: {n for n in _defined(tree) if _private(n)} for me, tree in trees.items()}
    found: list[str] = []
    for me, tree in trees.items():
        elsewhere = set().union(*(d for m, d in defined.items() if m != me)) - defined[me]
        found += [
            f"{me}:{node.lineno} reaches {name}"
            for node in ast.walk(tree)
            if (name := _reached(node)) is not None and _private(name) and name in elsewhere
        ]
    return found


def test_the_private_name_rules_can_fail() -> None:
    planted = {
        "tests.planted": "from routequote.prepare import _secret_path\nimport routequote.observe._common\n",
        "routequote.observe.planted": "from routequote.observe._common import WireError\n",  # its own package
        "routequote.sessions.planted": (
            "def f(self, store):\n"
            "    self.prepare._unsupported_reason(None)\n"
            "    setattr(store, '_secret', 1)\n"
            "    self._mine = store._mine\n"  # a name this module defines: its own
        ),
        "routequote.planted_prepare": "class P:\n    def _unsupported_reason(self): ...\n    _secret = 0\n",
    }
    assert private_imports(planted) == [
        "tests.planted:1 imports _secret_path",
        "tests.planted:2 imports the private module routequote.observe._common",
    ]
    assert sorted(private_reaches(planted)) == [
        "routequote.sessions.planted:2 reaches _unsupported_reason",
        "routequote.sessions.planted:3 reaches _secret",
    ]


def test_no_module_imports_another_modules_private_name() -> None:
    """src, tests, bench and examples: a test that needs a helper imports its public name."""
    sources = first_party_sources()
    assert "tests.unit.test_layering" in sources and "routequote.prepare" in sources
    assert private_imports(sources) == []


def test_no_module_reaches_another_modules_private_attribute() -> None:
    """src only: a test may still read an object's private state to check it (white-box)."""
    assert private_reaches({name: path.read_text() for name, path in MODULES.items()}) == []


MAX_LINES = 600
# data, not code: the embedded market snapshot document (written by `routequote market refresh`)
DATA_FILES = {Path("data/market_snapshot.json")}


def _file_lines() -> dict[Path, int]:
    return {
        p.relative_to(PACKAGE): len(p.read_bytes().splitlines())
        for p in PACKAGE.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }


def test_no_file_in_src_is_over_600_lines() -> None:
    sizes = _file_lines()
    assert Path("core/quote.py") in sizes and Path("web/explorer.js") in sizes  # so the check can fail
    assert set(sizes) >= DATA_FILES  # an exemption never outlives its file
    over = {str(p): n for p, n in sizes.items() if n > MAX_LINES and p not in DATA_FILES}
    assert over == {}


PYTHON_ROOTS = ("src", "tests", "bench", "examples")


def python_file_lines() -> dict[str, int]:
    """The lines of every .py file under src/, tests/, bench/ and examples/, by path from the repository root; not
    inside a hidden directory or node_modules (what tests install at test time, e.g. tests/e2e/.npm-cache)."""
    out: dict[str, int] = {}
    for top in PYTHON_ROOTS:
        for path in (ROOT / top).rglob("*.py"):
            rel = path.relative_to(ROOT)
            if is_first_party(rel.parts):
                out[rel.as_posix()] = len(path.read_bytes().splitlines())
    return out


def test_no_python_file_is_over_600_lines() -> None:
    """src, tests, bench and examples alike: a long test module splits by theme (its shared fixtures in the
    directory's conftest.py, its helpers under public names in tests/support or a tests/e2e `_helper.py`)."""
    sizes = python_file_lines()
    read = {"src/routequote/core/quote.py", "tests/unit/test_layering.py", "bench/http_bench.py"}
    assert read <= set(sizes) and any(p.startswith("examples/") for p in sizes)  # every root is read
    over = {p: n for p, n in sorted(sizes.items()) if n > MAX_LINES}
    assert over == {}, "over 600 lines: " + ", ".join(f"{p} ({n})" for p, n in over.items())
