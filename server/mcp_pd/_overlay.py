"""What a definition file may change of a tool the server registers: one rule, for the server and for `mcp-pd lint`.

A file may enrich a registered tool: its description, its parameters' descriptions and titles, examples, guidance,
a title, and safety hints that are *more* cautious than the tool's own. It may not change what the tool accepts or
claim it is safer than it is: the registered tool runs whatever the file says, so a file that marks a destructive tool
read-only makes hosts and the conformance suite run it unasked (issue 39.8), and a file that turns an integer >= 1
into a string teaches the model calls the tool rejects (39.9). What the rule refuses is not served (the registered
value is), and each refusal is said with what to do (spec/interpretations.md I-43).

Knows nothing about files, sessions or the SDK: it compares two wire-form definitions.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from ._selectors import SELECTORS, selections

__all__ = [
    "ANNOTATION_KEYWORDS",
    "SAFETY_HINTS",
    "OverlayVerdict",
    "judge_overlay",
    "schema_difference",
    "weakened_hints",
]

# Each safety hint with its value when a tool leaves it out (MCP's defaults: a tool is assumed to write, destroy, be
# open-world and not idempotent), which is also its cautious value: a file may move a hint towards it, never away.
SAFETY_HINTS: Final[Mapping[str, bool]] = {
    "readOnlyHint": False,
    "destructiveHint": True,
    "idempotentHint": False,
    "openWorldHint": True,
}
_WRITES_ONLY: Final = frozenset({"destructiveHint", "idempotentHint"})
# JSON Schema keywords that only annotate (what a model reads), never constrain: a file may change these freely.
ANNOTATION_KEYWORDS: Final = frozenset({"description", "title", "examples", "$comment"})
# Keywords whose value is a schema, a list of schemas, or a map of names to schemas (where to keep walking).
_SCHEMA: Final = frozenset(
    {
        "additionalProperties",
        "items",
        "contains",
        "not",
        "if",
        "then",
        "else",
        "propertyNames",
        "unevaluatedProperties",
        "unevaluatedItems",
        "additionalItems",
    }
)
_SCHEMAS: Final = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_NAMED: Final = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})


def weakened_hints(
    registered: Mapping[str, Any] | None, given: Mapping[str, Any] | None
) -> dict[str, tuple[bool, bool]]:
    """Hint -> (the registered tool's value, the file's), for each hint the file makes less cautious than the tool's
    own (a hint the tool leaves out counts at MCP's default)."""
    weakened: dict[str, tuple[bool, bool]] = {}
    read_only = (registered or {}).get("readOnlyHint") is True
    for hint, cautious in SAFETY_HINTS.items():
        if read_only and hint in _WRITES_ONLY:
            continue  # a read-only tool's destructive and idempotent hints mean nothing (MCP: "if not read-only")
        value = (given or {}).get(hint)
        if not isinstance(value, bool) or value == cautious:
            continue
        own = (registered or {}).get(hint, cautious)
        if own == cautious or not isinstance(own, bool):
            weakened[hint] = (cautious, value)
    return weakened


def _normal(schema: Any) -> Any:
    """`schema` with its annotation keywords left out (at schema positions only: a property may be named
    `description`) and `required` as a set, so two schemas that accept the same arguments compare equal."""
    if isinstance(schema, list):
        return [_normal(item) for item in schema]
    if not isinstance(schema, Mapping):
        return schema
    normal: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ANNOTATION_KEYWORDS:
            continue
        if key in _NAMED and isinstance(value, Mapping):
            normal[key] = {name: _normal(sub) for name, sub in value.items()}
        elif key in _SCHEMA or key in _SCHEMAS:
            normal[key] = _normal(value)
        elif key == "required" and isinstance(value, list):
            normal[key] = sorted(map(str, value))
        else:
            normal[key] = value
    return normal


def _first_difference(a: Any, b: Any, where: str) -> str | None:
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        for key in sorted(set(a) | set(b)):
            if key not in b:
                return f"{where}/{key}: the file leaves out {_short(a[key])}"
            if key not in a:
                return f"{where}/{key}: the file adds {_short(b[key])}"
            found = _first_difference(a[key], b[key], f"{where}/{key}")
            if found is not None:
                return found
        return None
    if a != b:
        return f"{where}: {_short(a)} in the registered tool, {_short(b)} in the file"
    return None


def _short(value: Any, limit: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 1] + "…"


_NONE: Final = object()


def _with_selections(meta: Mapping[str, Any], own: Mapping[str, Any] | None) -> dict[str, Any]:
    """`meta` (a file's `_meta`) with each selector key as the tool's own `_meta` has it (or left out)."""
    served = json.loads(json.dumps(meta))  # a deep copy of plain JSON
    for path in SELECTORS:
        node = served
        for key in path[:-1]:
            node = node.get(key) if isinstance(node, dict) else None
        if not isinstance(node, dict):
            continue
        node.pop(path[-1], None)
        value = selections(own).get(".".join(path), _NONE)
        if value is not _NONE:
            node[path[-1]] = value
    return dict(served)


def schema_difference(registered: Mapping[str, Any], given: Mapping[str, Any]) -> str | None:
    """Where `given` (a file's schema) accepts or rejects other arguments than `registered` (the tool's), said as a
    path and both values; None when they differ only in what annotates (descriptions, titles, examples)."""
    if registered == given:  # the usual case (a whole file copied from the tool, a cache, a simulation): no walk
        return None
    return _first_difference(_normal(registered), _normal(given), "")


@dataclass
class OverlayVerdict:
    """What of a file meeting a registered tool is served: the fields the rule refused take the tool's value."""

    updates: dict[str, Any] = field(default_factory=dict)  # wire field -> the value served instead of the file's
    reasons: list[str] = field(default_factory=list)  # one per refusal, each with what to do


def judge_overlay(
    registered: Mapping[str, Any], given: Mapping[str, Any], *, fields: frozenset[str] | None = None
) -> OverlayVerdict:
    """Judge a file's definition (`given`, wire form) against the tool the server registers (`registered`, wire form).

    `fields`: the wire fields the file itself gave (an overlay leaves the rest to the tool; None: all of them).
    """
    verdict = OverlayVerdict()
    gave = set(given) if fields is None else fields
    hints = given.get("annotations") if "annotations" in gave else None
    own = registered.get("annotations")
    weakened = weakened_hints(own if isinstance(own, Mapping) else None, hints if isinstance(hints, Mapping) else None)
    if weakened:
        assert isinstance(hints, Mapping)
        # The tool's own hints, with what the file adds that the rule lets by (a title, a more cautious hint).
        served = {**(own if isinstance(own, Mapping) else {}), **{k: v for k, v in hints.items() if k not in weakened}}
        verdict.updates["annotations"] = served or None
        said = ", ".join(f"{hint}: {theirs} (the tool's: {mine})" for hint, (mine, theirs) in weakened.items())
        verdict.reasons.append(
            f"annotations claim the tool is safer than it says it is ({said}); the tool's own hints are served. A "
            "file may only make hints more cautious: change the hint where the tool is registered"
        )
    meta, own_meta = given.get("_meta"), registered.get("_meta")
    if "_meta" in gave and isinstance(meta, Mapping):
        own_picks = selections(own_meta if isinstance(own_meta, Mapping) else None)
        moved = {path for path, value in selections(meta).items() if own_picks.get(path, _NONE) != value}
        if moved:
            # The implementation a call may select is the listed one's (I-42): a file naming another would authorize it.
            served_meta = _with_selections(meta, own_meta if isinstance(own_meta, Mapping) else None)
            verdict.updates["_meta"] = served_meta or None
            verdict.reasons.append(
                f"its _meta names another implementation than the tool's ({', '.join(sorted(moved))}); the tool's is "
                "served. A file cannot choose which implementation a call runs: leave these keys out"
            )
    for key, what in (("inputSchema", "parameters"), ("outputSchema", "results")):
        mine, theirs = registered.get(key), given.get(key)
        if key not in gave or not isinstance(mine, Mapping) or not isinstance(theirs, Mapping):
            continue
        difference = schema_difference(mine, theirs)
        if difference is not None:
            verdict.updates[key] = dict(mine)
            verdict.reasons.append(
                f"its {key} changes the tool's {what} ({difference}); the registered {key} is served. A file may "
                f"only add descriptions, titles and examples to a registered tool's {key}: copy it from the tool "
                "(or leave it out) and change the tool's code to change what it accepts"
            )
    return verdict
