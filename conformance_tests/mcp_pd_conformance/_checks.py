"""The single-session scenarios (tools-list, resource-listing, resource-read, missing-selection).

Each scenario writes one result per check into a `Recorder`; a check that cannot run is SKIPPED with
its reason. Tools are discovered from tools/list, never assumed.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from ._documents import (
    MISSING_MESSAGE,
    MISSING_TOOL_SELECTION,
    Body,
    base_uri,
    error_document,
    example_arguments,
    read_body,
    schema_detail,
    uri_path,
)
from ._probe import Exchange, Peer, short
from ._record import Recorder
from ._text import (
    call_example,
    explains_authorization,
    explains_consequence,
    explains_fetch_first,
    explains_tools_list,
    only_the_name,
    parameter_docs,
    strings_in,
    usage_instruction,
)

__all__ = [
    "NO_RESOURCE",
    "ONLY_OWN_TOOLS",
    "Discovery",
    "SafeTool",
    "missing_selection",
    "resource_listing",
    "resource_read",
    "selection_uri",
    "tools_list",
    "unfetched_tool_note",
    "unknown_name",
]

DESCRIPTION_LIMIT = 300
UNKNOWN_TOOL = "pd_conformance_no_such_tool"


def unknown_name(names: Collection[str]) -> str:
    """A tool name the server does not have: UNKNOWN_TOOL, unless it lists a tool by that very name."""
    return UNKNOWN_TOOL if UNKNOWN_TOOL not in names else UNKNOWN_TOOL + "_2"


NO_EXTENSION = "this server does not implement progressive disclosure (spec 4.1)"
NO_RESOURCE = "no tool_descriptions resource (see resource-listing/listed)"
ONLY_OWN_TOOLS = (
    "tools/list lists only the extension's own tools (catalog mode?), so there is no listed tool to read or call; "
    "--profile catalog checks such a server"
)

_NAME = re.compile(r"tool[\s_-]*(descriptions?|definitions?|docs?|documentation)", re.IGNORECASE)
_TOOLS_LIST = re.compile(r"tools/list|tools list|tool list|list of tools|list_tools|listTools", re.IGNORECASE)
_STEPS = re.compile(r"\bstep\s*\d|(^|\s)1[.)]\s.*(^|\s)2[.)]\s|\bfirst\b.*\bthen\b", re.IGNORECASE | re.DOTALL)
_SELECT = re.compile(r"select|choos|pick|identify|decide", re.IGNORECASE)
_PARAMS = re.compile(r"parameter|argument|schema|input", re.IGNORECASE)
_URI_EXAMPLE = re.compile(r"[a-z][a-z0-9+.-]*:\S*\?tools=[A-Za-z0-9_.-]+", re.IGNORECASE)
_INSTRUCTION_MARKERS = re.compile(
    r"\bexamples?\s*:|\busage\s*:|\bparameters?\s*:|\barguments?\s*:|\breturns?\s*:|```", re.IGNORECASE
)
_TOOL_LEVEL_DETAIL = ("examples", "inputExamples", "input_examples", "usage_guidance", "error_guidance")


@dataclass(frozen=True)
class SafeTool:
    """The tool the suite may really invoke, the arguments it uses, and why it is considered safe."""

    name: str
    arguments: dict[str, Any]
    source: str


@dataclass
class Discovery:
    """What the first session learned about the server."""

    tools: list[dict[str, Any]] = field(default_factory=list)
    # Listed tools of the extension itself (describe_tools and the like): never gated, never probed.
    meta: dict[str, str] = field(default_factory=dict)
    resource: dict[str, Any] | None = None
    base: str | None = None
    no_resource_reason: str = ""
    # The tool probed with an unfetched call (before anything is fetched) and its arguments.
    probe: str | None = None
    probe_arguments: dict[str, Any] = field(default_factory=dict)
    probe_source: str = ""
    # Annotations read from fetched definitions, when the listing had none (see _sessions.learn_hints).
    hints: dict[str, dict[str, Any]] = field(default_factory=dict)
    hints_problem: str = ""
    # The tool the suite may call after fetching it, with arguments learned from its description.
    safe: SafeTool | None = None
    safe_reason: str = "no tool was chosen"
    # Full definitions read during the run, by name (see _definitions.learn_definitions).
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    # The read each of `entries` came from (the report shows it with a problem found in that definition).
    read_from: dict[str, Exchange] = field(default_factory=dict)
    # Catalog mode: the tools behind call_tool, as browse_tools named them (see _browse.adopt_catalog).
    behind: list[dict[str, Any]] = field(default_factory=list)

    @property
    def names(self) -> list[str]:
        """The tools the extension discloses and gates: the listed ones (its own tools left out), then those behind
        catalog mode's call_tool."""
        return [t["name"] for t in self.callable_tools if isinstance(t.get("name"), str)]

    @property
    def gated_tools(self) -> list[dict[str, Any]]:
        """The listed tools the extension gates (what tools/list checks judge)."""
        return [t for t in self.tools if t["name"] not in self.meta]

    @property
    def callable_tools(self) -> list[dict[str, Any]]:
        """Every tool the suite may probe: the listed ones, then those behind call_tool."""
        return [*self.gated_tools, *self.behind]


