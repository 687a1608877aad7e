"""Reading the spec's documents out of whatever a server sent: resource bodies, error documents, call outcomes.

Lenient in what it accepts (an error document as JSON-RPC error data or as content, wrapped in
`{"error": ...}` or not), so that each check can then say precisely what was wrong.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import parse_qs, urlsplit

from ._probe import Exchange, short

__all__ = [
    "MISSING_MESSAGE",
    "MISSING_TOOL_SELECTION",
    "SESSIONLESS_VERSIONS",
    "TOOL_DESCRIPTION_REQUIRED",
    "Answer",
    "Body",
    "CallOutcome",
    "answer",
    "available_tools",
    "base_uri",
    "classify_call",
    "error_document",
    "example_arguments",
    "first_example",
    "read_body",
    "same_selection_uri",
    "schema_detail",
    "schema_identity",
    "uri_path",
    "wrapped",
]

MISSING_TOOL_SELECTION = "MISSING_TOOL_SELECTION"
MISSING_MESSAGE = "You must specify one or more tool names in the 'tools' parameter."  # spec 6.1, verbatim
TOOL_DESCRIPTION_REQUIRED = "TOOL_DESCRIPTION_REQUIRED"
# Protocol versions without sessions (no initialize, no Mcp-Session-Id).
SESSIONLESS_VERSIONS = frozenset({"2026-07-28"})

# Schema keywords a minimal tools/list entry may carry (spec 3.1: omitted, or simplified).
_MINIMAL_KEYS = frozenset({"type", "additionalProperties", "$schema", "properties", "required"})


def _unordered(schema: Any) -> Any:
    """`schema` with every `required` list sorted: JSON Schema reads it as a set, so its order means nothing."""
    if isinstance(schema, list):
        return [_unordered(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: _unordered(value) for key, value in schema.items()}
    required = out.get("required")
    if isinstance(required, list) and all(isinstance(name, str) for name in required):
        out["required"] = sorted(required)
    return out


def schema_identity(schema: Any) -> str:
    """What two served inputSchemas must share to be the same schema: their JSON with keys sorted and every
    `required` list in one order (a server may send `required` in another order each read: it is a set)."""
    return json.dumps(_unordered(schema), sort_keys=True)


@dataclass
class Body:
    """A resources/read result decoded: the JSON value, any text before it, and the content's _meta."""

    value: Any = None
    problem: str | None = None
    prefix: str = ""
    meta: dict[str, Any] | None = None

    @property
    def mapping(self) -> dict[str, Any] | None:
        return self.value if isinstance(self.value, dict) else None


def _decode_json(text: str) -> tuple[Any, str] | None:
    try:
        return json.loads(text), ""
    except ValueError:
        pass
    start = text.find("{")
    if start > 0:
        try:
            return json.loads(text[start:]), text[:start]
        except ValueError:
            return None
    return None


def read_body(exchange: Exchange) -> Body:
    """The JSON a resources/read returned, or why there is none."""
    if exchange.error is not None:
        return Body(problem=f"the read failed: {exchange.received}")
    contents = (exchange.result or {}).get("contents")
    if not isinstance(contents, list) or not contents or not isinstance(contents[0], dict):
        return Body(problem="the read returned no contents")
    first = contents[0]
    meta = first.get("_meta") if isinstance(first.get("_meta"), dict) else None
    text = first.get("text")
    if not isinstance(text, str) and isinstance(first.get("blob"), str):
        try:
            text = base64.b64decode(first["blob"]).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return Body(problem="the blob content is not UTF-8 text", meta=meta)
    if not isinstance(text, str):
        return Body(problem="the first content has neither text nor blob", meta=meta)
    decoded = _decode_json(text)
    if decoded is None:
        return Body(problem=f"the content is not JSON: {text[:80]!r}", meta=meta)
    value, prefix = decoded
    problem = f"{len(contents)} contents returned; only the first is read" if len(contents) > 1 else None
    return Body(value=value, problem=problem, prefix=prefix.strip(), meta=meta)


def error_document(value: Any) -> dict[str, Any] | None:
    """The `{"code", "message", ...}` object of an error document, wrapped in {"error": ...} or bare."""
    if isinstance(value, dict):
        inner = value.get("error")
        if isinstance(inner, dict) and isinstance(inner.get("code"), str):
            return inner
        if isinstance(value.get("code"), str):
            return value
    return None


def wrapped(value: Any) -> bool:
    """Whether an error document came as spec 6.1 and 6.2 write it, `{"error": {"code", ...}}`, not the bare object."""
    return isinstance(value, dict) and isinstance(value.get("error"), dict)


@dataclass
class CallOutcome:
    """What a tools/call did: ran (`ok`), was refused with a coded error document, or failed otherwise."""

    kind: Literal["ok", "refused", "error"]
    via: Literal["result", "jsonrpc"] | None = None
    document: dict[str, Any] | None = None
    detail: str = ""
    wrapped: bool = True  # the document came inside {"error": {...}}, as spec 6.2 writes it (not the bare object)

    @property
    def code(self) -> str | None:
        return str(self.document["code"]) if self.document is not None else None

    def describe(self) -> str:
        if self.kind == "ok":
            return "the call succeeded"
        if self.kind == "refused":
            form = "an isError tool result" if self.via == "result" else "a JSON-RPC error"
            return f"refused with {self.code} ({form})"
        return f"the call failed without an error code: {self.detail}"


