"""Parsing `resource:///tool_descriptions?tools=a,b` (spec 4.3; our reading in spec/interpretations.md I-3)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final
from urllib.parse import unquote

from ._errors import ErrorCode

__all__ = [
    "MAX_NAME_LENGTH",
    "MAX_URI_LENGTH",
    "SelectionError",
    "is_descriptions_uri",
    "parse_selection",
    "select_names",
]

MAX_URI_LENGTH: Final = 8192
MAX_NAME_LENGTH: Final = 128


@dataclass(frozen=True)
class SelectionError(Exception):
    """A read the resource refuses; `code` is the machine-readable code string of the error document."""

    code: str
    message: str


def _split_uri(uri: str) -> tuple[str, str]:
    base, _, query = uri.partition("?")
    return base, query.partition("#")[0]


def is_descriptions_uri(uri: str, base_uri: str) -> bool:
    """Whether `uri` addresses the descriptions resource (with or without a query)."""
    return _split_uri(uri)[0].partition("#")[0] == base_uri


def parse_selection(uri: str, base_uri: str, max_tools: int) -> list[str]:
    """Return the requested tool names in request order, without duplicates.

    Raises `SelectionError` for a read that must fail: MISSING_TOOL_SELECTION when no name is given,
    and URI_TOO_LONG / INVALID_TOOL_NAME / TOO_MANY_TOOLS for input no catalog could satisfy.
    """
    if len(uri) > MAX_URI_LENGTH:
        raise SelectionError(
            ErrorCode.URI_TOO_LONG,
            f"The URI is {len(uri)} characters; at most {MAX_URI_LENGTH} are accepted. Fetch fewer tools.",
        )
    _, query = _split_uri(uri)
    raw: list[str] = []
    for pair in query.split("&"):
        key, eq, value = pair.partition("=")
        if not eq or unquote(key) != "tools":
            continue
        try:
            # Decode before splitting: %2C is a comma like any other (RFC 3986 leaves it to the scheme).
            decoded = unquote(value, errors="strict")
        except UnicodeDecodeError:
            raise SelectionError(
                ErrorCode.INVALID_TOOL_NAME, "The tools parameter is not valid percent-encoded UTF-8."
            ) from None
        raw.extend(decoded.split(","))
    return select_names(raw, max_tools)


def select_names(raw: Iterable[str], max_tools: int) -> list[str]:
    """The names of one selection (a `?tools=` query or a describe_tools argument), checked the same way.

    Whitespace around a name is trimmed, empty entries and repeats are dropped, order is kept; a name that no
    catalog could hold, or more than `max_tools` distinct names, raise `SelectionError`.
    """
    names: list[str] = []
    seen: set[str] = set()
    for entry in raw:
        name = entry.strip()
        if not name or name in seen:
            continue
        if len(name) > MAX_NAME_LENGTH or not name.isprintable():
            shown = name[:40].encode("unicode_escape").decode("ascii")
            raise SelectionError(
                ErrorCode.INVALID_TOOL_NAME,
                f"'{shown}' is not a tool name: names are at most {MAX_NAME_LENGTH} printable characters. "
                "Use the names exactly as tools/list shows them.",
            )
        seen.add(name)
        names.append(name)
        if len(names) > max_tools:
            raise SelectionError(
                ErrorCode.TOO_MANY_TOOLS,
                f"At most {max_tools} tools can be fetched in one read. "
                "Fetch only the tools you are about to call, in several reads if needed.",
            )
    return names
