"""The system prompt the agent gives every back-end: a base role, the spec-8 guidance, the server's instructions.

Spec 8.2 asks agents for system-prompt guidance that (1) explains the two-stage workflow, (2) says the
minimal descriptions are enough to choose a tool, (3) forbids reading the resource without naming tools and
(4) shows the fetch syntax. `system_prompt_guidance()` is that text, one numbered point per requirement; the
docs quote it from here. It names the synthetic function the agent gives tool-only models
(`read_tool_descriptions`) and the resource URI it reads, so it also fits clients that read resources themselves.
Against a catalog-mode server (spec/interpretations.md I-16) the same four points say: search, describe, call.
"""

from __future__ import annotations

from typing import Final, Literal, TypeAlias

from ._connection import ServerMode

__all__ = ["BASE_PROMPT", "HOSTS", "READ_FUNCTION", "Host", "system_prompt", "system_prompt_guidance"]

Host: TypeAlias = Literal["resources", "tools-only"]
# resources: the host reads MCP resources for the model (here through the synthetic reader function);
# tools-only: the model gets the server's tools and nothing else, as in most desktop and agent hosts.
HOSTS: Final[tuple[Host, ...]] = ("resources", "tools-only")
READ_FUNCTION: Final = "read_tool_descriptions"
DEFAULT_RESOURCE_URI: Final = "resource:///tool_descriptions"

BASE_PROMPT: Final = (
    "You complete the user's task by calling the tools of one MCP server. Work from tool results, not from "
    "guesses. When the task is done, answer in one or two sentences with the outcome (ids, numbers, names)."
)


def system_prompt_guidance(
    resource_uri: str = DEFAULT_RESOURCE_URI,
    read_function: str = READ_FUNCTION,
    host: Host = "resources",
    *,
    mode: ServerMode = "progressive",
) -> str:
    """The four points of spec 8.2, for a model whose tools come from a progressive-disclosure server.

    In the tools-only host `read_function` is the server's describe tool; so it is in catalog mode.
    """
    if mode == "catalog":
        return _catalog_guidance(read_function)
    if host == "tools-only":
        return _tools_only_guidance(read_function)
    one = f"{resource_uri}?tools=TOOL_NAME"
    two = f"{resource_uri}?tools=TOOL1,TOOL2"
    return (
        "This server uses progressive disclosure: its tool list is short on purpose.\n"
        "1. Two stages. First choose the tool(s) for the task from the tool list. Then fetch their full "
        f"definitions with {read_function} before calling them, and call them with the parameters you learned. "
        "Fetching also authorizes the tools for this session.\n"
        "2. The one-line descriptions in the tool list are enough to choose a tool. They do not show the "
        "parameters (every listed input schema is a placeholder), so never guess arguments from them.\n"
        f"3. Never fetch without naming tools: pass only the exact names, from the tool list, of the tools you are "
        f"about to use (several at once is fine). A fetch with no names fails with MISSING_TOOL_SELECTION.\n"
        f'4. Syntax: {read_function}(tools=["TOOL_NAME"]) reads {one}; {read_function}(tools=["TOOL1", "TOOL2"]) '
        f"reads {two}. If a call fails with TOOL_DESCRIPTION_REQUIRED, fetch the tools in its resource_uri and "
        "retry; if a name is not found, choose from the available_tools it lists."
    )


def _tools_only_guidance(describe: str) -> str:
    return (
        "This server uses progressive disclosure: its tool list is short on purpose.\n"
        "1. Two stages. First choose the tool(s) for the task from the tool list. Then fetch their full "
        f"definitions with the {describe} tool before calling them, and call them with the parameters you learned. "
        "Fetching also authorizes the tools for this session.\n"
        "2. The one-line descriptions in the tool list are enough to choose a tool. They do not show the "
        f"parameters (every listed input schema except {describe}'s is a placeholder), so never guess arguments "
        "from them.\n"
        "3. Never fetch without naming tools: pass only the exact names, from the tool list, of the tools you are "
        "about to use (several at once is fine). A fetch with no names fails with MISSING_TOOL_SELECTION.\n"
        f'4. Syntax: {describe}(tools=["TOOL_NAME"]); {describe}(tools=["TOOL1", "TOOL2"]) for several. If a call '
        "fails with TOOL_DESCRIPTION_REQUIRED, make the describe_tool_call it gives and retry; if a name is not "
        "found, choose from the available_tools it lists."
    )


def _catalog_guidance(describe: str) -> str:
    return (
        "This server has more tools than it lists: find them with search_tools.\n"
        "1. Three stages. Find the tool(s) for the task with search_tools (browse_tools lists the categories). Then "
        f"fetch their full definitions with the {describe} tool, and call them through call_tool with the "
        "parameters you learned. Fetching also authorizes the tools for this session.\n"
        "2. The one-line descriptions in the search results are enough to choose a tool. They do not show the "
        "parameters, so never guess arguments from them.\n"
        "3. Never fetch without naming tools: pass only the exact names, from the search results, of the tools you "
        "are about to use (several at once is fine). A fetch with no names fails with MISSING_TOOL_SELECTION.\n"
        f'4. Syntax: search_tools(query="what you want to do"); {describe}(tools=["TOOL1", "TOOL2"]); '
        'call_tool(name="TOOL1", arguments={...}). If a search abstains, rephrase it or browse a category; if a '
        f"call fails with TOOL_DESCRIPTION_REQUIRED, make the describe_tool_call it gives and retry; on "
        "INVALID_ARGUMENTS, fix the fields it names; if a name is not found, search again."
    )


def system_prompt(
    server_instructions: str | None,
    resource_uri: str = DEFAULT_RESOURCE_URI,
    read_function: str = READ_FUNCTION,
    host: Host = "resources",
    *,
    mode: ServerMode = "progressive",
) -> str:
    """Base role + spec-8 guidance + the server's own `instructions` (servers may repeat the guidance there)."""
    parts = [BASE_PROMPT, system_prompt_guidance(resource_uri, read_function, host, mode=mode)]
    if server_instructions and server_instructions.strip():
        parts.append("Instructions from the server:\n" + server_instructions.strip())
    return "\n\n".join(parts)