def classify_call(exchange: Exchange) -> CallOutcome:
    """Sort a tools/call exchange into ran / refused-with-a-code / failed."""
    if exchange.error is not None:
        document = error_document(exchange.error.data)
        if document is not None:
            return CallOutcome("refused", "jsonrpc", document, wrapped=wrapped(exchange.error.data))
        return CallOutcome("error", "jsonrpc", None, exchange.received)
    result = exchange.result or {}
    if result.get("isError") is not True:
        return CallOutcome("ok")
    value = result.get("structuredContent")
    document = error_document(value)
    if document is None:
        for item in result.get("content") or []:
            if isinstance(item, dict) and isinstance(item.get("text"), str):
                decoded = _decode_json(item["text"])
                if decoded is not None and (document := error_document(decoded[0])) is not None:
                    value = decoded[0]
                    break
    if document is not None:
        return CallOutcome("refused", "result", document, wrapped=wrapped(value))
    return CallOutcome("error", "result", None, exchange.received)


def schema_detail(schema: Any) -> str | None:
    """Why a tools/list inputSchema is more than the minimal form, or None when it is minimal."""
    if schema is None:
        return None
    if not isinstance(schema, dict):
        return "inputSchema is not an object"
    if schema.get("type", "object") != "object":
        return f"inputSchema type is {schema.get('type')!r}"
    properties = schema.get("properties")
    if isinstance(properties, dict) and properties:
        names = ", ".join(list(properties)[:4]) + (", …" if len(properties) > 4 else "")
        return f"lists {len(properties)} parameter(s) ({names})"
    if schema.get("required"):
        return "declares required parameters"
    if isinstance(schema.get("additionalProperties"), dict):
        return "additionalProperties is a schema"
    extra = sorted(set(schema) - _MINIMAL_KEYS)
    if extra:
        return f"carries schema keywords {extra}"
    return None


def first_example(definition: dict[str, Any]) -> dict[str, Any] | None:
    """Arguments of the first example of a full description (None: it has none)."""
    examples = definition.get("examples")
    if isinstance(examples, list):
        for example in examples:
            if isinstance(example, dict):
                for key in ("input", "arguments", "args", "params", "parameters"):
                    if isinstance(example.get(key), dict):
                        return dict(example[key])
    return None


def example_arguments(definition: dict[str, Any]) -> dict[str, Any] | None:
    """Arguments of the first example of a full description, or {} when the schema requires nothing."""
    example = first_example(definition)
    if example is not None:
        return example
    schema = definition.get("inputSchema")
    if isinstance(schema, dict) and not schema.get("required"):
        return {}
    return None


def same_selection_uri(uri: Any, base: str, name: str) -> bool:
    """Whether `uri` is `<base>?tools=<name>` (exactly, or with the query encoded differently)."""
    if not isinstance(uri, str):
        return False
    if uri == f"{base}?tools={name}":
        return True
    head, _, query = uri.partition("?")
    return head == base and parse_qs(query).get("tools") == [name] and set(parse_qs(query)) == {"tools"}


def base_uri(uri: str) -> str:
    """`uri` without query or fragment."""
    return re.split(r"[?#]", uri, maxsplit=1)[0]


def uri_path(uri: str) -> str:
    return urlsplit(base_uri(uri)).path


def available_tools(exchange: Exchange, name: str) -> list[str] | None:
    """The names in `available_tools` of the entry a read gave unknown `name` (spec 6.3); None without that list."""
    entry = (read_body(exchange).mapping or {}).get(name)
    names = entry.get("available_tools") if isinstance(entry, dict) else None
    return [n for n in names if isinstance(n, str)] if isinstance(names, list) else None


@dataclass
class Answer:
    """What a tools/call answered: its document (structuredContent, else the JSON text), and what was off."""

    exchange: Exchange
    document: Any = None
    is_error: bool = False
    problem: str = ""  # a JSON-RPC error, a missing structuredContent or JSON text, or the two differing

    @property
    def error(self) -> dict[str, Any] | None:
        """The error document's inner object, when the answer is a refusal."""
        return error_document(self.document) if self.is_error else None

    @property
    def mapping(self) -> dict[str, Any]:
        return self.document if isinstance(self.document, dict) and not self.is_error else {}


def answer(exchange: Exchange) -> Answer:
    """Decode a tools/call result into its JSON document (I-13, I-16: structuredContent with a JSON text copy)."""
    if exchange.error is not None:
        return Answer(exchange, exchange.error.data, True, f"a JSON-RPC error ({short(exchange.received, 160)})")
    result = exchange.result or {}
    structured = result.get("structuredContent")
    texts = [c.get("text") for c in result.get("content") or [] if isinstance(c, dict) and c.get("type") == "text"]
    parsed: Any = None
    problem = ""
    if texts and isinstance(texts[0], str):
        try:
            parsed = json.loads(texts[0])
        except ValueError:
            problem = f"the text content is not JSON: {short(texts[0], 80)!r}"
    else:
        problem = "no text content"
    if structured is None:
        problem = problem or "no structuredContent"
    elif not problem and parsed != structured:
        problem = "the JSON text content differs from structuredContent"
    document = structured if structured is not None else parsed
    return Answer(exchange, document, result.get("isError") is True, problem)
