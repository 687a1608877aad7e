"""The extension on a FastMCP 4 server against the same FastMCP server without it, per request, as the catalog grows.

Per size (500, 4,000, 16,000 tools; --quick: 500 and 4,000), two FastMCP servers start in child processes over
stdio, both built the same way (`--serve SIZE VARIANT`: SIZE copies of one small function tool, `tool_<i>`):
`pd` with `ProgressiveDisclosure(fetch_rate=None).install(app)`, `plain` without it, answering the same
`resource:///tool_descriptions?tools=NAME` from a FastMCP resource template (its own `get_tool`, the definition as
its tools/list shows it). The real `mcp` client (handshake era) opens one session on each; after a listing and one
read of every name used, it alternates the two servers request by request (the first one alternating too):
`read` (the descriptions resource for one tool) and then `call` (that tool, described), 20 names spread over the
catalog in turn. Client-observed latency per request, and the server process's CPU time (user + system, /proc) over
each phase divided by its requests. The goals: extension / plain at 4,000 tools within 1.3x for both, and the same
ratio at the largest size (flat: the extension adds no cost that grows with the catalog).

    python -m benchmarks.fastmcp [--quick]
"""

from __future__ import annotations

import json
import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from ._common import (
    REPO,
    Recorder,
    benchmark_main,
    child_env,
    child_pids,
    loadavg,
    process_cpu_seconds,
    ratio,
    summarize,
)

VARIANTS = ("pd", "plain")
NAMES = 20
URI = "resource:///tool_descriptions"


# -- the servers (child processes) ------------------------------------------------------------------------------
def build(size: int, variant: str) -> Any:
    """A FastMCP server with `size` tools (`tool_0` ...), installed with the extension when `variant` is "pd"."""
    from fastmcp import FastMCP
    from fastmcp.tools import Tool

    app: FastMCP[Any] = FastMCP(f"bench-{variant}")

    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    # One tool built once and copied under each name: 16,000 schema derivations would only slow the start-up.
    template = Tool.from_function(echo)
    for i in range(size):
        app.add_tool(template.model_copy(update={"name": f"tool_{i}"}))
    if variant == "pd":
        from mcp_pd import ProgressiveDisclosure

        ProgressiveDisclosure(fetch_rate=None, watch=False).install(app)
    else:

        @app.resource(URI + "{?tools}", mime_type="application/json")
        async def definition(tools: str = "") -> str:
            """The plain server's answer to the same read: the tool as FastMCP's tools/list would show it."""
            tool = await app.get_tool(tools)
            if tool is None:
                return json.dumps({tools: {"error": f"Tool '{tools}' not found"}})
            return json.dumps({tools: tool.to_mcp_tool().model_dump(by_alias=True, mode="json", exclude_none=True)})

    return app


def _serve(argv: list[str]) -> int:
    import logging

    logging.getLogger().setLevel(logging.WARNING)
    build(int(argv[0]), argv[1]).run(show_banner=False, log_level="warning")
    return 0


# -- the client -------------------------------------------------------------------------------------------------
def _marker(size: int, variant: str) -> str:
    return f"--serve {size} {variant}"


async def list_all(client: Client) -> list[str]:
    names: list[str] = []
    cursor: str | None = None
    while True:
        page = await client.list_tools(cursor=cursor)
        names += [tool.name for tool in page.tools]
        cursor = page.next_cursor
        if not cursor:
            return names


