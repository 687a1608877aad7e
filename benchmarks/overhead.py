"""2. Overhead: the same MCPServer with and without the extension, through the real client.

In-process, over stdio and over Streamable HTTP (loopback), one session per variant, both open at once. Every
iteration measures, in a freshly shuffled order: an authorized `tools/call` (echo, a tool that does nothing: the
worst case for a ratio), `tools/list` (30 tools), a one-tool fetch (`?tools=echo`; baseline: the plain server
reading an ordinary resource of the same size) and, on the extension's server, an ordinary resource read passing
through it. Client-side times are `await client.<op>()`; server-side times come from a timing wrapper installed on
the low-level server after the extension (the whole handler chain) and before it (the server's own handlers).

    python -m benchmarks.overhead [--quick]
"""

from __future__ import annotations

import json
import random
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mcp_pd
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from ._apps import ECHO_URI, STATIC_URI, build_bench_app
from ._common import (
    REPO,
    HandlerTimer,
    Recorder,
    ServerProcess,
    benchmark_main,
    child_pids,
    percentile,
    process_cpu_seconds,
    ratio,
    summarize,
    temporary_directory,
)

VARIANTS = ("plain", "pd")
# (operation, variant): what each timed request is.
MEASUREMENTS = [
    ("call", "plain"),
    ("call", "pd"),
    ("list", "plain"),
    ("list", "pd"),
    ("fetch", "plain"),
    ("fetch", "pd"),
    ("passthrough", "pd"),
]
# Server-side handler label of each measurement (HandlerTimer labels).
SERVER_LABELS = {
    "call": {"plain": "tools/call", "pd": "tools/call"},
    "list": {"plain": "tools/list", "pd": "tools/list"},
    "fetch": {"plain": f"resources/read {STATIC_URI}", "pd": "resources/read resource:///tool_descriptions"},
    "passthrough": {"plain": f"resources/read {STATIC_URI}", "pd": f"resources/read {STATIC_URI}"},
}
OP_TITLES = {
    "call": "authorized tools/call",
    "list": "tools/list",
    "fetch": "one-tool fetch",
    "passthrough": "other resource read (pass-through)",
}


@dataclass
class Target:
    """Two connected clients and a way to get the servers' own timings afterwards."""

    clients: dict[str, Client]
    timers: dict[str, tuple[HandlerTimer, HandlerTimer]] = field(default_factory=dict)
    timing_files: dict[str, Path] = field(default_factory=dict)
    pids: dict[str, int] = field(default_factory=dict)


@asynccontextmanager
async def connect(transport: str, scratch: Path) -> AsyncIterator[Target]:
    async with AsyncExitStack() as stack:
        target = Target(clients={})
        for variant in VARIANTS:
            extension = variant == "pd"
            if transport == "inprocess":
                inner, outer = HandlerTimer(), HandlerTimer()
                app, _ = build_bench_app(extension=extension, inner=inner, outer=outer)
                target.timers[variant] = (inner, outer)
                client = Client(app, mode="legacy", cache=None)
            else:
                timings = scratch / f"{transport}-{variant}.json"
                target.timing_files[variant] = timings
                args = ["--app", "bench", "--variant", variant, "--timings", str(timings)]
                if transport == "stdio":
                    params = StdioServerParameters(
                        command=sys.executable, args=["-m", "benchmarks._serve", *args], cwd=str(REPO)
                    )
                    client = Client(params, mode="legacy", cache=None)
                else:
                    server = stack.enter_context(ServerProcess(args[:4], timings=timings))
                    target.pids[variant] = server.pid
                    client = Client(server.url, mode="legacy", cache=None)
            target.clients[variant] = await stack.enter_async_context(client)
            if transport == "stdio":
                pids = [p for p in child_pids("benchmarks._serve") if p not in target.pids.values()]
                if pids:
                    target.pids[variant] = pids[0]
        yield target


