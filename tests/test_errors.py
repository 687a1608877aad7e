"""Each wire error code is spelled in one module only (issue 20): `mcp_pd._errors.ErrorCode`."""

from __future__ import annotations

import ast
from pathlib import Path

from mcp_pd._errors import ErrorCode, Refusal
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


def test_a_refusal_renders_itself_in_each_envelope() -> None:
    import json

    from mcp.shared.exceptions import MCPError

    refusal = Refusal(ErrorCode.RATE_LIMITED, "Too many reads; retry in 2 s.", rpc_code=-32000, retry_after_seconds=2)
    document = {"error": {"code": "RATE_LIMITED", "message": "Too many reads; retry in 2 s.", "retry_after_seconds": 2}}
    assert refusal.document() == document
    result = refusal.tool_result()  # tools/call (I-1)
    assert result.is_error and result.structured_content == document
    assert json.loads(result.content[0].text) == document  # type: ignore[union-attr]
    error = refusal.rpc_error()  # reads (I-2)
    assert isinstance(error, MCPError)
    assert (error.error.code, error.error.message, error.error.data) == (-32000, refusal.message, document)
    # A document built by the spec model (`_model`) becomes the same value, with reads' default code.
    again = Refusal.of(document)
    assert again.document() == document and again.rpc_code == -32602


def _error_documents(path: Path) -> list[int]:
    """Lines of `path` that write an error document by hand: a dict literal `{"error": {"code": ...}}`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Dict):
            continue
        outer = {k.value for k in node.keys if isinstance(k, ast.Constant)}
        if "jsonrpc" in outer:
            continue  # a JSON-RPC envelope (the HTTP layer's transport refusals), not an error document
        for key, value in zip(node.keys, node.values, strict=True):
            named_error = isinstance(key, ast.Constant) and key.value == "error"
            if (
                named_error
                and isinstance(value, ast.Dict)
                and "code" in {getattr(k, "value", None) for k in value.keys}
            ):
                lines.append(node.lineno)
    return lines


def test_error_documents_are_built_in_the_vocabulary_or_the_spec_model_only() -> None:
    # The envelope is chosen in one place: everyone else raises or returns a Refusal (or a `_model` document).
    allowed = {"_errors.py", "_model.py"}
    elsewhere = {
        str(path.relative_to(PACKAGE)): lines
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name not in allowed and (lines := _error_documents(path))
    }
    assert elsewhere == {}, "build a Refusal (mcp_pd._errors) instead of an error document by hand"
