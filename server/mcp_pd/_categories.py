"""Catalog mode's categories: each category's tools in name order, rebuilt only when the catalog changes.

`browse_tools` pages walk one category's list from the cursor's position and stop once the page is full, so a
page costs its own length (plus the hidden tools it steps over), not the catalog's size: paging through a category
of N tools is O(N), where re-filtering the whole catalog for every page made it O(N^2). Knows the catalog's names
and categories; nothing of callers, cursors or what a page looks like on the wire.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ._store import Catalog

__all__ = ["CategoryIndex", "Page"]

Keep = Callable[[str], bool]


class Page:
    """Up to `size` names of one category from a position, and where the next page starts (None: this is the last)."""

    __slots__ = ("names", "next_position")

    def __init__(self, names: list[str], next_position: int | None) -> None:
        self.names = names
        self.next_position = next_position


class CategoryIndex:
    """Each category's member names, sorted; keyed on the catalog's revision and its files' generation."""

    def __init__(self, catalog: Catalog, *, include: Keep) -> None:
        self.catalog = catalog
        # Which names are tools to browse at all (the meta-tools and the describe tool are not).
        self._include = include
        self._key: tuple[int, int] | None = None
        self._members: dict[str, list[str]] = {}

    def _current(self) -> dict[str, list[str]]:
        # A file edit rebuilds entries without bumping the revision, and can move a tool to another category folder.
        key = (self.catalog.revision, self.catalog.store.generation)
        if key != self._key:
            members: dict[str, list[str]] = {}
            for name in self.catalog.names():
                if self._include(name):
                    members.setdefault(self.catalog.category(name), []).append(name)
            for names in members.values():
                names.sort()
            self._members, self._key = members, key
        return self._members

    def categories(self) -> dict[str, Sequence[str]]:
        """Every category ('' for tools without one) and its members in name order, hidden tools included."""
        return dict(self._current())

    def page(self, category: str, start: int, size: int, keep: Keep | None) -> Page | None:
        """The visible members of `category` from position `start`; None when the category does not exist.

        Positions count every member, visible or not, so a cursor never says how many tools a caller cannot see.
        """
        members = self._current().get(category)
        if members is None:
            return None
        names: list[str] = []
        position = max(start, 0)
        while position < len(members):
            name = members[position]
            if keep is None or keep(name):
                if len(names) == size:
                    return Page(names, position)  # one more visible tool: the next page starts at it
                names.append(name)
            position += 1
        return Page(names, None)

    def first(self, category: str, count: int, keep: Keep | None) -> list[str]:
        """The first `count` visible members of `category` (the examples a category listing shows)."""
        page = self.page(category, 0, count, keep)
        return page.names if page is not None else []