def unfetched_tool_note(disc: Discovery) -> str:
    """One line for the report: which tool the suite really invoked, or why none."""
    if disc.safe is not None:
        return f"Tool invoked by the suite: {disc.safe.name} {short(disc.safe.arguments, 120)} ({disc.safe.source})."
    return f"No tool was invoked: {disc.safe_reason}."


def selection_uri(base: str, *names: str) -> str:
    """`<base>?tools=a,b`."""
    return f"{base}?tools={','.join(names)}"


# -- tools-list ---------------------------------------------------------------------------------------
async def tools_list(peer: Peer, rec: Recorder, disc: Discovery) -> None:
    """Scenario tools-list: the minimal listing of spec 3.1."""
    tools, last = await peer.paginate("tools")
    if last.error is not None:
        rec.fail(
            "tools-list/listed",
            "tools/list failed",
            expected="a tools/list result",
            exchange=last,
        )
        rec.skip_scenario("tools-list", "tools/list failed")
        return
    disc.tools = [t for t in tools if isinstance(t.get("name"), str)]
    if not disc.tools:
        rec.fail(
            "tools-list/listed",
            "tools/list lists no tools: there is nothing to disclose progressively",
            expected="at least one tool",
            exchange=last,
        )
        rec.skip_scenario("tools-list", "the server lists no tools")
        return
    rec.ok("tools-list/listed", f"{len(disc.tools)} tools listed", exchange=last)
    disc.meta = extension_tools(peer.extension_settings(), [t["name"] for t in disc.tools])
    if disc.meta:
        shown = ", ".join(f"{name} ({why})" for name, why in disc.meta.items())
        rec.info("tools-list/extension-tools", f"the extension's own tools, neither gated nor probed: {shown}")
    else:
        rec.info("tools-list/extension-tools", "no describe/search tool of the extension is listed or advertised")
    n = len(disc.tools)

    detailed = [(t["name"], why) for t in disc.gated_tools if (why := schema_detail(t.get("inputSchema"))) is not None]
    if detailed:
        listing = "; ".join(f"{name}: {why}" for name, why in detailed[:5])
        rec.fail(
            "tools-list/minimal-schema",
            f"{len(detailed)} of {n} tools list a detailed inputSchema ({listing})",
            expected='inputSchema omitted, or {"type": "object"} without properties/required '
            "(optionally additionalProperties: true)",
            exchange=last,
        )
    else:
        rec.ok("tools-list/minimal-schema", f"all {n} listed inputSchemas are minimal")

    with_examples = []
    for tool in disc.gated_tools:
        fields = [k for k in _TOOL_LEVEL_DETAIL if tool.get(k)]
        schema = tool.get("inputSchema")
        if isinstance(schema, dict) and schema.get("examples"):
            fields.append("inputSchema.examples")
        if fields:
            with_examples.append(f"{tool['name']} ({', '.join(fields)})")
    if with_examples:
        rec.fail(
            "tools-list/no-examples",
            f"{len(with_examples)} tools carry examples or guidance in tools/list: {', '.join(with_examples[:5])}",
            expected="no examples, usage_guidance or error_guidance in tools/list entries",
            exchange=last,
        )
    else:
        rec.ok("tools-list/no-examples", "no tools/list entry carries examples or usage guidance")

    empty = [t["name"] for t in disc.tools if not str(t.get("description") or "").strip()]
    if empty:
        rec.fail(
            "tools-list/description-present",
            f"{len(empty)} tools have no description: {', '.join(empty[:8])}",
            expected="a non-empty description for every tool",
            exchange=last,
        )
    else:
        rec.ok("tools-list/description-present", f"all {n} tools have a description")

    wordy = []
    for tool in disc.gated_tools:
        text = str(tool.get("description") or "")
        if len(text) > DESCRIPTION_LIMIT:
            wordy.append(f"{tool['name']} ({len(text)} chars)")
        elif _INSTRUCTION_MARKERS.search(text) or text.count("\n") > 2:
            wordy.append(f"{tool['name']} (reads like usage instructions)")
    if wordy:
        rec.fail(
            "tools-list/description-concise",
            f"{len(wordy)} listed descriptions look like full documentation: {', '.join(wordy[:5])}",
            expected=f"one or two sentences, at most {DESCRIPTION_LIMIT} characters, without usage instructions",
            exchange=last,
        )
    else:
        rec.ok("tools-list/description-concise", f"all listed descriptions are at most {DESCRIPTION_LIMIT} chars")

    said = {t["name"]: str(t.get("description") or "") for t in disc.tools}
    named = [name for name, text in said.items() if only_the_name(text, name)]
    if named:
        rec.fail(
            "tools-list/description-not-name",
            f"{len(named)} tools are described by their own name only: "
            + "; ".join(f"{name}: {said[name]!r}" for name in named[:4]),
            expected="a sentence saying what the tool does, enough to choose it without reading its definition",
            exchange=last,
        )
    else:
        rec.ok("tools-list/description-not-name", f"no description of {n} tools is only the tool's name")

    vague = []
    for tool in disc.tools:
        text = str(tool.get("description") or "")
        words = re.findall(r"[A-Za-z]{2,}", text)
        restated = {_norm(text)} & {_norm(str(tool["name"])), _norm(str(tool.get("title") or ""))}
        if text and tool["name"] not in named and (len(words) < 3 or restated):
            vague.append(f"{tool['name']}: {text!r}")
    if vague:
        rec.fail(
            "tools-list/description-purpose",
            f"{len(vague)} descriptions do not say what the tool does: {'; '.join(vague[:4])}",
            expected="a sentence stating the tool's purpose and primary use",
            exchange=last,
        )
    else:
        rec.ok("tools-list/description-purpose", "every description is a sentence of at least three words")

    _distinct_descriptions(rec, disc, last)
    documented = _parameter_docs(rec, disc, last)
    _usage_instructions(rec, disc, last, documented)
    _hidden_detail(rec, disc, last)

    forms: dict[str, int] = {}
    for tool in disc.tools:
        schema = tool.get("inputSchema")
        if schema is None:
            form = "omitted"
        elif schema == {"type": "object", "additionalProperties": True}:
            form = '{"type":"object","additionalProperties":true}'
        elif schema == {"type": "object"}:
            form = '{"type":"object"}'
        else:
            form = "other"
        forms[form] = forms.get(form, 0) + 1
    rec.info("tools-list/schema-form", "inputSchema forms: " + ", ".join(f"{k} x{v}" for k, v in forms.items()))


