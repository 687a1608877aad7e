"""Near-ties: when the best hits score alike, the words of each one's name, one-liner and category that the
others lack, so a model can choose by them (two instances of one server differ by their category).

Knows documents and words, nothing of ranking.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .documents import SearchDocument
from .text import HUMP, RUN, STOP, stem

__all__ = ["distinguishing_words"]


def distinguishing_words(
    band: Sequence[SearchDocument], idf: Callable[[str], float], *, stemming: bool = True
) -> dict[str, list[str]]:
    """Tool name -> up to four words only it has among `band`, rarest first; empty unless two tools have some."""
    words: dict[str, dict[str, str]] = {}  # name -> term -> the word as written
    for doc in band:
        name = HUMP.sub(" ", doc.name).replace("_", " ").replace("-", " ")
        found: dict[str, str] = {}
        for word in RUN.findall(f"{name} {doc.summary} {doc.category.replace('-', ' ').replace('_', ' ')}"):
            lowered = word.casefold()  # as written (normalize would split GitHub into two words)
            if lowered in STOP or len(lowered) < 3:
                continue
            found.setdefault(stem(lowered) if stemming else lowered, lowered)
        words[doc.name] = found
    ties: dict[str, list[str]] = {}
    for doc in band:
        others = set().union(*(words[o.name] for o in band if o.name != doc.name))
        own = [t for t in words[doc.name] if t not in others]
        own.sort(key=lambda t: -idf(t))
        if own:
            ties[doc.name] = [words[doc.name][t] for t in own[:4]]
    return ties if len(ties) >= 2 else {}
