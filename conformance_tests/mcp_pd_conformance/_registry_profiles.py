"""The checks of the optional profiles: tool-fallback (I-13) and catalog (I-16)."""

from __future__ import annotations

from typing import Final

from ._requirements import CheckSpec, Severity, define

__all__ = ["PROFILE_CHECKS"]

M, S, N = Severity.MUST, Severity.SHOULD, Severity.INFO

# In run order. Scenario names are the part before the slash.
PROFILE_CHECKS: Final[tuple[CheckSpec, ...]] = (
    # -- profile tool-fallback (I-13) ------------------------------------------------------------------
    define(
        "tool-fallback/listed",
        M,
        ("PDX-DESCRIBE-01",),
        'the describe tool is listed with its small real input schema: {"tools": [names]}',
        'List it with {"type": "object", "properties": {"tools": {"type": "array", "items": {"type": "string"}}}, '
        '"required": ["tools"]}: a model must see how to call the one tool that unlocks the others.',
    ),
    define(
        "tool-fallback/callable-unfetched",
        M,
        ("PDX-DESCRIBE-01",),
        "the describe tool answers in a session that fetched nothing (it is never gated)",
        "Exempt the describe tool from the gate: it is how a tools-only host fetches a description.",
    ),
    define(
        "tool-fallback/same-document",
        M,
        ("PDX-DESCRIBE-02",),
        "the describe tool returns the resource's document for the same names, as JSON text and structuredContent",
        "Answer with the very document resources/read returns for ?tools=<the same names>: one JSON text content "
        "and the same object as structuredContent (unknown names get the same not-found entries).",
    ),
    define(
        "tool-fallback/same-errors",
        M,
        ("PDX-DESCRIBE-03",),
        "the describe tool refuses what the resource refuses (an empty list, too many or invalid names), "
        "with the same error documents as isError results",
        'Refuse {"tools": []} with the MISSING_TOOL_SELECTION document as an isError tool result, and every '
        "selection the resource refuses with the resource's error document.",
    ),
    define(
        "tool-fallback/authorizes",
        M,
        ("PDX-DESCRIBE-04", "PD-5.1-01"),
        "after the describe tool returned a tool's definition, that tool passes the gate in the session",
        "Record the same grant for (session, tool) as a resource read does, for every tool the describe tool served.",
    ),
    define(
        "tool-fallback/only-described",
        M,
        ("PDX-DESCRIBE-04", "PD-5.1-02"),
        "describing nothing, unknown names, a case variant or another tool authorizes nothing else",
        "Grant only the listed names the describe tool actually served.",
    ),
    define(
        "tool-fallback/isolated",
        M,
        ("PDX-DESCRIBE-04", "PD-5.1-04"),
        "what the describe tool authorized in one session is refused in a concurrent session",
        "Key the describe tool's grants by the MCP session, as the resource's: never one set for every session.",
    ),
    define(
        "tool-fallback/required-names-describe",
        S,
        ("PDX-DESCRIBE-06",),
        "TOOL_DESCRIPTION_REQUIRED names the describe tool call beside resource_uri",
        'Add "describe_tool_call": {"name": "describe_tools", "arguments": {"tools": ["<name>"]}} to the refusal, '
        "so a model in a tools-only host recovers in one step.",
    ),
    # -- profile catalog (I-16) -------------------------------------------------------------------------
    define(
        "catalog/fixed-list",
        M,
        ("PDX-CATALOG-01",),
        "tools/list holds search_tools, browse_tools, describe_tools and call_tool, not the catalog",
        "List the four meta-tools (and the few tools an author pins) whatever the catalog's size; "
        "search and browse find the rest.",
    ),
    define(
        "catalog/browse",
        M,
        ("PDX-CATALOG-06",),
        "browse_tools lists the categories with counts, and each category's tools in pages that add up to its count",
        'Answer {} with {"categories": [{"name", "count", "description"}]} and {"category": C} with '
        '{"tools": [{"name", "description"}], "nextCursor"?}, following nextCursor to the end.',
    ),
    define(
        "catalog/search-results",
        M,
        ("PDX-CATALOG-02",),
        "search_tools answers compact results (name, category, one line), within the limit, that find the tool",
        'Answer {"results": [{"name", "category", "description"}], "total"} as structuredContent with a JSON text '
        "copy; no schemas in results; at most limit (default 5) results.",
    ),
    define(
        "catalog/search-abstains",
        M,
        ("PDX-CATALOG-02",),
        "search_tools abstains on a query nothing fits: no results, abstained, a hint naming categories",
        'When nothing explains the query, answer {"results": [], "total": 0, "abstained": true, "hint": "... browse '
        'a category: ..."} instead of the least bad tools.',
    ),
    define(
        "catalog/search-filters",
        M,
        ("PDX-CATALOG-02",),
        "search_tools keeps to a category, finds tools like a named one, and names the valid categories on error",
        'Filter results by "category" before ranking; "like" returns other tools similar to the named one; '
        "an unknown category is an error listing the valid ones.",
    ),
    define(
        "catalog/call-gated",
        M,
        ("PDX-CATALOG-01", "PDX-CATALOG-04", "PD-5.1-02"),
        "call_tool and direct calls are refused before describe_tools, run after it, only in that session",
        "Put call_tool behind the same gate as a direct call: TOOL_DESCRIPTION_REQUIRED until this session "
        "described the tool; direct calls by name keep working under that gate.",
    ),
    define(
        "catalog/call-validates",
        M,
        ("PDX-CATALOG-04",),
        "call_tool refuses arguments that break the tool's inputSchema with INVALID_ARGUMENTS naming the field",
        "Validate the arguments against the tool's inputSchema before running it; answer INVALID_ARGUMENTS with, "
        "per problem, the field, the rule, the message and the schema fragment.",
    ),
    define(
        "catalog/call-unknown",
        M,
        ("PDX-CATALOG-04",),
        "call_tool answers a misspelt name with TOOL_NOT_FOUND and the closest names",
        "Answer unknown names with TOOL_NOT_FOUND and the closest tool names first, never by running a guess.",
    ),
)