def _operations(clients: dict[str, Client]) -> dict[tuple[str, str], Callable[[], Awaitable[Any]]]:
    async def call(client: Client) -> None:
        result = await client.call_tool("echo", {"text": "hello"})
        if result.is_error:
            raise RuntimeError(f"echo failed: {result.content}")

    async def listing(client: Client) -> None:
        result = await client.list_tools()
        served = [t for t in result.tools if t.name != mcp_pd.DESCRIBE_TOOL]  # the extension lists its own too
        if len(served) != 30:
            raise RuntimeError(f"expected 30 tools (besides {mcp_pd.DESCRIBE_TOOL}), got {len(served)}")

    async def read(client: Client, uri: str) -> None:
        result = await client.read_resource(uri)
        if not result.contents:
            raise RuntimeError(f"empty read of {uri}")

    plain, pd = clients["plain"], clients["pd"]
    return {
        ("call", "plain"): lambda: call(plain),
        ("call", "pd"): lambda: call(pd),
        ("list", "plain"): lambda: listing(plain),
        ("list", "pd"): lambda: listing(pd),
        ("fetch", "plain"): lambda: read(plain, STATIC_URI),
        ("fetch", "pd"): lambda: read(pd, ECHO_URI),
        ("passthrough", "pd"): lambda: read(pd, STATIC_URI),
    }


async def measure_transport(transport: str, iterations: int, warmup: int, scratch: Path) -> dict[str, Any]:
    rng = random.Random(5)
    samples: dict[tuple[str, str], list[float]] = {m: [] for m in MEASUREMENTS}
    async with connect(transport, scratch) as target:
        for client in target.clients.values():
            await client.list_tools()  # what a client does first; also primes output-schema caches
        await target.clients["pd"].read_resource(ECHO_URI)  # authorizes echo for this session
        operations = _operations(target.clients)
        order = list(MEASUREMENTS)
        cpu_start: dict[str, float] = {}
        started = 0.0
        for i in range(warmup + iterations):
            if i == warmup:
                for inner, outer in target.timers.values():
                    inner.clear()
                    outer.clear()
                cpu_start = {v: process_cpu_seconds(pid) for v, pid in target.pids.items()}
                started = time.perf_counter()
            rng.shuffle(order)
            for measurement in order:
                t0 = time.perf_counter()
                await operations[measurement]()
                if i >= warmup:
                    samples[measurement].append(time.perf_counter() - t0)
        wall = time.perf_counter() - started
        cpu = {v: process_cpu_seconds(pid) - cpu_start[v] for v, pid in target.pids.items() if v in cpu_start}
        live_timers = {v: (inner.samples, outer.samples) for v, (inner, outer) in target.timers.items()}
    # Subprocess servers write their timings on exit; drop what the set-up and warm-up requests added.
    server: dict[str, tuple[dict[str, list[float]], dict[str, list[float]]]] = {}
    if live_timers:
        server = live_timers
    for variant, path in target.timing_files.items():
        if path.exists():
            document = json.loads(path.read_text())
            server[variant] = tuple(  # type: ignore[assignment]
                {label: values[warmup + 2 :] for label, values in document[layer].items()}
                for layer in ("inner", "outer")
            )
    return _summarize(transport, samples, server, cpu, wall, iterations)


def _summarize(
    transport: str,
    samples: dict[tuple[str, str], list[float]],
    server: dict[str, tuple[dict[str, list[float]], dict[str, list[float]]]],
    cpu: dict[str, float],
    wall: float,
    iterations: int,
) -> dict[str, Any]:
    result: dict[str, Any] = {"iterations": iterations, "wall_s": round(wall, 2), "client": {}, "server": {}}
    for op in OP_TITLES:
        variant_samples = samples[(op, "pd")]
        baseline = samples[("fetch" if op == "passthrough" else op, "plain")]
        result["client"][op] = {
            "what": OP_TITLES[op],
            "plain": summarize(baseline, "us"),
            "pd": summarize(variant_samples, "us"),
            "ratio": ratio(variant_samples, baseline),
        }
        if server:
            plain_server = server["plain"][1].get(SERVER_LABELS[op]["plain"], [])
            pd_server = server["pd"][1].get(SERVER_LABELS[op]["pd"], [])
            entry: dict[str, Any] = {
                "what": OP_TITLES[op],
                "plain": summarize(plain_server, "us"),
                "pd": summarize(pd_server, "us"),
            }
            if plain_server and pd_server:
                entry["ratio"] = ratio(pd_server, plain_server)
            pd_inner = server["pd"][0].get(SERVER_LABELS[op]["pd"], [])
            if pd_inner and pd_server:
                # What the extension adds around the server's own handler, at the median.
                entry["extension_own_p50_us"] = round((percentile(pd_server, 50) - percentile(pd_inner, 50)) * 1e6, 2)
            result["server"][op] = entry
    if cpu:
        result["server_cpu_per_iteration_us"] = {v: round(c / iterations * 1e6, 1) for v, c in cpu.items()}
        if cpu.get("plain"):
            result["server_cpu_ratio"] = round(cpu["pd"] / cpu["plain"], 4)
    return result


