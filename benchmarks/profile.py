"""Profiles of the extension's hot paths (pyinstrument), saved beside the results as evidence for the closing note.

* `profile_tools_list.txt`: the extension's tools/list handler chain on a 10k-tool synthetic catalog
  (simulation server, in-process client), sampled only while the handler chain runs.
* `profile_tools_call.txt`: 2000 authorized calls on the overhead benchmark's MCPServer, client and server together.

    python -m benchmarks.profile [--quick]
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from pyinstrument import Profiler

from ._apps import ECHO_URI, build_bench_app, build_catalog_server
from ._common import (
    Handler,
    common_arguments,
    output_dir,
    quiet_logging,
    synthetic_catalog,
    temporary_directory,
    write_catalog,
)


def _profiled(server: Server[Any], method: str, profiler: Profiler) -> None:
    """Sample only while `method`'s handler chain runs (installed outermost)."""
    entry = server.get_request_handler(method)
    assert entry is not None
    handler: Handler = entry.handler

    async def wrapper(ctx: ServerRequestContext[Any, Any], params: Any) -> Any:
        profiler.start()
        try:
            return await handler(ctx, params)
        finally:
            profiler.stop()

    server.add_request_handler(method, entry.params_type, wrapper)


def _render(profiler: Profiler, title: str) -> str:
    text: str = profiler.output_text(unicode=False, color=False, show_all=False, timeline=False)
    return f"{title}\n\n{text}"


async def profile_list(size: int, lists: int, scratch: Path) -> str:
    directory = scratch / "catalog"
    write_catalog(directory, synthetic_catalog(size))
    server, _ = build_catalog_server(directory, extension=True)
    profiler = Profiler(interval=0.0005, async_mode="disabled")
    async with Client(server, mode="legacy", cache=None) as client:
        await client.list_tools()  # the first listing builds the catalog; profile the steady state
        _profiled(server, "tools/list", profiler)
        t0 = time.perf_counter()
        for _ in range(lists):
            await client.list_tools()
        elapsed = time.perf_counter() - t0
    title = (
        f"tools/list handler chain with the extension, {size:,} tools, {lists} listings "
        f"(client-observed total {elapsed:.2f} s); samples only inside the handler chain"
    )
    return _render(profiler, title)


async def profile_call(calls: int) -> str:
    app, _ = build_bench_app(extension=True)
    # Continuous sampling of client and server together (in-process, one event loop): the extension's share is
    # the ProgressiveDisclosure frames under the server's handler.
    profiler = Profiler(interval=0.0001, async_mode="enabled")
    async with Client(app, mode="legacy", cache=None) as client:
        await client.list_tools()
        await client.read_resource(ECHO_URI)
        t0 = time.perf_counter()
        profiler.start()
        for _ in range(calls):
            await client.call_tool("echo", {"text": "hello"})
        profiler.stop()
        elapsed = time.perf_counter() - t0
    title = (
        f"{calls} authorized calls of echo (a tool that does nothing) through the in-process client, client and "
        f"server sampled together ({elapsed / calls * 1e6:.0f} us per call under the profiler)"
    )
    return _render(profiler, title)


async def run(quick: bool, out: Path | None) -> None:
    quiet_logging()
    directory = output_dir(out, quick)
    with temporary_directory("mcp-pd-profile-") as scratch:
        text = await profile_list(2000 if quick else 10000, 3, scratch)
    (directory / "profile_tools_list.txt").write_text(text, encoding="utf-8")
    print("\n".join(text.splitlines()[:45]))
    text = await profile_call(300 if quick else 2000)
    (directory / "profile_tools_call.txt").write_text(text, encoding="utf-8")
    print("\n".join(text.splitlines()[:45]))
    print(f"  wrote {directory / 'profile_tools_list.txt'} and profile_tools_call.txt")


def main(argv: list[str] | None = None) -> int:
    args = common_arguments(__doc__ or "").parse_args(argv)
    print("profile: where the extension spends its time")
    anyio.run(run, args.quick, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
