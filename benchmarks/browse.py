"""Browsing a large catalog: `browse_tools` pages at 1k, 10k and 50k tools, beside a `tools/list` page.

Catalogs cycle the 322 real definitions (copy k of a tool is named `<name>_<k>`), each tool in the category folder
of the server it came from, so the largest category holds about a third of the catalog. Per size, in one fresh
process each: a catalog-mode simulated server (lexical search, no watcher) through the real in-process client
(handshake era): the category listing, the first page of the largest category, then pages walked from the start of
that category with the cursor the server gave (up to 40, their times summarized), with and without a permission
hook (every tenth tool hidden: each visible name is then asked about one at a time). The yardstick in the same
process: a `tools/list` page (the extension's progressive listing, 50 entries a page as a browse page) of the same
catalog. A page is flat when its time does not grow with the catalog.

    python -m benchmarks.browse [--quick]
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from ._common import (
    REPO,
    Recorder,
    benchmark_main,
    catalog_names,
    child_env,
    load_catalog,
    quiet_logging,
    summarize,
    temporary_directory,
)

PAGES = 40


def write_categorized(directory: Path, size: int) -> str:
    """`size` tools in `<category>/<name>.json`; returns the largest category."""
    base: list[tuple[str, dict[str, Any]]] = [(c, tool) for c in catalog_names() for tool in load_catalog(c)]
    counts: dict[str, int] = {}
    for i in range(size):
        category, tool = base[i % len(base)]
        folder = directory / category
        folder.mkdir(parents=True, exist_ok=True)
        name = f"{str(tool['name'])[:100]}_{i // len(base)}"
        (folder / f"{name}.json").write_text(json.dumps({**tool, "name": name}, ensure_ascii=False), encoding="utf-8")
        counts[category] = counts.get(category, 0) + 1
    return max(counts, key=lambda c: counts[c])


async def _timed(client: Client, name: str, arguments: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    t0 = time.perf_counter()
    result = await client.call_tool(name, arguments)
    seconds = time.perf_counter() - t0
    structured = result.structured_content
    if not isinstance(structured, dict) or "error" in structured:
        raise RuntimeError(f"{name} {arguments} answered {structured!r}")
    return seconds, structured


async def _walk(client: Client, category: str) -> tuple[list[float], int]:
    times, cursor, seen = [], None, 0
    for _ in range(PAGES):
        arguments = {"category": category, **({"cursor": cursor} if cursor else {})}
        seconds, page = await _timed(client, "browse_tools", arguments)
        times.append(seconds)
        seen += len(page["tools"])
        cursor = page.get("nextCursor")
        if not cursor:
            break
    return times, seen


async def size_worker(directory: Path, category: str) -> dict[str, Any]:
    from mcp_pd.reference import serve_simulation

    quiet_logging()
    figures: dict[str, Any] = {}
    for hook in ("none", "every tenth hidden"):
        permission = None if hook == "none" else (lambda _caller, name: hash(name) % 10 != 0)
        server, _ = serve_simulation(directory, mode="catalog", semantic="off", watch=False, permission=permission)
        gc.collect()
        async with Client(server, mode="legacy", cache=None) as client:
            listing, _ = await _timed(client, "browse_tools", {})
            first, _ = await _timed(client, "browse_tools", {"category": category})
            again, _ = await _timed(client, "browse_tools", {"category": category})
            pages, seen = await _walk(client, category)
        figures[hook] = {
            "categories_ms": round(listing * 1000, 2),
            "first_page_ms": round(first * 1000, 2),
            "first_page_again_ms": round(again * 1000, 2),
            "pages": summarize(pages),
            "pages_walked": len(pages),
            "tools_seen": seen,
        }
    server, _ = serve_simulation(directory, mode="progressive", semantic="off", watch=False, page_size=50)
    async with Client(server, mode="legacy", cache=None) as client:
        await client.list_tools()
        times = []
        for _ in range(20):
            t0 = time.perf_counter()
            await client.list_tools()
            times.append(time.perf_counter() - t0)
    figures["tools_list_page"] = summarize(times)
    return figures


def _worker_main(argv: list[str]) -> int:
    directory, category = Path(argv[0]), argv[1]
    print(json.dumps(anyio.run(size_worker, directory, category)))
    return 0


def _spawn(directory: Path, category: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.browse", "--worker", str(directory), category],
        cwd=REPO,
        env=child_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


async def run(quick: bool, out: Path | None) -> Recorder:
    recorder = Recorder("browse", "browse_tools pages against catalog size", quick, out)
    recorder.method = [line.strip() for line in (__doc__ or "").splitlines()[2:11]]
    sizes = [1000, 10000] if quick else [1000, 10000, 50000]
    rows: dict[str, Any] = {}
    for size in sizes:
        with temporary_directory("pd-browse-") as scratch:
            category = write_categorized(scratch / "defs", size)
            row = await anyio.to_thread.run_sync(_spawn, scratch / "defs", category)
        row["largest_category"] = category
        rows[str(size)] = row
        plain = row["none"]
        print(
            f"  {size:>6} tools: page p50 {plain['pages']['p50_ms']:.2f} ms, first {plain['first_page_ms']:.2f} ms "
            f"(hook: {row['every tenth hidden']['pages']['p50_ms']:.2f} ms), tools/list page "
            f"{row['tools_list_page']['p50_ms']:.2f} ms"
        )
    recorder.figures = {"sizes": rows}
    at10k = rows["10000"]["none"]["pages"]["p50_ms"]
    recorder.goal("browse-10k", "browse_tools page p50 at 10k tools", "< 25 ms", at10k, "ms", at10k < 25)
    largest = str(sizes[-1])
    growth = rows[largest]["none"]["pages"]["p50_ms"] / rows["1000"]["none"]["pages"]["p50_ms"]
    recorder.goal(
        "browse-flat",
        f"page p50 at {largest} / at 1000 tools",
        "<= 1.5x (flat)",
        round(growth, 2),
        "x",
        growth <= 1.5,
    )
    return recorder


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["--worker"]:
        return _worker_main(args[1:])
    return benchmark_main(__doc__, "browse_tools pages against catalog size", run, args)


if __name__ == "__main__":
    raise SystemExit(main())