def _print(transport: str, figures: dict[str, Any]) -> None:
    print(f"  {transport}: {figures['iterations']} iterations in {figures['wall_s']} s")
    for op, entry in figures["client"].items():
        p, d, r = entry["plain"], entry["pd"], entry["ratio"]
        line = (
            f"    {entry['what']:<36} client p50 {p['p50_us']:>8.1f} -> {d['p50_us']:>8.1f} us ({r['p50']:.3f}x, "
            f"CI {r['p50_ci95'][0]:.3f}-{r['p50_ci95'][1]:.3f}); p95 {p['p95_us']:.1f} -> {d['p95_us']:.1f} us"
        )
        server = figures["server"].get(op)
        if server and "ratio" in server:
            line += (
                f"; server p50 {server['plain']['p50_us']:.1f} -> {server['pd']['p50_us']:.1f} us "
                f"({server['ratio']['p50']:.3f}x)"
            )
        print(line)
    if "server_cpu_per_iteration_us" in figures:
        print(f"    server CPU per iteration (us): {figures['server_cpu_per_iteration_us']}")


async def run(quick: bool, out: Path | None) -> Recorder:
    recorder = Recorder("overhead", "Overhead of the extension on the same MCPServer", quick, out)
    recorder.method = [
        "Same MCPServer (echo + 29 filler tools + one ordinary resource) with and without the extension, both "
        "sessions open at once; every iteration times each operation on both in a freshly shuffled order.",
        "Client side: wall time of `await client.call_tool / list_tools / read_resource` through mcp.Client "
        "(mode='legacy', cache=None). Server side: a timing wrapper around the low-level server's handler chain "
        "(in the server process for stdio and HTTP).",
        "Baseline for the one-tool fetch: the plain server reading an ordinary resource of the same size "
        f"({STATIC_URI}); 'pass-through' is that same ordinary read on the extension's server.",
        "Ratios are extension / plain; p50 ratios carry a 95% bootstrap interval over the paired iterations.",
        "The extension keeps its default fetch limiter in the path with a limit no benchmark reaches.",
    ]
    counts = (
        {"inprocess": (300, 30), "stdio": (100, 10), "http": (100, 10)}
        if quick
        else {
            "inprocess": (3000, 200),
            "stdio": (1500, 100),
            "http": (1000, 100),
        }
    )
    with temporary_directory("mcp-pd-overhead-") as scratch:
        for transport, (iterations, warmup) in counts.items():
            figures = await measure_transport(transport, iterations, warmup, scratch)
            recorder.figures[transport] = figures
            _print(transport, figures)
    for transport in counts:
        r = recorder.figures[transport]["client"]["call"]["ratio"]
        recorder.goal(
            f"2.call.{transport}",
            f"authorized tools/call, p50 extension/plain ({transport}, client-observed)",
            "<= 1.10x",
            r["p50"],
            "x",
            r["p50"] <= 1.10,
            f"95% CI {r['p50_ci95'][0]:.3f}-{r['p50_ci95'][1]:.3f}",
        )
    return recorder


def main(argv: list[str] | None = None) -> int:
    return benchmark_main(__doc__, "overhead: the same MCPServer with and without the extension", run, argv)


if __name__ == "__main__":
    raise SystemExit(main())
