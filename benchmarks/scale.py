"""3. Scale: synthetic catalogs of 1k, 10k and 50k tools, and 1k / 10k / 100k authorized sessions.

Tools: synthetic catalogs cycle the 322 real definitions (copy k of a tool is named `<name>_<k>`). Each size runs
in fresh processes, the plain simulated server and the extension's alternately (one at a time): start-up
(load the definition files and install, then the first tools/list answered through an in-process client),
tools/list (server-side handler chain, timed by a wrapper on the low-level server, and client-observed),
one-tool fetch (`?tools=NAME` for random names; the plain server answers the same URI with the same document,
ungated) and RSS. Sessions: in a fresh process each, N sessions go through what a first fetch does per session
(`pd.sessions.resolve`, the fetch limiter, a grant of 3 tool versions): traced memory of that state
(tracemalloc, in one process) and RSS, then lookup time (`resolve` + the granted version, in another process) and an
authorized call through the real client with those N sessions present, interleaved with the plain server's call.

    python -m benchmarks.scale [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import random
import subprocess
import sys
import time
import tracemalloc
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import anyio
from mcp import Client

from ._apps import build_catalog_server
from ._common import (
    REPO,
    HandlerTimer,
    Recorder,
    benchmark_main,
    child_env,
    combined_catalog,
    output_dir,
    peak_rss_mb,
    quiet_logging,
    ratio,
    rss_mb,
    summarize,
    synthetic_catalog,
    temporary_directory,
    valid_arguments,
    write_catalog,
)

DESCRIPTIONS = "resources/read resource:///tool_descriptions"


# -- workers (each in a fresh process) ----------------------------------------------------------------
async def tools_worker(directory: Path, variant: str, lists: int, fetches: int) -> dict[str, Any]:
    gc.collect()
    rss_start = rss_mb()
    inner, outer = HandlerTimer(), HandlerTimer()
    t0 = time.perf_counter()
    server, pd = build_catalog_server(directory, extension=variant == "pd", inner=inner, outer=outer)
    load_s = time.perf_counter() - t0
    result: dict[str, Any] = {"variant": variant, "load_s": round(load_s, 4)}
    async with Client(server, mode="legacy", cache=None) as client:
        t0 = time.perf_counter()
        listing = await client.list_tools()
        first_list_s = time.perf_counter() - t0
        names = [t.name for t in listing.tools]
        result["tools_listed"] = len(names)
        result["first_list_client_s"] = round(first_list_s, 4)
        result["first_list_server_s"] = round(outer.samples["tools/list"][0], 4)
        # Ready = definitions loaded, extension installed, first tools/list answered (server-side handler time;
        # the client's parsing of that first listing is reported separately).
        result["startup_s"] = round(load_s + outer.samples["tools/list"][0], 4)
        result["rss_after_startup_mb"] = round(rss_mb(), 1)
        del listing
        outer.clear()
        inner.clear()
        client_list: list[float] = []
        for _ in range(lists):
            t0 = time.perf_counter()
            await client.list_tools()
            client_list.append(time.perf_counter() - t0)
        rng = random.Random(3)
        client_fetch: list[float] = []
        for name in rng.sample(names, min(fetches, len(names))):
            t0 = time.perf_counter()
            read = await client.read_resource(f"resource:///tool_descriptions?tools={name}")
            client_fetch.append(time.perf_counter() - t0)
            if not read.contents:
                raise RuntimeError(f"fetch of {name} returned nothing")
    result["list_client"] = summarize(client_list, "ms")
    result["list_server"] = summarize(outer.samples["tools/list"], "ms")
    result["list_server_own_handler"] = summarize(inner.samples.get("tools/list", []), "ms")
    result["fetch_client"] = summarize(client_fetch, "ms")
    result["fetch_server"] = summarize(outer.samples[DESCRIPTIONS], "ms")
    result["samples"] = {
        "list_server": outer.samples["tools/list"],
        "list_client": client_list,
        "fetch_server": outer.samples[DESCRIPTIONS],
        "fetch_client": client_fetch,
    }
    gc.collect()
    result["rss_end_mb"] = round(rss_mb(), 1)
    result["rss_peak_mb"] = round(peak_rss_mb(), 1)
    result["rss_at_start_mb"] = round(rss_start, 1)
    del pd
    return result


class _Connection:
    """Stands in for the SDK's per-session Connection (what the extension's session resolver reads)."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.exit_stack = contextlib.AsyncExitStack()  # as mcp.server.connection.Connection
        self.protocol_version = "2025-11-25"
        self.has_standalone_channel = False


