"""Confidence bands of search hits (issue 35): how often a "strong" row is right, per set, and the calibration.

Each query of every set is searched once per ranking (hybrid: the shipped model, vectors from the on-disk cache;
lexical: a cold process), and each hit's figures (cosine, coverage, score over the best hit's) are kept, so any
thresholds can be re-scored without searching again. Per set and ranking:

- `unanswerable_no_strong`: the share of queries no tool answers (kind `none`) that got no strong row (goal >= 70%);
- `right_top1_strong`: of the answerable queries whose first hit is right, the share where it is strong (>= 80%);
- `strong_wrong`: of all strong rows (any rank, any query), the share naming a tool that does not answer (<= 10%);
- `answerable_strong`: the share of answerable queries with at least one strong row (reported).

Calibration (`--calibrate`): a grid over `SearchConfig.band_*`, chosen on the public sets (LiveMCPBench, MetaTool)
and our dev set together: of the points that keep, on every one of them, >= 70% of unanswerable queries free of
strong rows and <= 10% of strong rows wrong, the one marking the most right first hits strong (mean over the sets). Our
held-out sets (`heldout`; `bands`, written for this before any threshold was chosen: search_queries/bands.md) are
scored, never chosen on.

The study (`--study`, results/search_bands_study.json): could richer evidence that the first hit is right (margins,
the single rankings' ranks and agreement, rare words, categories, hubness, stability under dropped words, logistic
models over them) mark 80% of right first hits strong and keep the other two goals? Each candidate is fit on the other
sets and scored on the held-out one, with in-set ceilings (docs/search.md, "Richer evidence").

    python -m benchmarks.search_bands [--calibrate] [--quick] [--features /tmp/mcp-pd-search-bands-hits.json]
    python -m benchmarks.search_bands --study [--study-features /tmp/mcp-pd-search-bands-study.json]
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import tempfile
import time
from pathlib import Path
from typing import Any

from mcp_pd._search import SearchConfig, SearchIndex, default_config
from mcp_pd._search.bands import band
from mcp_pd._search.store import VectorStore

from .search import _Memo, load_queries, query_sets

RESULTS = Path(__file__).resolve().parent / "results"
CHOSEN_ON = ("livemcpbench", "metatool", "dev")


def collect(quick: bool) -> dict[str, Any]:
    """set -> ranking -> one record per query: kind, relevant names, abstained, hits with their figures."""
    from mcp_pd._search.embeddings import default_embedder

    embedder = default_embedder()
    memo = _Memo(embedder) if embedder is not None else None
    store = VectorStore.default()
    sets = query_sets()
    sets["bands"] = (sets["dev"][0], load_queries("bands"), "ours: held out for the bands (search_queries/bands.md)")
    out: dict[str, Any] = {}
    indexes: dict[int, SearchIndex] = {}
    for name, (docs, queries, who) in sets.items():
        if quick and name == "metatool":
            queries = queries[::3]
        key = id(docs)
        if key not in indexes:
            indexes[key] = SearchIndex(memo, store=store)
            indexes[key].upsert(docs)
        index = indexes[key]
        table: dict[str, Any] = {"who": who}
        for ranking, semantic in (("hybrid", True), ("lexical", False)):
            if semantic and embedder is None:
                continue
            records = []
            for q in queries:
                absent = frozenset(q.get("absent", ()))
                allowed = (lambda n, hidden=absent: n not in hidden) if absent else None
                result = index.search(q["query"], limit=5, semantic=semantic, allowed=allowed)
                best = result.hits[0].score if result.hits and result.hits[0].score > 0 else 1.0
                records.append(
                    {
                        "kind": q["kind"],
                        "relevant": q["relevant"],
                        "abstained": result.abstained,
                        "hits": [
                            [h.name, h.cosine, h.coverage, round(h.score / best, 4), h.cosine_z] for h in result.hits
                        ],
                    }
                )
            table[ranking] = records
        out[name] = table
        print(f"  {name}: {len(queries)} queries", flush=True)
    return out


def score(records: list[dict[str, Any]], config: SearchConfig) -> dict[str, Any]:
    """The band figures of one set and ranking under `config`'s thresholds."""
    none_total = none_clear = right = right_strong = strong = strong_wrong = answerable = answerable_strong = 0
    for r in records:
        hits = r["hits"]
        lead = 1.0 - (hits[1][3] if len(hits) > 1 else 0.0)
        bands = [
            band(config, cosine=c, z=z, coverage=cov, lead=lead if i == 0 else -1.0)
            for i, (_, c, cov, _, z) in enumerate(hits)
        ]
        relevant = set(r["relevant"])
        strong_rows = [h[0] for h, b in zip(r["hits"], bands, strict=True) if b == "strong"]
        strong += len(strong_rows)
        strong_wrong += sum(1 for n in strong_rows if n not in relevant)
        if r["kind"] == "none":
            none_total += 1
            none_clear += not strong_rows
            continue
        answerable += 1
        answerable_strong += bool(strong_rows)
        if r["hits"] and r["hits"][0][0] in relevant:
            right += 1
            right_strong += bands[0] == "strong"

    def share(a: int, b: int) -> float | None:
        return round(a / b, 4) if b else None

    return {
        "unanswerable_no_strong": share(none_clear, none_total),
        "right_top1_strong": share(right_strong, right),
        "strong_wrong": share(strong_wrong, strong),
        "answerable_strong": share(answerable_strong, answerable),
        "n": {"unanswerable": none_total, "right_top1": right, "strong_rows": strong, "answerable": answerable},
    }