async def measure(size: int, iterations: int) -> dict[str, Any]:
    names = [f"tool_{i * size // NAMES}" for i in range(NAMES)]
    async with AsyncExitStack() as stack:
        clients: dict[str, Client] = {}
        pids: dict[str, int] = {}
        started: dict[str, float] = {}
        for variant in VARIANTS:
            params = StdioServerParameters(
                command=sys.executable,
                args=["-m", "benchmarks.fastmcp", *_marker(size, variant).split()],
                cwd=str(REPO),
                env=child_env(),  # the SDK passes a stdio server only a few variables: this checkout's code must run
            )
            t0 = time.perf_counter()
            clients[variant] = await stack.enter_async_context(Client(params, mode="legacy", cache=None))
            listed = await list_all(clients[variant])  # the extension's catalog is built here
            started[variant] = time.perf_counter() - t0
            if len([name for name in listed if name.startswith("tool_")]) != size:
                raise RuntimeError(f"{variant}: listed {len(listed)} tools, expected {size}")
            (pids[variant],) = child_pids(_marker(size, variant))

        async def read(client: Client, name: str) -> None:
            result = await client.read_resource(f"{URI}?tools={name}")
            text = getattr(result.contents[0], "text", "")
            if '"inputSchema"' not in text:
                raise RuntimeError(f"read of {name} answered {text[:300]}")

        async def call(client: Client, name: str) -> None:
            result = await client.call_tool(name, {"text": "hello"})
            if result.is_error:
                raise RuntimeError(f"call of {name} failed: {result.content}")

        for variant in VARIANTS:  # warm-up; every name read once, so the extension's calls are described
            for name in names:
                await read(clients[variant], name)
                await call(clients[variant], name)
        figures: dict[str, Any] = {"start_and_first_list_s": {v: round(s, 2) for v, s in started.items()}}
        for op, run in (("read", read), ("call", call)):
            times: dict[str, list[float]] = {v: [] for v in VARIANTS}
            cpu0 = {v: process_cpu_seconds(pids[v]) for v in VARIANTS}
            load = loadavg()
            for i in range(iterations):
                name = names[i % NAMES]
                for variant in VARIANTS if i % 2 == 0 else VARIANTS[::-1]:
                    t0 = time.perf_counter()
                    await run(clients[variant], name)
                    times[variant].append(time.perf_counter() - t0)
            cpu = {v: (process_cpu_seconds(pids[v]) - cpu0[v]) / iterations for v in VARIANTS}
            figures[op] = {
                **{v: summarize(times[v]) for v in VARIANTS},
                "server_cpu_ms_per_request": {v: round(cpu[v] * 1000, 3) for v in VARIANTS},
                "ratio": ratio(times["pd"], times["plain"]),
                "cpu_ratio": round(cpu["pd"] / cpu["plain"], 3) if cpu["plain"] > 0 else None,
                "load_average": load,
            }
    return figures


async def run(quick: bool, out: Path | None) -> Recorder:
    recorder = Recorder("fastmcp", "the extension on FastMCP against plain FastMCP, per request", quick, out)
    recorder.method = [line.strip() for line in (__doc__ or "").splitlines()[2:12]]
    sizes = [500, 4000] if quick else [500, 4000, 16000]
    iterations = 100 if quick else 300
    rows: dict[str, Any] = {}
    for size in sizes:
        row = await measure(size, iterations)
        rows[str(size)] = row
        shown = ", ".join(
            f"{op} {row[op]['pd']['p50_ms']:.2f} / {row[op]['plain']['p50_ms']:.2f} ms = {row[op]['ratio']['p50']:.2f}x"
            f" (CPU {row[op]['cpu_ratio']}x)"
            for op in ("read", "call")
        )
        print(f"  {size:>6} tools: {shown} (load {loadavg()})")
    recorder.figures = {"sizes": rows, "iterations": iterations, "names": NAMES}
    for op in ("read", "call"):
        at4k = rows["4000"][op]["ratio"]["p50"]
        recorder.goal(
            f"fastmcp-{op}-4k", f"{op} p50, extension / plain FastMCP at 4,000 tools", "<= 1.3x", at4k, "x", at4k <= 1.3
        )
    largest = str(sizes[-1])
    worst = max(rows[largest][op]["ratio"]["p50"] for op in ("read", "call"))
    recorder.goal(
        "fastmcp-flat",
        f"worst of read and call p50, extension / plain at {int(largest):,} tools",
        "<= 1.3x (flat)",
        worst,
        "x",
        worst <= 1.3,
    )
    return recorder


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["--serve"]:
        return _serve(args[1:])
    return benchmark_main(__doc__, "the extension on FastMCP against plain FastMCP, per request", run, args)


if __name__ == "__main__":
    raise SystemExit(main())
