"""Catalog mode's meta-tools: `search_tools`, `browse_tools` and `call_tool` (spec/interpretations.md I-16).

Thin glue: searching and browsing ask the index (`_index.py`), calling goes through the same `gate` as a direct
call, and describing is the extension's `describe_tools`, so authorization, errors and limits exist once. Every
answer is a JSON document (structured content with a JSON text copy); every error names the valid options or
the closest names. Each search row carries its band (strong, possible, weak); an answer with no strong row says
so before the rows, and a destructive tool on a weak match is flagged. Knows the catalog, the index and the
disclosure decisions; nothing of URIs or SDK handlers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

import jsonschema_rs

from ._categories import CategoryIndex
from ._disclosure import Disclosure
from ._errors import ErrorCode, Refusal
from ._index import CatalogIndex
from ._paging import decode_cursor, encode_cursor
from ._policy import Caller
from ._search import SearchHit
from ._store import Catalog

__all__ = ["BROWSE_TOOL", "CALL_TOOL", "META_TOOLS", "SEARCH_TOOL", "MetaTools"]

SEARCH_TOOL: Final = "search_tools"
BROWSE_TOOL: Final = "browse_tools"
CALL_TOOL: Final = "call_tool"
META_TOOLS: Final = (SEARCH_TOOL, BROWSE_TOOL, CALL_TOOL)
MAX_RESULTS: Final = 20
INVALID_ARGUMENTS: Final[str] = ErrorCode.INVALID_ARGUMENTS.value
_PROBLEMS_SHOWN: Final = 5


def _error(code: str, message: str, **extra: Any) -> Refusal:
    return Refusal(code, message, **extra)


class MetaTools:
    """The meta-tools' `tools/list` entries and answers, over one catalog, index and set of decisions."""

    def __init__(self, catalog: Catalog, disclosure: Disclosure, index: CatalogIndex, *, browse_page: int = 50) -> None:
        self.catalog = catalog
        self.disclosure = disclosure
        self.index = index
        self.browse_page = browse_page
        self.categories = CategoryIndex(catalog, include=self._is_tool)
        self._validators: dict[str, Any] = {}

    # -- tools/list ----------------------------------------------------------------------------------------
    @staticmethod
    def entries(describe_tool: str) -> list[dict[str, Any]]:
        """The listed meta-tools (`describe_tool`'s entry comes from the extension): small real schemas."""
        return [
            {
                "name": SEARCH_TOOL,
                "description": "Find tools for a task, in any language. Returns the best matches (name, category, "
                "one line, match: strong, possible or weak); none when nothing fits. Then describe_tools, then call.",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "query": {"type": "string", "description": "What you want to do"},
                        "limit": {"type": "integer", "minimum": 1, "maximum": MAX_RESULTS, "default": 5},
                        "category": {"type": "string", "description": "Only this category (see browse_tools)"},
                        "like": {"type": "string", "description": "A tool name: find tools similar to it"},
                    },
                    "additionalProperties": False,
                },
                "annotations": {"readOnlyHint": True, "openWorldHint": False},
            },
            {
                "name": BROWSE_TOOL,
                "description": "List the tool categories, or the tools in one category (paged: pass nextCursor).",
                "inputSchema": {
                    "type": "object",
                    "properties": {"category": {"type": "string"}, "cursor": {"type": "string"}},
                    "additionalProperties": False,
                },
                "annotations": {"readOnlyHint": True, "openWorldHint": False},
            },
            {
                "name": CALL_TOOL,
                "description": f"Call a tool by name with its arguments, after {describe_tool} has returned its "
                "definition. Arguments are checked against the tool's inputSchema first.",
                "inputSchema": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}, "arguments": {"type": "object"}},
                    "required": ["name"],
                    "additionalProperties": False,
                },
            },
        ]

    # -- search ----------------------------------------------------------------------------------------------
    def _allowed(self, caller: Caller) -> Callable[[str], bool] | None:
        if self.disclosure.permission is None:
            return None
        # Decided on the loop, once per request; the index applies it before ranking and counting.
        visible = frozenset(n for n in self.catalog.names() if self.disclosure.visible(caller, n))
        return visible.__contains__

    async def search(self, caller: Caller, arguments: Mapping[str, Any]) -> dict[str, Any]:
        await self.disclosure.look_up(None)
        query, like, category = arguments.get("query"), arguments.get("like"), arguments.get("category")
        limit = arguments.get("limit", 5)
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_RESULTS:
            raise _error(INVALID_ARGUMENTS, f"limit must be an integer from 1 to {MAX_RESULTS}.")
        for label, value in (("query", query), ("like", like), ("category", category)):
            if value is not None and not isinstance(value, str):
                raise _error(INVALID_ARGUMENTS, f"{label} must be a string.")
        if not (query or "").strip() and not like:
            raise _error(
                INVALID_ARGUMENTS,
                'Say what you want to do: {"query": "open a pull request"}, or {"like": "<tool name>"} for tools '
                "similar to one you know. browse_tools lists the categories.",
            )
        allowed = self._allowed(caller)
        if category is not None:
            known = [name for name, _ in await self.index.categories(allowed)]
            if category not in known:
                raise _error(
                    ErrorCode.UNKNOWN_CATEGORY, f"No category '{category}'.", valid_categories=[c for c in known if c]
                )
        if like:
            try:
                hits = await self.index.similar(like, limit=limit, allowed=allowed)
            except KeyError:
                entry = (await self.disclosure.not_found(caller, [like]))[like]
                closest = entry["available_tools"][:5]
                raise _error(ErrorCode.TOOL_NOT_FOUND, entry["error"] + ".", closest_names=closest) from None
            if category is not None:
                hits = [h for h in hits if h.category == category]
            results = [{"name": h.name, "category": h.category, "description": h.summary} for h in hits]
            return {"results": results, "total": len(results), "like": like}
        found = await self.index.search(str(query), limit=limit, category=category, allowed=allowed)
        results = [self._row(h) for h in found.hits]
        answer: dict[str, Any] = {}
        if results and not any(h.match == "strong" for h in found.hits):
            # Said before the rows, so a model reads it before it reads a name that looks right.
            answer["note"] = (
                "No tool here clearly does this. The closest ones follow; check their descriptions before using "
                "one, or tell the user no tool fits."
            )
        answer.update(results=results, total=found.total)
        if found.abstained:
            answer["abstained"] = True
            answer["hint"] = (
                "No tool here does that: none matches the query's words or meaning well. Tell the user, or if "
                "you expected one, browse a category: " + ", ".join(c for c in found.browse if c)[:600]
            )
        else:
            if found.ties:
                # Near-ties: the model must choose between close scores, so say what tells them apart.
                answer["near_tie"] = {
                    "note": "these match about equally; pick by what only each one does",
                    **{name: words for name, words in found.ties.items()},
                }
            answer["next"] = "describe_tools with the names you will call, then call them"
        return answer

    def _row(self, hit: SearchHit) -> dict[str, Any]:
        """One result: name, category, one line, and how well it matches (`strong`, `possible`, `weak`)."""
        row: dict[str, Any] = {"name": hit.name, "category": hit.category, "description": hit.summary}
        row["match"] = hit.match
        if hit.match == "weak" and self._destructive(hit.name):
            row["warning"] = (
                "destructive (destructiveHint) and only a weak match for the request: do not call it unless the "
                "user clearly asked for exactly this"
            )
        return row

    def _destructive(self, name: str) -> bool:
        full = self.catalog.full(name) or {}
        annotations = full.get("annotations")
        return isinstance(annotations, dict) and annotations.get("destructiveHint") is True

    # -- browse ----------------------------------------------------------------------------------------------
    async def browse(self, caller: Caller, arguments: Mapping[str, Any]) -> dict[str, Any]:
        await self.disclosure.look_up(None)
        category, cursor = arguments.get("category"), arguments.get("cursor")
        keep = self._visible(caller)
        if category is None:
            return {"categories": self._category_rows(keep)}
        if not isinstance(category, str):
            raise _error(INVALID_ARGUMENTS, "category must be a string.")
        key = "" if category == "(uncategorized)" else category
        start = 0
        if cursor is not None:
            position = decode_cursor("browse", cursor) if isinstance(cursor, str) else None
            if position is None:
                raise _error(INVALID_ARGUMENTS, "Invalid cursor: browse again without one.")
            start = position
        page = self.categories.page(key, start, self.browse_page, keep)
        # A category none of whose tools this caller may see does not exist for it (nor is its name confirmed).
        if page is None or (not page.names and start == 0):
            valid = [row["name"] for row in self._category_rows(keep)]
            raise _error(ErrorCode.UNKNOWN_CATEGORY, f"No category '{category}'.", valid_categories=valid)
        tools = [{"name": n, "description": (self.catalog.minimal(n) or {}).get("description", "")} for n in page.names]
        answer: dict[str, Any] = {"category": category, "tools": tools}
        if page.next_position is not None:
            answer["nextCursor"] = encode_cursor("browse", page.next_position)
        return answer

    def _visible(self, caller: Caller) -> Callable[[str], bool] | None:
        """Whether `caller` may see a name, asked one name at a time (a page asks only about the names it shows)."""
        if self.disclosure.permission is None:
            return None
        return lambda name: self.disclosure.visible(caller, name)

    def _category_rows(self, keep: Callable[[str], bool] | None) -> list[dict[str, Any]]:
        """Each category with a visible tool: its count and three examples, the largest first."""
        rows: list[tuple[str, int]] = []
        for name, members in self.categories.categories().items():
            count = len(members) if keep is None else sum(1 for n in members if keep(n))
            if count:
                rows.append((name, count))
        rows.sort(key=lambda row: (-row[1], row[0]))
        return [
            {
                "name": name or "(uncategorized)",
                "count": count,
                "description": "e.g. " + ", ".join(self.categories.first(name, 3, keep)),
            }
            for name, count in rows
        ]

    def _is_tool(self, name: str) -> bool:
        return name not in META_TOOLS and name != self.disclosure.describe_tool

    # -- call_tool -------------------------------------------------------------------------------------------
    @staticmethod
    def unwrap(arguments: Mapping[str, Any]) -> tuple[str, dict[str, Any]] | Refusal:
        """`call_tool`'s target and its arguments, or the error document for a malformed request."""
        name, inner = arguments.get("name"), arguments.get("arguments", {})
        if not isinstance(name, str) or not name:
            return _error(
                INVALID_ARGUMENTS,
                'call_tool takes {"name": "<tool>", "arguments": {...}}: name is the tool\'s name as search_tools '
                "or browse_tools gave it.",
            )
        if inner is None:
            inner = {}
        if not isinstance(inner, dict):
            return _error(INVALID_ARGUMENTS, "arguments must be a JSON object of the tool's parameters.", tool=name)
        return name, inner

    def check_arguments(self, name: str, arguments: dict[str, Any]) -> Refusal | None:
        """None when `arguments` satisfy the tool's inputSchema; else which field broke which rule, and the rule."""
        full = self.catalog.full(name)
        if full is None:
            return None
        schema = full["inputSchema"]
        key = f"{name}@{full['version']}"
        validator = self._validators.get(key)
        if validator is None:
            if len(self._validators) > 4096:
                self._validators.clear()
            validator = self._validators[key] = jsonschema_rs.validator_for(schema)
        problems = []
        for error in validator.iter_errors(arguments):
            rule_path = [str(p) for p in error.schema_path]
            problems.append(
                {
                    "field": "/".join(map(str, error.instance_path)) or "(arguments)",
                    "rule": rule_path[-1] if rule_path else "",
                    "message": error.message,
                    "schema": _fragment(schema, rule_path[:-1]),
                }
            )
            if len(problems) == _PROBLEMS_SHOWN:
                break
        if not problems:
            return None
        first = problems[0]
        return _error(
            INVALID_ARGUMENTS,
            f"Arguments for '{name}' do not match its inputSchema: {first['field']}: {first['message']}. "
            "Nothing was run; fix the arguments and call again.",
            tool=name,
            problems=problems,
        )


def _fragment(schema: Any, path: list[str]) -> Any:
    """The part of `schema` at a schema path (the rule's parent), kept small for the model to read."""
    node = schema
    for part in path:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    if isinstance(node, dict):
        node = {k: v for k, v in node.items() if k not in ("properties", "$defs", "definitions")} or node
    return node