def extension_tools(settings: dict[str, Any] | None, listed: list[str]) -> dict[str, str]:
    """Listed tools that belong to the extension: the names its capability advertises, else describe_tools.

    Advertised as one name (`describeTool`) or as a list of names (catalog mode's `metaTools`).
    """
    found: dict[str, str] = {}
    for key, value in (settings or {}).items():
        if key.endswith("Tool") and isinstance(value, str) and value in listed:
            found[value] = f"advertised as {key}"
        elif key.endswith("Tools") and isinstance(value, list):
            for name in value:
                if isinstance(name, str) and name in listed:
                    found.setdefault(name, f"advertised in {key}")
    if not found and "describe_tools" in listed:
        found["describe_tools"] = "named describe_tools"
    return found


def _distinct_descriptions(rec: Recorder, disc: Discovery, last: Exchange) -> None:
    groups: dict[str, list[str]] = {}
    for tool in disc.tools:
        text = " ".join(str(tool.get("description") or "").split()).lower()
        if text:
            groups.setdefault(text, []).append(tool["name"])
    shared = [(text, names) for text, names in groups.items() if len(names) > 1]
    if shared:
        text, names = max(shared, key=lambda g: len(g[1]))
        rec.fail(
            "tools-list/distinct-descriptions",
            f"{sum(len(n) for _, n in shared)} tools share a description, e.g. {len(names)} tools "
            f"({', '.join(names[:5])}) are all described as {short(text, 100)!r}: nothing to choose between them by",
            expected="each tool's own purpose in its listed description",
            exchange=last,
        )
    else:
        rec.ok("tools-list/distinct-descriptions", f"all {len(disc.tools)} listed descriptions differ")


def _parameter_docs(rec: Recorder, disc: Discovery, last: Exchange) -> set[str]:
    """tools-list/no-parameter-docs; the names of the tools it failed."""
    found, names = [], set()
    for tool in disc.gated_tools:
        text = str(tool.get("description") or "")
        docs, call = parameter_docs(text), call_example(text, tool["name"])
        if docs:
            found.append(f"{tool['name']} documents parameters ({docs!r})")
        elif call:
            found.append(f"{tool['name']} shows a call example ({call!r})")
        if docs or call:
            names.add(tool["name"])
    if found:
        rec.fail(
            "tools-list/no-parameter-docs",
            f"{len(found)} listed descriptions carry stage-2 detail: {'; '.join(found[:4])}",
            expected="a purpose sentence only; parameters and examples in the full description",
            exchange=last,
        )
    else:
        rec.ok("tools-list/no-parameter-docs", "no listed description documents parameters or shows a call")
    return names


def _usage_instructions(rec: Recorder, disc: Discovery, last: Exchange, documented: set[str]) -> None:
    """tools-list/no-usage-instructions (3.1 MUST NOT): how to call the tool belongs in its full definition.
    Tools whose description no-parameter-docs already failed are not judged twice."""
    found = []
    for tool in disc.gated_tools:
        said = usage_instruction(str(tool.get("description") or ""))
        if said and tool["name"] not in documented:
            found.append(f"{tool['name']}: {short(said, 100)!r}")
    if found:
        rec.fail(
            "tools-list/no-usage-instructions",
            f"{len(found)} listed descriptions tell the caller how to call the tool: {'; '.join(found[:4])}",
            expected="what the tool does and when to use it; how to call it (argument rules, what to pass, what to "
            "call first) in the full description",
            exchange=last,
        )
    else:
        rec.ok("tools-list/no-usage-instructions", "no listed description carries usage instructions")


