"""Negative controls for the conformance suite: small servers, each breaking exactly one requirement.

Built on the SDK's low-level `Server` only (never on mcp_pd), so the suite is proven against an
independent implementation. `good` implements the extension correctly; every other control is
`good` with one behaviour changed. Run one:

    python tests/conformance/pdconf_controls.py good              # stdio
    python tests/conformance/pdconf_controls.py ungated --http 8123 --call-log calls.jsonl
    python tests/conformance/pdconf_controls.py describe-good catalog-good --http 8123   # /describe-good/mcp, ...

Every tool that really runs is appended to the --call-log file, so tests can prove which tools
the suite invoked. `wipe_notes` is destructive: the suite must never call it.

The `describe-*` controls add the describe tool of interpretation I-13 (`describe_tools`) to `good`, and
the `catalog-*` controls serve the same four tools in catalog mode (I-16: search_tools, browse_tools,
describe_tools, call_tool); they are what `mcp-pd check --profile tool-fallback / catalog` is proven on.
"""

from __future__ import annotations

import argparse
import copy
import difflib
import json
import math
import re
import sys
import time
from typing import Any
from urllib.parse import unquote, urlsplit

import anyio
import jsonschema
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

BASE = "resource:///tool_descriptions"
# The dispatcher of the proxy-* controls: listed and described beside FULL's tools, answered by a middleware.
PROXY = "run_tool"
PROXY_DEFINITION: dict[str, Any] = {
    "name": PROXY,
    "description": "Run another tool of this server by name, with its arguments. Returns that tool's result.",
    "inputSchema": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "The tool to run"},
            "arguments": {"type": "object", "description": "Its arguments"},
        },
        "required": ["name"],
    },
    "annotations": {"readOnlyHint": False, "destructiveHint": False},
    "examples": [{"description": "Count words", "input": {"name": "word_count", "arguments": {"text": "a b"}}}],
    "error_guidance": {"TOOL_DESCRIPTION_REQUIRED": "fetch the description of the tool you name first"},
}

