"""The one agent loop every back-end runs through.

The model is given the MCP tools as function definitions built from the *minimal* list (every entry the server
lists, its describe tool included) and the system prompt of `_prompt.py`. In the resources host it also gets
one synthetic function, `read_tool_descriptions(tools)`, that reads the `tool_descriptions` resource (a
function-calling API cannot read resources by itself); in the tools-only host it gets nothing else, and fetches
through the server's describe tool. A call of the describe tool is recorded as a read in both hosts.
A catalog-mode server lists meta-tools instead of its tools; the model then runs as a tools-only host that
finds tools with `search_tools` / `browse_tools` (recorded as searches), describes them, and calls them through
`call_tool` (recorded as a call of the tool it names).
Back-ends only translate `ModelRequest` -> their SDK's messages and the SDK's answer -> `AssistantTurn`; the
loop executes the calls against the server, records every step, and feeds the results back until the model
answers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, Literal, Protocol, TypeAlias

from ._connection import BROWSE_TOOL, CALL_TOOL, SEARCH_TOOL, ProgressiveServer, Reply, ServerMode
from ._prompt import HOSTS, READ_FUNCTION, Host, system_prompt

__all__ = [
    "AssistantTurn",
    "Backend",
    "BackendFailure",
    "ContextRecord",
    "FunctionSpec",
    "Message",
    "ModelRequest",
    "Run",
    "Step",
    "ToolCall",
    "ToolOutput",
    "ToolOutputs",
    "UserMessage",
    "build_functions",
    "run_agent",
]

# Function names both APIs accept (Anthropic: ^[a-zA-Z0-9_-]{1,64}$; OpenAI: ^[a-zA-Z0-9_-]{1,64}$).
_FUNCTION_NAME: Final = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
DEFAULT_MAX_TURNS: Final = 16


class BackendFailure(Exception):
    """The model back-end raised instead of answering; `answered`: whether it had answered in this run before."""

    def __init__(self, label: str, cause: BaseException, *, answered: bool) -> None:
        self.label, self.cause, self.answered = label, cause, answered
        super().__init__(f"{type(cause).__name__}: {cause}")


@dataclass(frozen=True)
class FunctionSpec:
    """A function the model may call: name, description, JSON-schema parameters."""

    name: str
    description: str
    parameters: dict[str, Any]

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "parameters": self.parameters}


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class AssistantTurn:
    """What the model said: text and/or function calls (in order)."""

    text: str = ""
    calls: tuple[ToolCall, ...] = ()


@dataclass(frozen=True)
class UserMessage:
    text: str


@dataclass(frozen=True)
class ToolOutput:
    call_id: str
    name: str
    text: str
    is_error: bool


@dataclass(frozen=True)
class ToolOutputs:
    """The results of one assistant turn's calls, in the order of the calls."""

    outputs: tuple[ToolOutput, ...]


Message: TypeAlias = UserMessage | AssistantTurn | ToolOutputs


@dataclass(frozen=True)
class ModelRequest:
    """Everything a back-end sends to its model on one turn."""

    system: str
    functions: tuple[FunctionSpec, ...]
    messages: tuple[Message, ...]


class Backend(Protocol):
    """A model (or the offline planner) behind one SDK."""

    @property
    def label(self) -> str: ...

    async def respond(self, request: ModelRequest) -> AssistantTurn: ...

    async def aclose(self) -> None: ...


@dataclass(frozen=True)
class Step:
    """One thing the agent did and what came back."""

    kind: Literal["read", "search", "call", "answer"]
    name: str
    arguments: dict[str, Any]
    reply: Reply | None = None
    tools: tuple[str, ...] = ()  # the names a read asked for
    via: str = ""  # the meta-tool a call went through (catalog mode's call_tool), else empty

    @property
    def ok(self) -> bool:
        return self.reply is None or not self.reply.is_error

    @property
    def error_code(self) -> str | None:
        return self.reply.error_code if self.reply is not None else None


@dataclass
class ContextRecord:
    """The description-related context the model carried in this run (what the token ledger counts)."""

    system_prompt: str = ""
    minimal_list: list[dict[str, Any]] = field(default_factory=list)
    read_function: dict[str, Any] = field(default_factory=dict)  # empty in the tools-only host
    fetched: list[str] = field(default_factory=list)  # texts of reads that returned definitions
    errors: list[str] = field(default_factory=list)  # error documents the model saw (spec codes, not-found)
    searched: list[str] = field(default_factory=list)  # catalog mode: search_tools / browse_tools answers


