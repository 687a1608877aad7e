"""How sure a search is of each hit: "strong", "possible" or "weak", from what the ranking already measured.

A hit's band reads: its cosine to the query and how far that cosine stands above the query's cosines to the whole
catalog (`z`, in standard deviations: each catalog's texts sit in their own cosine range; hybrid ranking only), the
share of the query's IDF-weighted words it answers (`coverage`), and, for the first hit, its lead over the second
(`lead`, a share of its fused score). Only the first hit can be strong, and only when it leads: two near-tied
hits are two guesses. The thresholds are `SearchConfig.band_*`, chosen by `python -m benchmarks.search_bands
--calibrate` on public sets and ours together (docs/search.md, "Confidence bands"). Knows figures, nothing of tools.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Final, Literal

from .config import SearchConfig
from .documents import SearchDocument
from .results import SearchHit

__all__ = ["BANDS", "Match", "band", "banded_hits"]

Match = Literal["strong", "possible", "weak"]
BANDS: Final[tuple[Match, ...]] = ("strong", "possible", "weak")


def band(config: SearchConfig, *, cosine: float | None, z: float | None, coverage: float, lead: float) -> Match:
    """The band of one hit. `cosine`/`z` are None for a lexical answer; `lead` is negative for every hit but the
    first."""
    c = config
    if cosine is None or z is None:
        if lead >= c.band_lead_lexical and coverage >= c.band_strong_coverage_lexical:
            return "strong"
        return "weak" if coverage < c.band_weak_coverage_lexical else "possible"
    if lead >= c.band_lead and (
        cosine >= c.band_strong_cosine or (z >= c.band_strong_z and coverage >= c.band_strong_coverage)
    ):
        return "strong"
    return "weak" if cosine < c.band_weak_cosine and coverage < c.band_weak_coverage else "possible"


def banded_hits(
    config: SearchConfig,
    ranked: Sequence[tuple[int, float]],
    docs: Sequence[SearchDocument | None],
    cosines: Mapping[int, float] | None,
    coverage: Callable[[int], float],
    spread: tuple[float, float],
) -> list[SearchHit]:
    """The ranked slots (best first, with fused scores) as hits with their bands. `cosines`: each candidate slot's
    cosine (None: lexical ranking); `spread`: the mean and standard deviation of the query's cosines to the catalog."""
    best = ranked[0][1] if ranked and ranked[0][1] > 0 else 1.0
    # The first hit's lead over the second, as a share of its score: a clear winner, or one of several.
    lead = 1.0 - (ranked[1][1] / best if len(ranked) > 1 else 0.0)
    hits = []
    for rank, (slot, score) in enumerate(ranked):
        doc = docs[slot]
        assert doc is not None
        covered = round(coverage(slot), 4)
        cos = None if cosines is None else round(cosines.get(slot, 0.0), 4)
        z = None if cos is None else round((cos - spread[0]) / spread[1], 3)
        match = band(config, cosine=cos, z=z, coverage=covered, lead=lead if rank == 0 else -1.0)
        hits.append(SearchHit(doc.name, doc.category, doc.summary, round(score, 4), match, cos, covered, z))
    return hits
