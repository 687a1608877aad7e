"""A benchmark server in its own process: `python -m benchmarks._serve --app bench|catalog --variant plain|pd ...`.

Over stdio it serves until its stdin closes; over HTTP until SIGINT. With `--timings FILE` it writes the
server-side handler timings (seconds per request, by method; `inner` = the server's own handlers, `outer` =
the whole chain including the extension) to FILE when it stops.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any

import anyio

from ._apps import build_bench_app, build_catalog_server, lowlevel_of
from ._common import HandlerTimer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks._serve")
    parser.add_argument("--app", choices=("bench", "catalog"), required=True)
    parser.add_argument("--variant", choices=("plain", "pd"), required=True)
    parser.add_argument("--descriptions", type=Path, help="definitions directory (--app catalog)")
    parser.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--timings", type=Path)
    args = parser.parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)

    inner, outer = HandlerTimer(), HandlerTimer()
    extension = args.variant == "pd"
    if args.app == "bench":
        app, _ = build_bench_app(extension=extension, inner=inner, outer=outer)
        server = lowlevel_of(app)
    else:
        if args.descriptions is None:
            parser.error("--app catalog needs --descriptions")
        server, _ = build_catalog_server(args.descriptions, extension=extension, inner=inner, outer=outer)

    async def run() -> None:
        if args.transport == "stdio":
            from mcp.server.stdio import stdio_server

            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())
            return
        import uvicorn

        http_app = server.streamable_http_app(host="127.0.0.1")
        config = uvicorn.Config(http_app, host="127.0.0.1", port=args.port, log_level="warning", lifespan="on")
        await uvicorn.Server(config).serve()

    try:
        anyio.run(run)
    except KeyboardInterrupt:
        pass
    finally:
        if args.timings is not None:
            document: dict[str, Any] = {"inner": inner.samples, "outer": outer.samples}
            args.timings.write_text(json.dumps(document), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
