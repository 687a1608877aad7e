"""What the suite checks: the spec requirements it cites and the registry of its checks.

The requirement table is read from the project's spec/requirements.toml (every black-box-testable requirement of
spec v2.1 with its ID, section, RFC 2119 level and text; the wheel ships the file inside this package); the check
registry is data here. Every check cites at least one requirement, and a test holds the two together both ways.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from enum import StrEnum
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Final, Literal

__all__ = [
    "CHECKS",
    "CHECKS_BY_ID",
    "CORE_CHECKS",
    "ERAS",
    "PER_ERA_CHECKS",
    "PER_ERA_SCENARIOS",
    "PROFILES",
    "REQUIREMENTS",
    "SCENARIOS",
    "SECTION_TITLES",
    "SPEC_VERSION",
    "CheckSpec",
    "Era",
    "Requirement",
    "Severity",
]

SPEC_VERSION: Final = "2.1"
# The protocol eras the session scenarios run in: the initialize handshake (2025-11-25), and the SDK's default client.
Era = Literal["legacy", "2026-07-28"]
ERAS: Final[tuple[Era, ...]] = ("legacy", "2026-07-28")


@dataclass(frozen=True)
class Requirement:
    """One normative sentence of the spec, as the suite cites it."""

    id: str
    section: str
    level: str
    text: str


def _requirements_file() -> Traversable:
    """spec/requirements.toml: inside this package in the wheel, else in the checkout this package sits in."""
    shipped = resources.files(__package__) / "spec" / "requirements.toml"
    if shipped.is_file():
        return shipped
    return Path(__file__).resolve().parents[2] / "spec" / "requirements.toml"


def _load() -> dict[str, Requirement]:
    """Every black-box-testable requirement, in the file's order: the spec's (PD-*) and ours (PDX-*)."""
    with _requirements_file().open("rb") as fh:
        rows = tomllib.load(fh)["requirement"]
    return {
        str(r["id"]): Requirement(str(r["id"]), str(r["section"]), str(r["level"]), " ".join(str(r["text"]).split()))
        for r in rows
        if r.get("testable") is True
    }


# The one source is the project's spec/requirements.toml (shipped inside this package in the wheel). Beyond the spec,
# the project's own interpretations (PDX-<AREA>-<nn>) sit under the interpretation that states them ("I-3"); core
# checks citing only these are SHOULD, so another implementation gets a WARNING. A profile is opted into, so there the
# extension's own text binds as written (MUST fails the run). The suite knows the PDX requirements its checks cite.
_ALL: Final[dict[str, Requirement]] = _load()


SECTION_TITLES: Final[dict[str, str]] = {
    "2": "Conformance",
    "3.1": "Stage 1: minimal tool descriptions",
    "3.2": "Stage 2: full tool descriptions",
    "4.1": "Resource identification",
    "4.2": "Resource description content",
    "4.3": "Resource query parameters",
    "4.4": "Resource response format",
    "5.1": "Authorization model",
    "5.2": "Session identification",
    "6.1": "Missing tool selection error",
    "6.2": "Tool description required error",
    "6.3": "Tool not found error",
    "7.2": "Caching considerations",
    "I-3": "Parsing ?tools= (the project's interpretation, not the spec: WARNING only)",
    "I-13": "describe_tools: the resource read as a tool (the project's interpretation)",
    "I-16": "Catalog mode: search, browse, describe, call (the project's interpretation)",
}

# Optional profiles (`mcp-pd check --profile NAME`): checks of the project's own extensions, run only when
# asked for, and skipped with a reason when the server does not have what the profile checks. Each
# profile's checks form one scenario of the same name.
PROFILES: Final[dict[str, str]] = {
    "tool-fallback": "the describe tool (describe_tools) checked the way the core checks the resource (I-13)",
    "catalog": "catalog mode: search_tools, browse_tools, describe_tools and call_tool (I-16)",
}


class Severity(StrEnum):
    """What a check that does not pass becomes: MUST -> FAILURE, SHOULD -> WARNING, MAY/INFO -> INFO."""

    MUST = "MUST"
    SHOULD = "SHOULD"
    MAY = "MAY"
    INFO = "INFO"


@dataclass(frozen=True)
class CheckSpec:
    """A check the suite can emit: stable ID `scenario/name`, the requirements it cites, a fix hint.

    `profile` names the optional profile the check belongs to (None: the core, always run).
    """

    id: str
    severity: Severity
    requirements: tuple[str, ...]
    title: str
    hint: str
    profile: str | None = None

    @property
    def scenario(self) -> str:
        return self.id.split("/", 1)[0]

    @property
    def per_era(self) -> bool:
        """Whether the check reports once per selected protocol era (`id[era]`), not once per run."""
        return self.scenario in PER_ERA_SCENARIOS or self.id in PER_ERA_CHECKS

    @property
    def section(self) -> str:
        """The spec section the report groups this check under (its first requirement's)."""
        return _ALL[self.requirements[0]].section


def _c(check_id: str, severity: Severity, requirements: tuple[str, ...], title: str, hint: str) -> CheckSpec:
    scenario = check_id.split("/", 1)[0]
    return CheckSpec(check_id, severity, requirements, title, hint, scenario if scenario in PROFILES else None)


M, S, N = Severity.MUST, Severity.SHOULD, Severity.INFO

# In run order. Scenario names are the part before the slash.
CHECKS: Final[tuple[CheckSpec, ...]] = (
    _c(
        "connection/handshake",
        M,
        ("PD-2-01",),
        "the server completes the MCP handshake",
        "Start an MCP server (stdio or Streamable HTTP); progressive disclosure is an MCP extension.",
    ),
    _c(
        "tools-list/listed",
        M,
        ("PD-3.1-01",),
        "tools/list answers and lists tools",
        "Answer tools/list with every tool the caller may use.",
    ),
    _c(
        "tools-list/pagination",
        M,
        ("PD-3.1-01", "PD-4.1-01"),
        "tools/list, resources/list and resources/templates/list cursors end and never repeat",
        "Return nextCursor only while more items follow, never the same cursor twice; the suite follows at most "
        "1000 pages.",
    ),
    _c(
        "tools-list/served-tools-listed",
        M,
        ("PD-3.1-01", "PD-2-01"),
        "every tool the resource describes (named in available_tools) appears on some page of tools/list",
        "List every tool you serve on some page of tools/list: check that following nextCursor from the first page "
        "returns each tool exactly once (an off-by-one between pages drops one); a tool a caller may not use must be "
        "neither listed, described nor callable.",
    ),
    _c(
        "tools-list/minimal-schema",
        M,
        ("PD-3.1-01", "PD-3.1-04", "PD-2-01"),
        "tools/list entries carry no detailed parameter schema",
        'List inputSchema as {"type": "object", "additionalProperties": true} (or omit it); '
        "serve the real schema only through the tool_descriptions resource.",
    ),
    _c(
        "tools-list/no-examples",
        M,
        ("PD-3.1-04",),
        "tools/list entries carry no examples",
        "Move examples into the full description served by the resource.",
    ),
    _c(
        "tools-list/description-present",
        M,
        ("PD-3.1-02",),
        "every tools/list entry has a non-empty description",
        "Give each tool a one-line description of what it does, enough to choose it.",
    ),
    _c(
        "tools-list/description-concise",
        S,
        ("PD-3.1-04",),
        "tools/list descriptions are short and carry no usage instructions",
        "Keep the listed description to one or two sentences (under 300 characters); "
        "put parameters, examples and usage notes in the full description.",
    ),
    _c(
        "tools-list/description-purpose",
        S,
        ("PD-3.1-03",),
        "tools/list descriptions convey the tool's purpose",
        "Say what the tool does and when to use it in a short sentence, not just its name.",
    ),
    _c(
        "tools-list/description-not-name",
        M,
        ("PD-3.1-02",),
        "no listed description is only the tool's own name",
        'Write what the tool does in a sentence ("Count the words in a text."); its name alone ("word_count") '
        "selects nothing a model could not read from the name.",
    ),
    _c(
        "tools-list/distinct-descriptions",
        M,
        ("PD-3.1-02",),
        "no two tools share one description (a placeholder cannot select a tool)",
        "Give every tool its own one-line purpose; a placeholder such as 'see tool_descriptions' on every tool "
        "leaves nothing to choose by.",
    ),
    _c(
        "tools-list/no-parameter-docs",
        M,
        ("PD-3.1-04",),
        "listed descriptions document no parameters (any docstring style) and show no call examples",
        "Move ':param', 'Args:', '@param' and 'Parameters' sections and example calls into the full description.",
    ),
    _c(
        "tools-list/no-usage-instructions",
        M,
        ("PD-3.1-04",),
        "listed descriptions carry no usage instructions (what to pass, argument rules, what to call first)",
        'Keep the listed description to what the tool does and when to use it; move directions such as "Always '
        'pass ...", "dates must be in ISO format" or "call X first" into the full description.',
    ),
    _c(
        "tools-list/no-hidden-detail",
        M,
        ("PD-3.1-04",),
        "no parameter schema, example or usage text hides in title, annotations, _meta or outputSchema",
        "Keep title short, annotations to the MCP hints, and _meta/outputSchema free of parameters and examples.",
    ),
    _c(
        "tools-list/extension-tools",
        N,
        ("PD-3.1-05",),
        "which listed tools belong to the extension itself (describe/search tools), exempt from the gate",
        "",
    ),
    _c(
        "tools-list/schema-form",
        N,
        ("PD-3.1-05",),
        "which simplified inputSchema form tools/list uses",
        "",
    ),
    _c(
        "resource-listing/listed",
        M,
        ("PD-4.1-01", "PD-2-02", "PD-3.2-01"),
        "a tool_descriptions resource appears in resources/list",
        "A server you did not write: serve it through `mcp-pd proxy`. Yours: `ProgressiveDisclosure().install(app)` "
        '(Python), or list {"uri": "resource:///tool_descriptions", "name": "tool_descriptions"} in resources/list.',
    ),
    _c(
        "resource-listing/capability-declared",
        M,
        ("PD-2-02", "PD-4.1-01"),
        "the server declares the resources (and tools) capability it serves: hosts that respect capabilities "
        "never list an undeclared resource",
        'Declare "resources": {} (and "tools": {}) in the capabilities of initialize and server/discover; with the '
        "SDK's low-level Server, register the resources/list handler before capabilities are built.",
    ),
    _c(
        "resource-listing/uri",
        M,
        ("PD-4.1-02",),
        "the resource uri is resource:///tool_descriptions or ends in tool_descriptions (no query)",
        "List the base URI, e.g. resource:///tool_descriptions, without a query string.",
    ),
    _c(
        "resource-listing/name",
        M,
        ("PD-4.1-03",),
        "the resource name or title says it holds tool descriptions",
        'Name it e.g. "Tool Descriptions - required before calling any tool".',
    ),
    _c(
        "resource-listing/explains-tools-list",
        M,
        ("PD-4.2-01", "PD-4.1-04"),
        "the resource description relates tools/list to the resource",
        'Say e.g. "Step 1: choose a tool from tools/list ...".',
    ),
    _c(
        "resource-listing/explains-fetch-first",
        M,
        ("PD-4.2-02", "PD-4.1-04"),
        "the resource description says to fetch a tool's description before calling it",
        'Say e.g. "Fetch the tool\'s description before calling it".',
    ),
    _c(
        "resource-listing/explains-query-syntax",
        M,
        ("PD-4.2-03", "PD-4.1-04"),
        "the resource description gives the ?tools= query syntax",
        "Show the syntax, e.g. resource:///tool_descriptions?tools=TOOL_NAME (comma-separate several).",
    ),
    _c(
        "resource-listing/explains-consequence",
        M,
        ("PD-4.2-04", "PD-4.1-04"),
        "the resource description says what happens when a tool is called unfetched",
        'Say e.g. "calling a tool you have not fetched fails with TOOL_DESCRIPTION_REQUIRED".',
    ),
    _c(
        "resource-listing/sequential-steps",
        S,
        ("PD-4.2-05",),
        "the resource description uses sequential workflow steps",
        'Write the workflow as "Step 1: ... Step 2: ... Step 3: ...".',
    ),
    _c(
        "resource-listing/selection-vs-parameters",
        S,
        ("PD-4.2-06",),
        "the resource description separates tool selection from parameter learning",
        "Say that tools/list is for choosing a tool and this resource is for learning its parameters.",
    ),
    _c(
        "resource-listing/uri-examples",
        S,
        ("PD-4.2-07",),
        "the resource description gives concrete URI examples",
        "Include e.g. resource:///tool_descriptions?tools=TOOL1,TOOL2 verbatim.",
    ),
    _c(
        "resource-listing/explains-authorization",
        S,
        ("PD-4.2-08",),
        "the resource description says fetching authorizes the tool for the session",
        'Say e.g. "fetching a description authorizes that tool for the rest of this session".',
    ),
    _c(
        "resource-listing/mime-type",
        S,
        ("PD-4.1-05",),
        "the resource mimeType is application/json",
        'Set "mimeType": "application/json" on the listed resource.',
    ),
    _c(
        "resource-listing/system-prompt-guidance",
        S,
        ("PD-2-04",),
        "the server's instructions carry system-prompt guidance for the two-stage workflow",
        "Send instructions that explain the two stages and show the ?tools= syntax (spec 8.2).",
    ),
    _c(
        "resource-read/single-tool",
        M,
        ("PD-4.3-01", "PD-3.2-05", "PD-4.4-01"),
        "?tools=<name> returns a JSON object keyed by that name",
        "Parse the tools query parameter and return one JSON text content mapping each name to its description.",
    ),
    _c(
        "resource-read/only-requested",
        M,
        ("PD-4.4-02",),
        "the response contains only the requested tools",
        "Return exactly the tools named in ?tools=, never the whole catalog or neighbours.",
    ),
    _c(
        "resource-read/no-preamble",
        M,
        ("PD-4.4-03",),
        "the response has no instructional preamble (every top-level key is a requested name)",
        "Put guidance in the resource description; the body maps tool names to descriptions and nothing else.",
    ),
    _c(
        "resource-read/full-entry",
        M,
        ("PD-4.4-01", "PD-3.2-02", "PD-2-01"),
        "each entry has name, description and an object inputSchema",
        'Serve {"name", "description", "inputSchema", "examples", ...} for each requested tool.',
    ),
    _c(
        "resource-read/complete-schema",
        S,
        ("PD-3.2-02",),
        "the served inputSchema is more detailed than the minimal one",
        "Serve the tool's complete JSON schema (properties, required, types, descriptions).",
    ),
    _c(
        "resource-read/examples",
        S,
        ("PD-3.2-03",),
        "full descriptions include usage examples",
        'Add "examples": [{"description": ..., "input": {...}}] to each full description: with mcp_pd, in an overlay '
        "file tool_descriptions/<tool>.json; for a server you did not write, in the files `mcp-pd export` writes.",
    ),
    _c(
        "resource-read/error-guidance",
        S,
        ("PD-3.2-04",),
        "full descriptions include error-handling guidance",
        'Add "error_guidance" (what errors mean and how to recover) to each full description: with mcp_pd, in an '
        "overlay file tool_descriptions/<tool>.json; for a server you did not write, in the files `mcp-pd export` "
        "writes.",
    ),
    _c(
        "resource-read/comma-separated",
        M,
        ("PD-4.3-02", "PD-4.3-01"),
        "?tools=a,b returns exactly a and b",
        "Split the tools parameter on commas.",
    ),
    _c(
        "resource-read/exact-match",
        M,
        ("PD-4.3-03",),
        "a name in another letter case is not served as the tool",
        "Match names exactly as listed by tools/list: no case folding, no fuzzy matching.",
    ),
    _c(
        "resource-read/punctuation-match",
        M,
        ("PD-4.3-03",),
        "a name differing only in punctuation is not served as the tool",
        "Match names exactly as listed: no stripping or swapping of '_', '-' or '.'.",
    ),
    _c(
        "resource-read/several-names",
        M,
        ("PD-4.3-02", "PD-4.4-02"),
        "?tools=a,b,c (three or more names) returns exactly those tools",
        "Split the tools parameter on every comma; do not cap the selection at one or two names.",
    ),
    _c(
        "resource-read/mixed-known-unknown",
        M,
        ("PD-4.3-02", "PD-4.4-01"),
        "a read naming known and unknown tools still serves the known ones",
        "Serve each known name and give each unknown one an error entry; never fail the whole read.",
    ),
    _c(
        "resource-read/encoded-selection",
        S,
        ("PDX-PARSE-01",),
        "percent-encoded names, %2C, spaces around names, repeated tools= and duplicates select the same tools",
        "Percent-decode the value, split on commas, trim, merge repeated tools= parameters, drop duplicates.",
    ),
    _c(
        "resource-read/other-parameters",
        S,
        ("PDX-PARSE-02",),
        "other query parameters beside tools= do not change the selection",
        "Ignore query parameters other than tools.",
    ),
    _c(
        "resource-read/schema-valid",
        M,
        ("PD-3.2-02", "PD-3.2-03"),
        "each served inputSchema is a valid JSON Schema and every example's input validates against it",
        "Keep the served schema and the examples in step; an example the schema rejects teaches a failing call.",
    ),
    _c(
        "resource-read/listed-schema-agrees",
        M,
        ("PD-3.1-05",),
        "the minimal inputSchema in tools/list accepts every call the full schema accepts (omitted or loosened, "
        "never closed)",
        'List {"type": "object", "additionalProperties": true} or omit the schema: a listed schema with '
        "additionalProperties: false (or required names the tool does not require) makes hosts that validate "
        "arguments refuse real calls.",
    ),
    _c(
        "resource-read/content-items",
        M,
        ("PD-4.4-01", "PD-4.4-03"),
        "every read returns one content item holding the whole JSON object",
        "Return exactly one text content item; put nothing else (notes, instructions) in further items.",
    ),
    _c(
        "resource-read/content-mime-type",
        S,
        ("PD-4.1-05",),
        "every content item of a read is application/json",
        'Set "mimeType": "application/json" on the content item too.',
    ),
    _c(
        "resource-read/complete-responses",
        M,
        ("PD-4.4-01",),
        "no successful read during the run silently left out a requested, listed tool",
        "When a read must be limited, refuse it with an error (e.g. RATE_LIMITED and retry_after_seconds); "
        "never answer with fewer tools than requested.",
    ),
    _c(
        "resource-read/entries-match-keys",
        M,
        ("PD-4.4-01",),
        "in every read of the run, each requested name maps to that tool's own definition (its name, the same "
        "inputSchema in every read, the hints tools/list gives it)",
        "Build the response by looking each requested name up, never by pairing names with definitions by "
        'position: {"<name>": {"name": "<name>", ...}} whichever names are read together.',
    ),
    _c(
        "resource-read/requested-keys-only",
        M,
        ("PD-4.4-03",),
        "reads naming unknown tools have only the requested names as top-level keys",
        'Put each unknown name\'s error entry under that name ({"<name>": {"error": ...}}); never group them '
        'under another key such as "errors".',
    ),
    _c(
        "resource-read/unknown-tool-entry",
        S,
        ("PD-6.3-01",),
        "an unknown name gets an entry with the spec's error wording and available_tools",
        'Answer unknown names with {"<name>": {"error": "Tool \'<name>\' not found", "available_tools": [...]}}, '
        "the error worded as spec 6.3 writes it (a hint may follow).",
    ),
    _c(
        "resource-read/available-tools-visible",
        S,
        ("PD-6.3-01",),
        "available_tools names the tools the session can use, in a session that fetched nothing too, never hidden ones",
        "Fill available_tools from what the caller may see in tools/list (not from what it already fetched), "
        "and never name a tool it may not see.",
    ),
    _c(
        "resource-read/version-info",
        N,
        ("PD-7.2-03",),
        "whether served descriptions carry version information",
        "",
    ),
    _c(
        "missing-selection/no-query",
        M,
        ("PD-4.3-04",),
        "a read of the base URI without ?tools= returns MISSING_TOOL_SELECTION",
        "Refuse the read with a JSON-RPC error whose data is the spec 6.1 document.",
    ),
    _c(
        "missing-selection/empty-tools",
        M,
        ("PD-4.3-04",),
        "a read with an empty ?tools= returns MISSING_TOOL_SELECTION",
        "Treat ?tools= with no names like a missing parameter.",
    ),
    _c(
        "missing-selection/no-tools-parameter",
        M,
        ("PD-4.3-04",),
        "a read without the tools parameter (?tool=x, ?other=1, an empty ?) returns MISSING_TOOL_SELECTION",
        "A read whose query has no tools parameter is a read without a selection: refuse it with "
        "MISSING_TOOL_SELECTION, whatever other parameters it carries.",
    ),
    _c(
        "missing-selection/blank-selection",
        S,
        ("PDX-PARSE-03", "PD-4.3-04"),
        "?tools=,, / ?tools=%20 / ?tools (no =) name no tool and get MISSING_TOOL_SELECTION",
        "Ignore empty and blank names; when none is left, answer MISSING_TOOL_SELECTION.",
    ),
    _c(
        "missing-selection/error-document",
        M,
        ("PD-6.1-01",),
        'the MISSING_TOOL_SELECTION document is wrapped in {"error": ...} and has code, message and ?tools= examples',
        'Return {"error": {"code": "MISSING_TOOL_SELECTION", "message": ..., "examples": ["<uri>?tools=tool_name", '
        '"<uri>?tools=tool1,tool2"]}}, the wrapper included.',
    ),
    _c(
        "authorization/era-listings",
        M,
        ("PD-2-01", "PD-4.1-01"),
        "tools/list and resources/list work in this protocol era",
        "Serve the minimal listing and the resource in every protocol version the server negotiates.",
    ),
    _c(
        "authorization/unfetched-call-refused",
        M,
        ("PD-5.1-02", "PD-2-03"),
        "calling a tool before fetching its description fails with TOOL_DESCRIPTION_REQUIRED",
        "A server you did not write: serve it through `mcp-pd proxy`. Yours: gate tools/call: unless this session "
        "fetched the tool, return an isError result whose structuredContent is the spec 6.2 document.",
    ),
    _c(
        "authorization/error-document",
        M,
        ("PD-6.2-01",),
        'the TOOL_DESCRIPTION_REQUIRED document is wrapped in {"error": ...}, names the tool and gives resource_uri',
        'Return {"error": {"code": "TOOL_DESCRIPTION_REQUIRED", "message": "Tool \'<name>\' requires fetching '
        'its description before use.", "resource_uri": "<base>?tools=<name>"}}, the wrapper included.',
    ),
    _c(
        "authorization/fetch-authorizes",
        M,
        ("PD-5.1-01", "PD-5.2-01", "PD-2-03"),
        "after fetching its description the tool can be called in the same session",
        "Record a grant for (session, tool) on every successful read and check it in tools/call.",
    ),
    _c(
        "authorization/persists",
        M,
        ("PD-5.1-03",),
        "the authorization survives further calls in the session",
        "Keep grants until the session ends; never consume them on use.",
    ),
    _c(
        "grants/every-tool-gated",
        M,
        ("PD-5.1-02", "PD-2-03"),
        "every safe (read-only) tool is refused when called unfetched, not only the first",
        "Gate every tool the extension discloses, not a subset.",
    ),
    _c(
        "grants/unsafe-tools-gated",
        M,
        ("PD-5.1-02", "PD-2-03"),
        "tools the suite will not run (not read-only) are refused unfetched too, before their arguments are checked",
        "Gate every tool, whenever it was registered and whatever its annotations, and run the gate before argument "
        "validation: an unfetched call is refused with TOOL_DESCRIPTION_REQUIRED whatever its arguments.",
    ),
    _c(
        "grants/repeated-unfetched-refused",
        M,
        ("PD-5.1-02",),
        "a second and third unfetched call of the same tool are refused too",
        "Refuse every unfetched call; a refusal must not count as a fetch.",
    ),
    _c(
        "grants/refused-read-grants-nothing",
        M,
        ("PD-5.1-02", "PD-5.1-01"),
        "reads without a selection, of unknown names, or of case/punctuation variants authorize nothing",
        "Grant only the listed names a read actually served; an error entry or a refused read grants nothing.",
    ),
    _c(
        "grants/read-other-refused",
        M,
        ("PD-5.1-02", "PD-5.1-01"),
        "reading tool X does not authorize tool Y",
        "Record a grant per tool served, never for the whole catalog.",
    ),
    _c(
        "grants/each-read-tool-authorized",
        M,
        ("PD-5.1-01",),
        "one read of several tools authorizes each of them, wherever it stands in the list",
        "Grant every tool a read served, not only the first.",
    ),
    _c(
        "grants/mixed-read-authorizes-known",
        M,
        ("PD-5.1-01",),
        "a read that mixes known and unknown names authorizes the known ones",
        "An unknown name in the selection must not cancel the grants of the known ones.",
    ),
    _c(
        "grants/survive-refusals",
        M,
        ("PD-5.1-03",),
        "a read without a selection, a read naming an unknown tool and a refused call of another tool each leave the "
        "session's grants",
        "Change grants only when a read serves a definition, and then only add to them: a read refused with "
        "MISSING_TOOL_SELECTION, a read naming an unknown tool (its error entry grants nothing) and a call refused "
        "with TOOL_DESCRIPTION_REQUIRED must not clear or reset the session's grants.",
    ),
    _c(
        "grants/persist-through-session",
        M,
        ("PD-5.1-03",),
        "grants still hold after a longer stretch of other requests (and, with --grant-hold, of waiting)",
        "Keep grants for the life of the session; do not expire them after some requests or seconds.",
    ),
    _c(
        "grants/required-truthful",
        M,
        ("PD-3.2-02",),
        "a schema that requires nothing is not contradicted by the tool rejecting a call without arguments",
        "Serve the schema the tool validates against, with its required list.",
    ),
    _c(
        "isolation/other-session-refused",
        M,
        ("PD-5.1-04", "PD-5.2-02"),
        "a concurrent session that never fetched the tool is refused",
        "When session B's call ran, grants leak: key them by the MCP session (Mcp-Session-Id on HTTP, the "
        "connection on stdio), never globally; when B got another error, refuse an unfetched call with "
        "TOOL_DESCRIPTION_REQUIRED before anything else looks at it.",
    ),
    _c(
        "isolation/own-session-unaffected",
        M,
        ("PD-5.1-03",),
        "the fetching session stays authorized while another session is refused",
        "Refusing one session must not touch another session's grants.",
    ),
    _c(
        "session-end/new-session-refused",
        M,
        ("PD-5.2-03",),
        "a session opened after the fetching session ended is refused",
        "Drop a session's grants when it ends (stdio EOF, HTTP DELETE, idle timeout); never reuse keys.",
    ),
    _c(
        "sessionless/negotiated-version",
        N,
        ("PD-5.2-01",),
        "which protocol version the default client negotiates",
        "",
    ),
    _c(
        "sessionless/unfetched-call-refused",
        M,
        ("PD-5.1-02",),
        "in the sessionless 2026-07-28 protocol an unfetched call never succeeds",
        "Without a session identity, refuse calls explicitly (e.g. SESSION_REQUIRED) rather than letting them run.",
    ),
    _c(
        "sessionless/fetch-then-call",
        M,
        ("PD-5.2-01", "PD-5.1-01"),
        "in the sessionless protocol, fetch-then-call succeeds or is refused with an explicit documented error",
        "Either key sessionless requests to a session identity, or refuse with a documented code "
        "(e.g. SESSION_REQUIRED) that tells the client how to get a session; never loop on TOOL_DESCRIPTION_REQUIRED.",
    ),
    # -- profile tool-fallback (I-13) ------------------------------------------------------------------
    _c(
        "tool-fallback/listed",
        M,
        ("PDX-DESCRIBE-01",),
        'the describe tool is listed with its small real input schema: {"tools": [names]}',
        'List it with {"type": "object", "properties": {"tools": {"type": "array", "items": {"type": "string"}}}, '
        '"required": ["tools"]}: a model must see how to call the one tool that unlocks the others.',
    ),
    _c(
        "tool-fallback/callable-unfetched",
        M,
        ("PDX-DESCRIBE-01",),
        "the describe tool answers in a session that fetched nothing (it is never gated)",
        "Exempt the describe tool from the gate: it is how a tools-only host fetches a description.",
    ),
    _c(
        "tool-fallback/same-document",
        M,
        ("PDX-DESCRIBE-02",),
        "the describe tool returns the resource's document for the same names, as JSON text and structuredContent",
        "Answer with the very document resources/read returns for ?tools=<the same names>: one JSON text content "
        "and the same object as structuredContent (unknown names get the same not-found entries).",
    ),
    _c(
        "tool-fallback/same-errors",
        M,
        ("PDX-DESCRIBE-03",),
        "the describe tool refuses what the resource refuses (an empty list, too many or invalid names), "
        "with the same error documents as isError results",
        'Refuse {"tools": []} with the MISSING_TOOL_SELECTION document as an isError tool result, and every '
        "selection the resource refuses with the resource's error document.",
    ),
    _c(
        "tool-fallback/authorizes",
        M,
        ("PDX-DESCRIBE-04", "PD-5.1-01"),
        "after the describe tool returned a tool's definition, that tool passes the gate in the session",
        "Record the same grant for (session, tool) as a resource read does, for every tool the describe tool served.",
    ),
    _c(
        "tool-fallback/only-described",
        M,
        ("PDX-DESCRIBE-04", "PD-5.1-02"),
        "describing nothing, unknown names, a case variant or another tool authorizes nothing else",
        "Grant only the listed names the describe tool actually served.",
    ),
    _c(
        "tool-fallback/isolated",
        M,
        ("PDX-DESCRIBE-04", "PD-5.1-04"),
        "what the describe tool authorized in one session is refused in a concurrent session",
        "Key the describe tool's grants by the MCP session, as the resource's: never one set for every session.",
    ),
    _c(
        "tool-fallback/required-names-describe",
        S,
        ("PDX-DESCRIBE-06",),
        "TOOL_DESCRIPTION_REQUIRED names the describe tool call beside resource_uri",
        'Add "describe_tool_call": {"name": "describe_tools", "arguments": {"tools": ["<name>"]}} to the refusal, '
        "so a model in a tools-only host recovers in one step.",
    ),
    # -- profile catalog (I-16) -------------------------------------------------------------------------
    _c(
        "catalog/fixed-list",
        M,
        ("PDX-CATALOG-01",),
        "tools/list holds search_tools, browse_tools, describe_tools and call_tool, not the catalog",
        "List the four meta-tools (and the few tools an author pins) whatever the catalog's size; "
        "search and browse find the rest.",
    ),
    _c(
        "catalog/browse",
        M,
        ("PDX-CATALOG-06",),
        "browse_tools lists the categories with counts, and each category's tools in pages that add up to its count",
        'Answer {} with {"categories": [{"name", "count", "description"}]} and {"category": C} with '
        '{"tools": [{"name", "description"}], "nextCursor"?}, following nextCursor to the end.',
    ),
    _c(
        "catalog/search-results",
        M,
        ("PDX-CATALOG-02",),
        "search_tools answers compact results (name, category, one line), within the limit, that find the tool",
        'Answer {"results": [{"name", "category", "description"}], "total"} as structuredContent with a JSON text '
        "copy; no schemas in results; at most limit (default 5) results.",
    ),
    _c(
        "catalog/search-abstains",
        M,
        ("PDX-CATALOG-02",),
        "search_tools abstains on a query nothing fits: no results, abstained, a hint naming categories",
        'When nothing explains the query, answer {"results": [], "total": 0, "abstained": true, "hint": "... browse '
        'a category: ..."} instead of the least bad tools.',
    ),
    _c(
        "catalog/search-filters",
        M,
        ("PDX-CATALOG-02",),
        "search_tools keeps to a category, finds tools like a named one, and names the valid categories on error",
        'Filter results by "category" before ranking; "like" returns other tools similar to the named one; '
        "an unknown category is an error listing the valid ones.",
    ),
    _c(
        "catalog/call-gated",
        M,
        ("PDX-CATALOG-01", "PDX-CATALOG-04", "PD-5.1-02"),
        "call_tool and direct calls are refused before describe_tools, run after it, only in that session",
        "Put call_tool behind the same gate as a direct call: TOOL_DESCRIPTION_REQUIRED until this session "
        "described the tool; direct calls by name keep working under that gate.",
    ),
    _c(
        "catalog/call-validates",
        M,
        ("PDX-CATALOG-04",),
        "call_tool refuses arguments that break the tool's inputSchema with INVALID_ARGUMENTS naming the field",
        "Validate the arguments against the tool's inputSchema before running it; answer INVALID_ARGUMENTS with, "
        "per problem, the field, the rule, the message and the schema fragment.",
    ),
    _c(
        "catalog/call-unknown",
        M,
        ("PDX-CATALOG-04",),
        "call_tool answers a misspelt name with TOOL_NOT_FOUND and the closest names",
        "Answer unknown names with TOOL_NOT_FOUND and the closest tool names first, never by running a guess.",
    ),
)

CHECKS_BY_ID: Final[dict[str, CheckSpec]] = {c.id: c for c in CHECKS}
_CITED: Final = {rid for check in CHECKS for rid in check.requirements}
REQUIREMENTS: Final[dict[str, Requirement]] = {
    rid: req for rid, req in _ALL.items() if not rid.startswith("PDX-") or rid in _CITED
}
SCENARIOS: Final[tuple[str, ...]] = tuple(dict.fromkeys(c.scenario for c in CHECKS))
CORE_CHECKS: Final[tuple[CheckSpec, ...]] = tuple(c for c in CHECKS if c.profile is None)
# Scenarios run once per selected protocol era; the others run once.
PER_ERA_SCENARIOS: Final[frozenset[str]] = frozenset({"authorization", "isolation", "session-end"})
# Checks of other scenarios judged in each era too: what a server declares can differ between its handshakes.
PER_ERA_CHECKS: Final[frozenset[str]] = frozenset({"resource-listing/capability-declared"})
