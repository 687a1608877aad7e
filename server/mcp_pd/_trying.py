"""Trying things by hand, from the shell: `mcp-pd search DIR QUERY` (what catalog mode's `search_tools` answers for a
definitions folder, with the ranking's figures) and `mcp-pd call` (describe, then call one tool of any server, in
one session: a one-shot client, such as the Inspector CLI, opens a new session per command and so never gets past
the gate). Each prints JSON a person or a script can read; the CLI only parses flags."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

__all__ = ["call", "search"]


async def search(directory: Path, query: str, *, limit: int, semantic: Any, vector_cache: Any) -> dict[str, Any]:
    """`search_tools {query, limit}` as a catalog-mode server over `directory` answers it, and beside it each hit's
    figures (fused score, cosine, coverage) and which ranking answered."""
    from mcp import Client

    from ._search.results import SearchHit
    from .reference import serve_simulation

    server, pd = serve_simulation(directory, mode="catalog", watch=False, semantic=semantic, vector_cache=vector_cache)
    assert pd.metatools is not None  # catalog mode
    index = pd.metatools.index
    await index.ready()
    async with Client(server, mode="legacy", cache=None) as client:
        result = await client.call_tool("search_tools", {"query": query, "limit": limit})
    answer: dict[str, Any] = result.structured_content or json.loads(result.content[0].text)  # type: ignore[union-attr]
    found = await index.search(query, limit=limit, category=None, allowed=None)

    def figures(hit: SearchHit) -> dict[str, Any]:
        shown: dict[str, Any] = {"name": hit.name, "score": round(hit.score, 4), "match": hit.match}
        shown["coverage"] = round(hit.coverage, 3)
        if hit.cosine is not None:
            shown["cosine"] = round(hit.cosine, 4)
        if hit.cosine_z is not None:
            shown["cosine_z"] = round(hit.cosine_z, 2)
        return shown

    return {
        "answer": answer,
        "ranking": [figures(hit) for hit in found.hits],
        "answered_by": index.ranking,
        "error": result.is_error or None,
    }


async def call(
    target: str, *, stdio: bool, tool: str, arguments: dict[str, Any], headers: dict[str, str]
) -> dict[str, Any]:
    """Describe `tool` (the descriptions resource, else the `describe_tools` tool), then call it with `arguments`,
    in one session of the server `target` names (a command line with `stdio`, else a Streamable HTTP URL)."""
    from ._explain import StatusLog, Unreachable, explain

    if stdio:
        argv = shlex.split(target)
        if not argv:
            raise Unreachable("--stdio needs a command line, e.g. --stdio 'python server.py'")
    log = StatusLog()
    try:
        return await _call(target, argv if stdio else None, tool, arguments, headers, log)
    except Exception as exc:
        # A person's mistake (no token, a wrong URL, a server not running) is one line, never a traceback.
        token = any(name.lower() == "authorization" for name in headers)
        raise Unreachable(explain(exc, target, stdio=stdio, log=log, token_sent=token)) from exc


async def _call(
    target: str, argv: list[str] | None, tool: str, arguments: dict[str, Any], headers: dict[str, str], log: Any
) -> dict[str, Any]:
    from mcp import Client, StdioServerParameters
    from mcp.shared.exceptions import MCPError

    from ._model import selection_uri

    if argv is not None:
        source: Any = StdioServerParameters(command=argv[0], args=argv[1:])
    else:
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        # The SDK's own client (its timeouts), recording HTTP error statuses the SDK reports only as -32603.
        http = create_mcp_http_client(headers=headers)
        http.event_hooks["response"].append(log)
        source = streamable_http_client(target, http_client=http)
    async with Client(source, mode="legacy", cache=None) as client:
        described: Any = None
        how = "resource"
        try:
            read = await client.read_resource(selection_uri([tool]))
            described = json.loads(read.contents[0].text)  # type: ignore[union-attr]
        except MCPError as exc:
            listed = {t.name for t in (await client.list_tools()).tools}
            if "describe_tools" not in listed:
                described, how = {"error": exc.error.message}, "none"
            else:
                result = await client.call_tool("describe_tools", {"tools": [tool]})
                described, how = json.loads(result.content[0].text), "describe_tools"  # type: ignore[union-attr]
        result = await client.call_tool(tool, arguments)
    called = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    return {"described_by": how, "definition": described, "result": called}


def print_json(document: Any) -> None:
    sys.stdout.write(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