@dataclass
class Run:
    """A finished agent run: its steps, answer, and the context it carried."""

    prompt: str
    backend: str
    host: Host = "resources"
    steps: list[Step] = field(default_factory=list)
    answer: str | None = None
    stopped: Literal["answer", "max_turns"] = "answer"
    context: ContextRecord = field(default_factory=ContextRecord)
    mode: ServerMode = "progressive"

    @property
    def setup(self) -> str:
        """What the ledger compares this run as: its host ("resources", "tools-only"), or "catalog" for a
        catalog-mode server (always run as a tools-only host)."""
        return "catalog" if self.mode == "catalog" else self.host

    def calls(self, tool: str | None = None, *, ok: bool | None = None) -> list[Step]:
        return [
            s
            for s in self.steps
            if s.kind == "call" and (tool is None or s.name == tool) and (ok is None or s.ok == ok)
        ]

    def reads(self) -> list[Step]:
        return [s for s in self.steps if s.kind == "read"]

    def searches(self) -> list[Step]:
        return [s for s in self.steps if s.kind == "search"]

    def error_codes(self) -> list[str]:
        return [s.error_code for s in self.steps if s.error_code]

    def result(self, tool: str) -> Any:
        """The data of the last successful call of `tool`, or None."""
        calls = self.calls(tool, ok=True)
        return calls[-1].reply.data if calls and calls[-1].reply is not None else None

    def fetched_tools(self) -> list[str]:
        names: list[str] = []
        for step in self.reads():
            if step.reply is not None and isinstance(step.reply.data, dict):
                names += [n for n, e in step.reply.data.items() if isinstance(e, dict) and "inputSchema" in e]
        return list(dict.fromkeys(names))


def _function_name(name: str, taken: set[str]) -> str:
    """An API-safe function name for an MCP tool name (most are already safe and kept as they are)."""
    candidate = name if _FUNCTION_NAME.fullmatch(name) else re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64] or "tool"
    base, counter = candidate, 2
    while candidate in taken:
        suffix = f"_{counter}"
        candidate, counter = base[: 64 - len(suffix)] + suffix, counter + 1
    taken.add(candidate)
    return candidate


def build_functions(
    server: ProgressiveServer, host: Host = "resources"
) -> tuple[list[FunctionSpec], dict[str, str], str | None]:
    """Function definitions for the model: one per minimal entry, plus the synthetic reader in the resources host.

    Returns (functions, function name -> MCP tool name, the reader's function name or None in the tools-only host).
    """
    if host not in HOSTS:
        raise ValueError(f"unknown host {host!r}: choose one of {', '.join(HOSTS)}")
    taken: set[str] = set()
    mcp_names = set(server.tool_names)
    reader = None
    if host == "resources":
        reader = READ_FUNCTION if READ_FUNCTION not in mcp_names else f"mcp_{READ_FUNCTION}"
        taken.add(reader)
    functions: list[FunctionSpec] = []
    mapping: dict[str, str] = {}
    for tool in server.tools:
        name = str(tool["name"])
        fname = _function_name(name, taken)
        mapping[fname] = name
        description = str(tool.get("description") or tool.get("title") or "")
        if fname != name:
            description += f" (MCP tool name: {name})"
        schema = tool.get("inputSchema")
        parameters = schema if isinstance(schema, dict) else {"type": "object", "additionalProperties": True}
        functions.append(FunctionSpec(fname, description, parameters))
    if reader is None:
        return functions, mapping, None
    about = server.resource_description or (
        "Full definitions (parameters, examples, error guidance) of the tools in the tool list."
    )
    reader_spec = FunctionSpec(
        reader,
        f"Read the {server.resource_uri} resource for the named tools: {about} "
        f"(This function reads {server.resource_uri}?tools=NAME1,NAME2 for you.)",
        {
            "type": "object",
            "properties": {
                "tools": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Exact tool names from the tool list, only those you are about to call.",
                }
            },
            "required": ["tools"],
        },
    )
    functions.append(reader_spec)
    return functions, mapping, reader


def _requested_names(arguments: dict[str, Any], mapping: dict[str, str]) -> list[str]:
    """The `tools` argument as a list of MCP names (accepts a comma-separated string, as models write it)."""
    raw = arguments.get("tools")
    if raw is None:
        return []
    items: list[Any] = raw.split(",") if isinstance(raw, str) else list(raw) if isinstance(raw, list) else [raw]
    names = [str(item).strip() for item in items if str(item).strip()]
    return [mapping.get(name, name) for name in names]


