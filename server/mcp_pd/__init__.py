"""MCP Progressive Disclosure (spec v2.1) for servers built on the official `mcp` SDK.

from mcp_pd import ProgressiveDisclosure
ProgressiveDisclosure("tool_descriptions").install(server)   # MCPServer or low-level Server
"""

from ._extension import EXTENSION_ID, ProgressiveDisclosure
from ._grants import GrantStore, MemoryGrantStore
from ._guidance import resource_description, system_prompt_guidance
from ._model import (
    DEFAULT_RESOURCE_URI,
    MINIMAL_INPUT_SCHEMA,
    MISSING_TOOL_SELECTION,
    RATE_LIMITED,
    SESSION_REQUIRED,
    TOOL_DESCRIPTION_REQUIRED,
    ToolDefinition,
    missing_tool_selection,
    selection_uri,
    tool_description_required,
    tool_not_found,
)
from ._policy import Caller, RateLimit, ToolPermission
from ._sessions import SessionKeyHook, SessionlessPolicy
from ._store import DescriptionStore, Problem

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_RESOURCE_URI",
    "EXTENSION_ID",
    "MINIMAL_INPUT_SCHEMA",
    "MISSING_TOOL_SELECTION",
    "RATE_LIMITED",
    "SESSION_REQUIRED",
    "TOOL_DESCRIPTION_REQUIRED",
    "Caller",
    "DescriptionStore",
    "GrantStore",
    "MemoryGrantStore",
    "Problem",
    "ProgressiveDisclosure",
    "RateLimit",
    "SessionKeyHook",
    "SessionlessPolicy",
    "ToolDefinition",
    "ToolPermission",
    "missing_tool_selection",
    "resource_description",
    "selection_uri",
    "system_prompt_guidance",
    "tool_description_required",
    "tool_not_found",
]
