"""Implementation selectors: `_meta` keys with which a call picks another implementation of a tool than the listed one.

What a client describes is the tool as listed: its definition, and the digest a grant is bound to. Some servers keep
other implementations under the same name and let a call pick one through `_meta`: FastMCP 4 runs any registered
version named by `_meta.fastmcp.version`, listed or not, described or not, with its own schema and hints. Such a call
reaches a tool nobody described, so a call may carry a selector only to select exactly what was described
(spec/interpretations.md I-42). The listed implementation names itself under the same key in the listed tool's
`_meta` (FastMCP lists `_meta.fastmcp.version`), which the catalog keeps in the definition.

Knows nothing about sessions, grants or the SDK: the mode asks `selector_refusal` once the gate has let a call by.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ._errors import ErrorCode, Refusal

__all__ = ["SELECTORS", "selections", "selector_refusal"]

# Each selector as its path in `_meta`. A server that adds another way to pick an implementation belongs here.
SELECTORS: Final[tuple[tuple[str, ...], ...]] = (("fastmcp", "version"),)
_ABSENT: Final = object()


def _at(meta: Mapping[str, Any] | None, path: tuple[str, ...]) -> Any:
    value: Any = meta
    for key in path:
        if not isinstance(value, Mapping) or key not in value:
            return _ABSENT
        value = value[key]
    return value


def selections(meta: Mapping[str, Any] | None) -> dict[str, Any]:
    """The selectors `meta` carries, by dotted path (e.g. `{"fastmcp.version": "1.0"}`); empty for a plain call."""
    found: dict[str, Any] = {}
    for path in SELECTORS:
        value = _at(meta, path)
        if value is not _ABSENT:
            found[".".join(path)] = value
    return found


def selector_refusal(name: str, described: Mapping[str, Any] | None, call: Mapping[str, Any] | None) -> Refusal | None:
    """None when the call's `_meta` (`call`) selects nothing, or exactly the implementation described (its definition's
    `_meta`, `described`); otherwise the refusal: another implementation is another tool, never described."""
    for path, value in selections(call).items():
        listed = _at(described, tuple(path.split(".")))
        if listed is not _ABSENT and value == listed:
            continue
        what = (
            f"the described '{name}' is {path} {listed!r}"
            if listed is not _ABSENT
            else f"the described '{name}' names no {path}"
        )
        return Refusal(
            ErrorCode.IMPLEMENTATION_NOT_DESCRIBED,
            f"Tool '{name}' was not run: this call selects _meta.{path} = {value!r}, an implementation that was never "
            f"described ({what}). Call it without _meta.{path} to run the described tool"
            + (f" (or with {listed!r})." if listed is not _ABSENT else "."),
            selector=path,
            selected=value,
            described=None if listed is _ABSENT else listed,
        )
    return None