class _Session:
    def __init__(self, connection: _Connection) -> None:
        self._connection = connection


class _Context:
    """A Streamable HTTP request context with an Mcp-Session-Id, as far as the extension looks."""

    def __init__(self, session_id: str) -> None:
        self.session = _Session(_Connection(session_id))
        self.request = object()
        self.protocol_version = "2025-11-25"


async def sessions_worker(directory: Path, count: int, trace: bool, lookups: int, calls: int) -> dict[str, Any]:
    server, pd = build_catalog_server(directory, extension=True)
    assert pd is not None
    assert pd.rate_limiter is not None
    names = sorted(pd.store.names())
    rng = random.Random(4)
    contexts = [cast(Any, _Context(uuid.uuid4().hex)) for _ in range(count)]
    choices = [rng.sample(names, 3) for _ in range(count)]
    gc.collect()
    result: dict[str, Any] = {"sessions": count, "traced": trace}
    rss0 = rss_mb()
    if trace:
        tracemalloc.start()
    stages: dict[str, float] = {}
    keys: list[str] = []
    before: float = tracemalloc.get_traced_memory()[0] if trace else 0
    t0 = time.perf_counter()
    for ctx in contexts:
        key = pd.sessions.resolve(ctx)
        assert key is not None
        keys.append(key)
    stages["session_tracking"] = tracemalloc.get_traced_memory()[0] if trace else 0
    for key in keys:
        pd.rate_limiter.acquire(key)
    stages["fetch_limiter"] = tracemalloc.get_traced_memory()[0] if trace else 0
    versions = {name: (pd.catalog.full(name) or {"version": "?"})["version"] for name in names}
    for key, chosen in zip(keys, choices, strict=True):
        pd.grants.grant_now(key, {name: versions[name] for name in chosen})
    stages["grants"] = tracemalloc.get_traced_memory()[0] if trace else 0
    populate_s = time.perf_counter() - t0
    if trace:
        tracemalloc.stop()
        previous = before
        breakdown = {}
        for stage, value in stages.items():
            breakdown[stage] = round((value - previous) / 2**20, 2)
            previous = value
        result["traced_mb"] = round((stages["grants"] - before) / 2**20, 2)
        result["traced_breakdown_mb"] = breakdown
        result["traced_bytes_per_session"] = round((stages["grants"] - before) / count, 1)
        return result
    gc.collect()
    result["rss_delta_mb"] = round(rss_mb() - rss0, 2)
    result["populate_us_per_session"] = round(populate_s / count * 1e6, 2)
    # Lookup: what an authorized call asks (resolve the session, then is the tool granted?), vs a dict of sets.
    plain = {ctx.session._connection.session_id: frozenset(c) for ctx, c in zip(contexts, choices, strict=True)}
    ours: list[float] = []
    base: list[float] = []
    clock = time.perf_counter
    for _ in range(lookups):
        i = rng.randrange(count)
        ctx, name = contexts[i], choices[i][rng.randrange(3)]
        t0 = clock()
        allowed = pd.grants.version_now(pd.sessions.resolve(ctx) or "", name) == versions[name]
        t1 = clock()
        found = name in plain[ctx.session._connection.session_id]
        t2 = clock()
        if not (allowed and found):
            raise RuntimeError("a granted tool was not allowed")
        ours.append(t1 - t0)
        base.append(t2 - t1)
    result["lookup"] = summarize(ours, "us")
    result["lookup_dict_baseline"] = summarize(base, "us")
    result["lookup_ratio_vs_dict"] = ratio(ours, base)
    result["call"] = await _calls_with_population(directory, server, calls)
    return result


