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
        "WORKFLOW: Step 1: choose a tool from tools/list by what its short description says it does "
        "(tools/list is for choosing, not for parameters). "
        f"Step 2: read this resource with a tools query parameter to learn its parameters: {one} "
        f"(several at once, comma-separated: {two}). "
        "Step 3: call the tool with the parameters you learned. "
        "Fetching a tool's description authorizes that tool for the rest of this session; "
        "calling a tool whose description you have not fetched fails with TOOL_DESCRIPTION_REQUIRED, "
        "whose resource_uri tells you what to fetch. "
        "Always name the tools: a read without ?tools= fails with MISSING_TOOL_SELECTION."
    )


def system_prompt_guidance(base_uri: str) -> str:
    """Spec 8.2 guidance for the model's system prompt; servers send it as `instructions`."""
    return (
        "This server uses progressive disclosure for its tools. "
        "1) tools/list shows each tool's name and a one-line purpose: that is enough to choose a tool, "
        "so do not guess parameters from it. "
        f"2) Before calling a tool, read the resource {selection_uri(['TOOL_NAME'], base_uri)} "
        f"(or {selection_uri(['TOOL1', 'TOOL2'], base_uri)} for several) to get its full definition; "
        "this also authorizes the tool for this session. "
        "3) Never read the resource without ?tools=: name only the tools you are about to use. "
        "4) If a call fails with TOOL_DESCRIPTION_REQUIRED, read the resource_uri it gives, then retry."
    )