_STANDARD_HINTS = frozenset({"title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"})
_DETAIL_KEYS = re.compile(
    r"^(examples?|inputExamples|input_examples|inputSchema|input_schema|parameters|params|arguments|args|"
    r"usage|usage_guidance|error_guidance|properties|required)$",
    re.IGNORECASE,
)
_TOOL_FIELDS = frozenset({"name", "description", "inputSchema", "execution", "icons"})


def _hidden_detail(rec: Recorder, disc: Discovery, last: Exchange) -> None:
    """Stage-2 detail outside name/description/inputSchema: title, annotations, _meta, outputSchema, extra keys."""
    found = []
    for tool in disc.gated_tools:
        name, problems = tool["name"], []
        title = str(tool.get("title") or "")
        if len(title) > 120 or parameter_docs(title) or call_example(title, name):
            problems.append(f"title {short(title, 60)!r}")
        annotations = tool.get("annotations")
        if isinstance(annotations, dict):
            if len(str(annotations.get("title") or "")) > 120:
                problems.append("annotations.title is long")
            odd = [k for k, v in annotations.items() if k not in _STANDARD_HINTS and isinstance(v, dict | list | str)]
            problems += [f"annotations.{k}" for k in odd]
        for key, value in tool.items():
            if key in _TOOL_FIELDS or key in ("title", "annotations") or value is None:
                continue
            for path, text in strings_in(value, key):
                leaf = path.rsplit(".", 1)[-1]
                if (key != "outputSchema" and _DETAIL_KEYS.match(leaf) and text == leaf) or (
                    key == "outputSchema" and leaf.lower() in ("examples", "example") and text == leaf
                ):
                    problems.append(f"{path}")
                elif parameter_docs(text) or call_example(text, name) or len(text) > DESCRIPTION_LIMIT:
                    problems.append(f"{path} = {short(text, 60)!r}")
        if problems:
            found.append(f"{name}: {', '.join(dict.fromkeys(problems[:3]))}")
    if found:
        rec.fail(
            "tools-list/no-hidden-detail",
            f"{len(found)} tools/list entries carry parameter detail outside the description: {'; '.join(found[:4])}",
            expected="title, annotations, _meta and outputSchema without parameters, examples or usage text",
            exchange=last,
        )
    else:
        rec.ok("tools-list/no-hidden-detail", "no parameter detail hides in title, annotations, _meta or other fields")


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


# -- resource-listing ---------------------------------------------------------------------------------
def _find_resource(resources: list[dict[str, Any]]) -> dict[str, Any] | None:
    for resource in resources:
        uri = resource.get("uri")
        if isinstance(uri, str) and uri_path(uri).rstrip("/").endswith("tool_descriptions"):
            return resource
    for resource in resources:
        label = f"{resource.get('name') or ''} {resource.get('title') or ''} {resource.get('uri') or ''}"
        if "tool_descriptions" in label or _NAME.search(label):
            return resource
    return None


