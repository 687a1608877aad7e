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

import functools
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
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
    catalogs_dir,
    compact,
    load_catalog,
    rss_mb,
    summarize,
    tokenizers,
)

QUERIES = PACKAGE_DIR / "search_queries"
KINDS = ("paraphrase", "keyword", "language", "misspelling")
LIVEMCPBENCH = REPO.parent / "shared" / "livemcpbench"
PUBLIC = PACKAGE_DIR / "search_sets"  # converted public sets, one folder each (tools.jsonl, queries.jsonl, SOURCE.md)

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
    "without step-by-step embedding of long tasks": {"clause_weight": 0.0},
    "cosine share 0.5 (before: 0.7)": {"semantic_weight": 0.5},
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
            tasks.append({"query": task["Question"], "kind": "task", "relevant": sorted(chosen)})
    return list(docs.values()), tasks


def _mentions(text: str, name: str) -> bool:
    import re

    return re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text) is not None


# -- scoring --------------------------------------------------------------------------------------------


def evaluate(index: SearchIndex, queries: Sequence[dict[str, Any]], *, semantic: bool) -> dict[str, Any]:
    """Per kind and over all answerable queries: top-1 / top-5 (a relevant tool first / in the first five), MRR,
    recall@5 (the share of a query's relevant tools in the first five: tasks that need several tools), false
    abstention; on unanswerable queries (`kind: none`), the abstention rate. An abstained answer has no hits."""
    per_kind: dict[str, list[tuple[int, int, float, float, bool]]] = {}
    none_abstained: list[bool] = []
    misses: list[dict[str, Any]] = []
    for q in queries:
        # `absent`: tools hidden for this query (a near miss: asked of the catalog without its own tool).
        absent = frozenset(q.get("absent", ()))
        allowed = (lambda name, hidden=absent: name not in hidden) if absent else None
        result = index.search(q["query"], limit=5, semantic=semantic, allowed=allowed)
        if q["kind"] == "none":
            none_abstained.append(result.abstained)
            continue
        names = [h.name for h in result.hits]
        relevant = set(q["relevant"])
        rank = next((i + 1 for i, n in enumerate(names) if n in relevant), 0)
        recall5 = len(relevant & set(names[:5])) / len(relevant)
        per_kind.setdefault(q["kind"], []).append(
            (int(rank == 1), int(0 < rank <= 5), 1 / rank if rank else 0.0, recall5, result.abstained)
        )
        if rank != 1 and len(misses) < 40:
            misses.append({"query": q["query"], "got": names[:3], "want": q["relevant"], "abstained": result.abstained})
    out: dict[str, Any] = {"kinds": {kind: _rates(rows) for kind, rows in sorted(per_kind.items())}}
    out["all"] = _rates([row for rows in per_kind.values() for row in rows])
    out["unanswerable"] = {
        "n": len(none_abstained),
        "abstention": round(sum(none_abstained) / len(none_abstained), 4) if none_abstained else None,
    }
    out["misses"] = misses
    return out