async def _calls_with_population(directory: Path, server: Any, calls: int) -> dict[str, Any]:
    """An authorized call through the real client with the population present, vs the plain server's call."""
    plain_server, _ = build_catalog_server(directory, extension=False)
    tools, _ = combined_catalog()
    tool = next(t for t in tools if t["name"] == "get_me")
    arguments = valid_arguments(tool["inputSchema"]) or {}
    samples: dict[str, list[float]] = {"plain": [], "pd": []}
    async with (
        Client(plain_server, mode="legacy", cache=None) as plain,
        Client(server, mode="legacy", cache=None) as ours,
    ):
        for client in (plain, ours):
            await client.list_tools()
        await ours.read_resource("resource:///tool_descriptions?tools=get_me")
        rng = random.Random(6)
        for i in range(calls + 20):
            order = [("plain", plain), ("pd", ours)]
            rng.shuffle(order)
            for variant, client in order:
                t0 = time.perf_counter()
                result = await client.call_tool("get_me", arguments)
                elapsed = time.perf_counter() - t0
                if result.is_error:
                    raise RuntimeError(f"get_me failed on {variant}: {result.content}")
                if i >= 20:
                    samples[variant].append(elapsed)
    return {
        "plain": summarize(samples["plain"], "us"),
        "pd": summarize(samples["pd"], "us"),
        "ratio": ratio(samples["pd"], samples["plain"]),
    }


def _worker_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scale --worker")
    parser.add_argument("--worker", choices=("tools", "sessions"), required=True)
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--variant", default="pd")
    parser.add_argument("--lists", type=int, default=5)
    parser.add_argument("--fetches", type=int, default=200)
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--trace", action="store_true")
    parser.add_argument("--lookups", type=int, default=20000)
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args(argv)
    quiet_logging()
    if args.worker == "tools":
        result = anyio.run(tools_worker, args.dir, args.variant, args.lists, args.fetches)
    else:
        result = anyio.run(sessions_worker, args.dir, args.count, args.trace, args.lookups, args.calls)
    print(json.dumps(result))
    return 0


def _spawn(args: list[str]) -> dict[str, Any]:
    command = [sys.executable, "-m", "benchmarks.scale", *args]
    done = subprocess.run(command, cwd=REPO, env=child_env(), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr[-4000:]}")
    value: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return value


# -- the benchmark --------------------------------------------------------------------------------
def _tools_rows(sizes: list[int], scratch: Path, quick: bool) -> dict[str, Any]:
    rows: dict[str, Any] = {}
    for index, size in enumerate(sizes):
        directory = scratch / f"tools-{size}"
        t0 = time.perf_counter()
        write_catalog(directory, synthetic_catalog(size))
        generated = time.perf_counter() - t0
        lists = 5 if quick else (20 if size <= 2000 else (5 if size <= 10000 else 1))
        runs: dict[str, dict[str, Any]] = {}
        order = ["plain", "pd"] if index % 2 == 0 else ["pd", "plain"]
        for variant in order:
            runs[variant] = _spawn(
                ["--worker", "tools", "--dir", str(directory), "--variant", variant, "--lists", str(lists)]
            )
        plain, pd = runs["plain"], runs["pd"]
        plain_samples, pd_samples = plain.pop("samples"), pd.pop("samples")
        row = {
            "tools": size,
            "generate_s": round(generated, 2),
            "plain": plain,
            "pd": pd,
            "ratios": {
                "startup": round(pd["startup_s"] / plain["startup_s"], 4),
                "list_server": ratio(pd_samples["list_server"], plain_samples["list_server"]),
                "list_client": ratio(pd_samples["list_client"], plain_samples["list_client"]),
                "fetch_server": ratio(pd_samples["fetch_server"], plain_samples["fetch_server"]),
                "fetch_client": ratio(pd_samples["fetch_client"], plain_samples["fetch_client"]),
                "rss_end": round(pd["rss_end_mb"] / plain["rss_end_mb"], 4),
            },
        }
        rows[str(size)] = row
        print(
            f"  {size:>6} tools: start-up {plain['startup_s']:.2f} -> {pd['startup_s']:.2f} s; tools/list server p50 "
            f"{plain['list_server']['p50_ms']:.1f} -> {pd['list_server']['p50_ms']:.1f} ms (client "
            f"{plain['list_client']['p50_ms']:.0f} -> {pd['list_client']['p50_ms']:.0f} ms); fetch server p50 "
            f"{plain['fetch_server']['p50_ms']:.3f} -> {pd['fetch_server']['p50_ms']:.3f} ms (client "
            f"{plain['fetch_client']['p50_ms']:.3f} -> {pd['fetch_client']['p50_ms']:.3f} ms); RSS "
            f"{plain['rss_end_mb']:.0f} -> {pd['rss_end_mb']:.0f} MB (peak {pd['rss_peak_mb']:.0f})"
        )
        import shutil

        shutil.rmtree(directory, ignore_errors=True)
    return rows