async def run_agent(
    server: ProgressiveServer,
    backend: Backend,
    prompt: str,
    *,
    host: Host = "resources",
    max_turns: int = DEFAULT_MAX_TURNS,
    observer: Callable[[Step], None] | None = None,
) -> Run:
    """Run one task to its answer (or `max_turns` model turns) and return the record.

    `host` is what the model may do: "resources" (read the descriptions resource through the synthetic reader,
    or call the server's describe tool) or "tools-only" (call the server's tools, nothing else; the server must
    have a describe tool, or the model could never fetch a definition). A catalog-mode server is always run as a
    tools-only host: its meta-tools are the whole way in, and a reader would only repeat `describe_tools`.
    """
    if host not in HOSTS:
        raise ValueError(f"unknown host {host!r}: choose one of {', '.join(HOSTS)}")
    catalog = server.mode == "catalog"
    if catalog:
        host = "tools-only"
    functions, mapping, reader = build_functions(server, host)
    describe = next((f for f, n in mapping.items() if n == server.describe_tool), None)
    if reader is None and describe is None:
        raise ValueError(
            f"the tools-only host needs a describe tool, and {server.server_name or 'this server'} lists none: "
            "its model could never fetch a definition (run it with --host resources)"
        )
    fetcher = reader or describe
    assert fetcher is not None
    system = system_prompt(server.instructions, server.resource_uri, fetcher, host, mode=server.mode)
    run = Run(prompt, backend.label, host, mode=server.mode)
    run.context = ContextRecord(
        system_prompt=system,
        minimal_list=list(server.tools),
        read_function=functions[-1].as_json() if reader is not None else {},
    )
    messages: list[Message] = [UserMessage(prompt)]

    def record(step: Step) -> None:
        run.steps.append(step)
        if observer is not None:
            observer(step)

    for _ in range(max_turns):
        try:
            turn = await backend.respond(ModelRequest(system, tuple(functions), tuple(messages)))
        except Exception as exc:
            raise BackendFailure(
                backend.label, exc, answered=any(isinstance(m, AssistantTurn) for m in messages)
            ) from exc
        messages.append(turn)
        if not turn.calls:
            run.answer = turn.text
            record(Step("answer", "", {}, Reply(turn.text)))
            return run
        outputs: list[ToolOutput] = []
        for call in turn.calls:
            if call.name in (reader, describe):
                names = _requested_names(call.arguments, mapping)
                if call.name == reader:
                    reply = await server.read_descriptions(names)
                else:
                    # API-safe function names mapped back to MCP names; an empty selection is sent as the model
                    # wrote it, so the server answers it (MISSING_TOOL_SELECTION).
                    reply = await server.describe({**call.arguments, "tools": names} if names else call.arguments)
                record(Step("read", mapping.get(call.name, call.name), call.arguments, reply, tuple(names)))
                if reply.is_error:
                    run.context.errors.append(reply.text)
                else:
                    run.context.fetched.append(reply.text)
            elif catalog and mapping.get(call.name) in (SEARCH_TOOL, BROWSE_TOOL):
                tool = mapping[call.name]
                reply = await server.call_tool(tool, call.arguments)
                record(Step("search", tool, call.arguments, reply))
                (run.context.errors if reply.is_error else run.context.searched).append(reply.text)
            else:
                tool = mapping.get(call.name, call.name)
                arguments, via = call.arguments, ""
                reply = await server.call_tool(tool, call.arguments)
                if catalog and tool == CALL_TOOL:
                    # Recorded as a call of the tool it names, so checks and the ledger see the real tool.
                    inner = call.arguments.get("arguments")
                    tool, via = str(call.arguments.get("name", "")), CALL_TOOL
                    arguments = inner if isinstance(inner, dict) else {}
                record(Step("call", tool, arguments, reply, via=via))
                if reply.is_error and reply.error_code not in (None, "TOOL_ERROR"):
                    run.context.errors.append(reply.text)
            outputs.append(ToolOutput(call.id, call.name, reply.text, reply.is_error))
        messages.append(ToolOutputs(tuple(outputs)))
    run.stopped = "max_turns"
    return run


def compact(value: Any, limit: int = 90) -> str:
    """One-line JSON for step logs."""
    text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe_step(step: Step) -> str:
    """A concise, human-readable line for a step."""
    if step.kind == "answer":
        return f"answer  {step.reply.text if step.reply else ''}".strip()
    status = "ok" if step.ok else f"error {step.error_code}"
    if step.kind == "read":
        names = ", ".join(step.tools) or "(no tools named)"
        if step.reply is not None and step.reply.not_found and step.ok:
            status = f"ok, not found: {', '.join(step.reply.not_found)}"
        via = "" if step.name.endswith(READ_FUNCTION) else f"  (via {step.name})"
        return f"read    {names}{via}  -> {status}"
    if step.kind == "search":
        data = step.reply.data if step.reply is not None else None
        if step.ok and isinstance(data, dict):
            found = [
                str(r.get("name")) for r in data.get("results") or data.get("tools") or data.get("categories") or []
            ]
            status = "abstained" if data.get("abstained") else "ok: " + (", ".join(found[:6]) or "nothing")
        return f"search  {step.name} {compact(step.arguments)}  -> {status}"
    via = f"  (via {step.via})" if step.via else ""
    return f"call    {step.name} {compact(step.arguments)}{via}  -> {status}"