def _rates(rows: Sequence[tuple[int, int, float, float, bool]]) -> dict[str, Any]:
    if not rows:
        return {"n": 0}
    n = len(rows)
    return {
        "n": n,
        "top1": round(sum(r[0] for r in rows) / n, 4),
        "top5": round(sum(r[1] for r in rows) / n, 4),
        "mrr": round(sum(r[2] for r in rows) / n, 4),
        "recall5": round(sum(r[3] for r in rows) / n, 4),
        "false_abstention": round(sum(r[4] for r in rows) / n, 4),
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
    """The answer as `search_tools` sends it: rows with their band, and the note when none is strong."""
    answer: dict[str, Any] = {}
    if result.hits and not any(h.match == "strong" for h in result.hits):
        answer["note"] = (
            "No tool here clearly does this. The closest ones follow; check their descriptions before using "
            "one, or tell the user no tool fits."
        )
    rows = [{"name": h.name, "category": h.category, "description": h.summary, "match": h.match} for h in result.hits]
    return {**answer, "results": rows, "total": result.total}


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


def _embedder() -> Any:
    try:
        from mcp_pd._search.embeddings import default_embedder

        return default_embedder()
    except Exception as exc:  # a damaged model is a finding, not a crash of the whole run
        print(f"  semantic extra unusable: {exc}")
        return None


class _Memo:
    """An embedder that embeds each distinct text once (quality runs only; see `run`)."""

    def __init__(self, embedder: Any) -> None:
        self._embedder = embedder
        self._rows: dict[str, Any] = {}

    @property
    def model_id(self) -> str:
        return str(self._embedder.model_id)

    def embed(self, texts: Sequence[str]) -> Any:
        missing = list(dict.fromkeys(t for t in texts if t not in self._rows))
        if missing:
            self._rows.update(zip(missing, self._embedder.embed(missing), strict=True))
        import numpy as np

        return np.stack([self._rows[t] for t in texts]) if texts else self._embedder.embed(texts)


# -- the sets and variants ------------------------------------------------------------------------------


def query_sets() -> dict[str, tuple[list[SearchDocument], list[dict[str, Any]], str]]:
    """name -> (documents, queries, who wrote the queries). Ours first, then every public set present."""
    own = catalog_documents()
    sets = {
        "dev": (own, load_queries("dev"), "ours (the defaults were tuned on it)"),
        "heldout": (own, load_queries("heldout"), "ours (never tuned on, but written by the vocabulary's authors)"),
    }
    live = livemcpbench()
    if live is not None:
        sets["livemcpbench"] = (*live, "public: LiveMCPBench's 95 real tasks and the tools a person chose")
    for directory in sorted(PUBLIC.glob("*/")):
        if (directory / "queries.jsonl").exists():
            docs, queries = public_set(directory)
            sets[directory.name] = (docs, queries, f"public: {_source_line(directory)}")
    return sets


def _source_line(directory: Path) -> str:
    source = directory / "SOURCE.md"
    if not source.exists():
        return directory.name
    first = next((line for line in source.read_text(encoding="utf-8").splitlines() if line.strip()), directory.name)
    return first.lstrip("# ").strip()


def public_set(directory: Path) -> tuple[list[SearchDocument], list[dict[str, Any]]]:
    """A converted public set: `tools.jsonl` (MCP-style definitions with a category) and `queries.jsonl`."""
    docs = []
    for line in (directory / "tools.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            tool = json.loads(line)
            docs.append(SearchDocument.from_definition(tool, category=str(tool.get("category") or "")))
    queries = [
        json.loads(line) for line in (directory / "queries.jsonl").read_text(encoding="utf-8").splitlines() if line
    ]
    return docs, queries


NO_VOCABULARY: dict[str, Any] = {"synonyms": False, "translations": False}


def variants(embedder: Any) -> dict[str, tuple[SearchConfig, bool]]:
    """label -> (configuration, semantic). `cold`: what a fresh process answers its first search with while its
    vectors are not cached (lexical); `restarted`: once an earlier process (or `mcp-pd index`) cached them."""
    base = SearchConfig()
    out = {
        "classic BM25": (CLASSIC, False),
        "cold (lexical)": (base, False),
        "cold (lexical), no vocabulary": (replace(base, **NO_VOCABULARY), False),
    }
    if embedder is not None:
        out["restarted (hybrid)"] = (base, True)
        out["restarted (hybrid), no vocabulary"] = (replace(base, **NO_VOCABULARY), True)
    return out


# -- a fresh process, cold and restarted ----------------------------------------------------------------


async def first_search(cache: Path) -> dict[str, Any]:
    """Start `mcp-pd serve --mode catalog` over the 322 tools with `cache`, time its first search and read which
    ranking answered it (the answer's `_meta`)."""
    from mcp import Client, StdioServerParameters

    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "PYTHONPATH")}
    args = ["-m", "mcp_pd", "serve", "--simulate", "--descriptions", str(catalogs_dir()), "--mode", "catalog"]
    params = StdioServerParameters(command=sys.executable, args=[*args, "--cache", str(cache)], env=env)
    t0 = time.perf_counter()
    async with Client(params, mode="legacy", cache=None) as client:
        started = time.perf_counter()
        result = await client.call_tool("search_tools", {"query": "open a pull request"})
        answered = time.perf_counter()
    meta = (result.meta or {}).get("io.github.mcp-pd/progressive-disclosure", {})
    return {
        "ranking": meta.get("ranking"),
        "why": meta.get("why"),
        "start_s": round(started - t0, 2),
        "first_search_ms": round((answered - started) * 1000, 1),
    }


