"""MCP Progressive Disclosure (spec v2.1) for servers built on the official `mcp` SDK.

from mcp_pd import ProgressiveDisclosure
ProgressiveDisclosure("tool_descriptions").install(server)   # MCPServer or low-level Server

Modes: "progressive" (spec v2.1 plus the describe_tools tool, the default), "eager" (full definitions, nothing
enforced) and "catalog" (search, browse, describe, call); see spec/interpretations.md I-13, I-14 and I-16.
Grants shared by replicas: `RedisGrantStore` and `RedisFetchLimiter` (the `redis` extra; imported on first use).
"""

from typing import TYPE_CHECKING, Any

from ._extension import DESCRIBE_TOOL, EXTENSION_ID, Mode, ProgressiveDisclosure
from ._grants import GrantStore, GrantStoreUnavailable, MemoryGrantStore
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
from ._policy import Caller, FetchLimiter, FetchRateLimiter, RateLimit, ToolPermission
from ._sessions import SessionKeyHook, SessionlessPolicy
from ._store import DescriptionStore, Problem
from ._version import VERSION

if TYPE_CHECKING:
    from ._redis import RedisFetchLimiter, RedisGrantStore

__version__ = VERSION


def __getattr__(name: str) -> Any:
    # The Redis classes need the optional `redis` package: imported when first asked for, never at import time.
    if name in ("RedisFetchLimiter", "RedisGrantStore"):
        from . import _redis

        return getattr(_redis, name)
    raise AttributeError(f"module 'mcp_pd' has no attribute {name!r}")


__all__ = [
    "DEFAULT_RESOURCE_URI",
    "DESCRIBE_TOOL",
    "EXTENSION_ID",
    "MINIMAL_INPUT_SCHEMA",
    "MISSING_TOOL_SELECTION",
    "RATE_LIMITED",
    "SESSION_REQUIRED",
    "TOOL_DESCRIPTION_REQUIRED",
    "Caller",
    "DescriptionStore",
    "FetchLimiter",
    "FetchRateLimiter",
    "GrantStore",
    "GrantStoreUnavailable",
    "MemoryGrantStore",
    "Mode",
    "Problem",
    "ProgressiveDisclosure",
    "RateLimit",
    "RedisFetchLimiter",
    "RedisGrantStore",
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
