"""Which tool document sits in which slot, and which names each category holds.

Postings and vectors are indexed by slot (a row number), so a removed document's slot is reused rather than
shifting every row after it. `allowed` is applied here for counting and visibility, so a tool it rejects is never
counted either. Knows documents and names, nothing of ranking, vectors or the SDK.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from .documents import SearchDocument

__all__ = ["Allowed", "Slots"]

Allowed = Callable[[str], bool] | None


class Slots:
    """The slot table of a `SearchIndex` (not thread-safe: the index holds its lock around every use)."""

    def __init__(self) -> None:
        self.docs: list[SearchDocument | None] = []  # by slot; None where a slot is free
        self.by_name: dict[str, int] = {}
        self._free: list[int] = []
        self._by_category: dict[str, set[str]] = {}

    def __len__(self) -> int:
        return len(self.by_name)

    def __contains__(self, name: object) -> bool:
        return name in self.by_name

    def live(self) -> Iterator[SearchDocument]:
        return (doc for doc in self.docs if doc is not None)

    def document(self, name: str) -> SearchDocument:
        slot = self.by_name.get(name)
        doc = self.docs[slot] if slot is not None else None
        if doc is None:
            raise KeyError(name)
        return doc

    def claim(self, name: str) -> int:
        """A slot for a new document named `name`: a freed one, else a new row at the end (its doc still None)."""
        slot = self._free.pop() if self._free else len(self.docs)
        if slot == len(self.docs):
            self.docs.append(None)
        self.by_name[name] = slot
        return slot

    def release(self, name: str) -> int | None:
        """Free the slot of `name` (None when unknown); the caller clears what it indexed at that slot first."""
        slot = self.by_name.pop(name, None)
        if slot is not None:
            self.uncategorize(slot)
            self.docs[slot] = None
            self._free.append(slot)
        return slot

    def categorize(self, slot: int) -> None:
        doc = self.docs[slot]
        if doc is not None:
            self._by_category.setdefault(doc.category, set()).add(doc.name)

    def uncategorize(self, slot: int) -> None:
        doc = self.docs[slot]
        if doc is None:
            return
        members = self._by_category.get(doc.category)
        if members is not None:
            members.discard(doc.name)
            if not members:
                del self._by_category[doc.category]

    def recategorize(self) -> None:
        self._by_category = {}
        for slot in self.by_name.values():
            self.categorize(slot)

    def visible(self, slot: int, allowed: Allowed, category: str | None) -> bool:
        doc = self.docs[slot]
        if doc is None:
            return False
        if category is not None and doc.category != category:
            return False
        return allowed is None or allowed(doc.name)

    def categories(self, allowed: Allowed = None) -> list[tuple[str, int]]:
        """(category, visible tool count), largest first; a category with no visible tool is not listed."""
        counts: dict[str, int] = {}
        for cat, members in self._by_category.items():
            n = len(members) if allowed is None else sum(1 for name in members if allowed(name))
            if n:
                counts[cat] = n
        return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