def index_command(cache: Path) -> dict[str, Any]:
    """`mcp-pd index` over the 322 tools into `cache`: what a deployment runs once."""
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "mcp_pd", "index", str(catalogs_dir()), "--cache", str(cache)],
        capture_output=True,
        text=True,
        check=True,
    )
    return {"seconds": round(time.perf_counter() - t0, 1), "said": done.stdout.strip().split(": ", 1)[-1]}


# -- the run --------------------------------------------------------------------------------------------


async def run(quick: bool, out: Path | None) -> Recorder:
    rec = Recorder("search", "Tool search quality and speed", quick, out)
    rec.method = [
        "sets: ours (dev: tuned on; heldout: never tuned on, written here) over the 322 real tools of "
        "../shared/catalogs; public sets nobody here wrote: LiveMCPBench (../shared/livemcpbench) and each "
        "converted set in benchmarks/search_sets/ (SOURCE.md there says where it comes from)",
        "top-1/top-5: a relevant tool first / in the first five; MRR from the first relevant rank; recall@5: the "
        "share of a query's relevant tools in the first five; an abstained answer counts as a miss",
        "abstention: on queries no tool answers; false abstention: on answerable ones",
        "cold: the ranking of a fresh process whose vectors are not cached yet (lexical); restarted: once any "
        "earlier process or `mcp-pd index` cached them (hybrid); both checked against real `mcp-pd serve` processes",
        "no vocabulary: the hand-written synonyms and glossary switched off (a user's own catalog has none)",
        "latency: every query of our sets (short, as a model writes them), and apart LiveMCPBench's long tasks, "
        "in-process, single thread",
    ]
    embedder = _embedder()
    # Quality runs every query through each variant and ablation: each text is embedded once (the speed runs below
    # use the model itself, so no latency figure ever comes from this memo).
    remembered = None if embedder is None else _Memo(embedder)
    sets = query_sets()
    quality: dict[str, Any] = {}
    indexes: dict[int, SearchIndex] = {}
    for set_name, (docs, queries, who) in sets.items():
        key = id(docs)
        if key not in indexes:
            indexes[key] = SearchIndex(remembered)
            indexes[key].upsert(docs)
        index = indexes[key]
        table: dict[str, Any] = {"who": who, "tools": len(docs), "queries": len(queries)}
        for label, (config, semantic) in variants(embedder).items():
            table[label] = evaluate(index.with_config(config), queries, semantic=semantic)
        quality[set_name] = table
        best = table.get("restarted (hybrid)") or table["cold (lexical)"]
        print(
            f"  {set_name:14s} top1 {best['all']['top1']:.3f} top5 {best['all']['top5']:.3f} "
            f"recall@5 {best['all']['recall5']:.3f} abstain {best['unanswerable']['abstention']} "
            f"false {best['all']['false_abstention']}"
        )
    rec.figures["quality"] = quality
    ablation: dict[str, Any] = {}
    for label, change in ABLATIONS.items():
        row = {}
        for set_name, (docs, queries, who) in sets.items():
            if who.startswith("public") and embedder is not None:
                config = replace(SearchConfig(), **change)
                row[set_name] = evaluate(indexes[id(docs)].with_config(config), queries, semantic=True)["all"]
        ablation[label] = row
    rec.figures["ablation"] = ablation
    own = indexes[id(sets["dev"][0])]
    rec.figures["answer_tokens_o200k"] = answer_tokens(own, sets["dev"][1] + sets["heldout"][1])
    if embedder is not None:
        with tempfile.TemporaryDirectory() as tmp:
            cache = Path(tmp)
            cold = await first_search(cache)
            indexed = index_command(cache)
            restarted = await first_search(cache)
        rec.figures["processes"] = {"cold": cold, "index_command": indexed, "restarted": restarted}
    # Speed at three sizes.
    # Short queries (ours: what a model types into search_tools) and, apart, LiveMCPBench's long tasks (embedded
    # step by step: several texts per search).
    texts = [q["query"] for name in ("dev", "heldout") for q in sets[name][1]]
    tasks = [q["query"] for q in sets["livemcpbench"][1]] if "livemcpbench" in sets else []
    docs = sets["dev"][0]
    sizes = (322, 10_000) if quick else (322, 10_000, 100_000)
    rounds = 2 if quick else 5
    speed: dict[str, Any] = {}
    for size in sizes:
        corpus = docs if size == len(docs) else synthetic(docs, size)
        index, built = build(corpus, None)
        entry: dict[str, Any] = {"lexical": {**built, **latency(index, texts, semantic=False, rounds=rounds)}}
        del index
        if embedder is not None and size <= 10_000:
            index, built = build(corpus, embedder, seed=own)
            if size == len(docs):
                _, built = build(corpus, embedder)  # the cold build: embedding every tool
            entry["hybrid"] = {**built, **latency(index, texts, semantic=True, rounds=rounds)}
            if tasks:
                entry["hybrid, long tasks"] = {**built, **latency(index, tasks, semantic=True, rounds=rounds)}
            del index
        speed[str(size)] = entry
        gc.collect()
    rec.figures["speed"] = speed
    _goals(rec, quality, speed)
    return rec