def admissible(figures: dict[str, Any]) -> bool:
    """The goals a band must keep on every set: unanswerable queries mostly without a strong row, few wrong ones."""
    unanswerable, wrong = figures["unanswerable_no_strong"], figures["strong_wrong"]
    return (unanswerable is None or unanswerable >= 0.70) and (wrong is None or wrong <= 0.10)


GRID_HYBRID: dict[str, tuple[float, ...]] = {
    "band_lead": (0.0, 0.02, 0.05, 0.1, 0.15),
    "band_strong_cosine": (0.5, 0.55, 0.6, 0.65, 0.7, 0.8, 2.0),
    "band_strong_z": (2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 5.5, 6.0, 7.0, 99.0),
    "band_strong_coverage": (0.0, 0.3, 0.5, 0.67, 0.8),
}
GRID_LEXICAL: dict[str, tuple[float, ...]] = {
    "band_lead_lexical": (0.0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4),
    "band_strong_coverage_lexical": (0.5, 0.6, 0.67, 0.75, 0.8, 0.9, 1.0),
}


def calibrate(data: dict[str, Any], ranking: str, grid: dict[str, tuple[float, ...]]) -> tuple[dict[str, float], float]:
    """Among grid points admissible on every CHOSEN_ON set, the one marking the most right first hits strong (mean
    over those sets; each set counts once, whatever its size). Returns it and that mean."""
    best: tuple[float, dict[str, float]] | None = None
    keys = list(grid)
    for values in itertools.product(*(grid[k] for k in keys)):
        change = dict(zip(keys, values, strict=True))
        config = default_config(**change)
        figures = [score(data[s][ranking], config) for s in CHOSEN_ON if s in data and ranking in data[s]]
        if not all(admissible(f) for f in figures):
            continue
        reach = sum(f["right_top1_strong"] or 0 for f in figures) / len(figures)
        if best is None or reach > best[0]:
            best = (reach, change)
    if best is None:
        return {}, 0.0
    return best[1], best[0]


