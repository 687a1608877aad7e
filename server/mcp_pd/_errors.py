"""Every error code this package puts on the wire, in one place (spelled nowhere else: tests/test_errors.py).

The spec v2.1 codes first, then the ones this implementation adds (spec/interpretations.md says where and why).
Values are the wire strings; `ErrorCode.X` compares equal to `"X"` and serializes as it.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["ErrorCode"]


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
