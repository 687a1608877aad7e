"""The planner's reading of JSON: tool results (their error code and message, a short summary), argument values
coerced to a schema's type, a property's shape, format and enum choice, and which functions take tool names.

Pure functions; no state, no I/O.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from . import _plan_text as lex

__all__ = [
    "coerced",
    "enum_choice",
    "error_code",
    "error_message",
    "parse_json",
    "schema_shape",
    "string_format",
    "summarize",
    "takes_tool_names",
    "tools_in_uri",
]


def parse_json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def error_code(data: Any) -> str | None:
    if isinstance(data, dict) and isinstance(data.get("error"), dict):
        code = data["error"].get("code")
        return str(code) if code is not None else None
    return None


def error_message(data: Any, text: str) -> str:
    if isinstance(data, dict) and isinstance(data.get("error"), dict):
        return str(data["error"].get("message") or data["error"])
    return text.strip()[:300]


def coerced(value: Any, wanted: Any) -> Any:
    """`value` as the JSON type a schema's `type` wants (numbers written as strings, and back), or None."""
    types = {wanted} if isinstance(wanted, str) else set(wanted or [])
    if types & {"number", "integer"} and isinstance(value, str):
        try:
            number = float(value.replace(",", ""))
        except ValueError:
            return None
        return int(number) if "integer" in types or number.is_integer() else number
    if "string" in types and isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    if "boolean" in types and isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    return None


def takes_tool_names(parameters: dict[str, Any]) -> bool:
    """A function whose only required argument is `tools`, a list of strings: a describe tool (or our reader)."""
    prop = (parameters.get("properties") or {}).get("tools")
    return (
        isinstance(prop, dict)
        and prop.get("type") == "array"
        and list(parameters.get("required") or []) == ["tools"]
        and set(parameters.get("properties") or {}) == {"tools"}
    )


def tools_in_uri(uri: str) -> list[str]:
    query = parse_qs(urlsplit(uri).query)
    names: list[str] = []
    for value in query.get("tools", []):
        names += [unquote(n) for n in value.split(",") if n]
    return names


def schema_shape(spec: dict[str, Any]) -> tuple[set[str], list[Any], str | None]:
    """(types, enum values, pattern), looking through anyOf/oneOf unions with null."""
    types: set[str] = set()
    enum: list[Any] = list(spec.get("enum") or [])
    pattern = spec.get("pattern")
    declared = spec.get("type")
    if isinstance(declared, str):
        types.add(declared)
    elif isinstance(declared, list):
        types |= {str(t) for t in declared}
    for option in (spec.get("anyOf") or []) + (spec.get("oneOf") or []):
        if isinstance(option, dict):
            sub_types, sub_enum, sub_pattern = schema_shape(option)
            types |= sub_types
            enum += [e for e in sub_enum if e not in enum]
            pattern = pattern or sub_pattern
    types.discard("null")
    return types, [e for e in enum if e is not None], pattern if isinstance(pattern, str) else None


def string_format(spec: dict[str, Any]) -> str | None:
    if isinstance(spec.get("format"), str):
        return str(spec["format"])
    for option in (spec.get("anyOf") or []) + (spec.get("oneOf") or []):
        if isinstance(option, dict) and isinstance(option.get("format"), str):
            return str(option["format"])
    return None


def enum_choice(prop: str, enum: list[Any], tokens: list[str], used: set[int], property_names: set[str]) -> Any | None:
    """An enum value the step names (exact case first), honouring from/to order for paired fields."""
    values = [
        v for v in enum if isinstance(v, str) and lex.normalized(v) not in property_names - {lex.normalized(prop)}
    ]
    hits: list[tuple[int, Any, bool]] = []
    for position, token in enumerate(tokens):
        if position in used or not token:
            continue
        pair = f"{token} {tokens[position + 1]}" if position + 1 < len(tokens) else token
        exact = [v for v in values if v == token]
        loose = [v for v in values if len(v) > 2 and lex.normalized(v) in (lex.normalized(token), lex.normalized(pair))]
        match = exact or loose
        if match:
            after_to = position > 0 and tokens[position - 1].lower() in lex.TO_WORDS
            hits.append((position, match[0], after_to))
    if not hits:
        return None
    lowered = prop.lower()
    chosen = hits[0]
    if lowered.startswith(("to", "target", "dest")):
        chosen = next((h for h in hits if h[2]), hits[-1])
    elif lowered.startswith(("from", "source")):
        chosen = next((h for h in hits if not h[2]), hits[0])
    used.add(chosen[0])
    return chosen[1]


def summarize(data: Any, limit: int = 160) -> str:
    if isinstance(data, dict):
        preferred = ("result", "digest", "words", "total", "total_open", "id", "title", "assignee", "status")
        picked = {k: data[k] for k in preferred if k in data and not isinstance(data[k], (dict, list))}
        text = json.dumps(picked or data, ensure_ascii=False)
    else:
        text = json.dumps(data, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"
