"""The servers the benchmarks measure, each built the same way with and without the extension.

* `build_bench_app`: an `MCPServer` with an `echo` tool that does nothing (the worst case for a relative
  overhead: the extension's work is not hidden behind real work), 29 filler tools, and an ordinary resource
  `bench://static` holding a document the size of echo's full definition (the baseline for a one-tool fetch).
* `build_catalog_server`: the library's simulation server over a directory of real or synthetic definitions;
  the plain variant answers `resource:///tool_descriptions?tools=...` with the same documents, ungated, so
  both variants can run the same request sequence.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qs, urlsplit

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp_pd import DescriptionStore, ProgressiveDisclosure, RateLimit
from mcp_pd.reference import build_simulated_server

from ._common import HandlerTimer

__all__ = [
    "ECHO_URI",
    "STATIC_URI",
    "UNLIMITED",
    "build_bench_app",
    "build_catalog_server",
    "lowlevel_of",
]

STATIC_URI = "bench://static"
ECHO_URI = "resource:///tool_descriptions?tools=echo"
# The extension's default fetch limiter stays in the code path, but never refuses a benchmark's reads.
UNLIMITED = RateLimit(per_second=1e9, burst=1_000_000_000)

ECHO_DESCRIPTION = "Echo the text back unchanged. Use it to check that the server answers; it has no side effects."
# The size of what the extension serves for ?tools=echo, so the baseline read moves the same bytes.
STATIC_TEXT = json.dumps(
    {
        "echo": {
            "name": "echo",
            "description": ECHO_DESCRIPTION,
            "inputSchema": {
                "properties": {"text": {"title": "Text", "type": "string"}},
                "required": ["text"],
                "title": "echoArguments",
                "type": "object",
            },
            "examples": [],
            "version": "sha256:0000000000000000",
        }
    }
)


def lowlevel_of(server: MCPServer[Any] | Server[Any]) -> Server[Any]:
    """The low-level server whose handlers get wrapped (MCPServer keeps it private)."""
    if isinstance(server, Server):
        return server
    inner = getattr(server, "_lowlevel_server", None)
    if not isinstance(inner, Server):
        raise TypeError("this mcp version's MCPServer does not expose its low-level Server")
    return inner


def _filler(index: int) -> Any:
    async def search(query: str, limit: int = 10, order: Literal["asc", "desc"] = "asc") -> str:
        return f"{index}:{query}:{limit}:{order}"

    return search


def build_bench_app(
    *, extension: bool, inner: HandlerTimer | None = None, outer: HandlerTimer | None = None
) -> tuple[MCPServer[Any], ProgressiveDisclosure | None]:
    """The overhead benchmark's MCPServer; `inner` times its own handlers, `outer` the whole chain."""
    app: MCPServer[Any] = MCPServer("bench", instructions="A benchmark server: an echo tool and filler tools.")

    @app.tool(description=ECHO_DESCRIPTION, structured_output=False)
    async def echo(text: str) -> str:
        return text

    for i in range(29):
        app.add_tool(
            _filler(i),
            name=f"search_{i:02d}",
            description=f"Search collection {i} for items matching a query. Returns one line per match, "
            "most relevant first, at most `limit` lines.",
            structured_output=False,
        )

    @app.resource(STATIC_URI, name="static", mime_type="application/json", description="A fixed JSON document.")
    async def static() -> str:
        return STATIC_TEXT

    # MCPServer() turns the root logger up to INFO; keep benchmark output to the figures.
    logging.getLogger().setLevel(logging.WARNING)
    lowlevel = lowlevel_of(app)
    if inner is not None:
        inner.install(lowlevel)
    pd = ProgressiveDisclosure(fetch_rate=UNLIMITED).install(app) if extension else None
    if outer is not None:
        outer.install(lowlevel)
    return app, pd


def build_catalog_server(
    directory: Path,
    *,
    extension: bool,
    watch: bool = False,
    inner: HandlerTimer | None = None,
    outer: HandlerTimer | None = None,
) -> tuple[Server[Any], ProgressiveDisclosure | None]:
    """`mcp_pd.reference.serve_simulation(directory)` step by step, so timers can go between the layers.

    Without the extension the same simulated tools are served, and a plain resources/read handler answers
    the descriptions URI with the same documents (no catalog, no grants): the same requests, the extension off.
    """
    if extension:
        pd: ProgressiveDisclosure | None = ProgressiveDisclosure(directory, watch=watch, fetch_rate=UNLIMITED)
        assert pd is not None
        store = pd.store
    else:
        pd, store = None, DescriptionStore(directory)
    server = build_simulated_server(store)
    if not extension:
        server.add_request_handler("resources/read", types.ReadResourceRequestParams, _plain_reader(store))
    if inner is not None:
        inner.install(server)
    if pd is not None:
        pd.install(server)
    if outer is not None:
        outer.install(server)
    return server, pd


def _plain_reader(store: DescriptionStore) -> Any:
    entries: dict[tuple[str, int], dict[str, Any]] = {}

    async def read(
        ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        names = [n for value in parse_qs(urlsplit(uri).query).get("tools", []) for n in value.split(",") if n]
        body: dict[str, Any] = {}
        for name in names:
            key = (name, store.generation)
            if key not in entries:
                definition = store.get(name)
                if definition is None:
                    raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {name}")
                entries[key] = definition.full_entry()
            body[name] = entries[key]
        text = json.dumps(body, ensure_ascii=False)
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type="application/json", text=text)]
        )

    return read
