"""5. HTTP under load: 50 concurrent sessions over Streamable HTTP on loopback, with and without the extension.

Two server processes serve the combined real catalog (322 simulated tools) over Streamable HTTP on 127.0.0.1:
the plain simulated server, and the same with the extension. One client process opens 50 sessions
(`mcp.Client(url, mode="legacy", cache=None)`), lists tools once, then, all at once, each session loops a fixed
number of times: read `?tools=T` for one of its own three tools, call T with valid arguments; every fifth
iteration it also calls a tool that belongs to another session and that it never fetched. With the extension
that call must fail with TOOL_DESCRIPTION_REQUIRED (if it succeeds, authorization leaked across sessions); the
plain server simply answers it, so both variants serve the same request sequence. Rounds alternate
plain / extension / extension / plain.

Errors = exceptions, failed reads, authorized calls that fail. Throughput = requests / wall time of the loop
phase. Server CPU per request comes from /proc for each server process.

    python -m benchmarks.load [--quick]
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import Client

from ._common import (
    Recorder,
    ServerProcess,
    benchmark_main,
    combined_catalog,
    percentile,
    process_cpu_seconds,
    process_rss_mb,
    quiet_logging,
    summarize,
    temporary_directory,
    valid_arguments,
    write_catalog,
)

SESSIONS = 50
TOOLS_PER_SESSION = 3
PROBE_EVERY = 5
WARMUP_ITERATIONS = 5


def _callable_tools(tools: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Tools whose schema our tiny generator satisfies (checked with jsonschema, as the simulator checks)."""
    from jsonschema import Draft202012Validator, validators

    chosen: dict[str, dict[str, Any]] = {}
    for tool in tools:
        schema = tool["inputSchema"]
        arguments = valid_arguments(schema)
        if arguments is None:
            continue
        cls = validators.validator_for(schema, default=Draft202012Validator)
        try:
            if not list(cls(schema).iter_errors(arguments)):
                chosen[str(tool["name"])] = arguments
        except Exception:  # a schema jsonschema cannot use: leave the tool out
            continue
    return chosen


class Round:
    def __init__(self) -> None:
        self.latency: dict[str, list[float]] = {"read": [], "call": [], "probe": []}
        self.errors: list[str] = []
        self.leaks: list[str] = []
        self.probes_refused = 0
        self.requests = 0


async def session_loop(
    url: str,
    own: list[str],
    foreign: str,
    arguments: dict[str, dict[str, Any]],
    iterations: int,
    extension: bool,
    ready: Any,
    start: anyio.Event,
    stats: Round,
) -> None:
    clock = time.perf_counter
    try:
        async with Client(url, mode="legacy", cache=None) as client:
            await client.list_tools()
            ready()
            await start.wait()
            for i in range(iterations):
                tool = own[i % len(own)]
                t0 = clock()
                read = await client.read_resource(f"resource:///tool_descriptions?tools={tool}")
                stats.latency["read"].append(clock() - t0)
                stats.requests += 1
                content = read.contents[0] if read.contents else None
                if not isinstance(content, types.TextResourceContents) or tool not in json.loads(content.text):
                    stats.errors.append(f"read of {tool} did not return its definition")
                t0 = clock()
                result = await client.call_tool(tool, arguments[tool])
                stats.latency["call"].append(clock() - t0)
                stats.requests += 1
                if result.is_error:
                    stats.errors.append(f"authorized call of {tool} failed: {str(result.content)[:200]}")
                if i % PROBE_EVERY == PROBE_EVERY - 1:
                    t0 = clock()
                    probe = await client.call_tool(foreign, arguments[foreign])
                    stats.latency["probe"].append(clock() - t0)
                    stats.requests += 1
                    refused = probe.is_error and "TOOL_DESCRIPTION_REQUIRED" in json.dumps(
                        probe.structured_content or {}
                    )
                    if extension and not refused:
                        stats.leaks.append(f"{foreign} ran in a session that never fetched it")
                    elif not extension and probe.is_error:
                        stats.errors.append(f"plain call of {foreign} failed")
                    stats.probes_refused += int(refused)
    except Exception as exc:  # every failure counts as an error, none stops the round
        stats.errors.append(f"{type(exc).__name__}: {exc}"[:300])


