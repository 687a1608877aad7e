"""The size limits that keep one concept per module in server/mcp_pd (issue 20) and in the conformance suite
(issue 42): a module that outgrows them is holding a second concept that wants its own home; and imports run one
way (the floors of docs/architecture.md)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "server" / "mcp_pd"
SUITE = ROOT / "conformance_tests" / "mcp_pd_conformance"
MODULE_LINES = 700
EXTENSION_LINES = 405  # SDK glue only: validation, install(), the handler table (docs/architecture.md: why 405)
CLASS_LINES = 350


def _modules(package: Path = PACKAGE) -> list[Path]:
    return sorted(p for p in package.rglob("*.py") if "__pycache__" not in p.parts)


def test_no_module_outgrows_its_concept() -> None:
    sizes = {p.relative_to(PACKAGE).as_posix(): len(p.read_text().splitlines()) for p in _modules()}
    assert len(sizes) > 40
    assert {m: n for m, n in sizes.items() if n > MODULE_LINES} == {}
    assert sizes["_extension.py"] <= EXTENSION_LINES


def test_no_suite_module_outgrows_its_concept() -> None:
    """The suite keeps the library's rule: one family of checks per module (issue 42)."""
    sizes = {p.relative_to(SUITE).as_posix(): len(p.read_text().splitlines()) for p in _modules(SUITE)}
    assert len(sizes) > 25
    assert {m: n for m, n in sizes.items() if n > MODULE_LINES} == {}


def test_no_class_outgrows_its_concept() -> None:
    big = {}
    for package in (PACKAGE, SUITE):
        for path in _modules(package):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ClassDef):
                    assert node.end_lineno is not None
                    lines = node.end_lineno - node.lineno + 1
                    if lines > CLASS_LINES:
                        big[f"{path.relative_to(ROOT).as_posix()}:{node.name}"] = lines
    assert big == {}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["mcp_pd", *parts])


def _imports_at_load(path: Path, name: str) -> set[str]:
    """mcp_pd modules `path` imports when it is loaded (not inside functions, not under TYPE_CHECKING)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            if base == "mcp_pd" or base.startswith("mcp_pd."):
                found.add(base)
                found.update(f"{base}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("mcp_pd"))
    return found


def test_imports_run_one_way_no_cycles() -> None:
    """The floors of docs/architecture.md: no module imports, at load time, one that (indirectly) imports it."""
    paths = {_module_name(p): p for p in _modules()}
    graph = {
        name: {m for m in _imports_at_load(path, name) if m in paths and m != name} for name, path in paths.items()
    }
    # A package's __init__ re-exports its modules: an edge into the package is an edge into what it re-exports,
    # so the package itself is left out of the cycle search (its own imports are still checked).
    packages = {name for name, path in paths.items() if path.name == "__init__.py"}
    order: list[str] = []
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        if state.get(node) == 2:
            return
        assert state.get(node) != 1, "import cycle: " + " -> ".join([*trail, node])
        state[node] = 1
        for target in sorted(graph[node] - packages):
            visit(target, [*trail, node])
        state[node] = 2
        order.append(node)

    for name in sorted(set(graph) - packages):
        visit(name, [])
    assert len(order) > 40