DEFECTS = {
    "good": "a correct implementation",
    "full-schemas": "tools/list carries the full input schemas (violates PD-3.1-04)",
    "no-resource": "no tool_descriptions resource in resources/list (violates PD-4.1-01)",
    "ignores-selection": "?tools= is ignored: every read returns all tools (violates PD-4.4-02)",
    "extra-tools": "a read returns one unrequested tool besides the requested ones (violates PD-4.4-02)",
    "preamble": "a read adds an instructions key before the tools (violates PD-4.4-03)",
    "case-insensitive": "?tools= matches names case-insensitively (violates PD-4.3-03)",
    "no-missing-selection": "a read without ?tools= returns every tool (violates PD-4.3-04)",
    "ungated": "tools run without their description being fetched (violates PD-5.1-02)",
    "wrong-error-code": "unfetched calls are refused with DESCRIPTION_NOT_FETCHED (violates PD-5.1-02)",
    "jsonrpc-refusal": "unfetched calls are refused with a JSON-RPC error, not a tool result (allowed, WARNING)",
    "global-grants": "one grant set shared by every session (violates PD-5.1-04)",
    "forgetful": "a fetch authorizes a single call only (violates PD-5.1-03)",
    "no-unknown-entry": "unknown names are silently dropped from reads (violates SHOULD PD-6.3-01)",
    "bare-listing": "tools/list carries no annotations, only the definitions do (allowed: a correct server)",
    "bare-global-grants": "global-grants with bare-listing: the suite must learn hints without hiding the leak",
    "plain": "a plain MCP server without the extension at all",
    # Issue 11: the subtle ones.
    "endless-cursor": "tools/list hands out the same nextCursor forever (violates PD-3.1-01)",
    "placeholder-descriptions": "every tool is listed with one placeholder description (violates PD-3.1-02)",
    "docstring-listing": "listed descriptions document parameters (:param, Args:, @param) (violates PD-3.1-04)",
    "call-example-listing": "listed descriptions carry an inline call example (violates PD-3.1-04)",
    "hidden-detail-listing": "parameter docs and an example hide in _meta and the title (violates PD-3.1-04)",
    "keyword-description": "the resource description has the keywords but not the workflow (violates PD-4.2-01/02/04)",
    "paraphrased-missing": "MISSING_TOOL_SELECTION with a paraphrased message and other examples (violates PD-6.1-01)",
    "blank-names": "blank names (?tools=%20, ?other=x) are looked up instead of refused (our I-3: WARNING)",
    "two-names-max": "a read serves at most the first two names (violates PD-4.3-02)",
    "unknown-fails-read": "a read naming any unknown tool fails as a whole (violates PD-4.3-02/PD-4.4-01)",
    "loose-punctuation": "names match ignoring '_', '-' and '.' (violates PD-4.3-03)",
    "raw-query": "the query is split without percent-decoding or merging (our I-3: WARNING)",
    "other-params-all": "a read with only other parameters (?other=1) returns every tool (violates PD-4.3-04)",
    "strict-query": "a read with any other query parameter is refused (our I-3: WARNING)",
    "invalid-example": "an example that does not validate against its own schema (violates PD-3.2-02)",
    "lost-required": "served schemas lost their required lists; the tools still require them (violates PD-3.2-02)",
    "split-content": "a read adds a second content item with notes (violates PD-4.4-03)",
    "text-plain-content": "read contents are labelled text/plain (SHOULD application/json, PD-4.1-05)",
    "silent-rate-limit": "after 12 reads a session gets only the first requested tool, as success (violates PD-4.4-01)",
    "gates-first-only": "only the first listed tool is gated (violates PD-5.1-02)",
    "lenient-retry": "only the first unfetched call of a tool is refused (violates PD-5.1-02)",
    "refused-read-grants": "a read without a selection grants every tool (violates PD-5.1-02)",
    "variant-grants": "a read of a case variant grants the real tool (violates PD-5.1-02)",
    "any-read-grants": "any successful read grants every tool (violates PD-5.1-02)",
    "first-name-grants": "a read of several tools grants the first only (violates PD-5.1-01)",
    "mixed-grants-nothing": "a read with any unknown name grants nothing (violates PD-5.1-01)",
    "short-lived-grants": "a grant lapses after 10 further requests of its session (violates PD-5.1-03)",
    "expiring-grants": "a grant lapses after 2 seconds (violates PD-5.1-03; found with --grant-hold)",
    # Issue 22: the last blind spots.
    "gates-read-only-only": "only readOnlyHint tools are gated; the others validate, then run unfetched "
    "(violates PD-5.1-02)",
    "consequence-by-keyword": "the resource description mentions errors but never says what an unfetched call "
    "does (violates PD-4.2-04)",
    "available-fetched-only": "available_tools names only the tools this session already fetched "
    "(violates SHOULD PD-6.3-01)",
    "closed-listing-schema": 'tools/list gives every tool {"type": "object", "additionalProperties": false}: '
    "no arguments at all (violates PD-3.1-05)",
    # Issue 32: a gate the suite cannot run a tool to show.
    "no-read-only": "a correct gate, but no tool is annotated readOnlyHint=true (allowed; the suite cannot call a "
    "tool to show that a fetch authorizes it: PASS, GATE NOT VERIFIED)",
    "never-refuses": "no gate and no read-only tool; the tools validate their arguments, as SDK tools do "
    "(violates PD-5.1-02)",
    "never-refuses-lax": "no gate, no read-only tool, and tools that run whatever their arguments "
    "(violates PD-5.1-02; the suite may run one probe, never more)",
    "first-needs-arguments": "a correct server whose read-only tools have no examples: the first requires "
    "arguments, list_notes requires none (allowed; the suite calls list_notes with {})",
    # Issue 33: traffic the suite did not compare (grants across refusals, capabilities, paging, gate order).
    "traffic-refusals-wipe": "a read without a selection, a read naming an unknown tool or a refused call clears the "
    "session's grants (violates PD-5.1-03)",
    "traffic-undeclared-resources": "serves the tool_descriptions resource without declaring the resources "
    "capability (violates PD-2-02 and PD-4.1-01 under base MCP, spec/interpretations.md I-26)",
    "traffic-unlisted-tool": "a paging bug: the second tools/list page starts one tool late, so list_notes is "
    "described and callable but never listed (violates PD-3.1-01)",
    "traffic-validates-first": "arguments are checked before the gate, otherwise correct (violates PD-5.1-02; "
    "isolation and session-end must pass: session B's refusal is the gate's)",
    # Issue 33: documents checked whole (every definition, keys and entries, the wording of 6.1 and 6.3, 3.1's text).
    "doc-placeholder-side-effect": "wipe_notes (not read-only) is served with the listed placeholder schema, though "
    "its example passes confirm (violates PD-3.2-02)",
    "doc-side-effect-no-examples": "wipe_notes (not read-only) is served without examples (SHOULD PD-3.2-03)",
    "doc-paired-by-position": "a read of several names pairs them with the definitions in alphabetical order "
    "(violates PD-4.4-01)",
    "doc-bare-missing": 'MISSING_TOOL_SELECTION data is the bare {"code", ...} object, without {"error": ...} '
    "(violates PD-6.1-01)",
    "doc-unknown-wording": "an unknown name's error reads \"No tool named '<name>'\" (SHOULD PD-6.3-01's wording)",
    "doc-grouped-unknown": 'unknown names are answered under one extra "not_found" key (violates PD-4.4-03)',
    "doc-name-description": "list_notes is listed with its own name as its description (violates PD-3.1-02)",
    "doc-usage-listing": "word_count's listed description tells the caller what to pass (violates PD-3.1-04)",
    # Issue 33, the gaps a blind tester found in the third round.
    "gap-bare-refusal": 'TOOL_DESCRIPTION_REQUIRED is the bare {"code", "message", "resource_uri"} object, without '
    '{"error": ...} (violates PD-6.2-01)',
    "gap-undeclared-modern": "resources declared in the 2025-11-25 handshake but not in 2026-07-28's server/discover "
    "(violates PD-2-02 and PD-4.1-01 in that era, I-26)",
    "gap-unknown-holds-definition": "a read naming known and unknown tools pairs the requested names with the known "
    "tools' definitions by position, so an unknown name holds a real tool's definition (violates PD-4.4-01)",
    "gap-cached-by-set": "reads of several tools are cached by the set of names, and a cached answer pairs the names "
    "in the new order with the definitions in the first (violates PD-4.4-01)",
    # Issue 42: correct but unusual servers the suite wrongly failed (each must pass).
    "reordered-required": "correct; every other read of a tool serves its required list in another order (a set in "
    "JSON Schema: allowed)",
    "reworded-description": "correct; the resource description says the workflow in other words: unnumbered steps, "
    "and a fetch 'unlocks that tool for as long as this session lasts' (allowed)",
    "modern-only": "correct, but speaks protocol 2026-07-28 only: the initialize handshake is refused (allowed; "
    "judged in 2026-07-28, the legacy era reported as not exercised)",
    # Issue 42: faulty servers the third round passed.
    "modern-bare-missing": "in protocol 2026-07-28 a read without a selection is refused without the 6.1 document "
    "(violates PD-6.1-01 in that era; right in 2025-11-25)",
    "fuzzy-names": "a name is looked up by prefix, then by closest spelling: ?tools=word_co serves and grants "
    "word_count (violates PD-4.3-03, and the grant PD-5.1-02)",
    "title-instructions": "word_count's listed title tells the caller what to pass (violates PD-3.1-04)",
    "inline-parameter-docs": 'list_notes is listed as "... limit: integer optional, 1-50, default 10" '
    "(violates PD-3.1-04)",
    "relist-full": "after a session's first read, notifications/tools/list_changed and a listing with the full schemas "
    "(violates PD-3.1-04 on the re-list)",
    "clock-grants": "grants are dropped on a clock, at the first whole second at least 0.9 s after each was made "
    "(violates PD-5.1-03; calls right after a fetch pass)",
    "racy-grants": "a read updates the session's grants by read, await, write back: overlapping reads of one session "
    "lose each other's grants (violates PD-5.1-01)",
    "racy-sessions": "the session a read grants into is taken from state the last request set: reads of two sessions "
    "at once grant into the wrong one (violates PD-5.1-04; shows over HTTP)",
    "proxy-gated": "correct, with a dispatcher tool run_tool(name, arguments) that asks the gate for the tool it runs",
    "proxy-ungated": "run_tool(name, arguments) runs any tool once run_tool itself was fetched (violates PD-5.1-02)",
    "handshake-only": "correct, but speaks the handshake era only: server/discover declined and every request "
    "carrying the 2026-07-28 envelope refused (allowed under --era both; --era 2026-07-28 cannot pass; HTTP)",
    # Profile tool-fallback (I-13): `good` with a describe tool.
    "describe-good": "good, plus a correct describe_tools tool",
    "describe-gated": "describe_tools is an ordinary tool to this server: listed minimal, gated, never named in "
    "refusals (violates PDX-DESCRIBE-01, SHOULD PDX-DESCRIBE-06)",
    "describe-other-document": "describe_tools answers in its own format: definitions under 'tools', refusals as "
    "plain text (violates PDX-DESCRIBE-02/03)",
    "describe-no-grant": "describe_tools returns the definitions but authorizes nothing (violates PDX-DESCRIBE-04)",
    "describe-grants-all": "describing any tool authorizes every tool (violates PDX-DESCRIBE-04)",
    "describe-global-grant": "describe_tools grants into one set for every session; reads grant per session "
    "(violates PDX-DESCRIBE-04; shows over HTTP)",
    # Profile catalog (I-16): the same four tools behind catalog mode's meta-tools.
    "catalog-good": "a correct catalog mode",
    "catalog-ungated-call": "call_tool runs tools nobody described (violates PDX-CATALOG-01)",
    "catalog-no-validation": "call_tool hands the arguments to the tool unchecked (violates PDX-CATALOG-04)",
    "catalog-big-list": "nothing compact: tools/list lists the whole catalog and search results carry schemas "
    "(violates PDX-CATALOG-01/02)",
    "catalog-naive-search": "search never abstains and ignores category and like (violates PDX-CATALOG-02)",
    "catalog-no-suggestions": "call_tool answers an unknown name without the closest names (violates PDX-CATALOG-04)",
    "catalog-short-browse": "browse_tools shows a category's first page only, without nextCursor "
    "(violates PDX-CATALOG-06)",
    "catalog-any-read-grants": "catalog mode where any successful read or describe authorizes every tool "
    "(violates PD-5.1-02; only the core's grant checks, run through call_tool, see it)",
}

