"""The client side in an agent builder's own loop: the tools a model may call, in each host SDK's form, and
describe-then-call (docs/agents.md shows it with the Anthropic and OpenAI SDKs).

`Toolset` holds one session's minimal list and grows with each full definition described in that session: a
described tool is offered with its whole schema (strict, where the API enforces schemas), the others with their
minimal entry, and `run` carries out what the model asked (a describe, or a call; a call of a tool not yet
described in this session is described first, which is what an API's own deferred loading implies: the model saw
the definition when the API loaded it). `strict_schema` / `loose_arguments` convert a definition's schema to the
strict form (every property required, optional ones nullable, no other properties) and the model's arguments back.
Knows the wire only through `ProgressiveServer`; imports no SDK (the functions return the plain dicts the SDKs take).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from ._connection import ProgressiveServer, Reply

__all__ = [
    "ANTHROPIC_TOOL_SEARCH",
    "Toolset",
    "anthropic_tool",
    "loose_arguments",
    "openai_function",
    "strict_schema",
]

ANTHROPIC_TOOL_SEARCH: Final[dict[str, str]] = {
    "type": "tool_search_tool_bm25_20251119",
    "name": "tool_search_tool_bm25",
}
"""Anthropic's server-side tool search (BM25): beside tools marked `defer_loading`, the model finds and loads them."""

# Keywords the strict modes reject or ignore: dropped from a strict schema (the server still validates them).
_NOT_STRICT: Final = frozenset({"default", "examples", "$schema", "$id", "$comment"})


def strict_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """`schema` in the strict form OpenAI's `strict: true` (and Anthropic's) require: every object closed
    (`additionalProperties: false`) with every property required, an optional one made nullable (`null` then means
    "left out": `loose_arguments` drops it again). An open object (a minimal entry's `{"type": "object"}`) cannot be
    strict: ValueError."""
    strict: dict[str, Any] = _strict(copy.deepcopy(dict(schema)))
    return strict


