"""What a search answers: hits best first, or an abstention with the categories to browse."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["SearchHit", "SearchResult"]


@dataclass(frozen=True, slots=True)
class SearchHit:
    name: str
    category: str
    summary: str
    score: float


@dataclass(frozen=True, slots=True)
class SearchResult:
    """Hits best first; `total` visible tools matched; on abstention no hits, a reason and categories to browse.

    `ties`: when the best hits score within `SearchConfig.tie_margin` of each other, each of them (three at most)
    with the words of its name and one-liner that the others lack: what tells them apart.
    """

    hits: list[SearchHit]
    total: int
    abstained: bool = False
    reason: str = ""
    browse: list[str] = field(default_factory=list)
    confidence: float = 0.0
    ties: dict[str, list[str]] = field(default_factory=dict)