FULL: dict[str, dict[str, Any]] = {
    "add": {
        "name": "add",
        "description": "Add two integers and return their sum. Use it for exact integer arithmetic.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "a": {"type": "integer", "description": "First addend"},
                "b": {"type": "integer", "description": "Second addend"},
            },
            "required": ["a", "b"],
        },
        "annotations": {"readOnlyHint": True},
        "examples": [{"description": "Two plus three", "input": {"a": 2, "b": 3}}],
        "error_guidance": {"INVALID_ARGUMENTS": "a and b must both be integers"},
    },
    "word_count": {
        "name": "word_count",
        "description": "Count the words in a text. Whitespace separates words.",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string", "description": "The text to count"}},
            "required": ["text"],
        },
        "annotations": {"readOnlyHint": True},
        "examples": [{"description": "Three words", "input": {"text": "one two three"}}],
        "error_guidance": {"INVALID_ARGUMENTS": "text must be a string"},
    },
    "list_notes": {
        "name": "list_notes",
        "description": "List the stored notes, newest first. Without a limit, every note is listed.",
        "inputSchema": {
            "type": "object",
            "properties": {"limit": {"type": "integer", "minimum": 1, "description": "At most this many"}},
        },
        "annotations": {"readOnlyHint": True},
        "examples": [{"description": "The five newest notes", "input": {"limit": 5}}],
        "error_guidance": {"INVALID_ARGUMENTS": "limit must be a positive integer"},
    },
    "wipe_notes": {
        "name": "wipe_notes",
        "description": "Delete every stored note permanently. There is no undo.",
        "inputSchema": {"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]},
        "annotations": {"destructiveHint": True, "readOnlyHint": False},
        "examples": [{"description": "Wipe", "input": {"confirm": True}}],
        "error_guidance": {"NOT_CONFIRMED": "pass confirm: true"},
    },
}
SUMMARY = {
    "add": "Add two integers.",
    "word_count": "Count the words in a text.",
    "list_notes": "List the stored notes, newest first.",
    "wipe_notes": "Delete every stored note permanently.",
}
RESOURCE_DESCRIPTION = (
    "Full tool definitions. WORKFLOW: Step 1: choose a tool from tools/list by its short description "
    "(tools/list is for selecting, not for parameters). Step 2: read this resource to learn its parameters: "
    f"{BASE}?tools=TOOL_NAME (several: {BASE}?tools=TOOL1,TOOL2). Step 3: call the tool. Fetching a "
    "description authorizes that tool for this session; calling a tool before fetching fails with "
    "TOOL_DESCRIPTION_REQUIRED."
)
# The workflow, with the consequence of an unfetched call reduced to a mention of errors.
ERROR_MENTION = RESOURCE_DESCRIPTION.replace(
    "calling a tool before fetching fails with TOOL_DESCRIPTION_REQUIRED.",
    "before calling a tool, see the error handling notes in each definition.",
)
# The keywords the old checks looked for, without the workflow they stand for.
KEYWORDS_ONLY = (
    "Tool definitions as JSON. Errors follow the tools/list format. First published in 2024. "
    f"Syntax: {BASE}?tools=TOOL_NAME. Step 1: read the changelog. Authorization lasts for the session."
)
# The same workflow in other words: steps in order without numbers, and the grant without "authorizes".
REWORDED = (
    "Full tool definitions. Begin by choosing a tool from tools/list by its short description (tools/list is for "
    "selecting, not for parameters). Next, read this resource to learn its parameters: "
    f"{BASE}?tools=TOOL_NAME (several: {BASE}?tools=TOOL1,TOOL2). Finally, call the tool. Reading a tool's "
    "description unlocks that tool for as long as this session lasts; calling a tool before fetching fails with "
    "TOOL_DESCRIPTION_REQUIRED."
)
INSTRUCTIONS = f"Before calling a tool, read {BASE}?tools=TOOL_NAME to learn its parameters."


def _text_result(document: dict[str, Any], *, error: bool) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(document))],
        structured_content=document,
        is_error=error,
    )


def parse_selection(uri: str, defect: str = "good") -> list[str] | None:
    """The names `?tools=` selects, per spec/interpretations.md I-3 (None: no tools parameter at all)."""
    query = urlsplit(uri).query
    pairs = [part.partition("=") for part in query.split("&") if part]
    if defect == "strict-query" and any(unquote(key) != "tools" for key, _, _ in pairs):
        raise MCPError(types.INVALID_PARAMS, "Only the tools parameter is accepted")
    if defect == "raw-query":  # the first tools= value, split as sent: no decoding, no trimming
        raw = next((value for key, eq, value in pairs if key == "tools" and eq), "")
        return [n for n in raw.split(",") if n]
    values = [unquote(value) for key, eq, value in pairs if unquote(key) == "tools" and eq]
    names = [n if defect == "blank-names" else n.strip() for v in values for n in v.split(",")]
    return list(dict.fromkeys(n for n in names if n))