async def resource_listing(peer: Peer, rec: Recorder, disc: Discovery) -> None:
    """Scenario resource-listing: the resource entry of spec 4.1 and its description (4.2)."""
    resources, last = await peer.paginate("resources")
    if last.error is not None:
        code = last.error.code if last.error.code is not None else "client-side"
        disc.no_resource_reason = f"resources/list failed ({code}: {last.error.message}): {NO_EXTENSION}"
        rec.fail(
            "resource-listing/listed",
            f"resources/list failed, so there is no tool_descriptions resource: {NO_EXTENSION}",
            expected="resources/list including resource:///tool_descriptions",
            exchange=last,
        )
        rec.skip_scenario("resource-listing", NO_RESOURCE)
        return
    resource = _find_resource(resources)
    if resource is None:
        templates = await peer.list_resource_templates()
        listed = [t.get("uriTemplate") for t in (templates.result or {}).get("resourceTemplates") or []]
        only_template = [t for t in listed if isinstance(t, str) and "tool_descriptions" in t]
        extra = f" (it is only a resource template: {only_template[0]}; list the base URI too)" if only_template else ""
        disc.no_resource_reason = f"no tool_descriptions resource in resources/list{extra}: {NO_EXTENSION}"
        rec.fail(
            "resource-listing/listed",
            f"no tool_descriptions resource in resources/list{extra}: {NO_EXTENSION}",
            expected="a resource whose uri is resource:///tool_descriptions (or ends in tool_descriptions)",
            exchange=last,
        )
        rec.skip_scenario("resource-listing", NO_RESOURCE)
        return
    disc.resource = resource
    uri = str(resource.get("uri") or "")
    disc.base = base_uri(uri)
    rec.ok("resource-listing/listed", f"listed as {uri}")
    listed_entry = Exchange("resources/list", {}, {"resources": [resource]})

    if uri == "resource:///tool_descriptions" or (uri == disc.base and uri_path(uri).endswith("tool_descriptions")):
        rec.ok("resource-listing/uri", f"uri {uri}")
    else:
        rec.fail(
            "resource-listing/uri",
            f"the listed uri {uri!r} is not a tool_descriptions base URI",
            expected="resource:///tool_descriptions, or a URI whose path ends in tool_descriptions, without a query",
            exchange=listed_entry,
        )

    name, title = str(resource.get("name") or ""), str(resource.get("title") or "")
    if _NAME.search(name) or _NAME.search(title) or "tool_descriptions" in name:
        rec.ok("resource-listing/name", f"name {name!r}" + (f", title {title!r}" if title else ""))
    else:
        rec.fail(
            "resource-listing/name",
            f"name {name!r} / title {title!r} does not say the resource holds tool descriptions",
            expected='a name or title such as "Tool Descriptions"',
            exchange=listed_entry,
        )

    text = str(resource.get("description") or "")

    def judge(check_id: str, passed: bool, what: str, expected: str) -> None:
        if passed:
            rec.ok(check_id, f"the description {what}")
        else:
            verb, _, rest = what.partition(" ")  # "says what ..." -> "does not say what ..."
            negated = f"{verb.removesuffix('s')} {rest}"
            rec.fail(check_id, f"the description does not {negated}", expected=expected, exchange=listed_entry)

    judge(
        "resource-listing/explains-tools-list",
        explains_tools_list(text),
        "relates tools/list to this resource in one sentence",
        "a sentence such as 'choose a tool from tools/list, then read its description here'",
    )
    judge(
        "resource-listing/explains-fetch-first",
        explains_fetch_first(text),
        "says to fetch a description before calling the tool",
        "a sentence ordering the fetch before the call ('read ... before calling'), or numbered steps doing so",
    )
    judge("resource-listing/explains-query-syntax", "?tools=" in text, "shows the ?tools= syntax", "?tools=")
    judge(
        "resource-listing/explains-consequence",
        explains_consequence(text),
        "says what an unfetched call does",
        "TOOL_DESCRIPTION_REQUIRED, or a sentence saying a call without fetching fails",
    )
    judge("resource-listing/sequential-steps", bool(_STEPS.search(text)), "uses numbered steps", '"Step 1: ..."')
    judge(
        "resource-listing/selection-vs-parameters",
        bool(_TOOLS_LIST.search(text) and _SELECT.search(text) and _PARAMS.search(text)),
        "separates choosing a tool (tools/list) from learning its parameters",
        "tools/list for selection, this resource for parameters",
    )
    judge(
        "resource-listing/uri-examples",
        bool(_URI_EXAMPLE.search(text)),
        "gives a concrete URI example",
        f"{disc.base}?tools=TOOL_NAME",
    )
    judge(
        "resource-listing/explains-authorization",
        explains_authorization(text),
        "says fetching authorizes the tool for the session",
        '"fetching authorizes the tool for this session"',
    )
    mime = resource.get("mimeType")
    if mime == "application/json":
        rec.ok("resource-listing/mime-type", "application/json")
    else:
        rec.fail(
            "resource-listing/mime-type",
            f"mimeType is {mime!r}",
            expected="application/json",
            exchange=listed_entry,
        )
    instructions = peer.instructions or ""
    if "?tools=" in instructions or (disc.base is not None and disc.base in instructions):
        rec.ok("resource-listing/system-prompt-guidance", "the server instructions explain the two-stage workflow")
    else:
        rec.fail(
            "resource-listing/system-prompt-guidance",
            "the server instructions do not mention the tool_descriptions resource"
            if instructions
            else "the server sends no instructions",
            expected=f"instructions explaining the workflow, e.g. mentioning {disc.base}?tools=TOOL_NAME",
        )


# -- resource-read ------------------------------------------------------------------------------------
async def resource_read(peer: Peer, rec: Recorder, disc: Discovery) -> None:
    """Scenario resource-read: ?tools= selection and the response format of spec 4.3, 4.4 and 6.3."""
    if disc.base is None or not disc.names:
        reason = NO_RESOURCE if disc.base is None else ONLY_OWN_TOOLS if disc.tools else "no tools to read"
        rec.skip_scenario("resource-read", reason)
        return
    base, names = disc.base, disc.names
    reads: list[tuple[list[str], Exchange, Body]] = []
    for requested in ([names[0]], names[:2]) if len(names) >= 2 else ([names[0]],):
        exchange = await peer.read(selection_uri(base, *requested))
        reads.append((requested, exchange, read_body(exchange)))

    requested, exchange, body = reads[0]
    got = body.mapping
    if got is not None and requested[0] in got:
        rec.ok("resource-read/single-tool", f"?tools={requested[0]} returned its description")
    else:
        rec.fail(
            "resource-read/single-tool",
            f"?tools={requested[0]} did not return a JSON object keyed by {requested[0]}: "
            + ((body.problem or "no JSON object") if got is None else f"keys {sorted(got)[:6]}"),
            expected=f'{{"{requested[0]}": {{"name": ..., "description": ..., "inputSchema": ...}}}}',
            exchange=exchange,
        )
    if len(reads) > 1:
        requested, exchange, body = reads[1]
        got = body.mapping
        if got is not None and all(n in got for n in requested):
            rec.ok("resource-read/comma-separated", f"?tools={','.join(requested)} returned both")
        else:
            rec.fail(
                "resource-read/comma-separated",
                f"?tools={','.join(requested)} did not return both tools: "
                + ((body.problem or "no JSON object") if got is None else f"keys {sorted(got)[:6]}"),
                expected=f"a JSON object with keys {requested}",
                exchange=exchange,
            )
    else:
        rec.skip("resource-read/comma-separated", "the server lists a single tool")

    _judge_bodies(rec, disc, reads)
    await _exact_match(peer, rec, disc, names[0])
    await _unknown_name(peer, rec, disc)