# -- the study: is there better evidence that the first hit is right? ------------------------------------------------
#
# Only a first hit can be strong, so each goal is a figure of one score per answered query, "strong when it reaches a
# threshold": right first hits marked strong (recall), strong rows wrong (1 - precision; unanswerable queries' first
# hits are wrong by definition), unanswerable queries free of a strong row. A feature, or a logistic model over
# several, is judged by its AUC (right against wrong first hits) and by the most right first hits it can mark strong
# while keeping the other two goals: across sets (model and threshold fit on the other CHOSEN_ON sets, held-out one
# scored), and, as a ceiling, with the threshold chosen on the scored set (the last rows: the model fit there too).

FEATURES: dict[str, str] = {
    "cosine": "the first hit's cosine (what the bands read)",
    "z": "its cosine, in standard deviations above the query's cosines to the catalog",
    "coverage": "share of the query's IDF-weighted words it answers",
    "lead": "its fused score's lead over the second hit's, as a share",
    "score": "its fused score",
    "cosine_margin": "its cosine minus the best cosine of any other visible tool",
    "cosine_gap2": "its cosine minus the second hit's",
    "dense_rank": "its rank by cosine alone (0: the model's own first; read as -log(1 + rank))",
    "lexical_rank": "its rank by BM25 alone (read as -log(1 + rank))",
    "lexical_share": "its BM25 over the best BM25",
    "lexical_margin": "the BM25 lead of the lexical first over the lexical second, as a share",
    "agree": "how many of the two single rankings (cosine, BM25) put it first: 0-2",
    "rare_word": "1 when it answers the query's rarest known word (highest IDF)",
    "known_coverage": "share of the IDF of the query's known words it answers",
    "category_agree": "share of hits 2-5 in its category",
    "hubness": "the tool's mean cosine to its 10 nearest tools (a hub is near everything; read negated)",
    "query_density": "the query's mean cosine to its 10 nearest tools (how far into the catalog's domain it is)",
    "csls": "2 cosine - hubness - query density (cross-domain similarity local scaling)",
    "stability": "share of the query's variants, each without a fifth of its words, with the same first hit",
}
# Evidence a lexical answer has (a cold process, or a model server that failed): no cosine.
LEXICAL_FEATURES = ("coverage", "lead", "lexical_margin", "rare_word", "known_coverage", "category_agree", "stability")
COMBINATIONS: dict[str, tuple[str, ...]] = {
    "logistic: cosine, z, coverage, lead (what the bands read)": ("cosine", "z", "coverage", "lead"),
    "logistic: + cosine margins, rare word": (
        "cosine",
        "z",
        "coverage",
        "lead",
        "cosine_margin",
        "cosine_gap2",
        "rare_word",
    ),
    "logistic: + ranks, agreement": ("cosine", "z", "coverage", "lead", "dense_rank", "lexical_rank", "agree"),
    "logistic: + category agreement": ("cosine", "z", "coverage", "lead", "category_agree"),
    "logistic: + hubness, density, CSLS, stability": (
        "cosine",
        "z",
        "coverage",
        "lead",
        "hubness",
        "query_density",
        "csls",
        "stability",
    ),
    "logistic: all features": tuple(FEATURES),
}
STUDIED = ("livemcpbench", "metatool", "dev", "heldout", "bands")


