"""The spec model: full and minimal tool descriptions and the spec's error documents.

Knows nothing about files, sessions or the SDK. Every wire shape the spec defines is built here
once and reused by the server, the conformance suite and the agent.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Final, TypeVar

import jsonschema_rs
import mcp_types as types
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ._errors import ErrorCode

__all__ = [
    "AVAILABLE_TOOLS_LIMIT",
    "DEFAULT_RESOURCE_URI",
    "MINIMAL_INPUT_SCHEMA",
    "MISSING_TOOL_SELECTION",
    "RATE_LIMITED",
    "SESSION_REQUIRED",
    "TOOL_DESCRIPTION_REQUIRED",
    "TOOL_NAME_PATTERN",
    "ToolDefinition",
    "check_json_schema",
    "definition_version",
    "example_problems",
    "first_sentence",
    "missing_tool_selection",
    "selection_uri",
    "session_required",
    "tool_description_required",
    "tool_not_found",
]

DEFAULT_RESOURCE_URI: Final = "resource:///tool_descriptions"
MISSING_TOOL_SELECTION: Final[str] = ErrorCode.MISSING_TOOL_SELECTION.value
TOOL_DESCRIPTION_REQUIRED: Final[str] = ErrorCode.TOOL_DESCRIPTION_REQUIRED.value
SESSION_REQUIRED: Final[str] = ErrorCode.SESSION_REQUIRED.value
RATE_LIMITED: Final[str] = ErrorCode.RATE_LIMITED.value
# Spec 3.1 names this exact shape; a fresh copy is handed out per entry so callers may mutate theirs.
MINIMAL_INPUT_SCHEMA: Final[dict[str, Any]] = {"type": "object", "additionalProperties": True}
# SEP-986 tool names; used to reject hostile names in definition files, never to "fix" a request.
TOOL_NAME_PATTERN: Final = re.compile(r"^[A-Za-z0-9_.\-]{1,128}$")
AVAILABLE_TOOLS_LIMIT: Final = 20
MINIMAL_DESCRIPTION_LIMIT: Final = 160

_T = TypeVar("_T")
_ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "vs.", "approx.", "incl.", "cf.")
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")


class ToolDefinition(BaseModel):
    """A full tool description as stored in one JSON file and served by the resource (spec 4.4, 7.1)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: str
    title: str | None = None
    minimal_description: str | None = Field(default=None, max_length=MINIMAL_DESCRIPTION_LIMIT * 2)
    description: str = Field(min_length=1)
    input_schema: dict[str, Any] = Field(alias="inputSchema")
    output_schema: dict[str, Any] | None = Field(default=None, alias="outputSchema")
    annotations: dict[str, Any] | None = None
    icons: list[dict[str, Any]] | None = None
    execution: dict[str, Any] | None = None
    category: str | None = None
    examples: list[dict[str, Any]] = Field(default_factory=list)
    usage_guidance: dict[str, Any] | str | None = None
    error_guidance: dict[str, Any] | str | None = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")

    @field_validator("name")
    @classmethod
    def _valid_name(cls, value: str) -> str:
        if not TOOL_NAME_PATTERN.fullmatch(value):
            raise ValueError("tool names are 1-128 characters of A-Z a-z 0-9 _ - . (SEP-986)")
        return value

    @field_validator("input_schema", "output_schema")
    @classmethod
    def _object_schema(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is None:
            return None
        check_json_schema(value)
        if value.get("type", "object") != "object":
            raise ValueError('must be a JSON schema with "type": "object"')
        return value

    @field_validator("annotations")
    @classmethod
    def _annotations(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return _wire_checked(types.ToolAnnotations, value)

    @field_validator("execution")
    @classmethod
    def _execution(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return _wire_checked(types.ToolExecution, value)

    @field_validator("icons")
    @classmethod
    def _icons(cls, value: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
        if value is not None:
            for icon in value:
                _wire_checked(types.Icon, icon)
        return value

    def summary(self) -> str:
        """The minimal description: the hand-written one, else the first sentence of the full one."""
        return self.minimal_description or first_sentence(self.description)

    def minimal_entry(self, *, list_annotations: bool = False) -> dict[str, Any]:
        """The `tools/list` entry of spec 3.1: enough to choose the tool, nothing about its parameters.

        `title` and `annotations` stay in the full definition unless `list_annotations` is true: on the
        322 real catalog tools they are a third of the minimal listing (6.4 points of the savings), and a
        host that does not see them assumes the safe defaults (not read-only, destructive, open-world;
        spec/interpretations.md I-5).
        """
        entry: dict[str, Any] = {"name": self.name}
        if list_annotations and self.title:
            entry["title"] = self.title
        entry["description"] = self.summary()
        entry["inputSchema"] = dict(MINIMAL_INPUT_SCHEMA)
        if list_annotations and self.annotations:
            entry["annotations"] = self.annotations
        if self.execution:
            # How to call the tool (e.g. task support), not what to pass: clients need it to call at all.
            entry["execution"] = self.execution
        if self.meta:
            # Hosts read `_meta` (e.g. MCP Apps' `_meta.ui`) from the listing, never from our resource.
            entry["_meta"] = self.meta
        return entry

    def full_entry(self) -> dict[str, Any]:
        """The resource entry of spec 4.4, with a content `version` (7.2)."""
        body: dict[str, Any] = {"name": self.name}
        if self.title:
            body["title"] = self.title
        body["description"] = self.description
        body["inputSchema"] = self.input_schema
        if self.output_schema is not None:
            body["outputSchema"] = self.output_schema
        if self.annotations:
            body["annotations"] = self.annotations
        if self.icons:
            body["icons"] = self.icons
        if self.execution:
            body["execution"] = self.execution
        body["examples"] = self.examples
        if self.usage_guidance is not None:
            body["usage_guidance"] = self.usage_guidance
        if self.error_guidance is not None:
            body["error_guidance"] = self.error_guidance
        body["version"] = definition_version(body)
        return body


def example_problems(definition: ToolDefinition) -> dict[int, str]:
    """Position -> why, for each example whose arguments the definition's own inputSchema rejects."""
    problems: dict[int, str] = {}
    validator = None
    for position, example in enumerate(definition.examples):
        arguments = example.get("input", example.get("arguments"))
        if not isinstance(arguments, dict):
            continue
        if validator is None:
            validator = jsonschema_rs.validator_for(definition.input_schema)
        error = next(iter(validator.iter_errors(arguments)), None)
        if error is not None:
            where = "/".join(map(str, error.instance_path)) or "(arguments)"
            problems[position] = f"examples[{position}] does not match inputSchema at {where}: {error.message}"
    return problems


def check_json_schema(schema: dict[str, Any]) -> None:
    """Raise ValueError, naming the place, unless `schema` is a valid JSON Schema (its declared draft, else 2020-12)."""
    try:
        jsonschema_rs.meta.validate(schema)
    except jsonschema_rs.ValidationError as exc:
        where = "/".join(map(str, exc.instance_path))
        raise ValueError(f"not a valid JSON Schema{f' at {where}' if where else ''}: {exc.message}") from None
    except jsonschema_rs.ReferencingError as exc:
        raise ValueError(f"not a usable JSON Schema: {exc}") from None


def _wire_checked(model: type[BaseModel], value: _T) -> _T:
    """`value` unchanged when it is a valid MCP `model` on the wire (strict types: "yes" is not a boolean)."""
    if value is None:
        return value
    try:
        model.model_validate(value, strict=True)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'value'}: {e['msg'].lower()}" for e in exc.errors(include_url=False)
        )
        raise ValueError(f"not a valid MCP {model.__name__}: {problems}") from None
    return value


def definition_version(body: dict[str, Any]) -> str:
    """A content digest of a full description, stable across key order (spec 7.2)."""
    canonical = json.dumps(
        {k: v for k, v in body.items() if k != "version"}, sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()[:16]


def first_sentence(text: str, limit: int = MINIMAL_DESCRIPTION_LIMIT) -> str:
    """The first sentence of the first paragraph, whitespace collapsed, cut on a word boundary at `limit`."""
    paragraph = " ".join(text.strip().split("\n\n", 1)[0].split())
    end = len(paragraph)
    for match in _SENTENCE_END.finditer(paragraph):
        before = paragraph[: match.end()]
        if before.endswith(_ABBREVIATIONS) or re.search(r"(?:^|\s)[A-Z]\.$", before):
            continue
        end = match.end()
        break
    sentence = paragraph[:end]
    if len(sentence) <= limit:
        return sentence
    cut = sentence[: limit - 1].rsplit(" ", 1)[0].rstrip(",;:")
    return cut + "…"


def selection_uri(names: list[str] | tuple[str, ...], base_uri: str = DEFAULT_RESOURCE_URI) -> str:
    """The resource URI that fetches `names`."""
    return f"{base_uri}?tools={','.join(names)}"


def missing_tool_selection(base_uri: str = DEFAULT_RESOURCE_URI) -> dict[str, Any]:
    """The spec 6.1 document."""
    return {
        "error": {
            "code": MISSING_TOOL_SELECTION,
            "message": "You must specify one or more tool names in the 'tools' parameter.",
            "examples": [f"{base_uri}?tools=tool_name", f"{base_uri}?tools=tool1,tool2"],
        }
    }


def tool_description_required(
    name: str, base_uri: str = DEFAULT_RESOURCE_URI, describe_tool: str | None = None
) -> dict[str, Any]:
    """The spec 6.2 document; with `describe_tool`, it also names the tool call that fetches (I-13)."""
    uri = selection_uri([name], base_uri)
    error: dict[str, Any] = {
        "code": TOOL_DESCRIPTION_REQUIRED,
        "message": f"Tool '{name}' requires fetching its description before use.",
        "resource_uri": uri,
    }
    if describe_tool is not None:
        error["describe_tool_call"] = {"name": describe_tool, "arguments": {"tools": [name]}}
        error["hint"] = f'Read {uri} (or call {describe_tool} with {{"tools": ["{name}"]}}), then retry this call.'
    return {"error": error}


def tool_not_found(name: str, available: list[str], total: int) -> dict[str, Any]:
    """The spec 6.3 entry, with the candidate list bounded and the catalog size stated."""
    return {"error": f"Tool '{name}' not found", "available_tools": available, "available_tools_total": total}


def session_required(name: str, protocol_version: str | None, *, describing: bool = False) -> dict[str, Any]:
    """SESSION_REQUIRED: no session and no principal can hold a grant for `name` (spec/sessions.md).

    In the sessionless 2026-07-28 protocol the client can fix it by connecting with the handshake; in the handshake
    era the server runs stateless HTTP, and only the operator can. `describing`: the refusal answers describe_tools
    rather than a call.
    """
    if protocol_version in MODERN_PROTOCOL_VERSIONS:
        where = "this request came without an MCP session (the sessionless 2026-07-28 protocol)"
        hint = (
            "Connect with the 2025-11-25 handshake so the server issues a session "
            "(Python SDK: mcp.Client(target, mode='legacy')), or ask the operator to authenticate clients "
            "(grants are then kept per principal) or to key authorization on something the server controls "
            "(ProgressiveDisclosure(session_key=...))."
        )
    else:
        where = "the server runs stateless HTTP, so no request carries a session"
        hint = (
            "This cannot be fixed by the client: the operator must serve HTTP with sessions (mcp-pd serve "
            "without --stateless; streamable_http_app(stateless_http=False)), authenticate clients (grants are "
            "then kept per principal) or configure a session key (ProgressiveDisclosure(session_key=...))."
        )
    message = (
        f"Not described: {name}. Here {where}, so a description cannot be remembered until the call, which would "
        "be refused."
        if describing
        else f"Tool '{name}' cannot be authorized: {where}, so fetched descriptions cannot be remembered between "
        "requests."
    )
    return {"error": {"code": SESSION_REQUIRED, "message": message, "hint": hint, "protocol_version": protocol_version}}