def _judge_bodies(rec: Recorder, disc: Discovery, reads: list[tuple[list[str], Exchange, Body]]) -> None:
    """only-requested, no-preamble and the entry checks, over every read of valid names."""
    listed = set(disc.names)
    selection_problems: list[tuple[str, Exchange]] = []
    preamble_problems: list[tuple[str, Exchange]] = []
    entries: dict[str, tuple[Any, Exchange, Body]] = {}
    for requested, exchange, body in reads:
        got = body.mapping
        if body.prefix:
            preamble_problems.append((f"text precedes the JSON: {body.prefix[:60]!r}", exchange))
        if got is None:
            continue
        extra = [k for k in got if k not in requested and k in listed]
        missing = [n for n in requested if n not in got]
        if extra or missing:
            parts = [f"{len(extra)} unrequested tools returned ({', '.join(extra[:5])})"] if extra else []
            parts += [f"missing {missing}"] if missing else []
            selection_problems.append((f"requested {requested}: {'; '.join(parts)}", exchange))
        strangers = [k for k in got if k not in requested and k not in listed]
        if strangers:
            preamble_problems.append((f"requested {requested}: extra top-level keys {strangers[:5]}", exchange))
        for name in requested:
            if name in got and name not in entries:
                entries[name] = (got[name], exchange, body)
    # Every definition the run learned is judged, not only those of the reads above: reading one has no side effect.
    for name, entry in disc.entries.items():
        if name not in entries and name in disc.read_from:
            entries[name] = (entry, disc.read_from[name], read_body(disc.read_from[name]))
    if not any(body.mapping is not None for _, _, body in reads):
        reason = "no read returned a JSON object (see resource-read/single-tool)"
        for check in ("only-requested", "no-preamble", "full-entry", "complete-schema", "examples", "error-guidance"):
            if check != "no-preamble" or not preamble_problems:
                rec.skip(f"resource-read/{check}", reason)
        rec.skip("resource-read/version-info", reason)
    rec.judge(
        "resource-read/only-requested",
        selection_problems,
        ok=f"{len(reads)} reads returned exactly the requested tools",
        expected="exactly the requested tools",
        shown=None,
    )
    rec.judge(
        "resource-read/no-preamble",
        preamble_problems,
        ok="every top-level key is a requested tool name",
        expected="every top-level key is a requested tool name, and nothing precedes the JSON",
        shown=None,
    )
    _judge_entries(rec, entries, len(disc.names))


def _judge_entries(rec: Recorder, entries: dict[str, tuple[Any, Exchange, Body]], listed: int) -> None:
    """full-entry, complete-schema, examples and error-guidance over every definition read (at most
    _definitions.MAX_DEFINITIONS of them: the first listed tools'). An entry named after another tool is
    resource-read/entries-match-keys' to judge."""
    bad: list[tuple[str, Exchange]] = []
    thin: list[tuple[str, Exchange]] = []
    no_examples: list[tuple[str, Exchange]] = []
    no_guidance: list[tuple[str, Exchange]] = []
    versions: list[str] = []
    for name, (entry, exchange, body) in entries.items():
        if not isinstance(entry, dict):
            bad.append((f"{name}: the entry is not an object", exchange))
            continue
        problems = []
        if not isinstance(entry.get("name"), str):
            problems.append(f"name is {entry.get('name')!r}")
        if not isinstance(entry.get("description"), str) or not entry["description"].strip():
            problems.append("no description")
        schema = entry.get("inputSchema")
        if not isinstance(schema, dict) or schema.get("type", "object") != "object":
            problems.append("no object inputSchema")
        elif not (
            schema.get("properties")
            or schema.get("additionalProperties") is False
            or any(k in schema for k in ("anyOf", "oneOf", "allOf", "$ref"))
        ):
            used = example_arguments(entry)
            if used:  # the tool takes arguments, yet its schema does not declare them
                problems.append(f"its examples pass {sorted(used)[:5]} but its inputSchema declares no properties")
            elif not isinstance(schema.get("properties"), dict):
                # "properties": {} says the tool takes no arguments (what SDKs serve for such tools); the open
                # placeholder of 3.1 says nothing.
                thin.append((name, exchange))
        if problems:
            bad.append((f"{name}: {', '.join(problems)}", exchange))
        if not (isinstance(entry.get("examples"), list) and entry["examples"]):
            no_examples.append((name, exchange))
        if not (entry.get("error_guidance") or entry.get("errorGuidance")):
            no_guidance.append((name, exchange))
        for key in ("version", "etag", "updated_at", "updatedAt", "last_modified"):
            if entry.get(key):
                versions.append(f"{name}.{key}={short(entry[key], 40)}")
        if body.meta:
            versions.append(f"content _meta keys {sorted(body.meta)}")
    if not entries:
        return
    served = f"{len(entries)} definitions ({short(', '.join(entries), 80)})"
    if len(entries) < listed:
        served += f", the first of {listed} listed tools"

    def judge(check_id: str, problems: list[tuple[str, Exchange]], ok: str, fail: str, expected: str) -> None:
        rec.judge(check_id, problems, ok=ok, expected=expected, prefix=fail, shown=4)

    judge(
        "resource-read/full-entry",
        bad,
        f"{served}: each has name, description and inputSchema",
        "",
        'each entry: {"name": <the name>, "description": "...", "inputSchema": {"type": "object", ...}}',
    )
    judge(
        "resource-read/complete-schema",
        thin,
        "served schemas declare their parameters",
        f"{len(thin)} of {len(entries)} inputSchemas declare no properties (no more than the minimal form): ",
        "the complete schema: properties, required, types",
    )
    judge(
        "resource-read/examples",
        no_examples,
        f"examples in {served}",
        f"no examples in {len(no_examples)} of {len(entries)} definitions: ",
        '"examples": [{"description": ..., "input": {...}}]',
    )
    judge(
        "resource-read/error-guidance",
        no_guidance,
        f"error guidance in {served}",
        f"no error_guidance in {len(no_guidance)} of {len(entries)} definitions: ",
        '"error_guidance": {...}',
    )
    found = list(dict.fromkeys(versions))[:3]
    message = f"version information: {'; '.join(found)}" if found else "no version information"
    rec.info("resource-read/version-info", message)


