"""The public API is exactly `mcp_pd.__all__`, each name defined in a private module."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import mcp_pd


def test_all_is_sorted_unique_and_importable() -> None:
    names = mcp_pd.__all__
    assert len(names) == len(set(names))
    assert sorted(names, key=lambda n: (not n.isupper(), n)) == names
    for name in names:
        assert hasattr(mcp_pd, name), name


def test_public_names_live_in_private_modules() -> None:
    defined = [getattr(mcp_pd, n) for n in mcp_pd.__all__]
    objects = [o for o in defined if inspect.isclass(o) or inspect.isfunction(o)]
    assert len(objects) == 19
    for obj in objects:
        assert obj.__module__.startswith("mcp_pd._"), (obj, obj.__module__)


def test_no_public_modules_besides_the_documented_ones() -> None:
    public = {m.name for m in pkgutil.iter_modules(mcp_pd.__path__) if not m.name.startswith("_")}
    assert public == {"gateway", "reference"}
    for module in ("mcp_pd.gateway", "mcp_pd.reference"):
        assert importlib.import_module(module).__all__


def test_the_gateway_upstream_side_uses_public_names_of_mcp_pd_only() -> None:
    """The upstream pool and what it is built from (issue 20.4) are a client of the library like any other."""
    import ast
    from pathlib import Path

    folder = Path(mcp_pd.__file__).parent / "gateway"
    for module in (
        "_pool.py",
        "_failures.py",
        "_progressive.py",
        "_process.py",
        "_stdout.py",
        "_calls.py",
        "_config.py",
    ):
        tree = ast.parse((folder / module).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == "mcp_pd._redact":
                continue  # the one rule that secrets never leave the operator's log: a floor both sides stand on
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("mcp_pd"):
                assert node.module == "mcp_pd", f"{module} imports {node.module}"
                assert all(alias.name in mcp_pd.__all__ or alias.name == "__version__" for alias in node.names)
            if isinstance(node, ast.Import):
                assert not any(a.name.startswith("mcp_pd.") for a in node.names), module
