"""The offline back-end: a deterministic, rule-based planner. It is not a model and does not pretend to be.

It gets exactly what a model gets through the loop (system prompt, function definitions from the minimal
list, plus `read_tool_descriptions` in the resources host, the conversation) and answers with function calls,
so it exercises the same code path with no network and no key. It fetches with `read_tool_descriptions` when
it has it, else with the function that takes `{"tools": [names]}` (the server's describe tool, in a tools-only
host); such a function is never a task's tool. Its rules:

* the task is split into steps at "then" / ";" ; each step's tool is the minimal entry whose name, title
  and one-line description share the most words with the step (a tool the user names in backticks wins);
* it reads the definitions of all the steps' tools at once, and any tool a parameter description points
  to (e.g. "Id of the project (list_projects shows the ids)") when it must look an id up;
* arguments come from the step text and the fetched schema: enum values named in the text, @handles for
  handle-shaped strings, quoted text for free-text fields (by the word before the quote), numbers, dates,
  URLs and paths; arithmetic for fields whose examples are expressions; ids by "task 5", by name among
  results already seen, by "it" for the latest object of that kind, or by calling the lookup tool;
* it recovers from errors the way section 8 asks: TOOL_DESCRIPTION_REQUIRED -> read the resource_uri's
  tools (with only the describe tool: make the error's `describe_tool_call`) and retry;
  MISSING_TOOL_SELECTION -> read the named tools; a name not found (in a read or a call) -> re-rank the
  `available_tools` the server listed. Other tool errors end the task with the error reported.

Against a catalog-mode server (the list holds `search_tools`, `browse_tools`, the describe tool and `call_tool`)
it finds each step's tool first: it searches with the step's words (quoted values and a backticked name left
out) and takes the first result whose name words all occur in the step; else it rephrases (the step's content
words only) and takes the best-ranked result seen; when every search abstains it browses the categories that
share the most words with the step. It describes the chosen tools, then calls them through `call_tool`. A tool
the user names is described first; if it does not exist, the step is searched. INVALID_ARGUMENTS is fixed field
by field from the problems it lists (type, enum, required, additional properties) and the call made again.

`missteps` script the errors a careless model makes, so each recovery path can be shown on purpose:
"call_before_fetch" (call the first tool before reading it), "read_without_tools" (read the bare URI) and
"numbers_as_strings" (send the first call's numbers as strings).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from mcp_pd_agent._loop import AssistantTurn, FunctionSpec, ModelRequest, ToolCall, ToolOutputs, UserMessage
from mcp_pd_agent._prompt import READ_FUNCTION

from . import _plan_text as lex
from . import _plan_values as vals

__all__ = ["MISSTEPS", "PlannerBackend"]

MISSTEPS: Final = ("call_before_fetch", "read_without_tools", "numbers_as_strings")
MAX_TURNS: Final = 14

# Catalog mode's meta-tools (spec/interpretations.md I-16): fixed names, so a client can rely on them.
_SEARCH: Final = "search_tools"
_BROWSE: Final = "browse_tools"
_CALL: Final = "call_tool"
_BROWSED_CATEGORIES: Final = 3


@dataclass
class _Object:
    """Something with an id seen in a result, for resolving `<kind>_id` arguments."""

    kinds: frozenset[str]
    id: int
    name: str
    seq: int


@dataclass
class _Step:
    text: str
    named: str | None = None  # a tool the user named in backticks
    done: bool = False
    tool: str | None = None  # chosen function name (catalog mode: the tool's name)
    result: Any = None
    # catalog mode: how far the search got, what it answered, and a call to repeat with fixed arguments
    stage: int = 0
    named_tried: bool = False
    last: list[tuple[str, str]] | None = None  # the latest search or browse answer: (name, one line)
    seen: list[tuple[str, str]] = field(default_factory=list)  # every search result so far, first seen first
    categories: list[str] = field(default_factory=list)  # categories to browse, best first
    retry: dict[str, Any] | None = None  # arguments fixed after INVALID_ARGUMENTS
    fixed: bool = False


@dataclass
class _Fill:
    arguments: dict[str, Any] = field(default_factory=dict)
    lookup: str | None = None  # a function to call (or read) first, to resolve an id
    lookup_for: str = ""  # the parameter the lookup resolves
    missing: list[str] = field(default_factory=list)


class PlannerBackend:
    """A deterministic planner behind the same `Backend` interface as the model back-ends."""

    def __init__(self, missteps: Iterable[str] = ()) -> None:
        self._missteps = list(missteps)
        unknown = set(self._missteps) - set(MISSTEPS)
        if unknown:
            raise ValueError(f"unknown missteps: {sorted(unknown)}; known: {MISSTEPS}")
        self._steps: list[_Step] = []
        self._started = False
        self._defs: dict[str, dict[str, Any]] = {}
        self._not_found: dict[str, list[str]] = {}
        self._objects: list[_Object] = []
        self._pending: dict[str, tuple[str, ToolCall, str]] = {}  # call id -> (purpose, call, target tool)
        self._required: list[str] = []
        self._lookups: set[tuple[int, str]] = set()
        self._read_attempts: dict[tuple[str, ...], int] = {}
        self._failure: str | None = None
        self._turns = 0
        self._ids = 0
        self._functions: dict[str, FunctionSpec] = {}
        self._mcp_names: dict[str, str] = {}
        self._reader = READ_FUNCTION
        self._describers: set[str] = set()  # functions that take {"tools": [names]}: fetchers, never task tools
        self._required_call: ToolCall | None = None  # a TOOL_DESCRIPTION_REQUIRED's describe_tool_call to make
        self._synthetic_reader = True
        self._catalog = False  # the server lists meta-tools: search, describe, then call through call_tool
        self._call_function = _CALL
        self._search_function = _SEARCH
        self._browse_function = _BROWSE

    @property
    def label(self) -> str:
        return "offline planner (deterministic rules, not a model)"

    @property
    def gave_up(self) -> str | None:
        """Why the planner stopped short of the task (no tool fits, a value it could not work out, ...), else None."""
        return self._failure

    async def aclose(self) -> None:
        return None

    # -- the turn ----------------------------------------------------------------------------------
    async def respond(self, request: ModelRequest) -> AssistantTurn:
        self._turns += 1
        if not self._started:
            self._start(request)
        elif request.messages and isinstance(request.messages[-1], ToolOutputs):
            self._ingest(request.messages[-1])
        if self._turns > MAX_TURNS:
            self._failure = self._failure or f"gave up after {MAX_TURNS} turns"
        return self._decide()

    def _start(self, request: ModelRequest) -> None:
        self._started = True
        synthetic = [f.name for f in request.functions if f.name.endswith(READ_FUNCTION)]
        meta = {f.name: f for f in request.functions if _meta_tool(f) is not None}
        self._catalog = {_meta_tool(f) for f in meta.values()} >= {_SEARCH, _CALL}
        for function in request.functions:
            if function.name in synthetic or vals.takes_tool_names(function.parameters):
                self._describers.add(function.name)
                continue
            if self._catalog and function.name in meta:
                kind = _meta_tool(function)
                if kind == _SEARCH:
                    self._search_function = function.name
                elif kind == _BROWSE:
                    self._browse_function = function.name
                else:
                    self._call_function = function.name
                continue
            self._functions[function.name] = function
            named = re.search(r"\(MCP tool name: ([^)]+)\)$", function.description)
            self._mcp_names[named.group(1) if named else function.name] = function.name
        # The synthetic reader when the host offers it, else the server's describe tool.
        self._reader = synthetic[0] if synthetic else min(self._describers, default=READ_FUNCTION)
        self._synthetic_reader = bool(synthetic)
        task = next((m.text for m in request.messages if isinstance(m, UserMessage)), "")
        for text in lex.split_steps(task):
            named = lex.BACKTICK.search(text)
            if named is None and lex.ABOUT_READING.search(text) and not self._names_a_tool(text):
                continue  # "read the tool descriptions ...": the reads it makes anyway cover that
            self._steps.append(_Step(text, named.group(1) if named else None))

    def _names_a_tool(self, text: str) -> bool:
        """Whether a step shares a name word with some tool (beyond reading descriptions)."""
        words = lex.content_words(lex.ABOUT_READING.sub(" ", lex.without_quotes(text))) - {"read", "fetch"}
        return any(set(lex.name_tokens(name)) & words for name in self._functions)

    def _call(self, name: str, arguments: dict[str, Any], purpose: str) -> ToolCall:
        self._ids += 1
        call = ToolCall(f"planner_{self._ids}", name, arguments)
        self._pending[call.id] = (purpose, call, name)
        return call

    def _tool_call(self, tool: str, arguments: dict[str, Any], purpose: str) -> ToolCall:
        """A call of a task's tool: direct, or in catalog mode through call_tool (the host lists nothing else)."""
        if not self._catalog or tool in self._functions:
            return self._call(tool, arguments, purpose)
        call = self._call(self._call_function, {"name": tool, "arguments": arguments}, purpose)
        self._pending[call.id] = (purpose, call, tool)
        return call

    def _read(self, names: Sequence[str], arguments: dict[str, Any] | None = None) -> AssistantTurn:
        key = tuple(names)
        self._read_attempts[key] = self._read_attempts.get(key, 0) + 1
        if self._read_attempts[key] > 2:
            self._failure = f"the server keeps refusing to describe {', '.join(names)}"
            return self._answer()
        call_arguments = dict(arguments) if arguments is not None else {"tools": list(names)}
        return AssistantTurn("", (self._call(self._reader, call_arguments, "read"),))

    # -- what came back ----------------------------------------------------------------------------
    def _ingest(self, outputs: ToolOutputs) -> None:
        for output in outputs.outputs:
            if output.call_id not in self._pending:
                continue
            purpose, call, target = self._pending.pop(output.call_id)
            data = vals.parse_json(output.text)
            if purpose == "read":
                self._ingest_read(data)
                continue
            if purpose.startswith("search:"):
                self._ingest_search(self._steps[int(purpose[7:])], data, output.is_error)
                continue
            code = vals.error_code(data)
            if output.is_error and code == "TOOL_DESCRIPTION_REQUIRED":
                error = data["error"] if isinstance(data, dict) else {}
                self._required = vals.tools_in_uri(str(error.get("resource_uri", ""))) or [self._mcp(target)]
                for name in self._required:
                    self._defs.pop(name, None)
                # Where the host reads the resource for the model, the resource_uri is the way; with only the
                # describe tool, the call the error spells out.
                how = None if self._synthetic_reader else error.get("describe_tool_call")
                if isinstance(how, dict) and how.get("name") == self._mcp(self._reader):
                    arguments = how.get("arguments")
                    self._required_call = ToolCall("", self._reader, arguments if isinstance(arguments, dict) else {})
                continue
            if output.is_error and code == "TOOL_NOT_FOUND" and purpose.startswith("step:"):
                # The server does not have that name: choose again among the tools it says it has.
                available = data["error"].get("available_tools") if isinstance(data, dict) else None
                self._not_found[self._mcp(target)] = [str(n) for n in available or []]
                continue
            if output.is_error and code == "INVALID_ARGUMENTS" and purpose.startswith("step:"):
                # call_tool checked the arguments against the schema and ran nothing: fix the fields it names.
                step = self._steps[int(purpose[5:])]
                inner = call.arguments.get("arguments") if call.name == self._call_function else call.arguments
                fixed = None if step.fixed else self._fix_arguments(target, dict(inner or {}), data)
                if fixed is None:
                    self._failure = (
                        f"{self._mcp(target)} refused its arguments: {vals.error_message(data, output.text)}"
                    )
                else:
                    step.retry, step.fixed = fixed, True
                continue
            if output.is_error:
                if purpose == "misstep":
                    continue
                self._failure = f"{self._mcp(target)} failed: {vals.error_message(data, output.text)}"
                continue
            self._remember(target, data)
            if purpose.startswith("step:"):
                step = self._steps[int(purpose[5:])]
                step.done, step.result = True, data

    def _ingest_read(self, data: Any) -> None:
        if not isinstance(data, dict) or vals.error_code(data):
            return  # e.g. MISSING_TOOL_SELECTION: the next decision names the tools
        for name, entry in data.items():
            if isinstance(entry, dict) and "inputSchema" in entry:
                self._defs[name] = entry
            elif isinstance(entry, dict):
                available = entry.get("available_tools")
                self._not_found[name] = [str(n) for n in available] if isinstance(available, list) else []

    def _ingest_search(self, step: _Step, data: Any, is_error: bool) -> None:
        """A search_tools or browse_tools answer for a step: what it offers to choose from."""
        step.last = []
        if is_error or not isinstance(data, dict):
            return
        if isinstance(data.get("categories"), list):
            words = lex.content_words(step.text)
            scored = []
            for position, category in enumerate(data["categories"]):
                about = f"{category.get('name', '')} {category.get('description', '')}"
                about_words = lex.content_words(about.replace("_", " ").replace("-", " "))
                scored.append((-len(about_words & words), position, str(category.get("name"))))
            step.categories = [name for _, _, name in sorted(scored)][:_BROWSED_CATEGORIES]
            return
        entries = data.get("results") if isinstance(data.get("results"), list) else data.get("tools")
        # A browsed category's name says what its tools are about, so it counts with their one-liners.
        about = f" ({data['category']})" if isinstance(data.get("category"), str) else ""
        for entry in entries if isinstance(entries, list) else []:
            if isinstance(entry, dict) and isinstance(entry.get("name"), str):
                step.last.append((entry["name"], str(entry.get("description") or "") + about))
        if data.get("results") is not None:
            known = {name for name, _ in step.seen}
            step.seen += [item for item in step.last if item[0] not in known]

    def _remember(self, function: str, data: Any) -> None:
        """Register every object with an id in a result, newest (and first-listed) last."""
        kinds = frozenset(lex.name_tokens(function))
        found: list[tuple[frozenset[str], dict[str, Any]]] = []

        def visit(value: Any, value_kinds: frozenset[str], depth: int) -> None:
            if depth > 3:
                return
            if isinstance(value, dict):
                for key, item in value.items():
                    if isinstance(item, list):
                        for element in reversed(item):
                            visit(element, value_kinds | {lex.stem_word(key.lower())}, depth + 1)
                for key, item in value.items():
                    if key.endswith("_id") and isinstance(item, int) and isinstance(value.get(key[:-3] + "_name"), str):
                        found.append((frozenset({key[:-3]}), {"id": item, "name": value[key[:-3] + "_name"]}))
                if isinstance(value.get("id"), int):
                    found.append((value_kinds, value))

        visit(data, kinds, 0)
        for object_kinds, value in found:
            name = value.get("name") or value.get("title") or ""
            self._objects.append(_Object(object_kinds, int(value["id"]), str(name), len(self._objects)))

    # -- the next move -----------------------------------------------------------------------------
    def _decide(self) -> AssistantTurn:
        if self._failure is not None:
            return self._answer()
        if self._missteps and self._steps and self._missteps[0] != "numbers_as_strings":
            if self._missteps[0] == "read_without_tools":
                self._missteps.pop(0)
                return AssistantTurn("", (self._call(self._reader, {"tools": []}, "read"),))
            if not self._catalog:  # in catalog mode the tool is found first (below), then called too early
                self._missteps.pop(0)
                tool = self._choose(self._steps[0])
                if tool is not None:
                    return AssistantTurn("", (self._call(tool, {}, "misstep"),))
        if self._required_call is not None:
            # Follow the error's describe_tool_call as given (its arguments, not our reconstruction of them).
            how, self._required_call, self._required = self._required_call, None, []
            return self._read(list(how.arguments.get("tools") or []), how.arguments)
        if self._required:
            names, self._required = self._required, []
            return self._read(names)
        remaining = [(i, s) for i, s in enumerate(self._steps) if not s.done]
        if not remaining:
            return self._answer()
        if self._catalog:
            searching = self._find(remaining)
            if searching is not None:
                return searching
        unread: list[str] = []
        for _, step in remaining:
            if not self._catalog:
                step.tool = self._choose(step)
            if step.tool is None:
                self._failure = f"no tool in the list fits {step.text!r}"
                return self._answer()
            name = self._mcp(step.tool)
            if name not in self._defs and name not in unread:
                unread.append(name)
        if unread:
            if self._catalog and self._missteps and self._missteps[0] == "call_before_fetch":
                self._missteps.pop(0)
                assert remaining[0][1].tool is not None
                return AssistantTurn("", (self._tool_call(remaining[0][1].tool, {}, "misstep"),))
            return self._read(unread)
        index, step = remaining[0]
        assert step.tool is not None
        if step.retry is not None:
            arguments, step.retry = step.retry, None
            return AssistantTurn("", (self._tool_call(step.tool, arguments, f"step:{index}"),))
        fill = self._fill(index, step, self._defs[self._mcp(step.tool)])
        if fill.lookup is not None:
            lookup = self._mcp(fill.lookup)
            if lookup not in self._defs:
                return self._read([lookup])
            lookup_fill = self._fill(index, step, self._defs[lookup], required_only=True)
            self._lookups.add((index, fill.lookup_for))
            return AssistantTurn("", (self._tool_call(fill.lookup, lookup_fill.arguments, "lookup"),))
        if fill.missing:
            self._failure = f"could not work out {', '.join(fill.missing)} for {step.tool} from {step.text!r}"
            return self._answer()
        arguments = fill.arguments
        if self._missteps and self._missteps[0] == "numbers_as_strings":
            self._missteps.pop(0)
            arguments = {
                k: str(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v
                for k, v in arguments.items()
            }
        return AssistantTurn("", (self._tool_call(step.tool, arguments, f"step:{index}"),))

    # -- catalog mode: finding each step's tool ------------------------------------------------------
    def _find(self, remaining: Sequence[tuple[int, _Step]]) -> AssistantTurn | None:
        """Searches (all steps' at once) until every remaining step has a tool; None when they all have one."""
        calls: list[ToolCall] = []
        for index, step in remaining:
            if step.tool is not None and step.tool not in self._not_found:
                continue
            step.tool = None
            if step.named is not None and not step.named_tried:
                # The user named it: describe it with the others (a name that does not exist is searched for).
                step.tool, step.named_tried = step.named, True
                continue
            step.tool = self._pick(step)
            if step.tool is not None:
                continue
            call = self._next_search(index, step)
            if call is None:
                self._failure = f"no tool found for {step.text!r} (searched, rephrased and browsed)"
                return self._answer()
            calls.append(call)
        return AssistantTurn("", tuple(calls)) if calls else None

    def _pick(self, step: _Step) -> str | None:
        """The tool for a step from what searching gave so far, or None to search on."""
        if step.last is None:
            return None
        full = [name for name, _ in step.last if self._full_match(name, step.text)]
        if full:
            return full[0]
        if step.stage == 1 and lex.rephrase(step.text) is not None:
            return None  # no result fits every word: say it differently before settling
        # After the searches (the best of every result seen) or in a browsed category: the planner's own ranking.
        pool = step.seen if step.stage <= 2 else step.last if step.stage > 3 else []
        specs = [FunctionSpec(name, about, {}) for name, about in pool if name not in self._not_found]
        ranked = lex.rank_tools(step.text, specs)
        return ranked[0][1] if ranked else None

    def _full_match(self, name: str, text: str) -> bool:
        tokens = [t for t in lex.name_tokens(name) if t not in lex.STOPWORDS]
        return (
            name not in self._not_found and bool(tokens) and set(tokens) <= lex.content_words(lex.without_quotes(text))
        )

    def _next_search(self, index: int, step: _Step) -> ToolCall | None:
        """Search in the step's words; then in its content words; then browse the closest categories."""
        step.stage += 1
        if step.stage == 1:
            return self._call(self._search_function, {"query": lex.search_query(step.text)}, f"search:{index}")
        rephrased = lex.rephrase(step.text)
        if step.stage == 2 and rephrased is not None:
            return self._call(self._search_function, {"query": rephrased}, f"search:{index}")
        if step.stage <= 3:
            step.stage = 3
            return self._call(self._browse_function, {}, f"search:{index}")
        browsed = step.stage - 4
        if browsed < len(step.categories):
            return self._call(self._browse_function, {"category": step.categories[browsed]}, f"search:{index}")
        return None

    def _fix_arguments(self, tool: str, arguments: dict[str, Any], data: Any) -> dict[str, Any] | None:
        """The arguments with each INVALID_ARGUMENTS problem fixed, or None when one cannot be."""
        problems = data.get("error", {}).get("problems") if isinstance(data, dict) else None
        if not isinstance(problems, list) or not problems:
            return None
        definition = self._defs.get(self._mcp(tool)) or {}
        properties = (definition.get("inputSchema") or {}).get("properties") or {}
        examples = [e.get("input") for e in definition.get("examples") or [] if isinstance(e, dict)]
        for problem in problems:
            field_name, rule = str(problem.get("field", "")), str(problem.get("rule", ""))
            schema = problem.get("schema") if isinstance(problem.get("schema"), dict) else {}
            names = re.findall(r"[\"']([^\"']+)[\"']", str(problem.get("message", "")))
            if rule == "type" and field_name in arguments:
                value = vals.coerced(arguments[field_name], schema.get("type"))
                if value is None:
                    return None
                arguments[field_name] = value
            elif rule == "enum" and field_name in arguments:
                options = [
                    o
                    for o in schema.get("enum") or []
                    if lex.normalized(str(o)) == lex.normalized(str(arguments[field_name]))
                ]
                if not options:
                    return None
                arguments[field_name] = options[0]
            elif rule == "required" and names:
                spec = properties.get(names[0]) or {}
                values = [e[names[0]] for e in examples if isinstance(e, dict) and names[0] in e]
                if "default" not in spec and not values:
                    return None
                arguments[names[0]] = spec.get("default", values[0] if values else None)
            elif rule == "additionalProperties":
                for name in names:
                    arguments.pop(name, None)
            else:
                return None
        return arguments

    def _choose(self, step: _Step) -> str | None:
        """The function for a step: a named tool (unless the server said it does not exist), else the best rank."""
        candidates = [f for f in self._functions.values() if self._mcp(f.name) not in self._not_found]
        if step.named is not None:
            if step.named not in self._not_found:
                return self._mcp_names.get(step.named, step.named)
            allowed = {self._mcp_names.get(n, n) for n in self._not_found[step.named]}
            candidates = [f for f in candidates if f.name in allowed] or candidates
        ranked = lex.rank_tools(step.text, candidates)
        return ranked[0][1] if ranked else None

    def _mcp(self, function: str) -> str:
        for mcp_name, fname in self._mcp_names.items():
            if fname == function:
                return mcp_name
        return function

    def _answer(self) -> AssistantTurn:
        lines = []
        for step in self._steps:
            if step.done:
                lines.append(f"{step.tool}: {vals.summarize(step.result)}")
        if self._failure is not None:
            lines.append(f"Stopped: {self._failure}.")
        prefix = "[offline planner, not a model] "
        return AssistantTurn(prefix + (" | ".join(lines) if lines else "nothing was done."))

    # -- arguments ---------------------------------------------------------------------------------
    def _fill(self, index: int, step: _Step, definition: dict[str, Any], *, required_only: bool = False) -> _Fill:
        schema = definition.get("inputSchema") or {}
        properties: dict[str, Any] = schema.get("properties") or {}
        required = set(schema.get("required") or [])
        examples = [e.get("input") for e in definition.get("examples") or [] if isinstance(e, dict)]
        text = step.text
        plain = lex.without_quotes(text)
        words = lex.content_words(text)
        fill = _Fill()
        quotes = lex.quoted_spans(text)
        used_quotes: set[int] = set()
        handles = [m.group(1) for m in lex.HANDLE.finditer(plain)]
        dates = lex.DATE.findall(plain)
        numeric_text = lex.HANDLE.sub(" ", lex.DATE.sub(" ", lex.URL.sub(" ", plain)))
        numbers = [m.group(0) for m in lex.NUMBER.finditer(numeric_text)]
        used_tokens: set[int] = set()
        tokens = [t.strip(".,;:!?()[]") for t in plain.split()]
        property_names = {lex.normalized(p) for p in properties}

        for prop, spec in properties.items():
            if required_only and prop not in required:
                continue
            types, enum, pattern = vals.schema_shape(spec)
            prop_words = set(lex.name_tokens(prop))
            is_required = prop in required
            description = str(spec.get("description", ""))
            # -- ids of things, e.g. project_id, task_id
            if prop.endswith("_id") and types & {"integer", "number"}:
                kind = lex.stem_word(prop[:-3].lower())
                value = self._resolve_id(kind, text, plain)
                if value is not None:
                    fill.arguments[prop] = value
                elif is_required or kind in words:
                    lookup = self._lookup_function(description)
                    if lookup is not None and (index, prop) not in self._lookups:
                        fill.lookup, fill.lookup_for = lookup, prop
                        return fill
                    if is_required:
                        fill.missing.append(prop)
                continue
            if enum:
                value = vals.enum_choice(prop, enum, tokens, used_tokens, property_names)
                if value is not None:
                    fill.arguments[prop] = value
                elif is_required:
                    fill.missing.append(prop)
                continue
            if "boolean" in types:
                if prop_words and prop_words <= words:
                    fill.arguments[prop] = True
                continue
            if types & {"integer", "number"}:
                cue = any(w in words for w in prop_words)
                if numbers and (is_required or cue):
                    number = float(numbers.pop(0).replace(",", ""))
                    whole = number.is_integer() and ("integer" in types or "number" in types)
                    fill.arguments[prop] = int(number) if whole else number
                elif is_required:
                    fill.missing.append(prop)
                continue
            if "string" in types:
                text_value = self._string_value(
                    prop, spec, pattern, text, plain, quotes, used_quotes, handles, dates, examples, is_required
                )
                if text_value is not None:
                    fill.arguments[prop] = text_value
                elif is_required:
                    fill.missing.append(prop)
                continue
            if is_required:
                fill.missing.append(prop)
        for prop in list(fill.missing):
            # nothing in the task for a required field: the schema's default, else the value the examples use
            spec = properties.get(prop) or {}
            values = [e[prop] for e in examples if isinstance(e, dict) and prop in e]
            if "default" in spec:
                fill.arguments[prop] = spec["default"]
            elif values and not prop.endswith("_id"):
                fill.arguments[prop] = values[0]
            else:
                continue
            fill.missing.remove(prop)
        return fill

    def _string_value(
        self,
        prop: str,
        spec: dict[str, Any],
        pattern: str | None,
        text: str,
        plain: str,
        quotes: list[tuple[str, int]],
        used_quotes: set[int],
        handles: list[str],
        dates: list[str],
        examples: list[Any],
        is_required: bool,
    ) -> str | None:
        description = str(spec.get("description", "")).lower()
        lowered = prop.lower()
        if vals.string_format(spec) == "date" or "yyyy-mm-dd" in description:
            return dates.pop(0) if dates else None
        if pattern is not None or "handle" in description:
            if handles and (pattern is None or re.search(pattern, handles[0])):
                return handles.pop(0)
            if pattern is not None:
                return None
        if lowered in ("url", "uri") or vals.string_format(spec) == "uri" or lowered.endswith("url"):
            match = lex.URL.search(text)
            return match.group(0) if match else None
        if "path" in lowered or lowered in ("file", "filename"):
            match = lex.PATH.search(plain)
            if match:
                return match.group(1)
        # quoted text, matched by the word before the quote
        for position, (value, start) in enumerate(quotes):
            if position in used_quotes:
                continue
            before = re.findall(r"[A-Za-z]+", text[:start].lower())
            before = [w for w in before if w not in ("the", "a", "an")][-1:]
            cue = before[0] if before else ""
            targets = (*lex.CUES.get(cue, ()), cue, lex.stem_word(cue))
            if lowered in targets or any(t in lex.name_tokens(prop) for t in targets if t):
                used_quotes.add(position)
                return value
        if lex.looks_like_expression(prop, description, examples):
            expression = lex.math_expression(plain)
            if expression:
                return expression
        if is_required:
            for position, (value, _start) in enumerate(quotes):
                if position not in used_quotes:
                    used_quotes.add(position)
                    return value
        return None

    def _resolve_id(self, kind: str, text: str, plain: str) -> int | None:
        explicit = re.search(rf"\b{re.escape(kind)}\s*(?:id\s*)?#?(\d+)\b", plain, re.IGNORECASE)
        if explicit:
            return int(explicit.group(1))
        candidates = [o for o in self._objects if kind in o.kinds]
        words = lex.content_words(text)
        best: tuple[float, int, _Object] | None = None
        for candidate in candidates:
            name_words = lex.content_words(candidate.name)
            if not name_words:
                continue
            ratio = len(name_words & words) / len(name_words)
            if ratio >= 0.5 and (best is None or (ratio, candidate.seq) > best[:2]):
                best = (ratio, candidate.seq, candidate)
        if best is not None:
            return best[2].id
        if lex.PRONOUN.search(plain) and candidates:
            return max(candidates, key=lambda o: o.seq).id
        return None

    def _lookup_function(self, description: str) -> str | None:
        """A listed function that a parameter's description points to, e.g. '(list_projects shows the ids)'.

        In catalog mode the tool is not listed: any tool-like name the description mentions (described before
        it is called, like every tool), unless the server said it does not exist.
        """
        mentioned = [(description.find(name), fname) for name, fname in self._mcp_names.items() if name in description]
        if self._catalog:
            mentioned += [(m.start(), m.group(0)) for m in lex.IDENTIFIER.finditer(description)]
        mentioned = [m for m in mentioned if m[0] >= 0 and self._mcp(m[1]) not in self._not_found]
        return min(mentioned)[1] if mentioned else None


# -- helpers -----------------------------------------------------------------------------------------


def _meta_tool(function: FunctionSpec) -> str | None:
    """Which catalog-mode meta-tool a function is, by its fixed name and schema: search, browse, call, or None."""
    properties = set((function.parameters.get("properties") or {}).keys())
    if function.name == _SEARCH and "query" in properties:
        return _SEARCH
    if function.name == _BROWSE and "category" in properties:
        return _BROWSE
    if function.name == _CALL and {"name", "arguments"} <= properties:
        return _CALL
    return None
