"""What a search answers: hits best first, or an abstention with the categories to browse."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

__all__ = ["SearchHit", "SearchResult"]


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One tool found. `match` is how sure the ranking is (`bands.band`); `cosine` and `cosine_z` (hybrid answers
    only: the cosine, and how many standard deviations it stands above the query's cosines to the whole catalog) and
    `coverage` (the share of the query's weighted words it answers) are what the band was read from."""

    name: str
    category: str
    summary: str
    score: float
    match: Literal["strong", "possible", "weak"] = "possible"
    cosine: float | None = None
    coverage: float = 0.0
    cosine_z: float | None = None


@dataclass(frozen=True, slots=True)
class SearchResult:
    """Hits best first; `total` visible tools matched; on abstention no hits, a reason and categories to browse.

    `ties`: when the best hits score within `SearchConfig.tie_margin` of each other, each of them (three at most)
    with the words of its name and one-liner that the others lack: what tells them apart. `ranking`: "hybrid" or
    "lexical" (what answered); `degraded`: why a hybrid index answered lexically (its model failed for this query).
    """

    hits: list[SearchHit]
    total: int
    abstained: bool = False
    reason: str = ""
    browse: list[str] = field(default_factory=list)
    confidence: float = 0.0
    ties: dict[str, list[str]] = field(default_factory=dict)
    ranking: str = "lexical"
    degraded: str = ""