def _goals(rec: Recorder, quality: dict[str, Any], speed: dict[str, Any]) -> None:
    """Issue 19's goals, judged on the public sets only (ours are reported, never judged)."""

    def check(id_: str, figure: str, target: str, value: float | None, unit: str, ok: Callable[[float], bool]) -> None:
        rec.goal(id_, figure, target, value, unit, None if value is None else ok(value))

    def pct(set_name: str, variant: str, *path: str) -> float | None:
        node: Any = quality.get(set_name, {}).get(variant)
        for part in path:
            if not isinstance(node, dict):
                return None
            node = node.get(part)
        return None if node is None else float(node) * 100

    live = "livemcpbench"
    restarted = "restarted (hybrid)"
    public = [name for name, table in quality.items() if table["who"].startswith("public") and name != live]
    # (id, set, figure, target, path into the set's restarted row, at least (True) or at most, limit)
    goals: list[tuple[str, str, str, str, tuple[str, ...], bool, float]] = [
        ("S1", live, "recall@5", ">= 55%", ("all", "recall5"), True, 55),
        ("S4", live, "false abstention", "<= 5%", ("all", "false_abstention"), False, 5),
    ]
    for name in public[:1]:
        goals += [
            ("S2a", name, "top-1", ">= 72%", ("all", "top1"), True, 72),
            ("S2b", name, "top-5", ">= 90%", ("all", "top5"), True, 90),
            ("S2c", name, "abstention on unanswerable", ">= 40%", ("unanswerable", "abstention"), True, 40),
            ("S2d", name, "false abstention", "<= 5%", ("all", "false_abstention"), False, 5),
        ]
    for id_, set_name, figure, target, path, at_least, limit in sorted(goals):
        check(
            id_,
            f"{set_name} {figure} (restarted)",
            target,
            pct(set_name, restarted, *path),
            "%",
            functools.partial(_at_least if at_least else _at_most, limit=limit),
        )
    tokens = rec.figures["answer_tokens_o200k"]["max"]
    check("S8", "tokens of a 5-result answer (max, o200k)", "<= 400", tokens, "tokens", lambda v: v <= 400)
    # Judged on the CPU time a search costs: other work on this 2-core machine makes a search wait for a core,
    # which wall time counts too; both are in the speed table.
    at10k = speed.get("10000", {})
    for id_, mode, target, limit in (("S9", "lexical", "< 10 ms", 10.0), ("S10", "hybrid", "< 25 ms", 25.0)):
        e = at10k.get(mode)
        rec.goal(
            id_,
            f"p95 search at 10k tools, {mode}, short queries (CPU time)",
            target,
            None if e is None else e["cpu_p95_ms"],
            "ms",
            None if e is None else e["cpu_p95_ms"] < limit,
            "" if e is None else f"wall p50 {e['p50_ms']:.1f} / p95 {e['p95_ms']:.1f} ms at load {rec.load_before[0]}",
        )
    long = at10k.get("hybrid, long tasks")
    if long is not None:  # reported, not judged: a task of several steps embeds each step
        rec.goal(
            "S11",
            "p95 search at 10k tools, hybrid, LiveMCPBench's long tasks (CPU time)",
            "reported",
            long["cpu_p95_ms"],
            "ms",
            None,
            f"p50 {long['cpu_p50_ms']:.1f} ms",
        )


def _at_least(value: float, *, limit: float) -> bool:
    return value >= limit


def _at_most(value: float, *, limit: float) -> bool:
    return value <= limit


def main(argv: list[str] | None = None) -> int:
    return benchmark_main(__doc__, "search: tool search quality and speed", run, argv)


if __name__ == "__main__":
    raise SystemExit(main())
