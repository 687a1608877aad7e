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

    python -m benchmarks.search_bands [--calibrate] [--quick] [--features /tmp/mcp-pd-search-bands-hits.json]
"""

from __future__ import annotations

import argparse
import itertools
import json
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calibrate", action="store_true", help="search the thresholds' grid (prints the choice)")
    parser.add_argument("--quick", action="store_true", help="a third of MetaTool's queries")
    parser.add_argument("--features", type=Path, help="reuse the hits of an earlier run (its JSON)")
    args = parser.parse_args(argv)
    RESULTS.mkdir(exist_ok=True)
    t0 = time.perf_counter()
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