def _session_rows(counts: list[int], scratch: Path, calls: int) -> dict[str, Any]:
    directory = scratch / "combined"
    tools, _ = combined_catalog()
    write_catalog(directory, tools)
    rows: dict[str, Any] = {}
    for count in counts:
        traced = _spawn(["--worker", "sessions", "--dir", str(directory), "--count", str(count), "--trace"])
        timed = _spawn(["--worker", "sessions", "--dir", str(directory), "--count", str(count), "--calls", str(calls)])
        rows[str(count)] = {"sessions": count, **{k: v for k, v in traced.items() if k != "traced"}, **timed}
        row = rows[str(count)]
        print(
            f"  {count:>7} sessions: traced {row['traced_mb']:.1f} MB "
            f"({row['traced_bytes_per_session']:.0f} B/session; "
            f"{row['traced_breakdown_mb']}), RSS +{row['rss_delta_mb']:.1f} MB; lookup p50 "
            f"{row['lookup']['p50_us']:.2f} us ({row['lookup_ratio_vs_dict']['p50']:.1f}x a dict of sets); "
            f"authorized call {row['call']['ratio']['p50']:.3f}x plain"
        )
    return rows


def plot(figures: dict[str, Any], path: Path) -> None:
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tools = figures["tools"]
    sizes = [int(k) for k in tools]
    sessions = figures["sessions"]
    counts = [int(k) for k in sessions]
    fig, axes = plt.subplots(2, 3, figsize=(14, 8))
    panels: list[tuple[str, Callable[[str, dict[str, Any]], float]]] = [
        ("start-up (s)", lambda v, r: r[v]["startup_s"]),
        ("tools/list, server-side p50 (ms)", lambda v, r: r[v]["list_server"]["p50_ms"]),
        ("one-tool fetch, server-side p50 (ms)", lambda v, r: r[v]["fetch_server"]["p50_ms"]),
        ("RSS after start-up and workload (MB)", lambda v, r: r[v]["rss_end_mb"]),
    ]
    goals = {1: 100.0, 2: 2.0, 3: 200.0}
    for index, (ax, (title, getter)) in enumerate(zip(axes.flat[:4], panels, strict=True)):
        for variant, style in (("plain", "o--"), ("pd", "s-")):
            label = "plain server" if variant == "plain" else "with extension"
            ax.plot(sizes, [getter(variant, tools[str(s)]) for s in sizes], style, label=label)
        if index in goals:
            ax.axhline(goals[index], color="red", linewidth=0.8, linestyle=":", label="goal at 10k tools")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("tools in catalog")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    ax = axes.flat[4]
    ax.plot(counts, [sessions[str(c)]["traced_mb"] for c in counts], "s-", label="traced (tracemalloc)")
    ax.plot(counts, [sessions[str(c)]["rss_delta_mb"] for c in counts], "o--", label="RSS growth")
    ax.axhline(100, color="red", linewidth=0.8, linestyle=":", label="goal at 100k")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("authorized sessions")
    ax.set_title("authorization state (MB)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    ax = axes.flat[5]
    ax.plot(counts, [sessions[str(c)]["lookup"]["p50_us"] for c in counts], "s-", label="resolve + allowed, p50")
    ax.plot(counts, [sessions[str(c)]["lookup_dict_baseline"]["p50_us"] for c in counts], "o--", label="dict of sets")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("authorized sessions")
    ax.set_title("authorization lookup (us)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    plain_numbers = matplotlib.ticker.FuncFormatter(lambda value, _: f"{value:g}")
    for index, ax in enumerate(axes.flat):
        points = sizes if index < 4 else counts
        ax.xaxis.set_major_locator(matplotlib.ticker.FixedLocator(points))
        ax.xaxis.set_major_formatter(matplotlib.ticker.FixedFormatter([f"{p // 1000}k" for p in points]))
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.yaxis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(plain_numbers)
        ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    fig.suptitle("mcp_pd at scale (synthetic catalogs from the 322 real tools)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


async def run(quick: bool, out: Path | None) -> Recorder:
    recorder = Recorder("scale", "Scale: catalog size and session count", quick, out)
    recorder.method = [
        "Synthetic catalogs cycle the 322 real definitions; copy k of a tool is named <name>_<k>.",
        "Each size runs in fresh processes, plain then extension (alternating order across sizes), never at once.",
        "Start-up = constructing the server from the definition files (extension: and installing it) + the "
        "server-side handler time of the first tools/list (the extension builds its catalog then); the client's "
        "time for that first listing is in first_list_client_s.",
        "tools/list server-side = a timing wrapper around the low-level server's handler chain; client = "
        "`await client.list_tools()` in-process. One-tool fetch = ?tools=NAME for random names; the plain "
        "server answers the same URI with the same document, ungated.",
        "RSS from /proc/self/status after the workload (and peak, VmHWM).",
        "Sessions: N fake HTTP session contexts go through the extension's resolver, fetch limiter and grant store "
        "(3 tools each), as a first fetch does; memory by tracemalloc (its own process), RSS growth and lookup "
        "time in another process; an authorized call through the real client with the N sessions present vs the "
        "plain server's call, interleaved.",
    ]
    sizes = [500, 2000] if quick else [1000, 10000, 50000]
    counts = [1000, 10000] if quick else [1000, 10000, 100000]
    with temporary_directory("mcp-pd-scale-") as scratch:
        recorder.figures["tools"] = _tools_rows(sizes, scratch, quick)
        recorder.figures["sessions"] = _session_rows(counts, scratch, 100 if quick else 300)
    image = output_dir(out, quick) / "scale.png"
    plot(recorder.figures, image)
    recorder.figures["plot"] = image.name
    print(f"  plot: {image}")
    tools = recorder.figures["tools"]
    at = "10000" if "10000" in tools else str(max(int(k) for k in tools))
    row = tools[at]["pd"]
    label = f"{int(at) // 1000}k tools"
    value = row["list_server"]["p50_ms"]
    recorder.goal(
        "3.list",
        f"tools/list server-side p50 at {label}",
        "< 100 ms",
        value,
        "ms",
        value < 100,
        f"plain server {tools[at]['plain']['list_server']['p50_ms']:.1f} ms; client-observed "
        f"{row['list_client']['p50_ms']:.0f} ms",
    )
    value = row["fetch_client"]["p50_ms"]
    recorder.goal(
        "3.fetch",
        f"one-tool fetch p50 at {label}, client-observed in-process",
        "< 2 ms",
        value,
        "ms",
        value < 2,
        f"server-side {row['fetch_server']['p50_ms']:.3f} ms; p95 {row['fetch_client']['p95_ms']:.3f} ms",
    )
    value = row["rss_end_mb"]
    recorder.goal(
        "3.rss",
        f"RSS at {label} after start-up and workload",
        "< 200 MB",
        value,
        "MB",
        value < 200,
        f"peak {row['rss_peak_mb']:.0f} MB; plain server {tools[at]['plain']['rss_end_mb']:.0f} MB",
    )
    sessions = recorder.figures["sessions"]
    top = str(max(int(k) for k in sessions))
    value = sessions[top]["traced_mb"]
    recorder.goal(
        "3.sessions",
        f"authorization state for {int(top):,} sessions (traced)",
        "< 100 MB",
        value,
        "MB",
        value < 100,
        f"RSS growth {sessions[top]['rss_delta_mb']:.1f} MB; lookup p50 {sessions[top]['lookup']['p50_us']:.2f} us",
    )
    return recorder


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--worker" in argv:
        return _worker_main(argv)
    return benchmark_main(__doc__, "scale: catalog size and session count", run, argv)


if __name__ == "__main__":
    raise SystemExit(main())