async def _unknown_name(peer: Peer, rec: Recorder, disc: Discovery) -> None:
    assert disc.base is not None
    unknown = unknown_name(disc.names)
    exchange = await peer.read(selection_uri(disc.base, unknown))
    entry = (read_body(exchange).mapping or {}).get(unknown)
    expected = f'{{"{unknown}": {{"error": "Tool \'{unknown}\' not found", "available_tools": [...]}}}}'
    if exchange.error is not None:
        rec.fail(
            "resource-read/unknown-tool-entry",
            "an unknown name made the whole read fail instead of getting an error entry",
            expected=expected,
            exchange=exchange,
        )
    elif (
        isinstance(entry, dict)
        and isinstance(entry.get("error"), str)
        and isinstance(entry.get("available_tools"), list)
    ):
        strangers = [n for n in entry["available_tools"] if n not in disc.names]
        wording = f"Tool '{unknown}' not found"
        if not re.fullmatch(re.escape(wording) + r"(?:[.;:,!]\s*.*|\s+\(.*)?", entry["error"], re.DOTALL):
            rec.fail(
                "resource-read/unknown-tool-entry",
                f"the error reads {short(entry['error'], 100)!r}, not the spec's wording",
                expected=f'"error": "{wording}" (spec 6.3; a hint may follow it)',
                exchange=exchange,
            )
        elif strangers:
            rec.fail(
                "resource-read/unknown-tool-entry",
                f"available_tools names tools not in tools/list: {strangers[:5]}",
                expected="available_tools drawn from tools/list",
                exchange=exchange,
            )
        else:
            rec.ok("resource-read/unknown-tool-entry", f"error entry: {entry['error']!r}")
    else:
        rec.fail(
            "resource-read/unknown-tool-entry",
            "no {error, available_tools} entry for an unknown name",
            expected=expected,
            exchange=exchange,
        )


async def _exact_match(peer: Peer, rec: Recorder, disc: Discovery, name: str) -> None:
    assert disc.base is not None
    variant = next(
        (v for v in (name.swapcase(), name.upper(), name.lower(), name.title()) if v != name and v not in disc.names),
        None,
    )
    if variant is None:
        rec.skip("resource-read/exact-match", f"{name!r} has no letters to change the case of")
        return
    exchange = await peer.read(selection_uri(disc.base, variant))
    if exchange.error is not None:
        rec.ok("resource-read/exact-match", f"?tools={variant} was refused (JSON-RPC error)")
        return
    got = read_body(exchange).mapping or {}
    served = got.get(variant)
    others = [k for k in got if k in disc.names and k != name]
    if others:
        rec.skip(
            "resource-read/exact-match",
            f"?tools={variant} returned unrequested tools ({', '.join(others[:3])}; see resource-read/only-requested), "
            "so case sensitivity cannot be judged",
        )
    elif name in got and not isinstance(served, dict):
        rec.fail(
            "resource-read/exact-match",
            f"?tools={variant} returned the description of {name}",
            expected=f"no description for {variant!r} (names are case-sensitive); an error entry at most",
            exchange=exchange,
        )
    elif isinstance(served, dict) and "inputSchema" in served and "error" not in served:
        rec.fail(
            "resource-read/exact-match",
            f"?tools={variant} was served as if it were {name}",
            expected=f"no description for {variant!r} (names are case-sensitive); an error entry at most",
            exchange=exchange,
        )
    else:
        rec.ok("resource-read/exact-match", f"?tools={variant} was not served as {name}")


