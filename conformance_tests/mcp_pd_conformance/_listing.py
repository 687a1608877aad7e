"""Scenario tools-list: the minimal listing of spec 3.1 (what a tools/list entry may carry, judged by meaning)."""

from __future__ import annotations

import re
from typing import Any

from ._checks import DESCRIPTION_LIMIT, Discovery
from ._documents import schema_detail
from ._probe import Exchange, Peer, short
from ._record import Recorder
from ._text import call_example, only_the_name, parameter_docs, strings_in, usage_instruction

__all__ = ["extension_tools", "tools_list"]

_INSTRUCTION_MARKERS = re.compile(
    r"\bexamples?\s*:|\busage\s*:|\bparameters?\s*:|\barguments?\s*:|\breturns?\s*:|```", re.IGNORECASE
)
_TOOL_LEVEL_DETAIL = ("examples", "inputExamples", "input_examples", "usage_guidance", "error_guidance")


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
            continue
        # The title is listed too (a host may show it instead of the description): no instructions there either.
        annotations = tool.get("annotations")
        for where, title in (
            ("title", tool.get("title")),
            ("annotations.title", annotations.get("title") if isinstance(annotations, dict) else None),
        ):
            said = usage_instruction(str(title or "").replace(": ", ". "))  # "Name: what to do" reads as two
            if said:
                found.append(f"{tool['name']} ({where}): {short(said, 100)!r}")
                break
    if found:
        rec.fail(
            "tools-list/no-usage-instructions",
            f"{len(found)} listed descriptions or titles tell the caller how to call the tool: {'; '.join(found[:4])}",
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


async def relist(peer: Peer, rec: Recorder, disc: Discovery) -> None:
    """tools-list/relist-minimal (3.1): tools/list again, after the run's reads and any notifications/tools/list_changed
    the session heard: every entry still minimal. A server that lists a tool in full once its description was read
    (or once it announced a change) gives a host the full schemas 3.1 keeps out of the listing."""
    tools, last = await peer.paginate("tools")
    heard = peer.list_changed
    after = "after the run's reads" + (f" and {heard} notifications/tools/list_changed" if heard else "")
    if last.error is not None:
        rec.fail(
            "tools-list/relist-minimal", f"tools/list failed {after}", expected="the minimal listing", exchange=last
        )
        return
    problems = []
    first = {t["name"]: t for t in disc.tools}
    for tool in tools:
        name = tool.get("name")
        if not isinstance(name, str) or name in disc.meta or first.get(name) == tool:
            continue  # an entry as first listed was judged with the first listing
        text, why = str(tool.get("description") or ""), schema_detail(tool.get("inputSchema"))
        detail = [f"inputSchema: {why}"] if why is not None else []
        detail += [k for k in _TOOL_LEVEL_DETAIL if tool.get(k)]
        docs = parameter_docs(text) or call_example(text, name) or usage_instruction(text)
        detail += [f"description: {short(docs, 60)!r}"] if docs else []
        if detail:
            problems.append(f"{name} ({'; '.join(detail[:2])})")
    if problems:
        rec.fail(
            "tools-list/relist-minimal",
            f"{after}, tools/list lists {len(problems)} tools with stage-2 detail: {'; '.join(problems[:4])}",
            expected="every re-listing as minimal as the first: full schemas only through the resource",
            exchange=last,
        )
    else:
        changed = sum(1 for t in tools if first.get(str(t.get("name"))) != t)
        rec.ok(
            "tools-list/relist-minimal",
            f"{after}, tools/list lists {len(tools)} tools"
            + (f" ({changed} changed, each minimal)" if changed else ", as first listed"),
        )
