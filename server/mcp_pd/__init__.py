"""MCP Progressive Disclosure (spec v2.1) for servers built on the official `mcp` SDK.

from mcp_pd import ProgressiveDisclosure
ProgressiveDisclosure("tool_descriptions").install(server)   # MCPServer, low-level Server or FastMCP 4

Modes: "progressive" (spec v2.1 plus the describe_tools tool, the default), "eager" (full definitions, nothing
enforced) and "catalog" (search, browse, describe, call); see spec/interpretations.md I-13, I-14 and I-16.
Grants shared by replicas: `RedisGrantStore` and `RedisFetchLimiter` (the `redis` extra; imported on first use).
"""

from typing import TYPE_CHECKING, Any

from ._version import VERSION

if TYPE_CHECKING:
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
    from ._redis import RedisFetchLimiter, RedisGrantStore
    from ._sessions import SessionKeyHook, SessionlessPolicy
    from ._store import DescriptionStore, Problem

__version__ = VERSION

# Each public name's module (those not named here are `_model`'s), imported when the name is first asked for:
# `import mcp_pd` (and so every `mcp-pd` command, `--help` included) costs no SDK import until something of the
# library is used. The Redis classes need the optional `redis` package: never imported before they are asked for.
_HOMES: dict[str, str] = {
    **dict.fromkeys(("DESCRIBE_TOOL", "EXTENSION_ID", "Mode", "ProgressiveDisclosure"), "_extension"),
    **dict.fromkeys(("GrantStore", "GrantStoreUnavailable", "MemoryGrantStore"), "_grants"),
    **dict.fromkeys(("resource_description", "system_prompt_guidance"), "_guidance"),
    **dict.fromkeys(("Caller", "FetchLimiter", "FetchRateLimiter", "RateLimit", "ToolPermission"), "_policy"),
    **dict.fromkeys(("RedisFetchLimiter", "RedisGrantStore"), "_redis"),
    **dict.fromkeys(("SessionKeyHook", "SessionlessPolicy"), "_sessions"),
    **dict.fromkeys(("DescriptionStore", "Problem"), "_store"),
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name, "_model" if name in __all__ else None)
    if home is None:
        raise AttributeError(f"module 'mcp_pd' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # asked once: later lookups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


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