async def run_round(
    server: ServerProcess,
    extension: bool,
    plan: list[tuple[list[str], str]],
    arguments: dict[str, dict[str, Any]],
    iterations: int,
) -> dict[str, Any]:
    stats = Round()
    start = anyio.Event()
    opened = 0
    all_open = anyio.Event()

    def ready() -> None:
        nonlocal opened
        opened += 1
        if opened == len(plan):
            all_open.set()

    t_open = time.perf_counter()
    cpu_before = rss_before = client_cpu_before = 0.0
    wall = 0.0
    async with anyio.create_task_group() as tg:
        for own, foreign in plan:
            tg.start_soon(session_loop, server.url, own, foreign, arguments, iterations, extension, ready, start, stats)
        with anyio.move_on_after(120):
            await all_open.wait()
        open_s = time.perf_counter() - t_open
        cpu_before = process_cpu_seconds(server.pid)
        rss_before = process_rss_mb(server.pid)
        client_cpu_before = time.process_time()
        t0 = time.perf_counter()
        start.set()
    wall = time.perf_counter() - t0  # the task group waited for every session to finish its loop
    cpu = process_cpu_seconds(server.pid) - cpu_before
    client_cpu = time.process_time() - client_cpu_before
    every = stats.latency["read"] + stats.latency["call"] + stats.latency["probe"]
    return {
        "sessions_opened": opened,
        "open_all_sessions_s": round(open_s, 3),
        "requests": stats.requests,
        "wall_s": round(wall, 3),
        "throughput_rps": round(stats.requests / wall, 1) if wall else None,
        "latency": {op: summarize(v, "ms") for op, v in stats.latency.items()} | {"all": summarize(every, "ms")},
        "errors": len(stats.errors),
        "error_examples": stats.errors[:5],
        "leaks": len(stats.leaks),
        "leak_examples": stats.leaks[:5],
        "probes_refused": stats.probes_refused,
        "server_cpu_s": round(cpu, 3),
        "server_cpu_per_request_us": round(cpu / max(stats.requests, 1) * 1e6, 1),
        "client_cpu_per_request_us": round(client_cpu / max(stats.requests, 1) * 1e6, 1),
        "server_rss_mb": round(process_rss_mb(server.pid), 1),
        "server_rss_before_loop_mb": round(rss_before, 1),
        "_samples": every,
    }


