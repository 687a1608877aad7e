"""The checks of resource reads: selection and response (spec 4.3, 4.4, 6.3) and reads without a selection (6.1)."""

from __future__ import annotations

from typing import Final

from ._requirements import CheckSpec, Severity, define

__all__ = ["READING_CHECKS"]

M, S, N = Severity.MUST, Severity.SHOULD, Severity.INFO

# In run order. Scenario names are the part before the slash.
READING_CHECKS: Final[tuple[CheckSpec, ...]] = (
    define(
        "resource-read/single-tool",
        M,
        ("PD-4.3-01", "PD-3.2-05", "PD-4.4-01"),
        "?tools=<name> returns a JSON object keyed by that name",
        "Parse the tools query parameter and return one JSON text content mapping each name to its description.",
    ),
    define(
        "resource-read/only-requested",
        M,
        ("PD-4.4-02",),
        "the response contains only the requested tools",
        "Return exactly the tools named in ?tools=, never the whole catalog or neighbours.",
    ),
    define(
        "resource-read/no-preamble",
        M,
        ("PD-4.4-03",),
        "the response has no instructional preamble (every top-level key is a requested name)",
        "Put guidance in the resource description; the body maps tool names to descriptions and nothing else.",
    ),
    define(
        "resource-read/full-entry",
        M,
        ("PD-4.4-01", "PD-3.2-02", "PD-2-01"),
        "each entry has name, description and an object inputSchema",
        'Serve {"name", "description", "inputSchema", "examples", ...} for each requested tool.',
    ),
    define(
        "resource-read/complete-schema",
        S,
        ("PD-3.2-02",),
        "the served inputSchema is more detailed than the minimal one",
        "Serve the tool's complete JSON schema (properties, required, types, descriptions).",
    ),
    define(
        "resource-read/examples",
        S,
        ("PD-3.2-03",),
        "full descriptions include usage examples",
        'Add "examples": [{"description": ..., "input": {...}}] to each full description: with mcp_pd, in an overlay '
        "file tool_descriptions/<tool>.json; for a server you did not write, in the files `mcp-pd export` writes.",
    ),
    define(
        "resource-read/error-guidance",
        S,
        ("PD-3.2-04",),
        "full descriptions include error-handling guidance",
        'Add "error_guidance" (what errors mean and how to recover) to each full description: with mcp_pd, in an '
        "overlay file tool_descriptions/<tool>.json; for a server you did not write, in the files `mcp-pd export` "
        "writes.",
    ),
    define(
        "resource-read/comma-separated",
        M,
        ("PD-4.3-02", "PD-4.3-01"),
        "?tools=a,b returns exactly a and b",
        "Split the tools parameter on commas.",
    ),
    define(
        "resource-read/exact-match",
        M,
        ("PD-4.3-03",),
        "a name in another letter case is not served as the tool",
        "Match names exactly as listed by tools/list: no case folding, no fuzzy matching.",
    ),
    define(
        "resource-read/punctuation-match",
        M,
        ("PD-4.3-03",),
        "a name differing only in punctuation is not served as the tool",
        "Match names exactly as listed: no stripping or swapping of '_', '-' or '.'.",
    ),
    define(
        "resource-read/no-partial-match",
        M,
        ("PD-4.3-03",),
        "a prefix of a name, or a near spelling of it, is not served as the tool",
        "Look names up exactly as listed: no prefix, substring or closest-spelling match; answer an unknown name "
        "with its error entry (a suggestion inside it is fine) and serve nothing under it.",
    ),
    define(
        "resource-read/several-names",
        M,
        ("PD-4.3-02", "PD-4.4-02"),
        "?tools=a,b,c (three or more names) returns exactly those tools",
        "Split the tools parameter on every comma; do not cap the selection at one or two names.",
    ),
    define(
        "resource-read/mixed-known-unknown",
        M,
        ("PD-4.3-02", "PD-4.4-01"),
        "a read naming known and unknown tools still serves the known ones",
        "Serve each known name and give each unknown one an error entry; never fail the whole read.",
    ),
    define(
        "resource-read/encoded-selection",
        S,
        ("PDX-PARSE-01",),
        "percent-encoded names, %2C, spaces around names, repeated tools= and duplicates select the same tools",
        "Percent-decode the value, split on commas, trim, merge repeated tools= parameters, drop duplicates.",
    ),
    define(
        "resource-read/other-parameters",
        S,
        ("PDX-PARSE-02",),
        "other query parameters beside tools= do not change the selection",
        "Ignore query parameters other than tools.",
    ),
    define(
        "resource-read/schema-valid",
        M,
        ("PD-3.2-02", "PD-3.2-03"),
        "each served inputSchema is a valid JSON Schema and every example's input validates against it",
        "Keep the served schema and the examples in step; an example the schema rejects teaches a failing call.",
    ),
    define(
        "resource-read/listed-schema-agrees",
        M,
        ("PD-3.1-05",),
        "the minimal inputSchema in tools/list accepts every call the full schema accepts (omitted or loosened, "
        "never closed)",
        'List {"type": "object", "additionalProperties": true} or omit the schema: a listed schema with '
        "additionalProperties: false (or required names the tool does not require) makes hosts that validate "
        "arguments refuse real calls.",
    ),
    define(
        "resource-read/content-items",
        M,
        ("PD-4.4-01", "PD-4.4-03"),
        "every read returns one content item holding the whole JSON object",
        "Return exactly one text content item; put nothing else (notes, instructions) in further items.",
    ),
    define(
        "resource-read/content-mime-type",
        S,
        ("PD-4.1-05",),
        "every content item of a read is application/json",
        'Set "mimeType": "application/json" on the content item too.',
    ),
    define(
        "resource-read/complete-responses",
        M,
        ("PD-4.4-01",),
        "no successful read during the run silently left out a requested, listed tool",
        "When a read must be limited, refuse it with an error (e.g. RATE_LIMITED and retry_after_seconds); "
        "never answer with fewer tools than requested.",
    ),
    define(
        "resource-read/entries-match-keys",
        M,
        ("PD-4.4-01",),
        "in every read of the run, each requested name maps to that tool's own definition (its name, the same "
        "inputSchema in every read, the hints tools/list gives it)",
        "Build the response by looking each requested name up, never by pairing names with definitions by "
        'position: {"<name>": {"name": "<name>", ...}} whichever names are read together.',
    ),
    define(
        "resource-read/requested-keys-only",
        M,
        ("PD-4.4-03",),
        "reads naming unknown tools have only the requested names as top-level keys",
        'Put each unknown name\'s error entry under that name ({"<name>": {"error": ...}}); never group them '
        'under another key such as "errors".',
    ),
    define(
        "resource-read/unknown-tool-entry",
        S,
        ("PD-6.3-01",),
        "an unknown name gets an entry with the spec's error wording and available_tools",
        'Answer unknown names with {"<name>": {"error": "Tool \'<name>\' not found", "available_tools": [...]}}, '
        "the error worded as spec 6.3 writes it (a hint may follow).",
    ),
    define(
        "resource-read/available-tools-visible",
        S,
        ("PD-6.3-01",),
        "available_tools names the tools the session can use, in a session that fetched nothing too, never hidden ones",
        "Fill available_tools from what the caller may see in tools/list (not from what it already fetched), "
        "and never name a tool it may not see.",
    ),
    define(
        "resource-read/version-info",
        N,
        ("PD-7.2-03",),
        "whether served descriptions carry version information",
        "",
    ),
    define(
        "missing-selection/no-query",
        M,
        ("PD-4.3-04",),
        "a read of the base URI without ?tools= returns MISSING_TOOL_SELECTION",
        "Refuse the read with a JSON-RPC error whose data is the spec 6.1 document.",
    ),
    define(
        "missing-selection/empty-tools",
        M,
        ("PD-4.3-04",),
        "a read with an empty ?tools= returns MISSING_TOOL_SELECTION",
        "Treat ?tools= with no names like a missing parameter.",
    ),
    define(
        "missing-selection/no-tools-parameter",
        M,
        ("PD-4.3-04",),
        "a read without the tools parameter (?tool=x, ?other=1, an empty ?) returns MISSING_TOOL_SELECTION",
        "A read whose query has no tools parameter is a read without a selection: refuse it with "
        "MISSING_TOOL_SELECTION, whatever other parameters it carries.",
    ),
    define(
        "missing-selection/blank-selection",
        S,
        ("PDX-PARSE-03", "PD-4.3-04"),
        "?tools=,, / ?tools=%20 / ?tools (no =) name no tool and get MISSING_TOOL_SELECTION",
        "Ignore empty and blank names; when none is left, answer MISSING_TOOL_SELECTION.",
    ),
    define(
        "missing-selection/error-document",
        M,
        ("PD-6.1-01",),
        'the MISSING_TOOL_SELECTION document is wrapped in {"error": ...} and has code, message and ?tools= examples',
        'Return {"error": {"code": "MISSING_TOOL_SELECTION", "message": ..., "examples": ["<uri>?tools=tool_name", '
        '"<uri>?tools=tool1,tool2"]}}, the wrapper included.',
    ),
)
