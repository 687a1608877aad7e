""" "Did you mean" for unknown tool names (spec 6.3, interpretations I-4), in bounded time at any catalog size.

A read may name dozens of unknown tools, and it runs on the event loop every other client shares, so the work
per read is capped: names are matched against a candidate pool drawn from a token index (never the whole
catalog past `_SCAN_LIMIT` tools), by rapidfuzz's C++ matcher, for at most `_RANKED_PER_READ` names a read.
Knows nothing about sessions, the SDK or files.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Final

from rapidfuzz import fuzz, process

from ._model import AVAILABLE_TOOLS_LIMIT

__all__ = ["NameSuggester"]

# A catalog up to this size is scanned whole (about 0.4 ms a name at 5,000 tools); a larger one only
# through the token index.
_SCAN_LIMIT: Final = 5_000
# Candidates one name is matched against when drawn from the index.
_POOL_LIMIT: Final = 1_000
# Unknown names a single read ranks; the rest get the alphabetical head (bounded work per read).
_RANKED_PER_READ: Final = 8
_CUTOFF: Final = 50.0
_TOKEN: Final = re.compile(r"[a-z0-9]+")


def _tokens(name: str) -> set[str]:
    # Split on anything but letters and digits, and at camelCase humps, so `getIssue` meets `get_issue`.
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).lower()
    return {t for t in _TOKEN.findall(spaced) if len(t) >= 3} | {spaced[:3]}


class NameSuggester:
    """Close names for unknown ones over a fixed list of names (rebuild it when the catalog changes)."""

    def __init__(self, names: Iterable[str]) -> None:
        self.names: list[str] = sorted(set(names))
        self._lowered = [n.lower() for n in self.names]
        self._index: dict[str, list[int]] = {}
        if len(self.names) > _SCAN_LIMIT:
            for position, name in enumerate(self.names):
                for token in _tokens(name):
                    self._index.setdefault(token, []).append(position)

    def start_read(self) -> _ReadBudget:
        """A per-read budget: the first `_RANKED_PER_READ` unknown names are ranked, the rest are not."""
        return _ReadBudget(self)

    def rank(self, name: str, visible: Callable[[str], bool] | None, limit: int = AVAILABLE_TOOLS_LIMIT) -> list[str]:
        """Up to `limit` visible names, the closest to `name` first, then the rest alphabetically."""
        pool = self._pool(name)
        # A list is matched by position; a pool from the index maps positions to names.
        choices: list[str] | dict[int, str] = self._lowered if pool is None else {i: self._lowered[i] for i in pool}
        close: list[str] = []
        for _, _, position in process.extract(
            name.lower(), choices, scorer=fuzz.ratio, limit=limit * 2, score_cutoff=_CUTOFF
        ):
            candidate = self.names[position]
            if visible is None or visible(candidate):
                close.append(candidate)
                if len(close) == limit:
                    return close
        return self.head(visible, limit, close)

    def head(self, visible: Callable[[str], bool] | None, limit: int, first: Sequence[str] = ()) -> list[str]:
        """`first`, then visible names in alphabetical order, `limit` in all."""
        result = list(first)
        taken = set(first)
        for candidate in self.names:
            if len(result) >= limit:
                break
            if candidate not in taken and (visible is None or visible(candidate)):
                result.append(candidate)
        return result

    def _pool(self, name: str) -> Sequence[int] | None:
        """Positions to match `name` against (None: every name)."""
        if not self._index:
            return None
        pool: set[int] = set()
        for token in _tokens(name):
            pool.update(self._index.get(token, ())[:_POOL_LIMIT])
            if len(pool) >= _POOL_LIMIT:
                break
        return sorted(pool)[:_POOL_LIMIT]


class _ReadBudget:
    __slots__ = ("_left", "_suggester")

    def __init__(self, suggester: NameSuggester) -> None:
        self._suggester = suggester
        self._left = _RANKED_PER_READ

    def suggest(self, name: str, visible: Callable[[str], bool] | None) -> list[str]:
        if self._left <= 0:
            return self._suggester.head(visible, AVAILABLE_TOOLS_LIMIT)
        self._left -= 1
        return self._suggester.rank(name, visible)