async def run(quick: bool, out: Path | None) -> Recorder:
    quiet_logging()
    recorder = Recorder("load", "HTTP under load: 50 concurrent sessions", quick, out)
    iterations = 5 if quick else 30
    # ABBA BAAB after one discarded warm-up round per server: per-round throughput drifts by 20% on a busy
    # 2-core machine (first rounds slowest), and two rounds each left the ratio anywhere in 0.84-1.02.
    order = ["plain", "pd"] if quick else ["plain", "pd", "pd", "plain", "pd", "plain", "plain", "pd"]
    recorder.method = [
        f"{SESSIONS} sessions (mcp.Client(url, mode='legacy', cache=None)) in one client process against a server "
        "process on 127.0.0.1 (uvicorn, Streamable HTTP, stateful); both servers run the whole time, rounds "
        f"alternate {' / '.join(order)}, after one discarded warm-up round of {WARMUP_ITERATIONS} iterations "
        "per server (its errors and leaks still count).",
        f"Each session: tools/list once, then {iterations} iterations of read ?tools=T + call T (T cycles its own "
        f"{TOOLS_PER_SESSION} tools), plus every {PROBE_EVERY}th iteration a call of another session's tool it never "
        "fetched (must be refused with the extension; a success is a cross-session leak).",
        "Throughput = requests / wall time of the loop phase (all sessions open and listed before it starts). "
        "Server and client CPU per request from /proc and time.process_time(): with one client process for 50 "
        "sessions on 2 cores, the client is usually the bottleneck, so server CPU per request is the steadier "
        "measure of the extension's cost.",
        "Plain server = the same simulated tools; it answers the descriptions URI with the same documents, ungated.",
    ]
    tools, _ = combined_catalog()
    arguments = _callable_tools(tools)
    rng = random.Random(7)
    pool = sorted(arguments)
    rng.shuffle(pool)
    needed = SESSIONS * TOOLS_PER_SESSION
    if len(pool) < needed:
        raise SystemExit(f"load: only {len(pool)} tools have arguments we can generate; need {needed}")
    owned = [pool[i * TOOLS_PER_SESSION : (i + 1) * TOOLS_PER_SESSION] for i in range(SESSIONS)]
    plan = [(owned[i], owned[(i + 1) % SESSIONS][0]) for i in range(SESSIONS)]
    rounds: list[dict[str, Any]] = []
    samples: dict[str, list[float]] = {"plain": [], "pd": []}
    with temporary_directory("mcp-pd-load-") as scratch:
        write_catalog(scratch / "catalog", tools)
        common = ["--app", "catalog", "--descriptions", str(scratch / "catalog")]
        with (
            ServerProcess([*common, "--variant", "plain"]) as plain_server,
            ServerProcess([*common, "--variant", "pd"]) as pd_server,
        ):
            servers = {"plain": plain_server, "pd": pd_server}
            warmup: list[dict[str, Any]] = []
            for variant in ("plain", "pd"):
                result = await run_round(servers[variant], variant == "pd", plan, arguments, WARMUP_ITERATIONS)
                result.pop("_samples")
                warmup.append({"variant": variant, "errors": result["errors"], "leaks": result["leaks"]})
            for variant in order:
                result = await run_round(servers[variant], variant == "pd", plan, arguments, iterations)
                samples[variant].extend(result.pop("_samples"))
                result["variant"] = variant
                rounds.append(result)
                print(
                    f"  {variant:<5} {result['requests']} requests in {result['wall_s']:.2f} s = "
                    f"{result['throughput_rps']:.0f} req/s; p50 {result['latency']['all']['p50_ms']:.1f} ms, p95 "
                    f"{result['latency']['all']['p95_ms']:.1f} ms; errors {result['errors']}, leaks {result['leaks']}, "
                    f"probes refused {result['probes_refused']}; server CPU {result['server_cpu_per_request_us']:.0f} "
                    f"us/request, RSS {result['server_rss_mb']:.0f} MB"
                )
                for example in result["error_examples"] + result["leak_examples"]:
                    print(f"      {example}")
    totals: dict[str, Any] = {}
    for variant in ("plain", "pd"):
        mine = [r for r in rounds if r["variant"] == variant]
        requests = sum(r["requests"] for r in mine)
        wall = sum(r["wall_s"] for r in mine)
        totals[variant] = {
            "rounds": len(mine),
            "requests": requests,
            "throughput_rps": round(requests / wall, 1),
            "p50_ms": round(percentile(samples[variant], 50) * 1e3, 3),
            "p95_ms": round(percentile(samples[variant], 95) * 1e3, 3),
            "errors": sum(r["errors"] for r in mine) + sum(w["errors"] for w in warmup if w["variant"] == variant),
            "leaks": sum(r["leaks"] for r in mine) + sum(w["leaks"] for w in warmup if w["variant"] == variant),
            "server_cpu_per_request_us": round(sum(r["server_cpu_s"] for r in mine) / max(requests, 1) * 1e6, 1),
        }
    throughput_ratio = totals["pd"]["throughput_rps"] / totals["plain"]["throughput_rps"]
    totals["ratios"] = {
        "throughput": round(throughput_ratio, 4),
        "p95": round(totals["pd"]["p95_ms"] / totals["plain"]["p95_ms"], 4),
        "server_cpu_per_request": round(
            totals["pd"]["server_cpu_per_request_us"] / totals["plain"]["server_cpu_per_request_us"], 4
        ),
    }
    recorder.figures = {
        "sessions": SESSIONS,
        "iterations": iterations,
        "warmup": warmup,
        "rounds": rounds,
        "totals": totals,
    }
    pd_totals = totals["pd"]
    recorder.goal(
        "5.errors",
        "HTTP load: errors (both variants)",
        "0",
        totals["pd"]["errors"] + totals["plain"]["errors"],
        "",
        totals["pd"]["errors"] + totals["plain"]["errors"] == 0,
        f"extension {pd_totals['errors']}, plain {totals['plain']['errors']}",
    )
    recorder.goal(
        "5.leaks",
        "HTTP load: cross-session authorization leaks",
        "0",
        pd_totals["leaks"],
        "",
        pd_totals["leaks"] == 0,
        f"{sum(r['probes_refused'] for r in rounds if r['variant'] == 'pd')} foreign-tool probes, all must be refused",
    )
    recorder.goal(
        "5.throughput",
        "HTTP load: throughput extension/plain",
        ">= 0.90x",
        round(throughput_ratio, 4),
        "x",
        throughput_ratio >= 0.9,
        f"{pd_totals['throughput_rps']:.0f} vs {totals['plain']['throughput_rps']:.0f} req/s; p95 "
        f"{pd_totals['p95_ms']:.1f} vs {totals['plain']['p95_ms']:.1f} ms; server CPU/request "
        f"{totals['ratios']['server_cpu_per_request']:.2f}x",
    )
    return recorder


def main(argv: list[str] | None = None) -> int:
    return benchmark_main(__doc__, "load: 50 concurrent sessions over Streamable HTTP", run, argv)


if __name__ == "__main__":
    raise SystemExit(main())