# -- missing-selection --------------------------------------------------------------------------------
def _missing_selection_doc(exchange: Exchange) -> tuple[dict[str, Any] | None, str]:
    if exchange.error is not None:
        return error_document(exchange.error.data), "error"
    return error_document(read_body(exchange).value), "content"


def _wrapped(exchange: Exchange) -> bool:
    """Whether the error document came as spec 6.1 writes it, inside {"error": {...}} (not the inner object bare)."""
    value = exchange.error.data if exchange.error is not None else read_body(exchange).value
    return isinstance(value, dict) and isinstance(value.get("error"), dict)


async def missing_selection(peer: Peer, rec: Recorder, disc: Discovery) -> None:
    """Scenario missing-selection: reads without tool names (spec 4.3, 6.1)."""
    if disc.base is None:
        rec.skip_scenario("missing-selection", NO_RESOURCE)
        return
    documents: list[tuple[dict[str, Any], Exchange]] = []
    for check_id, uri in (
        ("missing-selection/no-query", disc.base),
        ("missing-selection/empty-tools", f"{disc.base}?tools="),
    ):
        exchange = await peer.read(uri)
        document, via = _missing_selection_doc(exchange)
        expected = "a JSON-RPC error whose data is {error: {code: MISSING_TOOL_SELECTION, ...}}"
        if document is not None and document.get("code") == MISSING_TOOL_SELECTION:
            documents.append((document, exchange))
            if via == "error":
                rec.ok(check_id, f"reading {uri} failed with MISSING_TOOL_SELECTION")
            else:
                rec.warn(
                    check_id,
                    f"reading {uri} succeeded with the MISSING_TOOL_SELECTION document as content",
                    expected=expected + " (a failed read, so clients cannot mistake it for descriptions)",
                    exchange=exchange,
                )
        else:
            what = f"failed with {document.get('code')}" if document else "did not return MISSING_TOOL_SELECTION"
            rec.fail(check_id, f"reading {uri} {what}", expected=expected, exchange=exchange)
    await _no_tools_parameter(peer, rec, disc.base)
    await _blank_selection(peer, rec, disc.base)
    if not documents:
        rec.skip("missing-selection/error-document", "no MISSING_TOOL_SELECTION document was returned")
        return
    document, first = documents[0]
    problems = []
    if not _wrapped(first):
        problems.append('the document is the bare {"code", ...} object, not wrapped in {"error": {...}}')
    message = document.get("message")
    if message != MISSING_MESSAGE:
        problems.append(f"the message is {short(message, 120)!r}, not the spec's")
    examples = document.get("examples")
    wanted = [f"{disc.base}?tools=tool_name", f"{disc.base}?tools=tool1,tool2"]
    if examples != wanted:
        problems.append(f"examples are {short(examples, 160)}, not the spec's two")
    if problems:
        rec.fail(
            "missing-selection/error-document",
            "; ".join(problems),
            expected=f'{{"error": {{"code": "MISSING_TOOL_SELECTION", "message": "{MISSING_MESSAGE}", '
            f'"examples": {short(wanted)}}}}} (spec 6.1, with this server\'s base URI)',
            exchange=first,
        )
    else:
        rec.ok("missing-selection/error-document", f"message {message!r}, examples {short(examples, 160)}")


async def _not_missing_selection(peer: Peer, base: str, queries: tuple[str, ...]) -> list[tuple[str, Exchange]]:
    """The reads among `queries` that were not refused with MISSING_TOOL_SELECTION."""
    problems: list[tuple[str, Exchange]] = []
    for query in queries:
        exchange = await peer.read(base + query)
        document, _via = _missing_selection_doc(exchange)
        if document is None or document.get("code") != MISSING_TOOL_SELECTION:
            got = f"refused with {document.get('code')}" if document else short(exchange.received, 120)
            problems.append((f"{query}: {got}", exchange))
    return problems


async def _no_tools_parameter(peer: Peer, rec: Recorder, base: str) -> None:
    """Spec 4.3: a read without the tools parameter MUST fail with MISSING_TOOL_SELECTION; other parameters or an
    empty query do not make it a selection."""
    queries = ("?tool=x", "?other=1", "?")
    rec.judge(
        "missing-selection/no-tools-parameter",
        await _not_missing_selection(peer, base, queries),
        ok=f"{len(queries)} reads without a tools parameter got MISSING_TOOL_SELECTION",
        expected="MISSING_TOOL_SELECTION for a read whose query has no tools parameter (spec 4.3)",
        prefix="reads without a tools parameter were not refused as MISSING_TOOL_SELECTION: ",
    )


async def _blank_selection(peer: Peer, rec: Recorder, base: str) -> None:
    """Selections that name no tool (I-3 rule 8, ours): each must be refused like a missing one."""
    queries = ("?tools=,,", "?tools=%20", "?tools=%20,%20", "?tools")
    rec.judge(
        "missing-selection/blank-selection",
        await _not_missing_selection(peer, base, queries),
        ok=f"{len(queries)} selections naming no tool got MISSING_TOOL_SELECTION",
        expected="MISSING_TOOL_SELECTION for blank names, commas only or a bare 'tools'",
        prefix="selections naming no tool were not refused as MISSING_TOOL_SELECTION: ",
    )
