"""The error vocabulary: every code this package puts on the wire (spelled nowhere else: tests/test_errors.py),
and `Refusal`, the one value a refusal is, whichever envelope carries it.

The spec v2.1 codes first, then the ones this implementation adds (spec/interpretations.md says where and why).
Values are the wire strings; `ErrorCode.X` compares equal to `"X"` and serializes as it. A refusal is the spec's
error document (`{"error": {"code", "message", ...}}`); it travels as an `isError` tool result on tools/call (I-1)
or as a JSON-RPC error whose `data` is the document on reads (I-2): `Refusal.tool_result()` / `Refusal.rpc_error()`
choose the envelope, here only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from enum import StrEnum
from typing import Any, Final

import mcp_types as types
from mcp.shared.exceptions import MCPError

__all__ = ["RETRYABLE", "ErrorCode", "Refusal", "tool_result"]

# JSON-RPC error code of a read refused for a reason that passes (rate limit, an unavailable store).
RETRYABLE: Final = -32000


class ErrorCode(StrEnum):
    """Codes of the error documents (`{"error": {"code": ...}}`) and JSON-RPC error data."""

    # spec v2.1
    TOOL_DESCRIPTION_REQUIRED = "TOOL_DESCRIPTION_REQUIRED"  # a call before its definition was read (6.1)
    MISSING_TOOL_SELECTION = "MISSING_TOOL_SELECTION"  # a read without the `tools` parameter (4.3)
    TOOL_NOT_FOUND = "TOOL_NOT_FOUND"  # an unknown or hidden name (6.3)
    RATE_LIMITED = "RATE_LIMITED"  # too many reads (8)
    # the selection and the describe tool (I-3, I-13)
    INVALID_TOOL_NAME = "INVALID_TOOL_NAME"
    TOO_MANY_TOOLS = "TOO_MANY_TOOLS"
    URI_TOO_LONG = "URI_TOO_LONG"
    INVALID_ARGUMENTS = "INVALID_ARGUMENTS"
    # sessions and shared state (spec/sessions.md, I-18)
    SESSION_REQUIRED = "SESSION_REQUIRED"
    GRANTS_UNAVAILABLE = "GRANTS_UNAVAILABLE"
    # catalog mode (I-16) and the gateway
    UNKNOWN_CATEGORY = "UNKNOWN_CATEGORY"
    UPSTREAM_UNAVAILABLE = "UPSTREAM_UNAVAILABLE"
    # a call's `_meta` selecting an implementation other than the described one (I-42)
    IMPLEMENTATION_NOT_DESCRIBED = "IMPLEMENTATION_NOT_DESCRIBED"


def tool_result(document: dict[str, Any], *, error: bool) -> types.CallToolResult:
    """A tool result carrying `document` as structured content and as JSON text (I-1); the gateway's too."""
    text = json.dumps(document, ensure_ascii=False)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=document, is_error=error
    )


class Refusal(Exception):
    """A request refused: the error document, and the JSON-RPC code it has when it answers a read.

    Raised or returned by whoever decides (`Disclosure`, the meta-tools, the gateway); the handler that answers
    picks the envelope with `tool_result()` or `rpc_error()`.
    """

    def __init__(
        self, code: ErrorCode | str, message: str, *, rpc_code: int = types.INVALID_PARAMS, **details: Any
    ) -> None:
        super().__init__(message)
        self.code = str(code)
        self.message = message
        self.rpc_code = rpc_code
        self.details = details

    @classmethod
    def of(cls, document: Mapping[str, Any], *, rpc_code: int = types.INVALID_PARAMS) -> Refusal:
        """The refusal an error document built elsewhere (`_model`) describes."""
        error = dict(document["error"])
        return cls(error.pop("code"), error.pop("message"), rpc_code=rpc_code, **error)

    def document(self) -> dict[str, Any]:
        """`{"error": {"code", "message", ...details}}` (spec 6)."""
        return {"error": {"code": self.code, "message": self.message, **self.details}}

    def tool_result(self) -> types.CallToolResult:
        """As an `isError` tool result: how tools/call answers (I-1)."""
        return tool_result(self.document(), error=True)

    def rpc_error(self) -> MCPError:
        """As a JSON-RPC error whose data is the document: how a read answers (I-2)."""
        return MCPError(self.rpc_code, self.message, self.document())

    def __repr__(self) -> str:
        return f"Refusal({self.code}, {self.message!r})"
