"""Spelling repair: an unknown query word becomes the closest word the catalog uses (`kubernets` -> kubernetes),
and a query that looks like a tool name ranks the close names first (`create_isue` -> create_issue).

Damerau-Levenshtein through rapidfuzz, one edit in four letters, the more frequent term on a tie; answers are
cached per word. Knows words and terms, nothing of documents.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from rapidfuzz import fuzz, process
from rapidfuzz.distance import DamerauLevenshtein

from .postings import Postings
from .text import stem

__all__ = ["Spelling", "name_matches"]


class Spelling:
    """The catalog's surface words (lower case, unstemmed) -> their index term."""

    def __init__(self, stemming: bool) -> None:
        self.stemming = stemming
        self._words: dict[str, str] = {}
        self._registered: set[str] = set()  # texts whose words are in _words already
        self._word_list: list[str] | None = None
        self._corrections: dict[str, str | None] = {}

    def register(self, text: str, surface: tuple[str, ...]) -> None:
        if text in self._registered:
            return
        self._registered.add(text)
        for w in surface:
            if w not in self._words:
                self._words[w] = stem(w) if self.stemming else w

    def invalidate(self) -> None:
        """The catalog changed: words may have come or gone."""
        self._word_list = None
        self._corrections.clear()

    def correct(self, word: str, postings: Postings) -> str | None:
        """The index term of the closest known word to an unknown query word (one edit in four letters,
        transpositions count one), the more frequent term on a tie; None when nothing is that close."""
        if word in self._corrections:
            return self._corrections[word]
        found = None
        if word.isascii() and word.isalpha() and 4 <= len(word) <= 40:
            if self._word_list is None:
                self._word_list = [w for w, t in self._words.items() if t in postings]
            cutoff = 0.74 if len(word) <= 5 else 0.8
            best: tuple[float, int] | None = None
            for candidate, similarity, _ in process.extract(
                word, self._word_list, scorer=DamerauLevenshtein.normalized_similarity, limit=8, score_cutoff=cutoff
            ):
                term = self._words[candidate]
                rank = (round(similarity, 3), postings.df(term))
                if best is None or rank > best:
                    best, found = rank, term
        if len(self._corrections) > 10_000:
            self._corrections.clear()
        self._corrections[word] = found
        return found


def name_matches(query: str, slots: Mapping[str, int], visible: Callable[[int], bool]) -> dict[int, float]:
    """A query that looks like a tool name (one word with `_`, `-` or humps): the slots of close visible names,
    with a bonus (2 for the exact name, up to 1 for a close one)."""
    text = query.strip()
    if not text or " " in text or not re.search(r"[_\-]|[a-z][A-Z]", text):
        return {}
    bonus: dict[int, float] = {}
    exact = slots.get(text)
    if exact is not None and visible(exact):
        bonus[exact] = 2.0
    for name, score, _ in process.extract(text.lower(), slots.keys(), scorer=fuzz.ratio, limit=20, score_cutoff=75):
        slot = slots[name]
        if visible(slot):
            bonus[slot] = max(bonus.get(slot, 0.0), (score - 70) / 30)
    return bonus
