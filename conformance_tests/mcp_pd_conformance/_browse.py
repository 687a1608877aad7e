"""Walking catalog mode's browse_tools (interpretation I-16): the categories, then every page of each (bounded).

Browsing authorizes nothing. The catalog profile judges the walk (catalog/browse); the core learns from it the tools
behind call_tool, so that its reads, gates and grant checks run on them too (`adopt_catalog`), with every call of
such a tool sent through call_tool.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ._checks import Discovery
from ._documents import Answer, answer
from ._probe import Exchange, Peer, short

__all__ = ["BROWSE", "CALL", "DETAIL", "Catalog", "adopt_catalog", "walk"]

BROWSE, CALL = "browse_tools", "call_tool"
DETAIL = ("inputSchema", "outputSchema", "examples", "input_schema")  # never in a compact answer
MAX_PAGES = 60  # browse pages over all categories

Meta = Callable[[str, dict[str, Any]], Awaitable[Answer]]


@dataclass
class Catalog:
    """What browsing found: each category's tools in order, their one-line descriptions, and what was off."""

    members: dict[str, list[str]] = field(default_factory=dict)
    summaries: dict[str, str] = field(default_factory=dict)
    problems: list[tuple[str, Exchange]] = field(default_factory=list)
    pages: int = 0

    @property
    def names(self) -> list[str]:
        return list(dict.fromkeys(n for names in self.members.values() for n in names))

    def category(self, name: str) -> str | None:
        return next((c for c, names in self.members.items() if name in names), None)


async def walk(meta: Meta) -> Catalog:
    """browse_tools {}, then every page of every category it names (at most `MAX_PAGES` pages in all)."""
    found = Catalog()
    top = await meta(BROWSE, {})
    categories = top.mapping.get("categories")
    if top.problem or top.is_error or not isinstance(categories, list) or not categories:
        found.problems.append((f"browse_tools {{}}: {top.problem or short(top.document, 160)}", top.exchange))
        return found
    for category in categories:
        name, count = (category.get("name"), category.get("count")) if isinstance(category, dict) else (None, None)
        if not isinstance(name, str) or not isinstance(count, int) or not isinstance(category.get("description"), str):
            found.problems.append((f"a category is not {{name, count, description}}: {short(category)}", top.exchange))
            continue
        members = await _category(meta, found, name)
        if len(members) != count or len(set(members)) != len(members):
            found.problems.append(
                (
                    f"category {name} counts {count} tools, but its pages held {len(members)} names "
                    f"({len(set(members))} distinct)",
                    top.exchange,
                )
            )
        found.members[name] = list(dict.fromkeys(members))
    return found


async def _category(meta: Meta, found: Catalog, name: str) -> list[str]:
    members: list[str] = []
    cursor: str | None = None
    seen: set[str] = set()
    while found.pages < MAX_PAGES:
        found.pages += 1
        arguments = {"category": name} | ({"cursor": cursor} if cursor else {})
        page = await meta(BROWSE, arguments)
        tools = page.mapping.get("tools")
        if page.problem or page.is_error or not isinstance(tools, list):
            what = page.problem or short(page.document, 160)
            found.problems.append((f"browse_tools {json.dumps(arguments)}: {what}", page.exchange))
            break
        for tool in tools:
            if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
                found.problems.append((f"category {name}: an entry without a name: {short(tool)}", page.exchange))
                continue
            detail = [k for k in DETAIL if k in tool]
            if detail:
                found.problems.append((f"{tool['name']} in browse_tools carries {detail}", page.exchange))
            members.append(tool["name"])
            found.summaries.setdefault(tool["name"], str(tool.get("description") or ""))
        cursor = page.mapping.get("nextCursor")
        if not isinstance(cursor, str) or not cursor:
            break
        if cursor in seen:
            found.problems.append((f"category {name}: nextCursor {short(cursor, 40)!r} repeated", page.exchange))
            break
        seen.add(cursor)
    return members


async def adopt_catalog(peer: Peer, disc: Discovery) -> dict[str, str]:
    """In catalog mode (browse_tools and call_tool are the extension's own tools and nothing else is listed), the
    tools browse_tools names become `disc.behind`; returns the route of each: its calls go through call_tool."""
    if disc.names or not {BROWSE, CALL} <= set(disc.meta) or disc.base is None:
        return {}

    async def meta(tool: str, arguments: dict[str, Any]) -> Answer:
        return answer(await peer.call(tool, arguments))

    catalog = await walk(meta)
    listed = {t["name"] for t in disc.tools}
    disc.behind = [
        {"name": name, "description": catalog.summaries.get(name, "")} for name in catalog.names if name not in listed
    ]
    return {tool["name"]: CALL for tool in disc.behind}
