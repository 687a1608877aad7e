"""Each wire error code is spelled in one module only (issue 20): `mcp_pd._errors.ErrorCode`."""

from __future__ import annotations

import ast
from pathlib import Path

from mcp_pd._errors import ErrorCode
from pdtest import ROOT

PACKAGE = ROOT / "server" / "mcp_pd"


def _spellings(path: Path) -> list[tuple[int, str]]:
    """String constants of `path` that are a wire code, outside `__all__` (which names constants, not codes)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    exported: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            exported.update(id(n) for n in ast.walk(node.value))
    codes = {code.value for code in ErrorCode}
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value in codes and id(node) not in exported
    ]


def test_every_wire_code_is_spelled_in_the_error_vocabulary_only() -> None:
    elsewhere = {
        f"{path.relative_to(PACKAGE)}:{line}": code
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "_errors.py"
        for line, code in _spellings(path)
    }
    assert elsewhere == {}, "use mcp_pd._errors.ErrorCode instead of spelling the code"


def test_the_vocabulary_is_what_goes_on_the_wire() -> None:
    import mcp_pd

    # The public constants are the vocabulary's values, plain strings as before.
    for name in ("TOOL_DESCRIPTION_REQUIRED", "MISSING_TOOL_SELECTION", "SESSION_REQUIRED", "RATE_LIMITED"):
        value = getattr(mcp_pd, name)
        assert type(value) is str and value == ErrorCode[name].value == name
    assert len({code.value for code in ErrorCode}) == len(ErrorCode)