def _listed_description(defect: str, name: str) -> str:
    docstrings = {
        "add": "Add two integers. :param a: first addend :param b: second addend",
        "word_count": "Count the words in a text. Args: text (str): the text to count.",
        "list_notes": "List the stored notes. Parameters: limit - at most this many.",
        "wipe_notes": "Delete every stored note permanently. @param confirm must be true.",
    }
    if defect == "plain":
        return str(FULL[name]["description"])
    if defect == "placeholder-descriptions":
        return f"Read {BASE}?tools=<name> before using this tool."
    if defect == "docstring-listing":
        return docstrings[name]
    if defect == "call-example-listing" and name == "add":
        return "Add two integers, e.g. add(a=2, b=3)."
    if defect == "doc-name-description" and name == "list_notes":
        return name  # a generator's fallback when a tool has no description of its own
    if defect == "doc-usage-listing" and name == "word_count":
        return "Count the words in a text. Always pass the whole text in one call, never a part of it."
    if defect == "inline-parameter-docs" and name == "list_notes":
        return "List the stored notes, newest first. limit: integer optional, 1-50, default 10."
    return SUMMARY[name]


VALIDATING = frozenset({"lost-required", "gates-read-only-only", "never-refuses"})
UNGATED = frozenset({"ungated", "plain", "never-refuses", "never-refuses-lax"})
NO_READ_ONLY = frozenset({"no-read-only", "never-refuses", "never-refuses-lax"})


def _annotations(defect: str, name: str) -> dict[str, Any]:
    """A tool's annotations; without a read-only tool, every tool but wipe_notes is marked not destructive."""
    if defect in NO_READ_ONLY:
        return {"readOnlyHint": False, "destructiveHint": name == "wipe_notes"}
    return dict(FULL[name]["annotations"])


def _listed_schema(defect: str) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": defect != "closed-listing-schema"}


def _served(defect: str, name: str) -> dict[str, Any]:
    full = copy.deepcopy(FULL[name])
    full["annotations"] = _annotations(defect, name)
    if defect == "first-needs-arguments" and full["annotations"].get("readOnlyHint"):
        del full["examples"]
    if defect == "lost-required":
        full["inputSchema"].pop("required", None)
    if defect == "invalid-example" and name == "add":
        full["examples"] = [{"description": "Two plus three", "input": {"a": "two", "b": 3}}]
    if defect == "doc-placeholder-side-effect" and name == "wipe_notes":
        full["inputSchema"] = _listed_schema(defect)  # the listing's placeholder, copied into the definition
    if defect == "doc-side-effect-no-examples" and name == "wipe_notes":
        del full["examples"]
    return full


def _lookup(defect: str, name: str) -> str | None:
    if name in FULL:
        return name
    if defect == "case-insensitive":
        return next((n for n in FULL if n.lower() == name.lower()), None)
    if defect == "loose-punctuation":
        squash = str.maketrans("", "", "_-.")
        return next((n for n in FULL if n.translate(squash) == name.translate(squash)), None)
    if defect == "fuzzy-names" and len(name) >= 2:  # the prefix a user typed, else the closest spelling (not "add_")
        prefixed = [n for n in FULL if n.startswith(name)]
        close = difflib.get_close_matches(name, list(FULL), n=1, cutoff=0.8) if len(name) >= 5 else []
        return prefixed[0] if len(prefixed) == 1 else close[0] if close else None
    return None


PAGE_SIZE = 2  # tools/list pages; resources/list has one resource per page
OTHER = types.Resource(uri="resource:///notes/readme", name="readme", description="About this server.")
EXTENSION_ID = "io.github.mcp-pd/progressive-disclosure"
DESCRIBE = "describe_tools"
META = ("search_tools", "browse_tools", DESCRIBE, "call_tool")
MAX_NAMES = 16  # names per read (and per describe) in the describe-* and catalog-* controls
GLOBAL = "*"  # the grant set of describe-global-grant
CATEGORIES = {"add": "math", "word_count": "text", "list_notes": "notes", "wipe_notes": "notes"}
BROWSE_PAGE = 1  # so that browsing a category of two tools takes two pages


def _tool(name: str, description: str, schema: dict[str, Any], read_only: bool = False) -> types.Tool:
    annotations = types.ToolAnnotations(read_only_hint=True) if read_only else None
    return types.Tool(name=name, description=description, input_schema=schema, annotations=annotations)


def describe_entry(defect: str) -> types.Tool:
    if defect == "describe-gated":  # listed like every other tool: minimal
        return _tool(DESCRIBE, "Fetch the full definitions of tools.", {"type": "object", "additionalProperties": True})
    schema = {"type": "object", "properties": {"tools": {"type": "array", "items": {"type": "string"}}}}
    return _tool(DESCRIBE, "Return the full definitions of tools and authorize them.", schema, read_only=True)


def meta_entries(defect: str) -> list[types.Tool]:
    search = {
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "limit": {"type": "integer", "minimum": 1, "maximum": 20},
            "category": {"type": "string"},
            "like": {"type": "string"},
        },
    }
    browse = {"type": "object", "properties": {"category": {"type": "string"}, "cursor": {"type": "string"}}}
    call = {"type": "object", "properties": {"name": {"type": "string"}, "arguments": {"type": "object"}}}
    return [
        _tool("search_tools", "Find tools for a task; answers names and one line each.", search, read_only=True),
        _tool("browse_tools", "List the tool categories, or the tools of one category.", browse, read_only=True),
        describe_entry(defect),
        _tool("call_tool", "Call a described tool by name with its arguments.", call),
    ]


def _error(code: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, **extra}}


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]{3,}", text.lower().replace("_", " ")))


def not_found(defect: str, name: str) -> dict[str, Any]:
    closest = difflib.get_close_matches(name, list(FULL), n=5, cutoff=0.0)
    extra = {} if defect == "catalog-no-suggestions" else {"closest_names": closest}
    return _error("TOOL_NOT_FOUND", f"Tool '{name}' not found.", **extra)


