"""`mcp-pd`: serve the reference server, check an implementation, run the agent demo."""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio

__all__ = ["main"]


def _serve_parser(sub: Any) -> None:
    p = sub.add_parser("serve", help="run the reference server (or --simulate any definitions directory)")
    p.add_argument("--transport", choices=("stdio", "http"), default="stdio", help="default: stdio")
    p.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="HTTP port (default 8000)")
    p.add_argument("--descriptions", type=Path, help="directory of <tool>.json definitions")
    p.add_argument(
        "--simulate",
        action="store_true",
        help="serve every definition in --descriptions with simulated tools that validate and echo",
    )
    p.add_argument("--database", default=":memory:", help="SQLite file for the tracker (default: in memory)")
    p.add_argument("--stateless", action="store_true", help="stateless Streamable HTTP (no sessions)")
    p.add_argument(
        "--sessionless",
        choices=("downgrade", "reject"),
        default="downgrade",
        help="policy for requests without a session (see spec/sessions.md)",
    )
    p.add_argument("--fetch-rate", type=float, default=10.0, help="resource reads per second per session (0: off)")
    p.add_argument("--fetch-burst", type=int, default=60, help="resource reads allowed at once per session")
    p.add_argument("--no-watch", action="store_true", help="do not reload definition files when they change")
    p.add_argument(
        "--list-annotations",
        action="store_true",
        help="keep title and annotations in tools/list entries (default: only in the fetched definition)",
    )
    p.add_argument("--log-level", default="WARNING", choices=("DEBUG", "INFO", "WARNING", "ERROR"))


def _build(args: argparse.Namespace) -> tuple[Any, Any, str]:
    from ._policy import RateLimit
    from .reference import build_reference_server, serve_simulation

    options: dict[str, Any] = {
        "sessionless": args.sessionless,
        "watch": not args.no_watch,
        "list_annotations": args.list_annotations,
        "fetch_rate": RateLimit(args.fetch_rate, args.fetch_burst) if args.fetch_rate > 0 else None,
    }
    if args.simulate:
        if args.descriptions is None:
            raise SystemExit("mcp-pd serve: --simulate needs --descriptions DIR")
        if not args.descriptions.is_dir():
            raise SystemExit(f"mcp-pd serve: {args.descriptions} is not a directory")
        server, pd = serve_simulation(args.descriptions, **options)
        return server, pd, f"SIMULATION of {args.descriptions}"
    app, pd = build_reference_server(args.descriptions, database=args.database, **options)
    return app, pd, "reference project tracker"


async def _preflight(server: Any, pd: Any) -> list[str]:
    """List the server's tools once so problems are reported at start-up, not at first use."""
    from mcp.server.mcpserver import MCPServer

    if isinstance(server, MCPServer):
        pd.catalog.update(await server.list_tools(), complete=True)
    # A simulated server's catalog is merged by serve_simulation itself.
    lines = [f"{len(pd.catalog)} tools, {len(pd.store)} JSON definitions"]
    lines += [f"problem: {p}" for p in pd.store.problems]
    lines += [f"orphan: {n}.json describes a tool this server does not have (not served)" for n in pd.catalog.orphans()]
    return lines


def _serve(args: argparse.Namespace) -> int:
    from mcp.server.lowlevel import NotificationOptions
    from mcp.server.stdio import stdio_server

    from ._extension import _lowlevel

    logging.basicConfig(stream=sys.stderr, level=args.log_level, format="%(levelname)s %(name)s: %(message)s")
    server, pd, label = _build(args)
    lowlevel = _lowlevel(server)

    async def run() -> None:
        for line in await _preflight(server, pd):
            print(f"mcp-pd: {line}", file=sys.stderr)
        # Everything built so far (definitions, catalog) lives as long as the server: move it out of the
        # collector's way, so full collections stop walking a large catalog inside request handlers.
        gc.collect()
        gc.freeze()
        pd.start_watching()
        if args.transport == "stdio":
            print(f"mcp-pd: serving the {label} over stdio; waiting for a client", file=sys.stderr)
            options = lowlevel.create_initialization_options(
                NotificationOptions(tools_changed=True, resources_changed=True)
            )
            async with stdio_server() as (read, write):
                await lowlevel.run(read, write, options)
            return
        import uvicorn

        app = lowlevel.streamable_http_app(stateless_http=args.stateless, host=args.host)
        config = uvicorn.Config(app, host=args.host, port=args.port, log_level=args.log_level.lower())
        print(f"mcp-pd: serving the {label} on http://{args.host}:{args.port}/mcp", file=sys.stderr)
        await uvicorn.Server(config).serve()

    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(run)
    return 0


def _delegate(module: str, argv: Sequence[str]) -> int:
    try:
        entry = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        print(f"mcp-pd: {module} is not installed ({exc})", file=sys.stderr)
        return 4
    result: int = entry.main(list(argv))
    return result


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `mcp-pd` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "check":
        return _delegate("mcp_pd_conformance", argv[1:])
    if argv and argv[0] == "demo":
        return _delegate("mcp_pd_agent", argv[1:])
    parser = argparse.ArgumentParser(prog="mcp-pd", description="MCP Progressive Disclosure (spec v2.1) toolkit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="{serve,check,demo}")
    _serve_parser(sub)
    sub.add_parser("check", help="run the conformance suite against a server (mcp-pd check --help)")
    sub.add_parser("demo", help="run the reference agent demo (mcp-pd demo --help)")
    args = parser.parse_args(argv)
    return _serve(args)


if __name__ == "__main__":
    raise SystemExit(main())
