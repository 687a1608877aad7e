"""Every knob of the ranking, with the calibrated defaults (benchmarks/search.py says on what)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

__all__ = ["SearchConfig", "default_config"]


@dataclass(frozen=True, slots=True)
class SearchConfig:
    """Every knob of the ranking; the defaults are the calibrated ones (benchmarks/search.py, dev set only)."""

    k1: float = 1.2
    b: float = 0.75
    # Field weights (term frequency multipliers).
    name_weight: float = 4.0
    title_weight: float = 2.0
    summary_weight: float = 2.0
    description_weight: float = 0.5
    parameter_name_weight: float = 1.0
    parameter_description_weight: float = 0.2
    example_weight: float = 1.0
    category_weight: float = 0.5
    fields: bool = True  # False: one bag of words (name counted twice), the classic tool BM25
    stemming: bool = True
    synonyms: bool = True
    synonym_weight: float = 0.4
    translations: bool = True
    spelling: bool = True
    fuzzy_names: bool = True
    semantic_weight: float = 0.7  # share of the fused score given to the cosine (hybrid; chosen on LiveMCPBench)
    cjk_unknown_importance: float = 0.3
    # A long task ("find X, then write Y") is also embedded clause by clause: a tool's cosine is this share of its
    # best clause's plus the rest of the whole query's (a multi-step task's one vector blurs its steps).
    clause_weight: float = 0.5
    # Hits whose fused scores are within this share of the best one are near-ties (SearchResult.ties).
    tie_margin: float = 0.05
    abstain: bool = True
    # Lexical only: abstain when the best hit explains less than this share of the query (IDF-weighted words) and
    # answers fewer than this many of its known words. Words alone tell answerable from unanswerable poorly: on
    # MetaTool, requiring 2 words abstained on 14% of answerable queries; 1 word keeps that under 2% (and abstains
    # less often: docs/search.md).
    abstain_coverage_lexical: float = 0.14
    abstain_words_lexical: int = 1
    # ... or, with vectors, less than this share while no visible tool's cosine similarity reaches the other.
    abstain_coverage: float = 0.3
    abstain_cosine: float = 0.25
    # Confidence bands of each hit (`bands.band`). Chosen by `python -m benchmarks.search_bands --calibrate` on
    # LiveMCPBench, MetaTool and our dev set together (never one set): among the grid points where every one of those
    # sets keeps >= 70% of its unanswerable queries free of strong rows and <= 10% of its strong rows wrong, the one
    # with the most right first hits marked strong (mean over the sets); checked on our held-out sets (heldout,
    # bands). Precision comes first: the model cannot also mark 80% of right first hits strong, and no richer evidence
    # tried (margins, single-ranking ranks, rare words, categories, hubness, stability, logistic models; `--study`)
    # could either, across sets or even fit on each set (docs/search.md, "Richer evidence").
    # Hybrid: strong = the first hit, leading the second by this share of its score, with a cosine this high ...
    band_lead: float = 0.05
    band_strong_cosine: float = 0.6
    # ... or standing this many standard deviations above the query's cosines to the catalog and answering this
    # share of the query's weighted words.
    band_strong_z: float = 4.5
    band_strong_coverage: float = 0.3
    # Weak: a cosine and a coverage both this low (1-11% of such rows were right on the sets; 64-76% of the rows
    # offered for unanswerable queries are weak).
    band_weak_cosine: float = 0.25
    band_weak_coverage: float = 0.4
    # Lexical (a cold process, or a model that failed): strong = the first hit, leading by this share, answering
    # this share of the query's weighted words; weak below the last (a long task spreads its words over several
    # tools, so a higher floor called most right tools of LiveMCPBench weak).
    band_lead_lexical: float = 0.2
    band_strong_coverage_lexical: float = 0.5
    band_weak_coverage_lexical: float = 0.1


def default_config(**changes: Any) -> SearchConfig:
    """The calibrated configuration with some fields changed (used by the benchmark's ablations)."""
    return replace(SearchConfig(), **changes)