def first_hit(index: SearchIndex, query: str, allowed: Any, hubs: Any, semantic: bool) -> dict[str, Any]:
    """The answer's first hit and its features (`hubs`: each slot's hubness). Reads the index's internals (the single
    rankings' scores): a measurement, not an API."""
    import numpy as np
    from mcp_pd._search.query import parse

    result = index.search(query, limit=5, semantic=semantic, allowed=allowed)
    record: dict[str, Any] = {"abstained": result.abstained, "first": result.hits[0].name if result.hits else None}
    if not result.hits:
        return record
    ix: Any = index
    docs, postings, n = ix._docs, ix._postings, len(ix._slots)
    live = np.array([s for s, d in enumerate(docs) if d is not None and (allowed is None or allowed(d.name))])
    q = parse(query, index.config, postings, ix._spelling, ix._vocab, n)
    bm25 = postings.score_array(q.terms, n, len(docs))[live]
    sims = ix._vectors.query_cosines(query, docs, index.config.clause_weight)[live]
    top = int(np.flatnonzero(live == ix._slots[result.hits[0].name])[0])
    # Does the first hit survive losing a fifth of the query's words (each fifth in turn)?
    words = query.split()
    fifths = [words[: len(words) * i // 5] + words[len(words) * (i + 1) // 5 :] for i in range(5)]
    variants = {" ".join(w) for w in fifths if w and len(w) < len(words)}
    same = [index.search(v, limit=1, semantic=semantic, allowed=allowed).hits[:1] for v in variants]
    density = float(np.sort(sims)[-10:].mean())
    hits = result.hits
    best = hits[0].score if hits[0].score > 0 else 1.0
    known = [(importance[0], answer) for importance, answer in q.groups if importance[1]]
    answers = lambda answer: any(postings.has(t, int(live[top])) for t in answer)  # noqa: E731
    rarest = max(known, key=lambda g: g[0]) if known else None
    known_idf = sum(w for w, _ in known)
    lexical_best = float(bm25.max())
    record.update(
        cosine=hits[0].cosine,
        z=hits[0].cosine_z,
        coverage=hits[0].coverage,
        lead=1.0 - (hits[1].score / best if len(hits) > 1 else 0.0),
        score=hits[0].score,
        cosine_margin=float(sims[top] - np.delete(sims, top).max()) if len(sims) > 1 else 0.0,
        cosine_gap2=float((hits[0].cosine or 0.0) - ((hits[1].cosine or 0.0) if len(hits) > 1 else 0.0)),
        dense_rank=int((sims > sims[top]).sum()),
        lexical_rank=int((bm25 > bm25[top]).sum()) if bm25[top] > 0 else int((bm25 > 0).sum()),
        lexical_share=float(bm25[top]) / lexical_best if lexical_best > 0 else 0.0,
        lexical_margin=1.0 - float(np.sort(bm25)[-2]) / lexical_best if lexical_best > 0 and len(bm25) > 1 else 0.0,
        agree=int(int(np.argmax(sims)) == top) + int(lexical_best > 0 and int(np.argmax(bm25)) == top),
        rare_word=int(rarest is not None and answers(rarest[1])),
        known_coverage=sum(w for w, a in known if answers(a)) / known_idf if known_idf else 0.0,
        category_agree=sum(h.category == hits[0].category for h in hits[1:]) / max(1, len(hits) - 1),
        hubness=-float(hubs[live[top]]),
        query_density=density,
        csls=float(2 * sims[top] - hubs[live[top]] - density),
        stability=sum(bool(h) and h[0].name == hits[0].name for h in same) / len(same) if same else 1.0,
    )
    return record


def hubness(index: SearchIndex) -> Any:
    """Each slot's mean cosine to its 10 nearest other tools."""
    import numpy as np

    ix: Any = index
    m = ix._vectors.matrix(ix._docs)
    sims = m @ m.T
    np.fill_diagonal(sims, -1.0)
    return np.sort(sims, axis=1)[:, -10:].mean(axis=1)


def collect_study() -> dict[str, dict[str, list[dict[str, Any]]]]:
    """ranking -> set -> one record per query (kind, relevant names, the first hit and its features)."""
    from mcp_pd._search.embeddings import default_embedder

    embedder = default_embedder()
    if embedder is None:
        raise SystemExit("the study needs the semantic extra (the bundled model)")
    memo, store = _Memo(embedder), VectorStore.default()
    sets = query_sets()
    sets["bands"] = (sets["dev"][0], load_queries("bands"), "ours: held out for the bands")
    indexes: dict[int, tuple[SearchIndex, Any]] = {}
    out: dict[str, dict[str, list[dict[str, Any]]]] = {"hybrid": {}, "lexical": {}}
    for name in STUDIED:
        if name not in sets:
            continue
        docs, queries, _ = sets[name]
        if id(docs) not in indexes:
            index = SearchIndex(memo, store=store)
            index.upsert(docs)
            indexes[id(docs)] = (index, hubness(index))
        index, hubs = indexes[id(docs)]
        for ranking in out:
            records = []
            for q in queries:
                absent = frozenset(q.get("absent", ()))
                allowed = (lambda n, hidden=absent: n not in hidden) if absent else None
                found = first_hit(index, q["query"], allowed, hubs, ranking == "hybrid")
                records.append({"kind": q["kind"], "relevant": q["relevant"], **found})
            out[ranking][name] = records
        print(f"  {name}: {len(queries)} queries", flush=True)
    return out


class Scored:
    """One set's answered queries as a feature matrix, whether each first hit is right, and which are unanswerable."""

    def __init__(self, records: list[dict[str, Any]], features: tuple[str, ...]) -> None:
        import numpy as np

        answered = [r for r in records if r["first"] is not None]
        self.unanswerable = sum(r["kind"] == "none" for r in records)
        rank = lambda f, v: -math.log1p(v) if f.endswith("_rank") else float(v)  # noqa: E731
        self.x = np.array([[rank(f, r[f]) for f in features] for r in answered]).reshape(len(answered), len(features))
        self.right = np.array([r["kind"] != "none" and r["first"] in r["relevant"] for r in answered], dtype=bool)
        self.none = np.array([r["kind"] == "none" for r in answered], dtype=bool)

    def goals(self, strong: Any) -> tuple[float, float, float]:
        """(right first hits strong, strong rows wrong, unanswerable queries with no strong row) for a mask."""
        right, marked = int(self.right.sum()), int(strong.sum())
        recall = float((strong & self.right).sum()) / right if right else math.nan
        wrong = float((strong & ~self.right).sum()) / marked if marked else 0.0
        clear = 1.0 - float((strong & self.none).sum()) / self.unanswerable if self.unanswerable else math.nan
        return recall, wrong, clear


def kept(goals: tuple[float, float, float]) -> bool:
    """Strong rows wrong <= 10% and (where the set has unanswerable queries) >= 70% of them without a strong row."""
    return goals[1] <= 0.10 + 1e-9 and (math.isnan(goals[2]) or goals[2] >= 0.70 - 1e-9)


def auc(score: Any, right: Any) -> float:
    """The chance that a right first hit scores above a wrong one (ties count half)."""
    import numpy as np

    pos, neg = score[right], score[~right]
    if not len(pos) or not len(neg):
        return math.nan
    below = np.searchsorted(np.sort(neg), pos, side="left")
    tied = np.searchsorted(np.sort(neg), pos, side="right") - below
    return float((below + tied / 2).sum()) / (len(pos) * len(neg))


def wrong_marked_at(score: Any, right: Any, recall: float = 0.8) -> float:
    """The share of wrong first hits a threshold marking `recall` of the right ones strong marks strong too."""
    import numpy as np

    if not right.any() or right.all():
        return math.nan
    threshold = np.quantile(score[right], 1 - recall, method="inverted_cdf")
    return float((score[~right] >= threshold).mean())


def best_threshold(scores: list[Any], sets: list[Scored]) -> tuple[float, float]:
    """The threshold keeping the precision goals on every set that marks the most right first hits (mean over the
    sets), and that mean; (inf, 0) when none does."""
    import numpy as np

    best = (math.inf, 0.0)
    for t in np.unique(np.concatenate(scores)):
        goals = [s.goals(x >= t) for x, s in zip(scores, sets, strict=True)]
        if all(kept(g) for g in goals):
            mean = float(np.mean([g[0] for g in goals]))
            if mean > best[1]:
                best = (float(t), mean)
    return best


def fit_logistic(sets: list[Scored], l2: float = 1.0) -> Any:
    """A ridge logistic model of "the first hit is right" over standardized features, each set counting once;
    returns a scoring function. Newton's method (a few dozen features at most)."""
    import numpy as np

    x = np.concatenate([s.x for s in sets])
    mean, std = x.mean(axis=0), x.std(axis=0) + 1e-9
    design = lambda m: np.hstack([np.ones((len(m), 1)), (m - mean) / std])  # noqa: E731
    z, y = design(x), np.concatenate([s.right for s in sets]).astype(float)
    weight = np.concatenate([np.full(len(s.right), len(y) / (len(sets) * len(s.right))) for s in sets])
    penalty = l2 * np.diag(np.r_[0.0, np.ones(z.shape[1] - 1)])
    beta = np.zeros(z.shape[1])
    for _ in range(100):
        p = 1 / (1 + np.exp(-z @ beta))
        step = np.linalg.solve(
            (z * (weight * p * (1 - p))[:, None]).T @ z + penalty, z.T @ (weight * (p - y)) + penalty @ beta
        )
        beta -= step
        if np.abs(step).max() < 1e-9:
            break
    return lambda m: design(m) @ beta


def study(data: dict[str, list[dict[str, Any]]], features: tuple[str, ...]) -> dict[str, Any]:
    """Per feature (of `features`) and combination, per set: AUC, the most right first hits strong with the other
    goals kept across sets (fit on the other CHOSEN_ON sets) and in-set (the ceiling); per set, what the goal needs."""
    names = [s for s in STUDIED if s in data]
    report: dict[str, Any] = {"sets": {}, "features": {}, "combinations": {}}
    for name in names:
        s = Scored(data[name], ())
        right, wrong = int(s.right.sum()), int((~s.right).sum())
        answerable = sum(r["kind"] != "none" for r in data[name])
        report["sets"][name] = {
            "answered": len(s.right),
            "right_first": right,
            "wrong_first": wrong,
            "answerable": answerable,
            "first_hit_right_of_answerable": round(right / answerable, 4) if answerable else None,
            # 80% of right first hits strong with <= 10% of strong rows wrong: at most this share of wrong first
            # hits may be strong.
            "needed_wrong_marked_at_most": round(0.8 * right / 9 / wrong, 4) if wrong else None,
            "oracle": {"right_top1_strong": 1.0, "strong_wrong": 0.0, "unanswerable_no_strong": 1.0},
        }
    combinations = {k: v for k, v in COMBINATIONS.items() if set(v) <= set(features) and v != tuple(FEATURES)}
    combinations["logistic: all features"] = features
    candidates = {f: (f,) for f in features} | combinations
    for label, chosen in candidates.items():
        scored = {n: Scored(data[n], chosen) for n in names}
        row: dict[str, Any] = {}
        for name in names:
            train = [n for n in CHOSEN_ON if n != name and n in scored]
            model = fit_logistic([scored[n] for n in train]) if len(chosen) > 1 else (lambda m: m[:, 0])
            own = model(scored[name].x)
            threshold, _ = best_threshold([model(scored[n].x) for n in train], [scored[n] for n in train])
            held = scored[name].goals(own >= threshold)
            in_set = best_threshold([own], [scored[name]])[1]
            row[name] = {
                "auc": round(auc(own, scored[name].right), 3),
                "cross_set": [round(v, 3) for v in held],
                "in_set_best": round(in_set, 3),
                "wrong_marked_at_80": round(wrong_marked_at(own, scored[name].right), 3),
            }
        report["combinations" if label in combinations else "features"][label] = row
    report["combinations"]["the bands' rule, its thresholds chosen as --calibrate does"] = rule_row(
        data, names, features
    )
    # Optimistic bounds: a linear model fit and thresholded on the scored set itself (it has seen every answer), and
    # the most flexible model tried: every feature and every product of two, fit within the set (5 folds:
    # each query scored by a model that did not see it). What these features could tell with each set's own labels.
    ceilings: dict[str, dict[str, Any]] = {"logistic: all features, fit on the set itself": {}}
    ceilings["quadratic logistic: all features and their products, 5-fold within the set"] = {}
    for name in names:
        s = Scored(data[name], features)
        linear = fit_logistic([s], l2=0.1)(s.x)
        s2 = Scored(data[name], features)
        s2.x = quadratic(s2.x)
        for row, score in zip(ceilings.values(), (linear, within_set(s2)), strict=True):
            row[name] = {
                "auc": round(auc(score, s.right), 3),
                "in_set_best": round(best_threshold([score], [s])[1], 3),
                "wrong_marked_at_80": round(wrong_marked_at(score, s.right), 3),
            }
    report["combinations"].update(ceilings)
    return report


def rule_row(data: dict[str, list[dict[str, Any]]], names: list[str], features: tuple[str, ...]) -> dict[str, Any]:
    """The shipped rule's form (`bands.band` for a first hit) over its grid: thresholds chosen on the other CHOSEN_ON
    sets and scored on the held-out one, and chosen on the scored set itself (its ceiling)."""
    hybrid = "cosine" in features
    grid = GRID_HYBRID if hybrid else GRID_LEXICAL
    scored = {
        n: Scored(data[n], ("cosine", "z", "coverage", "lead") if hybrid else ("coverage", "lead")) for n in names
    }
    points = [dict(zip(grid, v, strict=True)) for v in itertools.product(*grid.values())]

    def strong(s: Scored, p: dict[str, float]) -> Any:
        if hybrid:
            cos, z, cov, lead = s.x.T
            return (lead >= p["band_lead"]) & (
                (cos >= p["band_strong_cosine"]) | ((z >= p["band_strong_z"]) & (cov >= p["band_strong_coverage"]))
            )
        cov, lead = s.x.T
        return (lead >= p["band_lead_lexical"]) & (cov >= p["band_strong_coverage_lexical"])

    def choose(on: list[str]) -> dict[str, float] | None:
        best: tuple[float, dict[str, float]] | None = None
        for p in points:
            goals = [scored[n].goals(strong(scored[n], p)) for n in on]
            if all(kept(g) for g in goals):
                mean = sum(g[0] for g in goals) / len(goals)
                if best is None or mean > best[0]:
                    best = (mean, p)
        return best[1] if best else None

    row: dict[str, Any] = {}
    for name in names:
        s = scored[name]
        chosen = choose([n for n in CHOSEN_ON if n != name and n in scored])
        own = choose([name])
        held = s.goals(strong(s, chosen)) if chosen else (0.0, 0.0, 1.0)
        row[name] = {
            "auc": math.nan,
            "cross_set": [round(v, 3) for v in held],
            "in_set_best": round(s.goals(strong(s, own))[0], 3) if own else 0.0,
            "chosen_on_the_others": chosen,
        }
    return row


def quadratic(x: Any) -> Any:
    """The features and every product of two of them."""
    import numpy as np

    d = x.shape[1]
    return np.hstack([x, *(x[:, i : i + 1] * x[:, j : j + 1] for i in range(d) for j in range(i, d))])


def within_set(s: Scored, folds: int = 5) -> Any:
    """Each query's score from a logistic model fit on the other folds of its own set."""
    import copy

    import numpy as np

    order = np.random.default_rng(0).permutation(len(s.right))
    out = np.zeros(len(s.right))
    for k in range(folds):
        test = order[k::folds]
        train = copy.copy(s)
        mask = np.ones(len(s.right), dtype=bool)
        mask[test] = False
        train.x, train.right = s.x[mask], s.right[mask]
        out[test] = fit_logistic([train])(s.x[test])
    return out


def print_study(report: dict[str, Any]) -> None:
    """The study as Markdown rows (docs/search.md): per set, AUC, in-set best and held out (right first hits strong;
    held out marked * where the rule broke a precision goal on that set)."""
    names = list(report["sets"])
    print("| evidence | " + " | ".join(names) + " |")
    for part in ("features", "combinations"):
        for label, row in report[part].items():
            cells = []
            for n in names:
                cell = row[n]
                held = ""
                if "cross_set" in cell:
                    recall, wrong, clear = cell["cross_set"]
                    broke = wrong > 0.10 or (not math.isnan(clear) and clear < 0.70)
                    held = f" · {recall:.0%}{'*' if broke else ''}"
                area = "-" if math.isnan(cell["auc"]) else f"{cell['auc']:.2f}"
                cells.append(f"{area} · {cell['in_set_best']:.0%}{held}")
            print(f"| {label} | " + " | ".join(cells) + " |")


def _finite(value: Any) -> Any:
    """NaN (a figure a set cannot have, e.g. unanswerable queries on LiveMCPBench) as null: strict JSON."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calibrate", action="store_true", help="search the thresholds' grid (prints the choice)")
    parser.add_argument("--quick", action="store_true", help="a third of MetaTool's queries")
    parser.add_argument("--features", type=Path, help="reuse the hits of an earlier run (its JSON)")
    parser.add_argument(
        "--study", action="store_true", help="richer evidence for the first hit (search_bands_study.json)"
    )
    parser.add_argument("--study-features", type=Path, help="with --study: reuse the first hits of an earlier run")
    args = parser.parse_args(argv)
    RESULTS.mkdir(exist_ok=True)
    t0 = time.perf_counter()
    if args.study:
        if args.study_features is not None:
            first_hits = json.loads(args.study_features.read_text(encoding="utf-8"))
        else:
            first_hits = collect_study()
            kept_in = Path(tempfile.gettempdir()) / "mcp-pd-search-bands-study.json"
            kept_in.write_text(json.dumps(first_hits), encoding="utf-8")
            print(f"  first hits kept in {kept_in} (--study-features {kept_in})")
        found: dict[str, Any] = {}
        for ranking, features in (("hybrid", tuple(FEATURES)), ("lexical", LEXICAL_FEATURES)):
            found[ranking] = study(first_hits[ranking], features)
            print(f"  {ranking}: AUC · in-set best · held out (right first hits strong; *: broke a precision goal)")
            print_study(found[ranking])
        found["seconds"] = round(time.perf_counter() - t0, 1)
        text = json.dumps(_finite(found), indent=1, allow_nan=False)
        (RESULTS / "search_bands_study.json").write_text(text + "\n", encoding="utf-8")
        return 0
    if args.features is not None:
        data = json.loads(args.features.read_text(encoding="utf-8"))
    else:
        data = collect(args.quick)
        # ~1 MB: kept beside the run (for --features), not with the committed results.
        hits = Path(tempfile.gettempdir()) / "mcp-pd-search-bands-hits.json"
        hits.write_text(json.dumps(data), encoding="utf-8")
        print(f"  hits kept in {hits} (--features {hits} re-scores them without searching)")
    report: dict[str, Any] = {}
    if args.calibrate:
        for ranking, grid in (("hybrid", GRID_HYBRID), ("lexical", GRID_LEXICAL)):
            chosen, reach = calibrate(data, ranking, grid)
            print(
                f"  {ranking}: chosen {chosen} (right first hits strong, mean over {', '.join(CHOSEN_ON)}: {reach:.3f})"
            )
            report[f"chosen_{ranking}"] = chosen
    config = SearchConfig()
    table: dict[str, Any] = {}
    for name, entry in data.items():
        for ranking in ("hybrid", "lexical"):
            if ranking in entry:
                figures = score(entry[ranking], config)
                table.setdefault(name, {})[ranking] = figures
                print(f"  {name:13s} {ranking:8s} {json.dumps({k: v for k, v in figures.items() if k != 'n'})}")
    report["shipped"] = table
    report["seconds"] = round(time.perf_counter() - t0, 1)
    (RESULTS / "search_bands.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