def search(defect: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """search_tools: keyword overlap with name and description; abstains when no word matches (I-16)."""
    naive = defect == "catalog-naive-search"
    limit, query = arguments.get("limit", 5), str(arguments.get("query") or "")
    like, category = arguments.get("like"), arguments.get("category")
    if not isinstance(limit, int) or not 1 <= limit <= 20:
        return _error("INVALID_ARGUMENTS", "limit must be an integer from 1 to 20."), True
    valid = sorted(set(CATEGORIES.values()))
    if category is not None and not naive and category not in valid:
        return _error("UNKNOWN_CATEGORY", f"No category '{category}'.", valid_categories=valid), True
    if like and not naive:
        if like not in FULL:
            return not_found(defect, str(like)), True
        near = _words(str(FULL[like]["description"]))
        others = [n for n in FULL if n != like]
        hits = sorted(others, key=lambda n: (CATEGORIES[n] != CATEGORIES[like], -len(near & _words(n)), n))
    else:
        wanted = _words(query)
        scores = {n: len(wanted & _words(f"{n} {FULL[n]['description']}")) for n in FULL}
        hits = sorted((n for n in FULL if scores[n]), key=lambda n: (-scores[n], n))
        if naive:  # the least bad tools rather than nothing
            hits += [n for n in FULL if n not in hits]
        elif category is not None:
            hits = [n for n in hits if CATEGORIES[n] == category]
    if not hits:
        hint = f"No tool fits this query. Rephrase it, or browse a category: {', '.join(valid)}"
        return {"results": [], "total": 0, "abstained": True, "hint": hint}, False
    results = []
    for name in hits[:limit]:
        result = {"name": name, "category": CATEGORIES[name], "description": SUMMARY[name]}
        if defect == "catalog-big-list":
            result["inputSchema"] = FULL[name]["inputSchema"]
        results.append(result)
    return {"results": results, "total": len(hits)}, False


def browse(defect: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """browse_tools: the categories, or one category's tools in pages of BROWSE_PAGE."""
    order = list(dict.fromkeys(CATEGORIES.values()))
    category, cursor = arguments.get("category"), arguments.get("cursor")
    members = {c: [n for n in FULL if CATEGORIES[n] == c] for c in order}
    if category is None:
        summary = [{"name": c, "count": len(members[c]), "description": "e.g. " + ", ".join(members[c])} for c in order]
        return {"categories": summary}, False
    if category not in members:
        return _error("UNKNOWN_CATEGORY", f"No category '{category}'.", valid_categories=order), True
    start = int(cursor.removeprefix("browse:")) if isinstance(cursor, str) and cursor.startswith("browse:") else 0
    page = members[category][start : start + BROWSE_PAGE]
    answer: dict[str, Any] = {"category": category, "tools": [{"name": n, "description": SUMMARY[n]} for n in page]}
    if start + BROWSE_PAGE < len(members[category]) and defect != "catalog-short-browse":
        answer["nextCursor"] = f"browse:{start + BROWSE_PAGE}"
    return answer, False


def argument_problems(name: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
    """call_tool's check of the arguments against the tool's inputSchema: each problem's field, rule and schema."""
    problems = [
        {
            "field": "/".join(str(p) for p in error.path) or "(arguments)",
            "rule": str(error.validator),
            "message": error.message,
            "schema": error.schema,
        }
        for error in jsonschema.Draft202012Validator(FULL[name]["inputSchema"]).iter_errors(arguments)
    ]
    if not problems:
        return None
    first = problems[0]
    message = f"Arguments for '{name}' do not match its inputSchema: {first['field']}: {first['message']}."
    return _error("INVALID_ARGUMENTS", message, tool=name, problems=problems)


def missing_selection(defect: str) -> dict[str, Any]:
    message = "You must specify one or more tool names in the 'tools' parameter."
    examples = [f"{BASE}?tools=tool_name", f"{BASE}?tools=tool1,tool2"]
    if defect == "paraphrased-missing":
        message, examples = "Please name the tools you want.", [f"{BASE}?tools=NAME"]
    return _error("MISSING_TOOL_SELECTION", message, examples=examples)


TOO_MANY = _error("TOO_MANY_TOOLS", f"At most {MAX_NAMES} tools can be fetched in one read.")


def build(defect: str, call_log: str | None = None) -> Server[Any]:
    """The control server with `defect` (see DEFECTS)."""
    catalog = defect.startswith("catalog-")
    describing = catalog or defect.startswith("describe-")
    grants: dict[str, dict[str, tuple[float, int]]] = {}  # session -> tool -> (when, request number)
    requests: dict[str, int] = {}
    reads: dict[str, int] = {}
    cache: dict[frozenset[str], list[str]] = {}  # gap-cached-by-set: names -> the order they were first read in
    announced: set[str | None] = set()  # relist-full: the sessions told their listing changed
    current: list[str | None] = [None]  # racy-sessions: the session of the request served last
    refusals: dict[tuple[str, str], int] = {}
    uses: dict[tuple[str, str], int] = {}

    def session_key(ctx: ServerRequestContext[Any, Any]) -> str | None:
        if defect in ("global-grants", "bare-global-grants"):
            return "everyone"
        if ctx.request is None:
            return "stdio"  # one stdio process serves exactly one client
        headers = getattr(ctx.request, "headers", {})
        return headers.get("mcp-session-id")  # None: sessionless HTTP

    def tick(ctx: ServerRequestContext[Any, Any]) -> str | None:
        key = session_key(ctx)
        if key is not None:
            requests[key] = requests.get(key, 0) + 1
        return key

    def granted(key: str, name: str) -> bool:
        grant = grants.get(key, {}).get(name) or grants.get(GLOBAL, {}).get(name)
        if grant is None:
            return False
        when, number = grant
        if defect == "short-lived-grants" and requests[key] - number > 10:
            return False
        if defect == "clock-grants" and time.monotonic() >= math.floor(when + 0.9) + 1:
            return False  # a sweep at every whole second (of the monotonic clock) takes grants 0.9 s old or more
        return not (defect == "expiring-grants" and time.monotonic() - when > 2.0)

    def grant(key: str | None, names: list[str]) -> None:
        if key is not None:
            for name in names:
                grants.setdefault(key, {})[name] = (time.monotonic(), requests.get(key, 0))

    async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
        tick_key = tick(ctx)
        cursor = params.cursor if params is not None else None
        if catalog:  # one page: the meta-tools (and, wrongly, the whole catalog)
            listed = [_tool(n, SUMMARY[n], {"type": "object"}) for n in FULL] if defect == "catalog-big-list" else []
            return types.ListToolsResult(tools=[*meta_entries(defect), *listed])
        if defect == "endless-cursor" and cursor is not None:
            return types.ListToolsResult(tools=[], next_cursor="more")
        start = int(cursor.removeprefix("page:")) if cursor else 0
        tools = []
        page = list(FULL) if defect == "endless-cursor" else list(FULL)[start : start + PAGE_SIZE]
        for name in page:
            full = FULL[name]
            extended = defect in ("full-schemas", "plain") or (defect == "relist-full" and tick_key in announced)
            hidden = defect == "hidden-detail-listing"
            tools.append(
                types.Tool(
                    name=name,
                    title="Add: Args: a (int), b (int)"
                    if hidden and name == "add"
                    else "Word count: always pass the whole text in one call"
                    if defect == "title-instructions" and name == "word_count"
                    else None,
                    description=_listed_description(defect, name),
                    input_schema=full["inputSchema"] if extended else _listed_schema(defect),
                    annotations=None
                    if defect in ("bare-listing", "bare-global-grants")
                    else types.ToolAnnotations.model_validate(_annotations(defect, name)),
                    meta={"docs": {"parameters": full["inputSchema"]["properties"], "example": full["examples"]}}
                    if hidden
                    else None,
                )
            )
        if describing and start == 0:
            tools.insert(0, describe_entry(defect))
        more = start + PAGE_SIZE < len(FULL)
        if defect == "endless-cursor":
            more, start = True, len(FULL)
        skip = 1 if defect == "traffic-unlisted-tool" else 0  # the off-by-one: the next page starts a tool late
        return types.ListToolsResult(tools=tools, next_cursor=f"page:{start + PAGE_SIZE + skip}" if more else None)

    def refusal(key: str | None, name: str) -> types.CallToolResult | None:
        """The gate: None when `name` may run in this session."""
        gated = defect not in UNGATED and not (defect == "gates-first-only" and name != next(iter(FULL)))
        if defect == "gates-read-only-only" and not FULL[name]["annotations"].get("readOnlyHint"):
            gated = False
        if not gated:
            return None
        if key is None:
            return _text_result(
                {"error": {"code": "SESSION_REQUIRED", "message": "Connect with a session (initialize)."}},
                error=True,
            )
        allowed = granted(key, name)
        if allowed and defect == "forgetful":
            uses[(key, name)] = uses.get((key, name), 0) + 1
            allowed = uses[(key, name)] <= 1
        if not allowed and defect == "lenient-retry":
            refusals[(key, name)] = refusals.get((key, name), 0) + 1
            allowed = refusals[(key, name)] > 1
        if allowed:
            return None
        if defect == "traffic-refusals-wipe":
            grants.pop(key, None)
        code = "DESCRIPTION_NOT_FETCHED" if defect == "wrong-error-code" else "TOOL_DESCRIPTION_REQUIRED"
        document = {
            "error": {
                "code": code,
                "message": f"Tool '{name}' requires fetching its description before use.",
                "resource_uri": f"{BASE}?tools={name}",
            }
        }
        if describing and defect != "describe-gated":
            document["error"]["describe_tool_call"] = {"name": DESCRIBE, "arguments": {"tools": [name]}}
        if defect == "jsonrpc-refusal":
            raise MCPError(-32001, document["error"]["message"], document)
        return _text_result(document["error"] if defect == "gap-bare-refusal" else document, error=True)

    def run(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        # These tools check their arguments against their real schema before doing anything, as SDK tools do
        # (elsewhere arguments are not checked, so that a call the gate lets through shows as a call that ran).
        problems = argument_problems(name, arguments) if defect in VALIDATING else None
        if problems is not None:
            return _text_result(problems, error=True)
        if call_log:
            with open(call_log, "a", encoding="utf-8") as log:
                log.write(json.dumps({"tool": name, "arguments": arguments}) + "\n")
        if name == "add":
            return _text_result({"sum": int(arguments.get("a", 0)) + int(arguments.get("b", 0))}, error=False)
        if name == "word_count":
            return _text_result({"words": len(str(arguments.get("text", "")).split())}, error=False)
        if name == "list_notes":
            return _text_result({"notes": []}, error=False)
        return _text_result({"wiped": True}, error=False)

    def describe(key: str | None, arguments: dict[str, Any]) -> types.CallToolResult:
        """describe_tools (I-13): the resource read's document, errors and grants, as a tool result."""
        requested = arguments.get("tools")
        requested = [requested] if isinstance(requested, str) else requested
        if not isinstance(requested, list) or not all(isinstance(n, str) for n in requested):
            malformed = _error("INVALID_ARGUMENTS", 'describe_tools takes {"tools": ["name", ...]}')
            return _text_result(malformed, error=True)
        names = list(dict.fromkeys(n.strip() for n in requested if n.strip()))
        refused = missing_selection(defect) if not names else TOO_MANY if len(names) > MAX_NAMES else None
        if refused is not None:
            if defect == "describe-other-document":
                text = types.TextContent(type="text", text="Name between 1 and 16 tools.")
                return types.CallToolResult(content=[text], is_error=True)
            return _text_result(refused, error=True)
        body, served = document(key, names)
        if defect == "describe-no-grant":
            served = []
        elif defect == "describe-grants-all" and served:
            served = list(FULL)
        grant(GLOBAL if defect == "describe-global-grant" else key, served)
        return _text_result({"tools": body} if defect == "describe-other-document" else body, error=False)

    def call_via(key: str | None, arguments: dict[str, Any]) -> types.CallToolResult:
        """call_tool (I-16): the gate, then the arguments against the tool's inputSchema, then the tool."""
        name, inner = arguments.get("name"), arguments.get("arguments") or {}
        if name == DESCRIBE:
            return describe(key, inner)
        if not isinstance(name, str) or name not in FULL:
            return _text_result(not_found(defect, str(name)), error=True)
        refused = None if defect == "catalog-ungated-call" else refusal(key, name)
        if refused is not None:
            return refused
        problems = None if defect == "catalog-no-validation" else argument_problems(name, inner)
        return _text_result(problems, error=True) if problems is not None else run(name, inner)

    async def call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> Any:
        key = tick(ctx)
        name, arguments = params.name, params.arguments or {}
        if describing and name == DESCRIBE:
            # describe-gated: an ordinary tool, refused until fetched (and the resource has no definition of it).
            if defect == "describe-gated":  # an ordinary tool to this server, refused until fetched: forever
                return refusal(key, name) or describe(key, arguments)
            return describe(key, arguments)
        if catalog and name in META:
            if name == "call_tool":
                return call_via(key, arguments)
            document, error = (search if name == "search_tools" else browse)(defect, arguments)
            return _text_result(document, error=error)
        if name == PROXY and defect.startswith("proxy-"):
            inner, passed = arguments.get("name"), arguments.get("arguments") or {}
            if not isinstance(inner, str) or inner not in FULL or not isinstance(passed, dict):
                return refusal(key, PROXY) or _text_result(not_found(defect, str(inner)), error=True)
            if defect == "proxy-ungated":  # its own gate only: the tool it runs is never asked about
                return refusal(key, PROXY) or run(inner, passed)
            return refusal(key, PROXY) or refusal(key, inner) or run(inner, passed)
        if name not in FULL:
            return types.CallToolResult(content=[types.TextContent(type="text", text="Unknown tool")], is_error=True)
        invalid = argument_problems(name, arguments) if defect == "traffic-validates-first" else None
        if invalid is not None:  # checked before the gate, as a server validating in middleware would
            return _text_result(invalid, error=True)
        return refusal(key, name) or run(name, arguments)

    async def list_resources(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListResourcesResult:
        tick(ctx)
        if defect in ("no-resource", "plain"):
            return types.ListResourcesResult(resources=[])
        resource = types.Resource(
            uri=BASE,
            name="tool_descriptions",
            title="Tool Descriptions - required before calling any tool",
            description={
                "keyword-description": KEYWORDS_ONLY,
                "consequence-by-keyword": ERROR_MENTION,
                "reworded-description": REWORDED,
            }.get(defect, RESOURCE_DESCRIPTION),
            mime_type="application/json",
        )
        if params is not None and params.cursor == "resources:2":
            return types.ListResourcesResult(resources=[OTHER])
        return types.ListResourcesResult(resources=[resource], next_cursor="resources:2")

    def document(key: str | None, names: list[str]) -> tuple[dict[str, Any], list[str]]:
        """What a read of `names` answers, and the tools it serves (the resource and describe_tools share it)."""
        if key is not None:
            reads[key] = reads.get(key, 0) + 1
        if defect == "ignores-selection":
            names = list(FULL)
        if defect == "two-names-max" or (defect == "silent-rate-limit" and reads.get(key or "", 0) > 5):
            names = names[:2] if defect == "two-names-max" else names[:1]
        unknown = [n for n in names if _lookup(defect, n) is None]
        if defect == "traffic-refusals-wipe" and unknown:
            grants.pop(key or "", None)  # then the known names of the read are granted again
        if defect == "unknown-fails-read" and unknown:
            raise MCPError(types.INVALID_PARAMS, f"Unknown tool(s): {', '.join(unknown)}")
        body: dict[str, Any] = {}
        if defect == "preamble":
            body["instructions"] = "Read each description carefully before calling the tool."
        served: list[str] = []
        known = [n for n in names if _lookup(defect, n) is not None]
        # doc-paired-by-position: the requested names zipped with their definitions sorted by name.
        paired = dict(zip(known, sorted(known), strict=True)) if defect == "doc-paired-by-position" else {}
        if defect == "gap-cached-by-set" and len(known) > 1:  # the first order this set of names was read in
            paired = dict(zip(known, cache.setdefault(frozenset(known), list(known)), strict=True))
        if defect == "gap-unknown-holds-definition" and unknown:  # every requested name zipped with the known ones
            zipped = dict(zip(names, known, strict=False))
            for name in names:
                if name in zipped:
                    body[name] = _served(defect, zipped[name])
                elif name not in FULL:
                    body[name] = {"error": f"Tool '{name}' not found", "available_tools": sorted(FULL)}
            return body, known
        for name in names:
            real = _lookup(defect, name)
            if real is not None:
                body[name] = _served(defect, paired.get(name, real))
                served.append(real)
                required = body[name]["inputSchema"].get("required")
                if defect == "reordered-required" and required and sum(reads.values()) % 2 == 0:
                    body[name]["inputSchema"]["required"] = list(reversed(required))
            elif defect != "no-unknown-entry":
                available = sorted(grants.get(key or "", {})) if defect == "available-fetched-only" else sorted(FULL)
                said = f"No tool named '{name}'" if defect == "doc-unknown-wording" else f"Tool '{name}' not found"
                entry = {"error": said, "available_tools": available}
                if defect == "doc-grouped-unknown":
                    body.setdefault("not_found", {})[name] = entry
                else:
                    body[name] = entry
            if defect == "variant-grants" and real is None:
                grant(key, [n for n in FULL if n.lower() == name.lower()])
        extra = next((n for n in FULL if n not in body), None)
        if defect == "extra-tools" and extra is not None:
            body[extra] = FULL[extra]
        if defect in ("any-read-grants", "catalog-any-read-grants") and served:
            served = list(FULL)
        elif defect == "first-name-grants":
            served = served[:1]
        elif defect == "mixed-grants-nothing" and unknown:
            served = []
        return body, served

    async def read_resource(
        ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        key = tick(ctx)
        uri = str(params.uri)
        if uri == str(OTHER.uri) and defect != "plain":
            return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, text="Notes.")])
        if defect == "plain" or not uri.startswith(BASE) or uri[len(BASE) : len(BASE) + 1] not in ("", "?", "#"):
            raise MCPError(types.INVALID_PARAMS, f"Unknown resource: {uri}")
        names = parse_selection(uri.partition("#")[0], defect)
        query = urlsplit(uri.partition("#")[0]).query
        if (
            defect == "other-params-all"
            and query
            and not any(unquote(part.partition("=")[0]) == "tools" for part in query.split("&"))
        ):
            names = list(FULL)  # read as "everything" instead of as no selection at all
        if not names:
            if defect == "refused-read-grants":
                grant(key, list(FULL))
            if defect == "traffic-refusals-wipe":
                grants.pop(key or "", None)
            if defect == "modern-bare-missing" and ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
                raise MCPError(types.INVALID_PARAMS, "No tools selected.")
            if defect != "no-missing-selection":
                refused = missing_selection(defect)
                data = refused["error"] if defect == "doc-bare-missing" else refused
                raise MCPError(types.INVALID_PARAMS, refused["error"]["message"], data)
            names = list(FULL)
        if describing and len(names) > MAX_NAMES:
            raise MCPError(types.INVALID_PARAMS, TOO_MANY["error"]["message"], TOO_MANY)
        body, served = document(key, names)
        if defect == "racy-grants" and key is not None:
            before = dict(grants.get(key, {}))  # read ...
            await anyio.sleep(0.1)  # ... await (a store, a log) ...
            grants[key] = before | {n: (time.monotonic(), requests.get(key, 0)) for n in served}  # ... write back
        elif defect == "racy-sessions":
            current[0] = key  # "the session being served", kept where the next request overwrites it
            await anyio.sleep(0.1)
            grant(current[0], served)
        else:
            grant(key, served)
        if defect == "relist-full" and served and key not in announced:
            announced.add(key)  # "unlocked": listed in full from now on, and the session is told so
            await ctx.session.send_tool_list_changed()
        mime = "text/plain" if defect == "text-plain-content" else "application/json"
        contents = [types.TextResourceContents(uri=uri, mime_type=mime, text=json.dumps(body))]
        if defect == "split-content":
            contents.append(
                types.TextResourceContents(uri=uri, mime_type="text/plain", text="Read each description first.")
            )
        return types.ReadResourceResult(contents=contents)

    if defect == "plain":  # no resources capability at all
        return Server("pdconf-plain", version="1.0", on_list_tools=list_tools, on_call_tool=call_tool)
    server: Server[Any] = Server(
        f"pdconf-{defect}",
        version="1.0",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
    )
    if describing and defect != "describe-gated":
        # The suite learns the extension's own tools from these settings: under `extensions` in 2026-07-28,
        # under `experimental` in the handshake era (which has no `extensions`), however the server is run.
        settings: dict[str, Any] = {"resourceUri": BASE, "describeTool": DESCRIBE}
        settings |= {"metaTools": list(META)} if catalog else {}
        server.extensions[EXTENSION_ID] = settings
        options = server.create_initialization_options

        def advertise(
            notification_options: Any = None, experimental_capabilities: Any = None, extensions: Any = None
        ) -> Any:
            return options(
                notification_options, {**(experimental_capabilities or {}), EXTENSION_ID: settings}, extensions
            )

        server.create_initialization_options = advertise  # type: ignore[method-assign]
    if defect in ("traffic-undeclared-resources", "gap-undeclared-modern"):
        declared = server.get_capabilities

        def undeclared(*args: Any, **kwargs: Any) -> types.ServerCapabilities:
            capabilities = declared(*args, **kwargs)
            # gap-undeclared-modern: capabilities built by hand for server/discover, and right only for initialize.
            if defect == "gap-undeclared-modern" and kwargs.get("protocol_version") not in MODERN_PROTOCOL_VERSIONS:
                return capabilities
            return capabilities.model_copy(update={"resources": None})

        server.get_capabilities = undeclared  # type: ignore[method-assign]
    if defect == "modern-only":

        async def no_handshake(ctx: Any, call_next: Any) -> Any:
            if ctx.method == "initialize":
                raise MCPError(types.INVALID_REQUEST, "This server speaks protocol 2026-07-28 only: no initialize.")
            return await call_next(ctx)

        server.middleware.append(no_handshake)
        return server
    if defect.startswith("proxy-"):

        async def proxy(ctx: Any, call_next: Any) -> Any:
            """run_tool beside FULL's tools: listed on the last page, described (and granted) by reads naming it."""
            result = await call_next(ctx)
            if ctx.method == "tools/list" and isinstance(result, dict) and not result.get("nextCursor"):
                minimal = {"type": "object", "additionalProperties": True}
                entry = {"name": PROXY, "description": "Run another tool of this server by name."}
                result["tools"] = [*result.get("tools", []), entry | {"inputSchema": minimal}]
                result["tools"][-1]["annotations"] = PROXY_DEFINITION["annotations"]
            elif ctx.method == "resources/read" and isinstance(result, dict):
                names = parse_selection(str((ctx.params or {}).get("uri", "")).partition("#")[0]) or []
                for content in result.get("contents", []):
                    body = json.loads(content.get("text") or "{}")
                    for value in body.values():
                        if isinstance(value, dict) and isinstance(value.get("available_tools"), list):
                            value["available_tools"] = sorted([*value["available_tools"], PROXY])
                    if PROXY in names and PROXY in body:
                        body[PROXY] = copy.deepcopy(PROXY_DEFINITION)
                        grant(session_key(ctx), [PROXY])
                    content["text"] = json.dumps(body)
            return result

        server.middleware.append(proxy)
    if defect == "handshake-only":

        async def no_modern(ctx: Any, call_next: Any) -> Any:
            if ctx.method != "server/discover" and ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
                raise MCPError(types.INVALID_REQUEST, "This server speaks the initialize handshake only.")
            return await call_next(ctx)

        server.middleware.append(no_modern)
    discover = server.get_request_handler("server/discover")
    assert discover is not None
    original = discover.handler

    async def steer(ctx: ServerRequestContext[Any, Any], params: Any) -> Any:
        # Over HTTP the sessionless protocol has no session id: steer auto clients to the handshake.
        if ctx.request is not None:
            raise MCPError(types.METHOD_NOT_FOUND, "Method not found", "server/discover")
        return await original(ctx, params)

    server.add_request_handler("server/discover", types.RequestParams, steer)
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("defect", nargs="+", choices=sorted(DEFECTS), help="several: over HTTP, each at /DEFECT/mcp")
    parser.add_argument("--http", type=int, metavar="PORT", help="serve Streamable HTTP on 127.0.0.1:PORT")
    parser.add_argument(
        "--call-log", metavar="FILE", help="append every tool that really runs to FILE ({defect} names the control)"
    )
    args = parser.parse_args()
    logs = {d: args.call_log.format(defect=d) if args.call_log else None for d in args.defect}
    if args.http is None:
        if len(args.defect) > 1:
            parser.error("several controls need --http: each is served at /DEFECT/mcp")
        server = build(args.defect[0], logs[args.defect[0]])

        async def run() -> None:
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())

        anyio.run(run)
        return
    import uvicorn

    if len(args.defect) == 1:
        app = build(args.defect[0], logs[args.defect[0]]).streamable_http_app(host="127.0.0.1")
    else:  # one process for many controls: their start-up is mostly imports
        app = _combined({d: build(d, logs[d]) for d in args.defect})
    uvicorn.run(app, host="127.0.0.1", port=args.http, log_level="warning")


def _combined(servers: dict[str, Server[Any]]) -> Any:
    """One Starlette app serving each control at /DEFECT/mcp, with every control's session manager running."""
    from collections.abc import AsyncIterator
    from contextlib import AsyncExitStack, asynccontextmanager

    from starlette.applications import Starlette

    apps = [
        server.streamable_http_app(host="127.0.0.1", streamable_http_path=f"/{d}/mcp") for d, server in servers.items()
    ]

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            for app in apps:
                await stack.enter_async_context(app.router.lifespan_context(app))
            yield

    return Starlette(routes=[route for app in apps for route in app.routes], lifespan=lifespan)


if __name__ == "__main__":
    sys.exit(main())