def _strict(node: Any) -> Any:
    if isinstance(node, list):
        return [_strict(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {k: _strict(v) for k, v in node.items() if k not in _NOT_STRICT}
    if node.get("type") == "object" or "properties" in node:
        properties: dict[str, Any] = node.get("properties") or {}
        if not properties and node.get("additionalProperties") not in (None, False):
            raise ValueError("an open object (no properties) cannot be strict: describe the tool first")
        required = set(node.get("required") or ())
        node["properties"] = {name: sub if name in required else _nullable(sub) for name, sub in properties.items()}
        node["required"] = list(properties)
        node["additionalProperties"] = False
    return node


def _nullable(schema: Any) -> Any:
    if not isinstance(schema, dict):
        return schema
    kind = schema.get("type")
    if isinstance(kind, str) and "enum" not in schema:
        return {**schema, "type": [kind, "null"]} if kind != "null" else schema
    return {"anyOf": [schema, {"type": "null"}]}


def loose_arguments(arguments: Mapping[str, Any], schema: Mapping[str, Any]) -> dict[str, Any]:
    """The model's arguments under a strict schema, back in the tool's own form: a `null` the strict form allowed
    for an optional property means it was left out, so it is dropped (nested objects too)."""
    required = set(schema.get("required") or ())
    properties: Mapping[str, Any] = schema.get("properties") or {}
    loose: dict[str, Any] = {}
    for name, value in arguments.items():
        if value is None and name not in required:
            continue
        sub = properties.get(name)
        if isinstance(value, dict) and isinstance(sub, Mapping) and "properties" in sub:
            value = loose_arguments(value, sub)
        loose[name] = value
    return loose


def _examples(definition: Mapping[str, Any]) -> list[dict[str, Any]]:
    found = [e.get("input", e.get("arguments")) for e in definition.get("examples") or () if isinstance(e, Mapping)]
    return [dict(example) for example in found if isinstance(example, Mapping)]


def openai_function(entry: Mapping[str, Any], *, strict: bool = True) -> dict[str, Any]:
    """A Chat Completions `tools` item for a tool: `entry` is its full definition (strict by default) or its minimal
    entry. A schema that cannot be strict (an open object: a minimal entry, or a free-form parameter) is offered as
    it is, without `strict`."""
    schema = entry.get("inputSchema") or {"type": "object"}
    function: dict[str, Any] = {"name": entry["name"], "description": entry.get("description", "")}
    function["parameters"] = _strict_or_none(schema) if strict else None
    if function["parameters"] is None:
        function["parameters"] = dict(schema)
    else:
        function["strict"] = True
    return {"type": "function", "function": function}


def _strict_or_none(schema: Mapping[str, Any]) -> dict[str, Any] | None:
    try:
        return strict_schema(schema)
    except ValueError:
        return None


def anthropic_tool(entry: Mapping[str, Any], *, strict: bool = False, defer_loading: bool = False) -> dict[str, Any]:
    """A Messages API `tools` item for a tool: its full definition (with its examples as `input_examples`) or its
    minimal entry (strict only where the schema can be). `defer_loading`: kept out of the model's context until
    its tool search loads it."""
    schema = entry.get("inputSchema") or {"type": "object"}
    tool: dict[str, Any] = {"name": entry["name"], "description": entry.get("description", "")}
    closed = _strict_or_none(schema) if strict else None
    tool["input_schema"] = closed if closed is not None else dict(schema)
    if closed is not None:
        tool["strict"] = True
    if defer_loading:
        tool["defer_loading"] = True
    if examples := _examples(entry):
        tool["input_examples"] = examples
    return tool


@dataclass
class Toolset:
    """One session's tools for a model: the minimal list, and the full definitions described in this session.

    `definitions` may also be given up front (read in a session of their own, or `mcp-pd export` files) for an
    API's deferred loading: the model then sees a definition when the API loads it, and `run` describes the tool in
    this session before calling it, so the server's gate holds what the model has seen."""

    server: ProgressiveServer
    definitions: dict[str, dict[str, Any]] = field(default_factory=dict)
    described: set[str] = field(default_factory=set)  # described in this session (the server granted them)

    @property
    def entries(self) -> list[dict[str, Any]]:
        """What the model is offered now: each described tool's full definition, the rest as listed (minimal)."""
        return [
            self.definitions.get(str(t["name"]), t) if t["name"] in self.described else t for t in self.server.tools
        ]

    def openai_tools(self, *, strict: bool = True) -> list[dict[str, Any]]:
        """Chat Completions `tools`: described tools strict (when `strict`), the rest as their minimal entries."""
        return [openai_function(e, strict=strict and (e["name"] in self.described or _closed(e))) for e in self.entries]

    def anthropic_tools(self, *, strict: bool = False) -> list[dict[str, Any]]:
        """Messages API `tools`: described tools whole, the rest minimal."""
        return [anthropic_tool(e, strict=strict and e["name"] in self.described) for e in self.entries]

    def anthropic_deferred(self) -> list[dict[str, Any]]:
        """Messages API `tools` for its tool search: every full definition in `definitions` with `defer_loading`,
        and the tool search tool (the API loads a definition when the model's search finds it)."""
        deferred = [anthropic_tool(d, defer_loading=True) for d in self.definitions.values()]
        return [*deferred, dict(ANTHROPIC_TOOL_SEARCH)]

    async def describe(self, names: Iterable[str]) -> Reply:
        """Describe `names` in this session (the descriptions resource, else the server's describe tool); each
        full definition read is kept and offered from then on."""
        names = list(names)
        if self.server.resource_found or self.server.describe_tool is None:
            reply = await self.server.read_descriptions(names)
        else:
            reply = await self.server.describe({"tools": names})
        if isinstance(reply.data, dict):
            for name, entry in reply.data.items():
                if isinstance(entry, dict) and "inputSchema" in entry:
                    self.definitions[name] = entry
                    self.described.add(name)
        return reply

    async def run(self, name: str, arguments: Mapping[str, Any]) -> Reply:
        """Carry out one function call of the model: a describe (the server's describe tool), or a tool call. A tool
        not yet described in this session is described first (describe-then-call); arguments given under a strict
        schema get their `null`s for optional properties dropped."""
        if name == self.server.describe_tool:
            return await self.describe(list(arguments.get("tools") or ()))
        if name not in self.described:
            described = await self.describe([name])
            if name not in self.described:
                return described  # the server's own answer (unknown name, not permitted): the model reads it
        schema = self.definitions[name].get("inputSchema") or {}
        return await self.server.call_tool(name, loose_arguments(arguments, schema))

    @staticmethod
    def output(reply: Reply) -> str:
        """The text to hand back to the model for `reply` (an error document stays a document it can act on)."""
        return reply.text if reply.text else json.dumps(reply.data, ensure_ascii=False)


def _closed(entry: Mapping[str, Any]) -> bool:
    """A listed schema complete enough to be strict as it is (the describe tool's `{"tools": [...]}`)."""
    schema = entry.get("inputSchema")
    return (
        isinstance(schema, Mapping)
        and bool(schema.get("properties"))
        and schema.get("additionalProperties") is not True
    )
