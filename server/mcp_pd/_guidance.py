"""The words the model reads: the resource's name and workflow description (spec 4.1, 4.2) and the
system-prompt guidance (spec 8) the server sends as `instructions`."""

from __future__ import annotations

from ._model import selection_uri

__all__ = ["RESOURCE_NAME", "resource_description", "system_prompt_guidance"]

RESOURCE_NAME = "Tool Descriptions - required before calling any tool"


def resource_description(base_uri: str) -> str:
    """The workflow the resource description must explain (4.2: all four MUST points, all four SHOULDs)."""
    one = selection_uri(["TOOL_NAME"], base_uri)
    two = selection_uri(["TOOL1", "TOOL2"], base_uri)
    return (
        "Full definitions (parameters, examples, error guidance) of the tools in tools/list. "
        "WORKFLOW: Step 1: choose a tool from tools/list by its short description "
        "(tools/list is for choosing, not for parameters). "
        f"Step 2: read this resource with a tools query parameter to learn its parameters: {one} "
        f"(several, comma-separated: {two}). "
        "Step 3: call the tool with those parameters. "
        "Fetching a tool's description authorizes it for the rest of this session; "
        "calling a tool you have not fetched fails with TOOL_DESCRIPTION_REQUIRED, "
        "whose resource_uri tells you what to fetch. "
        "A read without ?tools= fails with MISSING_TOOL_SELECTION."
    )


def system_prompt_guidance(base_uri: str) -> str:
    """Spec 8.2 guidance for the model's system prompt; servers send it as `instructions`.

    Four points in as few words as they take: every client reads it on every request (benchmarks/README.md).
    """
    return (
        "This server uses progressive disclosure: tools/list gives each tool's purpose, enough to choose a tool, "
        f"not its parameters. Before calling a tool, read {selection_uri(['TOOL_NAME'], base_uri)} "
        "(several: ?tools=A,B) for its definition; that authorizes it for this session. "
        "Never read the resource without ?tools=. "
        "On TOOL_DESCRIPTION_REQUIRED, read the resource_uri it gives, then retry."
    )


def describe_tool_guidance(describe_tool: str) -> str:
    """The same workflow for hosts whose model can only call tools (interpretations I-13)."""
    return f'Without resource access, {describe_tool} {{"tools": ["TOOL_NAME"]}} does the same.'


def describe_tool_description(resource_uri: str, max_tools: int) -> str:
    """What the describe tool's tools/list entry says (it keeps a real, small input schema: spec 3.1 MAY)."""
    # Short: it is listed to every client, and every token of it is paid on every request (benchmarks/context).
    return f"Get tools' full definitions by name (up to {max_tools}); required before calling them."


def catalog_summary(groups: dict[str, list[str]], budget: int, *, names: bool = True) -> str:
    """What the server offers within `budget` characters: `Tools (N): group: a, b; other: c`, or, when the names
    do not fit (or `names` is false), the categories with their sizes; without categories, nothing.
    tools/list names every tool anyway: the summary adds the grouping, not a second copy of a long list."""
    total = sum(len(members) for members in groups.values())
    if names:
        parts = [f"{group}: {', '.join(members)}" if group else ", ".join(members) for group, members in groups.items()]
        text = f"Tools ({total}): " + "; ".join(parts) + "."
        if len(text) <= budget:
            return text
    if any(groups):
        counts = ", ".join(f"{group or '(uncategorized)'} ({len(members)})" for group, members in groups.items())
        text = f"Tools ({total}) by category: {counts}."
        return text if len(text) <= budget else text[: budget - 1] + "…"
    return ""  # no grouping to add: tools/list already names every tool


def catalog_guidance(base_uri: str) -> str:
    """The workflow of catalog mode (I-16): find, describe, call, with the meta-tools' names."""
    return (
        'This server has more tools than it lists. 1) search_tools {"query": "what you want to do"} finds them '
        '(any language; browse_tools lists the categories). 2) describe_tools {"tools": ["name"]} returns the '
        "full definitions (parameters, examples) and authorizes those tools for this session; "
        f"reading {selection_uri(['TOOL_NAME'], base_uri)} does the same. 3) Call a described tool by name, or "
        'through call_tool {"name": ..., "arguments": {...}}. Calling a tool you have not described fails with '
        "TOOL_DESCRIPTION_REQUIRED, which says what to describe."
    )
