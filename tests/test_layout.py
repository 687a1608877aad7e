"""The size limits that keep one concept per module in server/mcp_pd (issue 20): a module that outgrows them is
holding a second concept that wants its own home."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "server" / "mcp_pd"
MODULE_LINES = 700
EXTENSION_LINES = 400  # SDK glue only: validation, install(), the handler table
CLASS_LINES = 350


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def test_no_module_outgrows_its_concept() -> None:
    sizes = {p.relative_to(PACKAGE).as_posix(): len(p.read_text().splitlines()) for p in _modules()}
    assert len(sizes) > 40
    assert {m: n for m, n in sizes.items() if n > MODULE_LINES} == {}
    assert sizes["_extension.py"] <= EXTENSION_LINES


def test_no_class_outgrows_its_concept() -> None:
    big = {}
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                assert node.end_lineno is not None
                lines = node.end_lineno - node.lineno + 1
                if lines > CLASS_LINES:
                    big[f"{path.relative_to(PACKAGE).as_posix()}:{node.name}"] = lines
    assert big == {}
