"""The checks of what a server lists: the handshake, tools/list (spec 3.1), the resource entry (4.1, 4.2)."""

from __future__ import annotations

from typing import Final

from ._requirements import CheckSpec, Severity, define

__all__ = ["LISTING_CHECKS"]

M, S, N = Severity.MUST, Severity.SHOULD, Severity.INFO

# In run order. Scenario names are the part before the slash.
LISTING_CHECKS: Final[tuple[CheckSpec, ...]] = (
    define(
        "connection/handshake",
        M,
        ("PD-2-01",),
        "the server completes the MCP handshake",
        "Start an MCP server (stdio or Streamable HTTP); progressive disclosure is an MCP extension.",
    ),
    define(
        "connection/era-exercised",
        M,
        ("PD-2-01", "PDX-SUITE-01"),
        "each protocol era asked for was exercised: requests of it answered in its own protocol",
        "Serve the protocol era you ask the suite to check: answer initialize (2025-11-25) for --era legacy, and "
        "server/discover or requests carrying the 2026-07-28 envelope for --era 2026-07-28; or check with --era both, "
        "to be judged on the era you speak.",
    ),
    define(
        "tools-list/listed",
        M,
        ("PD-3.1-01",),
        "tools/list answers and lists tools",
        "Answer tools/list with every tool the caller may use.",
    ),
    define(
        "tools-list/pagination",
        M,
        ("PD-3.1-01", "PD-4.1-01"),
        "tools/list, resources/list and resources/templates/list cursors end and never repeat",
        "Return nextCursor only while more items follow, never the same cursor twice; the suite follows at most "
        "1000 pages.",
    ),
    define(
        "tools-list/served-tools-listed",
        M,
        ("PD-3.1-01", "PD-2-01"),
        "every tool the resource describes (named in available_tools) appears on some page of tools/list",
        "List every tool you serve on some page of tools/list: check that following nextCursor from the first page "
        "returns each tool exactly once (an off-by-one between pages drops one); a tool a caller may not use must be "
        "neither listed, described nor callable.",
    ),
    define(
        "tools-list/minimal-schema",
        M,
        ("PD-3.1-01", "PD-3.1-04", "PD-2-01"),
        "tools/list entries carry no detailed parameter schema",
        'List inputSchema as {"type": "object", "additionalProperties": true} (or omit it); '
        "serve the real schema only through the tool_descriptions resource.",
    ),
    define(
        "tools-list/no-examples",
        M,
        ("PD-3.1-04",),
        "tools/list entries carry no examples",
        "Move examples into the full description served by the resource.",
    ),
    define(
        "tools-list/description-present",
        M,
        ("PD-3.1-02",),
        "every tools/list entry has a non-empty description",
        "Give each tool a one-line description of what it does, enough to choose it.",
    ),
    define(
        "tools-list/description-concise",
        S,
        ("PD-3.1-04",),
        "tools/list descriptions are short and carry no usage instructions",
        "Keep the listed description to one or two sentences (under 300 characters); "
        "put parameters, examples and usage notes in the full description.",
    ),
    define(
        "tools-list/description-purpose",
        S,
        ("PD-3.1-03",),
        "tools/list descriptions convey the tool's purpose",
        "Say what the tool does and when to use it in a short sentence, not just its name.",
    ),
    define(
        "tools-list/description-not-name",
        M,
        ("PD-3.1-02",),
        "no listed description is only the tool's own name",
        'Write what the tool does in a sentence ("Count the words in a text."); its name alone ("word_count") '
        "selects nothing a model could not read from the name.",
    ),
    define(
        "tools-list/distinct-descriptions",
        M,
        ("PD-3.1-02",),
        "no two tools share one description (a placeholder cannot select a tool)",
        "Give every tool its own one-line purpose; a placeholder such as 'see tool_descriptions' on every tool "
        "leaves nothing to choose by.",
    ),
    define(
        "tools-list/no-parameter-docs",
        M,
        ("PD-3.1-04",),
        "listed descriptions document no parameters (any docstring style) and show no call examples",
        "Move ':param', 'Args:', '@param' and 'Parameters' sections and example calls into the full description.",
    ),
    define(
        "tools-list/no-usage-instructions",
        M,
        ("PD-3.1-04",),
        "listed descriptions and titles carry no usage instructions (what to pass, argument rules, what to call first)",
        'Keep the listed description to what the tool does and when to use it; move directions such as "Always '
        'pass ...", "dates must be in ISO format" or "call X first" into the full description.',
    ),
    define(
        "tools-list/no-hidden-detail",
        M,
        ("PD-3.1-04",),
        "no parameter schema, example or usage text hides in title, annotations, _meta or outputSchema",
        "Keep title short, annotations to the MCP hints, and _meta/outputSchema free of parameters and examples.",
    ),
    define(
        "tools-list/relist-minimal",
        M,
        ("PD-3.1-01", "PD-3.1-04"),
        "tools/list again, after the run's reads and any notifications/tools/list_changed, still lists minimal entries",
        "Keep every listing minimal, whenever it is asked for: a tool whose description was read, or a listing "
        "announced by notifications/tools/list_changed, still gets the minimal entry; the full schema stays in the "
        "resource.",
    ),
    define(
        "tools-list/extension-tools",
        N,
        ("PD-3.1-05",),
        "which listed tools belong to the extension itself (describe/search tools), exempt from the gate",
        "",
    ),
    define(
        "tools-list/schema-form",
        N,
        ("PD-3.1-05",),
        "which simplified inputSchema form tools/list uses",
        "",
    ),
    define(
        "resource-listing/listed",
        M,
        ("PD-4.1-01", "PD-2-02", "PD-3.2-01"),
        "a tool_descriptions resource appears in resources/list",
        "A server you did not write: serve it through `mcp-pd proxy`. Yours: `ProgressiveDisclosure().install(app)` "
        '(Python), or list {"uri": "resource:///tool_descriptions", "name": "tool_descriptions"} in resources/list.',
    ),
    define(
        "resource-listing/capability-declared",
        M,
        ("PD-2-02", "PD-4.1-01"),
        "the server declares the resources (and tools) capability it serves: hosts that respect capabilities "
        "never list an undeclared resource",
        'Declare "resources": {} (and "tools": {}) in the capabilities of initialize and server/discover; with the '
        "SDK's low-level Server, register the resources/list handler before capabilities are built.",
    ),
    define(
        "resource-listing/uri",
        M,
        ("PD-4.1-02",),
        "the resource uri is resource:///tool_descriptions or ends in tool_descriptions (no query)",
        "List the base URI, e.g. resource:///tool_descriptions, without a query string.",
    ),
    define(
        "resource-listing/name",
        M,
        ("PD-4.1-03",),
        "the resource name or title says it holds tool descriptions",
        'Name it e.g. "Tool Descriptions - required before calling any tool".',
    ),
    define(
        "resource-listing/explains-tools-list",
        M,
        ("PD-4.2-01", "PD-4.1-04"),
        "the resource description relates tools/list to the resource",
        'Say e.g. "Step 1: choose a tool from tools/list ...".',
    ),
    define(
        "resource-listing/explains-fetch-first",
        M,
        ("PD-4.2-02", "PD-4.1-04"),
        "the resource description says to fetch a tool's description before calling it",
        'Say e.g. "Fetch the tool\'s description before calling it".',
    ),
    define(
        "resource-listing/explains-query-syntax",
        M,
        ("PD-4.2-03", "PD-4.1-04"),
        "the resource description gives the ?tools= query syntax",
        "Show the syntax, e.g. resource:///tool_descriptions?tools=TOOL_NAME (comma-separate several).",
    ),
    define(
        "resource-listing/explains-consequence",
        M,
        ("PD-4.2-04", "PD-4.1-04"),
        "the resource description says what happens when a tool is called unfetched",
        'Say e.g. "calling a tool you have not fetched fails with TOOL_DESCRIPTION_REQUIRED".',
    ),
    define(
        "resource-listing/sequential-steps",
        S,
        ("PD-4.2-05",),
        "the resource description uses sequential workflow steps",
        'Write the workflow as "Step 1: ... Step 2: ... Step 3: ...".',
    ),
    define(
        "resource-listing/selection-vs-parameters",
        S,
        ("PD-4.2-06",),
        "the resource description separates tool selection from parameter learning",
        "Say that tools/list is for choosing a tool and this resource is for learning its parameters.",
    ),
    define(
        "resource-listing/uri-examples",
        S,
        ("PD-4.2-07",),
        "the resource description gives concrete URI examples",
        "Include e.g. resource:///tool_descriptions?tools=TOOL1,TOOL2 verbatim.",
    ),
    define(
        "resource-listing/explains-authorization",
        S,
        ("PD-4.2-08",),
        "the resource description says fetching authorizes the tool for the session",
        'Say e.g. "fetching a description authorizes that tool for the rest of this session".',
    ),
    define(
        "resource-listing/mime-type",
        S,
        ("PD-4.1-05",),
        "the resource mimeType is application/json",
        'Set "mimeType": "application/json" on the listed resource.',
    ),
    define(
        "resource-listing/system-prompt-guidance",
        S,
        ("PD-2-04",),
        "the server's instructions carry system-prompt guidance for the two-stage workflow",
        "Send instructions that explain the two stages and show the ?tools= syntax (spec 8.2).",
    ),
)
